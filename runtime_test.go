package flower

// Runtime tests: the pinned Claude Code CLI against claudetest's fake
// Messages API (and, for what the real CLI cannot show offline, the test
// binary re-executed as a scripted CLI).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/workbench"
)

// fastResilience retries at once and never probes a real network.
var fastResilience = Resilience{
	BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond,
	Probe: func(context.Context, string, int) bool { return true },
}

func newTestRuntime(t *testing.T, srv *claudetest.Server, opts ...Option) *Runtime {
	t.Helper()
	return newTestRuntimeIn(t, t.TempDir(), srv, opts...)
}

// newTestRuntimeIn is newTestRuntime for a given workspace.
func newTestRuntimeIn(t *testing.T, ws string, srv *claudetest.Server, opts ...Option) *Runtime {
	t.Helper()
	cli := claudetest.CLIPath(t)
	base := []Option{
		// The tests were written against the original's Chinese; the
		// English default has tests of its own (english_test.go).
		WithLanguage(Chinese),
		WithRunDir(t.TempDir()),
		WithEnv(claudetest.Env(t, srv)),
		WithResilience(fastResilience),
		WithSessionOptions(func(o *claude.Options) {
			o.CLIPath = cli
			o.BaseEnv = claudetest.BaseEnv()
		}),
	}
	rt, err := New(ws, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func testSpec() AgentSpec {
	return AgentSpec{Name: "work", AllowedTools: []string{"Bash", "Read"}, PermissionMode: "acceptEdits"}
}

func runCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func bashReply(cmd string) claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": cmd, "description": "step"}))
}

// eventLog collects a step's events.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) of(kind event.Kind, phase string) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Event
	for _, e := range l.evs {
		if e.Kind == kind && (phase == "" || e.Str("phase") == phase) {
			out = append(out, e)
		}
	}
	return out
}

