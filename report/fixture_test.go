package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store/sqlite"
)

// fixture is a run directory written by the writers flower itself uses
// (WriteManifest, the SQLite store, events.jsonl lines as the runtime logs
// them): one wake whose work step retried once, handed off once (session
// s-work-1 retired for s-work-2) and waited for a usage limit, and whose
// judge ruled the goal unreachable; a side question cost the oracle $0.02.
type fixture struct {
	ws, runDir string
	t0         time.Time
}

const project = "-fixture"

// fixtureRequest is the request the fixture's clarify step was given.
const fixtureRequest = "Add a billing export to the API"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ws := t.TempDir()
	f := &fixture{ws: ws, runDir: filepath.Join(ws, "runs"), t0: time.Now().Add(-time.Hour).Truncate(time.Second)}
	if err := os.MkdirAll(filepath.Join(ws, ".flower", "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ws, ".flower", "scripts"), 0o700)
	os.MkdirAll(filepath.Join(ws, ".flower", "spill"), 0o700)
	at := func(s int) time.Time { return f.t0.Add(time.Duration(s) * time.Second) }
	rows := []flower.StepResult{
		{Step: "clarify", SessionID: "s-clarify", OK: true, CostUSD: 0.01, NumTurns: 1, Attempts: 1, StartedAt: at(0), EndedAt: at(10), Context: 900},
		{Step: "work", SessionID: "s-work-2", Retired: []string{"s-work-1"}, OK: true, CostUSD: 0.50, NumTurns: 6, Attempts: 2,
			Resumed: true, StartedAt: at(20), EndedAt: at(200), Context: 3000},
		{Step: "work·judge#1", SessionID: "s-judge", OK: true, CostUSD: 0.04, NumTurns: 1, Attempts: 1, StartedAt: at(210), EndedAt: at(220),
			Text: "## Conclusion\nunreachable\n\n## Reason\nthe service it needs is not reachable from here\n\n## Not passed\n- curl the staging API\n- run the load test"},
	}
	if _, err := flower.WriteManifest(filepath.Join(f.runDir, flower.ManifestName), "run-1", rows); err != nil {
		t.Fatal(err)
	}
	// A side question, answered by the oracle in its own run directory.
	aside := []flower.StepResult{{Step: "oracle", SessionID: "s-oracle", OK: true, CostUSD: 0.02, NumTurns: 1, Attempts: 1, StartedAt: at(50), EndedAt: at(55)}}
	if _, err := flower.WriteManifest(filepath.Join(f.runDir, "aside", flower.ManifestName), "aside-1", aside); err != nil {
		t.Fatal(err)
	}
	lin, _ := json.Marshal(map[string]any{"workspace": ws, "woke": 1, "steps": map[string]string{"clarify": "s-clarify", "work": "s-work-2"}})
	writeFile(t, filepath.Join(f.runDir, flower.LineageName), string(lin))
	writeFile(t, filepath.Join(f.runDir, flower.RunInfoName), `{"language":"en"}`)

	type ev struct {
		at      int
		step    string
		kind    string
		text    string
		tool    string
		payload map[string]any
	}
	evs := []ev{
		{0, "clarify", "step", "clarify", "", map[string]any{"index": 1, "total": 2, "woke": 1, "budget": 2.5, "window": 200000, "handoff_at": 150000}},
		{2, "clarify", "tool_call", "", "mcp__human__ask", map[string]any{"id": "t-ask", "input": map[string]any{"question": "Which database?"}}},
		{6, "clarify", "tool_result", "PostgreSQL", "", map[string]any{"tool_use_id": "t-ask"}},
		{9, "clarify", "result", "success", "", map[string]any{"session_id": "s-clarify", "cost_usd": 0.01}},
		{20, "work", "step", "work", "", map[string]any{"index": 2, "total": 2, "woke": 1, "budget": 2.5, "window": 200000, "handoff_at": 150000}},
		{25, "work", "tool_call", "go test ./...", "Bash", map[string]any{"id": "t-bash", "input": map[string]any{"command": "go test ./..."}}},
		{26, "work", "tool_result", "The coordinator does not use Bash itself. Dispatch a subagent with the Agent tool: state the goal", "",
			map[string]any{"tool_use_id": "t-bash", "is_error": true}},
		{30, "work", "tool_call", "", "Agent", map[string]any{"id": "t-agent"}},
		{31, "work", "tool_call", "bash .flower/scripts/check.sh", "Bash", map[string]any{"id": "t-b2", "subagent": true}},
		{32, "work", "tool_call", "bash .flower/scripts/check.sh --fast", "Bash", map[string]any{"id": "t-b3", "subagent": true}},
		{33, "work", "tool_result", "[Output of 9000 characters saved to " + ws + "/.flower/spill/abc.txt: Read it]", "", map[string]any{"tool_use_id": "t-b3", "subagent": true}},
		{60, "work", "retry", "attempt 1 failed (overloaded): retrying", "", map[string]any{"step": "work", "attempt": 1}},
		{70, "work", "retry", "usage limit: waiting until 12:00", "", map[string]any{"step": "work", "attempt": 2, "reason": "usage_limit"}},
		{100, "work", "handoff", "handoff written for work", "", map[string]any{"phase": "done", "step": "work", "context": 151000, "window": 200000,
			"path": filepath.Join(ws, ".flower", "notes", "handoff-work.md")}},
		{199, "work", "result", "success", "", map[string]any{"session_id": "s-work-2", "cost_usd": 0.3}},
		{215, "work·judge#1", "result", "success", "", map[string]any{"session_id": "s-judge", "cost_usd": 0.04}},
		// flower's decision on the judge's round, as the goal guard logs it.
		{221, "work", "verdict", "the service it needs is not reachable from here", "", map[string]any{"step": "work", "round": 1, "rounds": 3,
			"state": "unreachable", "label": "work·judge#1", "failed": []string{"curl the staging API", "run the load test"}}},
	}
	var lines string
	for _, e := range evs {
		b, _ := json.Marshal(map[string]any{"run": "run-1", "step": e.step, "kind": e.kind, "text": e.text, "tool": e.tool, "payload": e.payload, "time": at(e.at)})
		lines += string(b) + "\n"
	}
	writeFile(t, filepath.Join(f.runDir, "events.jsonl"), lines)

	st, err := sqlite.Open(filepath.Join(f.runDir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	n := 0
	turn := func(sid, sub string, s int, model string, in, out, read, write int) {
		n++
		// The CLI writes one entry per content block, each with the
		// message's usage: two entries, one turn.
		var entries []json.RawMessage
		for block := range 2 {
			b, _ := json.Marshal(map[string]any{"type": "assistant", "uuid": fmt.Sprintf("u%d-%d", n, block), "timestamp": at(s).UTC().Format(time.RFC3339Nano),
				"message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "model": model, "role": "assistant",
					"usage": map[string]any{"input_tokens": in, "output_tokens": out, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}}})
			entries = append(entries, b)
		}
		user, _ := json.Marshal(map[string]any{"type": "user", "uuid": fmt.Sprintf("user%d", n), "timestamp": at(s).UTC().Format(time.RFC3339Nano), "message": map[string]any{"role": "user", "content": "go on"}})
		entries = append(entries, user)
		if err := st.Append(ctx, claude.SessionKey{ProjectKey: project, SessionID: sid, Subpath: sub}, entries); err != nil {
			t.Fatal(err)
		}
	}
	// The clarify step is given the request as it was typed.
	req, _ := json.Marshal(map[string]any{"type": "user", "uuid": "req", "timestamp": at(1).UTC().Format(time.RFC3339Nano), "message": map[string]any{"role": "user", "content": fixtureRequest}})
	if err := st.Append(ctx, claude.SessionKey{ProjectKey: project, SessionID: "s-clarify"}, []json.RawMessage{req}); err != nil {
		t.Fatal(err)
	}
	turn("s-clarify", "", 3, "claude-opus", 10, 50, 800, 100)
	turn("s-work-1", "", 22, "claude-opus", 20, 100, 40000, 5000)
	turn("s-work-1", "", 40, "claude-opus", 20, 100, 100000, 51000)
	turn("s-work-1", "subagents/agent-a1", 32, "claude-haiku", 5, 300, 2000, 1000)
	turn("s-work-2", "", 110, "claude-opus", 30, 200, 0, 9000)
	turn("s-work-2", "", 150, "claude-opus", 30, 200, 9000, 1000)
	turn("s-judge", "", 212, "claude-sonnet", 5, 80, 1000, 200)

	writeFile(t, filepath.Join(ws, ".flower", "notes", "brief.md"), "## Goal\nx\n")
	writeFile(t, filepath.Join(ws, ".flower", "notes", "handoff-work.md"), "## Doing\nx\n")
	writeFile(t, filepath.Join(ws, ".flower", "notes", "qa-log.md"), "# Q&A\n\n- **Q**(q1) Which database?\n  - Options: PostgreSQL / SQLite\n  - **A**[answered] PostgreSQL\n\n- **The human said**(m1) keep the old API\n")
	writeFile(t, filepath.Join(ws, ".flower", "scripts", "check.sh"), "#!/bin/sh\n")
	writeFile(t, filepath.Join(ws, ".flower", "spill", "abc.txt"), string(make([]byte, 9000)))
	writeFile(t, filepath.Join(ws, "CLAUDE.md"), "# bequest\n")
	return f
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
