// Package reporttest builds run directories for the tests of flower
// report: a long run of two wakes, written by the writers flower itself
// uses (WriteManifest, the SQLite session store, events.jsonl lines as the
// runtime logs them), so the page can be judged at the size real long runs
// reach.
package reporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store/sqlite"
)

// Long describes the long run LongRun writes.
type Long struct {
	// Lang is the run's language, "en" or "zh": its step names, file
	// names and run.json.
	Lang string
	// Rounds are the work rounds over both wakes (default 25); the first
	// wake ends stopped by Ctrl-C in round Rounds/2+1, the second goes on
	// from there to an achieved goal.
	Rounds int
	// TurnsPerRound are the coordinator's turns in a round (default 18):
	// with the clarify, goal, judge and bequest turns, 25 rounds make
	// 501 main-thread turns.
	TurnsPerRound int
	// Request is the request the clarify step was given.
	Request string
	// Untrusted, when set, is put wherever the run's text comes from
	// outside: the request, a question, an answer, the interrupt words, a
	// verdict's reason, a step's error note, a refused Bash command and a
	// workbench script's file name (without its slashes).
	Untrusted string
}

// Run is a written run directory.
type Run struct {
	Workspace, RunDir string
	// MainTurns are the main-thread turns in the store; Handoffs the
	// sessions handoffs started.
	MainTurns, Handoffs int
	// Total is the manifest's cost.
	Total float64
}

// The project key and the context figures of the long run.
const (
	project   = "-longrun"
	window    = 200_000
	handoffAt = 150_000
)