func TestRealRunSucceedsWithAManifestRow(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:ok": {bashReply("echo done"), claudetest.Say("all done")}}.Handler())
	rt := newTestRuntime(t, srv)
	var sessions []string
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:ok", RunOptions{OnSession: func(step, sid string) { sessions = append(sessions, step+"="+sid) }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Text != "all done" || res.CostUSD <= 0 || res.NumTurns != 2 || res.Attempts != 1 || res.SessionID == "" {
		t.Fatalf("result = %+v", res)
	}
	if len(sessions) != 1 || sessions[0] != "work="+res.SessionID {
		t.Errorf("OnSession calls = %v", sessions)
	}
	rows, err := ReadManifest(rt.ManifestPath())
	if err != nil || len(rows) != 1 {
		t.Fatalf("manifest rows = %+v, %v", rows, err)
	}
	if rows[0].Run != rt.RunID() || rows[0].Step != "work" || !rows[0].OK || rows[0].CostUSD != res.CostUSD {
		t.Errorf("manifest row = %+v", rows[0])
	}
	if !regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{6}$`).MatchString(rt.RunID()) {
		t.Errorf("RunID = %q, want YYYYmmdd-HHMMSS-<6 hex>", rt.RunID())
	}
	if rt.TotalCost() <= 0 {
		t.Error("TotalCost should count the step")
	}
	if ok, err := rt.HasSession(runCtx(t), res.SessionID); !ok || err != nil {
		t.Errorf("HasSession = %v, %v", ok, err)
	}
	b, err := os.ReadFile(filepath.Join(rt.RunDir(), "events.jsonl"))
	if err != nil || !strings.Contains(string(b), `"kind":"result"`) || !strings.Contains(string(b), `"run":"`+rt.RunID()+`"`) {
		t.Errorf("events.jsonl: %v\n%s", err, b)
	}
	if strings.Contains(string(b), `"raw":`) {
		t.Error("events.jsonl should not repeat the raw CLI messages the store keeps")
	}
}

func TestRealRetryResumesTheSameSession(t *testing.T) {
	t.Parallel()
	resume := DefaultResumePrompt(Chinese)
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText(resume):
			return claudetest.Say("finished after the retry")
		case len(r.ToolResults()) == 0:
			return bashReply("echo step one")
		default:
			return claudetest.Reply{Fault: claudetest.ServerError()}
		}
	})
	rt := newTestRuntime(t, srv, WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "0"}))
	var log eventLog
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:flaky", RunOptions{OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || !res.Resumed || res.Attempts != 2 || res.Text != "finished after the retry" {
		t.Fatalf("result = %+v", res)
	}
	last := srv.Requests()[srv.Count()-1]
	if !last.HasText("SCENARIO:flaky") || !last.HasText("step one") {
		t.Error("the retry did not resume the same session's history")
	}
	if len(log.of(event.Retry, "")) == 0 {
		t.Error("no retry event")
	}
	if strings.Contains(res.Text, "API Error") {
		t.Error("a synthetic API error leaked into the text")
	}
}

func TestRealInterruptResumesWithTheWords(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("use the blue one") {
			return claudetest.Say("switched to blue")
		}
		return bashReply("timeout 600 tail -f /dev/null")
	})
	spec := testSpec()
	started := make(chan struct{}, 1)
	spec.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
				HookEventName: claude.PreToolUse, PermissionDecision: claude.DecisionAllow}}, nil
		}}}}}
	rt := newTestRuntime(t, srv)
	go func() {
		<-started
		time.Sleep(300 * time.Millisecond)
		rt.Interrupt("use the blue one")
	}()
	begin := time.Now()
	var words []string
	var mu sync.Mutex
	onEvent := func(e Event) {
		if e.Kind == event.Retry && e.Str("reason") == "interrupt" {
			mu.Lock()
			words = append(words, e.Str("words"))
			mu.Unlock()
		}
	}
	res, err := rt.Run(runCtx(t), spec, "SCENARIO:paint", RunOptions{OnEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Text != "switched to blue" || res.Attempts != 1 || !res.Resumed {
		t.Fatalf("result = %+v (an interrupt spends no attempt)", res)
	}
	// The event log is the run's record of the words: flower report
	// shows them.
	mu.Lock()
	if !slices.Equal(words, []string{"use the blue one"}) {
		t.Errorf("the interrupt events carry the words %q", words)
	}
	mu.Unlock()
	last := srv.Requests()[srv.Count()-1]
	if !last.HasText("use the blue one") || !last.HasText(PromptsFor(Chinese).InterruptNote[:30]) || !last.HasText("SCENARIO:paint") {
		t.Error("the resumed session did not get the words, the note and the history")
	}
	// The mechanism, not a time: a run that waited for its ten-minute
	// tool would end past runCtx's bound. (A 40 s bound failed with the
	// suite run side by side, the tool long killed.)
	t.Logf("the interrupted step ended %s after it began", time.Since(begin).Round(time.Millisecond))
	if rt.Interrupt("late") {
		t.Error("Interrupt with no step running should report false")
	}
}

// handoffDoc is a complete handoff in the Chinese format the prompt asks for.
const handoffDoc = "## 现在在做什么\n在搭框架\n## 已经定下的\n用 Go\n## 走不通的路\n(暂无)\n## 下一步\n写 main.go\n## 现场\nmain.go"

func TestRealHandoffAtTheThreshold(t *testing.T) {
	t.Parallel()
	handoffPrompt := PromptsFor(Chinese).Handoff[:20]
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText(handoffPrompt):
			return claudetest.Say(handoffDoc)
		case r.HasText("写 main.go"): // the successor's handoff block
			return claudetest.Say("continued from the handoff")
		case len(r.ToolResults()) == 0:
			rep := bashReply("echo working")
			rep.Usage = claudetest.Usage{InputTokens: 35_000, OutputTokens: 5}
			return rep
		default:
			rep := bashReply("echo more")
			rep.Usage = claudetest.Usage{InputTokens: 20_000, CacheReadInputTokens: 35_000, OutputTokens: 5}
			return rep
		}
	})
	wb := workbench.New(t.TempDir())
	rt := newTestRuntime(t, srv, WithHandoff(HandoffPolicy{Window: 100_000}), WithWorkbench(wb))
	var log eventLog
	var sessions []string
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:big", RunOptions{OnEvent: log.add,
		OnSession: func(_, sid string) { sessions = append(sessions, sid) }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Text != "continued from the handoff" || len(res.Retired) != 1 || res.SessionID == res.Retired[0] || res.Attempts != 1 {
		t.Fatalf("result = %+v", res)
	}
	if len(sessions) != 2 || sessions[0] != res.Retired[0] || sessions[1] != res.SessionID {
		t.Errorf("OnSession saw %v; want the retired session, then its successor", sessions)
	}
	if n := len(log.of(event.Handoff, "near")); n != 1 {
		t.Errorf("near events = %d, want 1", n)
	}
	done := log.of(event.Handoff, "done")
	if len(done) != 1 || done[0].Bool("degraded") {
		t.Fatalf("done events = %+v", done)
	}
	path := done[0].Str("path")
	if path != filepath.Join(wb.Notes(), "交接-work.md") {
		t.Errorf("handoff path = %q", path)
	}
	h, err := doc.LoadHandoff(path)
	if err != nil || h.Next != "写 main.go" || h.Step != "work" {
		t.Fatalf("handoff on disk: %+v, %v", h, err)
	}
	// The fresh session started from the handoff's prompt block and none of
	// the old history.
	last := srv.Requests()[srv.Count()-1]
	if last.HasText("SCENARIO:big") || !last.HasText("在搭框架") {
		t.Error("the successor should get the handoff, not the old history")
	}
}

func TestRealPromptTooLongHandsOffAtOnce(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText(doc.DegradedMarker):
			return claudetest.Say("recovered from a degraded handoff")
		case len(r.ToolResults()) == 0:
			return bashReply("echo filling up")
		default:
			return claudetest.Reply{Fault: claudetest.PromptTooLong()}
		}
	})
	rt := newTestRuntime(t, srv, WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "0"}))
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:overflow", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Retired) != 1 || res.Text != "recovered from a degraded handoff" {
		t.Fatalf("result = %+v", res)
	}
	if !strings.Contains(strings.Join(res.Errors, "\n"), "交接降级") {
		t.Errorf("errors %q should record the degraded handoff", res.Errors)
	}
}

func TestRealGenerationsExhaustedIsADiagnosticError(t *testing.T) {
	t.Parallel()
	handoffPrompt := PromptsFor(Chinese).Handoff[:20]
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText(handoffPrompt) {
			return claudetest.Say(handoffDoc)
		}
		rep := bashReply("echo heavy start")
		rep.Usage = claudetest.Usage{InputTokens: 60_000, OutputTokens: 5} // over At from the first turn
		return rep
	})
	rt := newTestRuntime(t, srv, WithHandoff(HandoffPolicy{Window: 100_000, MaxGenerations: 2}))
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:floor", RunOptions{})
	var se *StepError
	if !errors.As(err, &se) || res.OK || !strings.Contains(res.Error, "换代 2 次") || len(res.Retired) != 2 {
		t.Fatalf("err = %v, result = %+v", err, res)
	}
}

func TestRealRunBudgetStopsCleanlyAndALaterRunContinues(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("continue please") {
			return claudetest.Say("finished later")
		}
		rep := bashReply("echo costly")
		rep.Usage = claudetest.Usage{InputTokens: 1000, OutputTokens: 100}
		return rep
	})
	runDir, ws := t.TempDir(), t.TempDir()
	rt := newTestRuntimeIn(t, ws, srv, WithBudget(0.02), WithRunDir(runDir))
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:spend", RunOptions{})
	if err == nil || res.OK || !strings.Contains(res.Error, "预算") || res.SessionID == "" || res.Attempts != 1 {
		t.Fatalf("err = %v, result = %+v", err, res)
	}
	if res.CostUSD < 0.02 {
		t.Errorf("cost %.4f: the budget should have been reached", res.CostUSD)
	}

	// Another process on another day: a fresh HOME; the session comes back
	// from the run directory's store.
	later := newTestRuntimeIn(t, ws, srv, WithBudget(1), WithRunDir(runDir))
	res2, err := later.Run(runCtx(t), testSpec(), "continue please", RunOptions{Resume: res.SessionID})
	if err != nil || !res2.OK || res2.Text != "finished later" {
		t.Fatalf("later run: %v, %+v", err, res2)
	}
	rows, err := ReadManifest(later.ManifestPath())
	if err != nil || len(rows) != 2 {
		t.Errorf("manifest rows = %d (%v), want both runs'", len(rows), err)
	}
}

func TestRealCoordinatorWithoutAWorkbenchCannotWriteButItsWorkerCan(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:lead": {
			claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "lead.txt"), "content": "x"})),
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "write", "prompt": "SUBAGENT:write", "subagent_type": "coder", "run_in_background": false})),
			claudetest.Say("led"),
		},
		"SUBAGENT:write": {
			claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "worker.txt"), "content": "y"})),
			claudetest.Say("written"),
		},
	}.Handler())
	cli := claudetest.CLIPath(t)
	rt, err := New(ws, WithRunDir(t.TempDir()), WithEnv(claudetest.Env(t, srv)), WithResilience(fastResilience),
		WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.Workbench() != nil {
		t.Fatal("this runtime must have no workbench")
	}
	lead := Coordinator("lead", "", map[string]claude.AgentDefinition{"coder": Worker("writes files", "You write files.")})
	if _, err := rt.Run(runCtx(t), lead, "SCENARIO:lead", RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "lead.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the coordinator wrote a file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "worker.txt")); err != nil {
		t.Errorf("the worker could not write: %v", err)
	}
}

func TestNewWithoutCredentialsNamesWhatToSet(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("FLOWER_ENV", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	_, err := New(t.TempDir(), WithRunDir(t.TempDir()))
	var me *MissingCredentialsError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v, want a MissingCredentialsError naming ANTHROPIC_API_KEY", err)
	}
}

func TestRunRefusesForkWithoutResume(t *testing.T) {
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.Run(context.Background(), testSpec(), "x", RunOptions{Fork: true}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("fork without resume: %v", err)
	}
	spec := testSpec()
	spec.Compact = &CompactPolicy{Mode: "sometimes"}
	if _, err := rt.Run(context.Background(), spec, "x", RunOptions{}); err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("unknown compact mode: %v", err)
	}
}

func TestRescueRecordsTheStepInFlight(t *testing.T) {
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rt.Rescue() // nothing in flight: no row
	r := NewStepResult("work")
	r.CostUSD = 0.5
	rt.mu.Lock()
	rt.inflight, rt.running = r, true
	rt.mu.Unlock()
	rt.Rescue()
	rows, err := ReadManifest(rt.ManifestPath())
	if err != nil || len(rows) != 1 || rows[0].Error != KilledBySignal || rows[0].CostUSD != 0.5 || rows[0].EndedAt.IsZero() {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
}

func TestRealTwoDegradedHandoffsInARowStopTheStep(t *testing.T) {
	t.Parallel()
	handoffPrompt := PromptsFor(Chinese).Handoff[:20]
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText(handoffPrompt) {
			return claudetest.Say("sorry, I lost track") // no sections: a handoff that fails to be written
		}
		rep := bashReply("echo heavy")
		rep.Usage = claudetest.Usage{InputTokens: 60_000, OutputTokens: 5}
		return rep
	})
	wb := workbench.New(t.TempDir())
	rt := newTestRuntime(t, srv, WithHandoff(HandoffPolicy{Window: 100_000}), WithWorkbench(wb))
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:lost", RunOptions{})
	if err == nil || res.OK || !strings.Contains(res.Error, "连续 2 次降级") {
		t.Fatalf("err = %v, result %+v", err, res)
	}
	if n := strings.Count(strings.Join(res.Errors, "\n"), "交接降级(缺"); n != 2 {
		t.Errorf("degradation notes = %d in %q", n, res.Errors)
	}
	// The second degraded handoff replaced the first on disk; the first is
	// in the archive.
	h, err := doc.LoadHandoff(filepath.Join(wb.Notes(), "交接-work.md"))
	if err != nil || !h.IsDegraded() || !strings.Contains(h.Scene, "SCENARIO:lost") {
		t.Fatalf("degraded handoff on disk: %+v, %v", h, err)
	}
	archived, _ := filepath.Glob(filepath.Join(wb.Notes(), "archive", "交接", "work-*.md"))
	if len(archived) != 1 {
		t.Errorf("archived handoffs = %v, want the first", archived)
	}
}

// Cancelling a run mid-turn stops the turn now: Run returns long before
// the shutdown grace (a minute here) or the tool's own end (five minutes),
// and the cancelled tool's result never reaches the API. The bound of 30 s
// is half the grace, room for a loaded machine; it measures no speed (it
// was 2 s, and a loaded CI took 2.6 s). The CLI is also sent an interrupt,
// but the bound does not tell that apart from closing its input: with the
// interrupt left out, Run still returned within a second.
func TestRealCancellingARunInterruptsTheCLI(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:cancel-run": {bashReply("timeout 300 tail -f /dev/null; echo woke"), claudetest.Say("never")}}.Handler())
	rt := newTestRuntime(t, srv, WithSessionOptions(func(o *claude.Options) { o.ShutdownGrace = time.Minute }))
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	var once sync.Once
	var cancelledAt time.Time
	var mu sync.Mutex
	_, err := rt.Run(ctx, testSpec(), "SCENARIO:cancel-run", RunOptions{OnEvent: func(e Event) {
		if e.Kind == event.ToolCall && e.Tool == "Bash" {
			once.Do(func() {
				go func() {
					time.Sleep(500 * time.Millisecond) // let the tool start
					mu.Lock()
					cancelledAt = time.Now()
					mu.Unlock()
					cancel()
				}()
			})
		}
	}})
	mu.Lock()
	at := cancelledAt
	mu.Unlock()
	if at.IsZero() {
		t.Fatalf("the tool call never came: %v", err)
	}
	if d := time.Since(at); d > 30*time.Second {
		t.Errorf("Run returned %s after the cancel: the turn did not stop (the grace is a minute)", d)
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("the fake API saw %d requests; the cancelled tool's result must never reach it", n)
	}
}

func TestTranscriptsHoldingFindsWordsAsTheCLIStoredThem(t *testing.T) {
	t.Parallel()
	// What a front end asks after a kill: did a call of this workspace
	// carry words the inbox handed out? The words hold what JSON escapes
	// (quotes, a backslash, <>&, a newline) and what it does not (CJK).
	words := "add \"quotes\" <b>&</b> \\ and\n再写一个 README"
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:held": {claudetest.Say("noted")}}.Handler())
	rt := newTestRuntime(t, srv)
	before := time.Now().Add(-time.Minute)
	if _, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:held "+words, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := rt.TranscriptsHolding(runCtx(t), before, []string{words, "never said"})
	if err != nil || !held[words] || held["never said"] {
		t.Errorf("TranscriptsHolding = %v, %v; want only the words said held", held, err)
	}
	// A transcript not written since the time asked about is not read.
	if held, err := rt.TranscriptsHolding(runCtx(t), time.Now().Add(time.Hour), []string{words}); err != nil || held[words] {
		t.Errorf("a transcript older than since was read: %v, %v", held, err)
	}
}