// LongRun writes a long run into a new workspace under t.TempDir().
func LongRun(t testing.TB, o Long) Run {
	t.Helper()
	if o.Rounds == 0 {
		o.Rounds = 25
	}
	if o.TurnsPerRound == 0 {
		o.TurnsPerRound = 18
	}
	if o.Request == "" {
		o.Request = "Port the billing service to Go, keep the API"
	}
	lang := flower.English
	if o.Lang == "zh" {
		lang = flower.Chinese
	}
	names := flower.StarterNamesFor(lang)
	ws := t.TempDir()
	run := Run{Workspace: ws, RunDir: filepath.Join(ws, "runs")}
	wb := filepath.Join(ws, ".flower")
	for _, d := range []string{"notes", "scripts", "spill", "artifacts"} {
		must(t, os.MkdirAll(filepath.Join(wb, d), 0o700))
	}
	t0 := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	wake2 := t0.Add(24 * time.Hour)

	w := &writer{t: t, dir: run.RunDir, keys: map[claude.SessionKey][]json.RawMessage{}}
	// Wake 1: clarify, goal, rounds up to the one Ctrl-C stopped.
	w.run, w.clock, w.mark = "run-1", t0, t0
	clarifySID := "s-clarify"
	w.step(names.Clarify, 1, 3)
	w.prompt(clarifySID, o.Request+o.Untrusted)
	ask := w.clock.Add(2 * time.Second)
	w.ev(ask, names.Clarify, "tool_call", "", "mcp__human__ask", map[string]any{"id": "t-ask-1", "input": map[string]any{"question": "Which database?" + o.Untrusted}})
	w.ev(ask.Add(40*time.Second), names.Clarify, "tool_result", "", "", map[string]any{"tool_use_id": "t-ask-1"})
	w.clock = ask.Add(41 * time.Second)
	w.turns(clarifySID, "", 1, 2_000, "claude-opus")
	w.row(flower.StepResult{Step: names.Clarify, SessionID: clarifySID, OK: true, CostUSD: 0.04, NumTurns: 2, Attempts: 1,
		Text: "## Goal\nport\n## Acceptance criteria\n- tests pass\n## Boundaries\nAPI\n## Unknowns and assumptions\nnone"})
	w.step(names.Goal, 2, 3)
	w.turns("s-goal", "", 1, 3_000, "claude-opus")
	w.row(flower.StepResult{Step: names.Goal, SessionID: "s-goal", OK: true, CostUSD: 0.03, NumTurns: 1, Attempts: 1})

	stopAt := o.Rounds/2 + 1
	session, gen, ctxTokens := "s-work-1", 1, 20_000
	for round := 1; round <= o.Rounds; round++ {
		if round == stopAt+1 {
			w.writeManifest()
			w.run, w.clock, w.mark = "run-2", wake2, wake2
			w.rows = nil
		}
		label := names.Work
		if round > 1 {
			label += "#round" + strconv.Itoa(round)
		}
		if round == 1 || round == stopAt+1 {
			w.step(names.Work, 3, 3)
		}
		start := w.clock
		rowRetired := []string(nil)
		for turn := range o.TurnsPerRound {
			if ctxTokens > handoffAt {
				w.ev(w.clock, label, "handoff", "handoff written for "+names.Work, "", map[string]any{"phase": "done", "step": names.Work,
					"context": ctxTokens, "window": window, "path": filepath.Join(wb, "notes", fmt.Sprintf("handoff-%s-%d.md", names.Work, gen))})
				rowRetired = append(rowRetired, session)
				gen++
				session, ctxTokens = fmt.Sprintf("s-work-%d", gen), 18_000
				run.Handoffs++
			}
			if turn == 0 && round == 1 {
				w.prompt(session, "Do as this brief says")
			}
			if turn%6 == 2 {
				id := fmt.Sprintf("t-agent-%d-%d", round, turn)
				w.ev(w.clock, label, "tool_call", "", "Agent", map[string]any{"id": id})
				w.ev(w.clock.Add(time.Second), label, "tool_call", "bash .flower/scripts/check.sh", "Bash", map[string]any{"id": id + "-b", "subagent": true})
				w.turns(session, "subagents/agent-"+id, 2, 6_000, "claude-haiku")
			}
			if round == 3 && turn == 4 {
				w.ev(w.clock, label, "tool_call", "go test ./..."+o.Untrusted, "Bash", map[string]any{"id": "t-denied"})
				w.ev(w.clock.Add(time.Second), label, "tool_result", "The coordinator does not use Bash itself. Dispatch a subagent with the Agent tool: state the goal", "",
					map[string]any{"tool_use_id": "t-denied", "is_error": true})
			}
			if round == 2 && turn == 9 {
				w.ev(w.clock, label, "retry", "interrupted: resuming with your words", "", map[string]any{"step": label, "attempt": 1, "reason": "interrupt", "words": "keep the old API" + o.Untrusted})
			}
			if round == stopAt+2 && turn == 5 {
				w.ev(w.clock, label, "retry", "usage limit: waiting", "", map[string]any{"step": label, "attempt": 1, "reason": "usage_limit"})
				w.clock = w.clock.Add(20 * time.Minute)
			}
			w.turn(session, "", ctxTokens, "claude-opus")
			ctxTokens += 7_000 + (turn%5)*1_500
		}
		r := flower.StepResult{Step: label, SessionID: session, Retired: rowRetired, OK: true, CostUSD: 0.35 + 0.01*float64(round%4),
			NumTurns: o.TurnsPerRound, Attempts: 1, Resumed: round > 1, StartedAt: start, Context: ctxTokens}
		if round == stopAt {
			r.OK, r.Error = false, flower.KilledBySignal
			if o.Untrusted != "" {
				r.Errors = []string{"the store missed an entry" + o.Untrusted}
			}
			w.rowAt(r, start)
			continue
		}
		w.rowAt(r, start)
		judge := names.Work + names.Judge + "#" + strconv.Itoa(round)
		w.turns(fmt.Sprintf("s-judge-%d", round), "", 2, 4_000, "claude-sonnet")
		state, reason, failed := "not_yet", "the refund path is not ported"+o.Untrusted, []string{"refunds"}
		if round == o.Rounds {
			state, reason, failed = "achieved", "every check passes"+o.Untrusted, []string{}
		}
		w.row(flower.StepResult{Step: judge, SessionID: fmt.Sprintf("s-judge-%d", round), OK: true, CostUSD: 0.06, NumTurns: 2, Attempts: 1,
			Text: "The judge's own words beside its structured answer" + o.Untrusted})
		// flower's decision on the round, as the goal guard logs it.
		w.ev(w.clock, names.Work, "verdict", reason, "", map[string]any{"step": names.Work, "round": round, "rounds": o.Rounds,
			"state": state, "label": judge, "failed": failed})
	}
	bequest := names.Work + names.Bequest
	w.turns("s-bequest", "", 1, 5_000, "claude-opus")
	w.row(flower.StepResult{Step: bequest, SessionID: "s-bequest", OK: true, CostUSD: 0.02, NumTurns: 1, Attempts: 1})
	w.writeManifest()

	lin, _ := json.Marshal(map[string]any{"workspace": ws, "woke": 2, "steps": map[string]string{names.Clarify: clarifySID, names.Work: session}})
	write(t, filepath.Join(run.RunDir, flower.LineageName), string(lin))
	write(t, filepath.Join(run.RunDir, flower.RunInfoName), fmt.Sprintf(`{"language":%q}`, o.Lang))
	write(t, filepath.Join(run.RunDir, "events.jsonl"), w.events.String())
	st, err := sqlite.Open(filepath.Join(run.RunDir, "sessions.db"))
	must(t, err)
	for k, entries := range w.keys {
		must(t, st.Append(context.Background(), k, entries))
	}
	must(t, st.Close())

	qa := "# Q&A\n\n- **Q**(q1) Which database?" + o.Untrusted + "\n  - Options: PostgreSQL / SQLite\n  - **A**[answered] PostgreSQL" + o.Untrusted + "\n\n- **The human said**(m1) keep the old API\n"
	if lang == flower.Chinese {
		qa = "# 问答\n\n- **Q**(q1) Which database?" + o.Untrusted + "\n  - 选项:PostgreSQL / SQLite\n  - **A**[answered] PostgreSQL" + o.Untrusted + "\n"
	}
	write(t, filepath.Join(wb, "notes", names.Log), qa)
	write(t, filepath.Join(wb, "notes", names.Brief), "## Goal\nport\n")
	write(t, filepath.Join(wb, "scripts", "check.sh"), "#!/bin/sh\n")
	if o.Untrusted != "" {
		write(t, filepath.Join(wb, "scripts", "check"+strings.ReplaceAll(o.Untrusted, "/", "")+".sh"), "#!/bin/sh\n")
	}
	for i := range 3 {
		write(t, filepath.Join(wb, "spill", fmt.Sprintf("out-%d.txt", i)), strings.Repeat("x", 5000))
	}
	write(t, filepath.Join(ws, "CLAUDE.md"), "# bequest\n")
	run.MainTurns, run.Total = w.mainTurns, w.total
	return run
}

// writer accumulates the run's records in time order.
type writer struct {
	t   testing.TB
	dir string
	run string
	// clock is the time now; mark where the current step started.
	clock, mark time.Time
	rows        []flower.StepResult
	events      strings.Builder
	keys        map[claude.SessionKey][]json.RawMessage
	msg         int
	mainTurns   int
	total       float64
}

func (w *writer) ev(at time.Time, step, kind, text, tool string, payload map[string]any) {
	b, err := json.Marshal(map[string]any{"run": w.run, "step": step, "kind": kind, "text": text, "tool": tool, "payload": payload, "time": at})
	must(w.t, err)
	w.events.Write(append(b, '\n'))
}

func (w *writer) step(name string, index, total int) {
	p := map[string]any{"index": index, "total": total, "woke": 1, "budget": 20.0, "window": window, "handoff_at": handoffAt}
	if w.run == "run-2" {
		p["woke"] = 2
	}
	w.ev(w.clock, name, "step", name, "", p)
	w.mark = w.clock
}

// prompt is a session's first user message.
func (w *writer) prompt(sid, text string) {
	b, err := json.Marshal(map[string]any{"type": "user", "uuid": "p-" + sid, "timestamp": w.clock.UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"role": "user", "content": text}})
	must(w.t, err)
	k := claude.SessionKey{ProjectKey: project, SessionID: sid}
	w.keys[k] = append(w.keys[k], b)
}

// turns adds n model calls of ctxTokens each, 10 s apart.
func (w *writer) turns(sid, sub string, n, ctxTokens int, model string) {
	for range n {
		w.turn(sid, sub, ctxTokens, model)
	}
}

func (w *writer) turn(sid, sub string, ctxTokens int, model string) {
	w.msg++
	w.clock = w.clock.Add(10 * time.Second)
	k := claude.SessionKey{ProjectKey: project, SessionID: sid, Subpath: sub}
	for block := range 2 {
		b, err := json.Marshal(map[string]any{"type": "assistant", "uuid": fmt.Sprintf("a%d-%d", w.msg, block), "timestamp": w.clock.UTC().Format(time.RFC3339Nano),
			"message": map[string]any{"id": fmt.Sprintf("msg_%d", w.msg), "model": model, "role": "assistant",
				"usage": map[string]any{"input_tokens": 40, "output_tokens": 600, "cache_read_input_tokens": ctxTokens * 9 / 10, "cache_creation_input_tokens": ctxTokens / 10}}})
		must(w.t, err)
		w.keys[k] = append(w.keys[k], b)
	}
	if sub == "" {
		w.mainTurns++
	}
}

// row ends the step that started at the mark; the next starts now.
func (w *writer) row(r flower.StepResult) { w.rowAt(r, w.mark) }

func (w *writer) rowAt(r flower.StepResult, start time.Time) {
	r.StartedAt, r.EndedAt = start, w.clock.Add(time.Second)
	w.ev(w.clock, r.Step, "result", "success", "", map[string]any{"session_id": r.SessionID, "cost_usd": r.CostUSD})
	w.rows = append(w.rows, r)
	w.total += r.CostUSD
	w.clock = w.clock.Add(3 * time.Second)
	w.mark = w.clock
}

func (w *writer) writeManifest() {
	_, err := flower.WriteManifest(filepath.Join(w.dir, flower.ManifestName), w.run, w.rows)
	must(w.t, err)
}

func write(t testing.TB, path, text string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o700))
	must(t, os.WriteFile(path, []byte(text), 0o600))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
