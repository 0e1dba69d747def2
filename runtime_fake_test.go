package flower

// TestMain also runs the helper processes of the two-process manifest test.
//
// A scripted CLI for what the real one cannot show offline: CLI 2.1.332
// reports rate_limit_event (with resetsAt) only for subscription accounts,
// never against an API key, so the usage-limit wait is driven by the test
// binary re-executed as a fake `claude`.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/fakecli"
)

func TestMain(m *testing.M) {
	switch os.Getenv("FLOWER_FAKE_CLI") {
	case "":
	case "handoff-blip":
		fakeHandoffBlipCLI()
		return
	case "workflow":
		fakeWorkflowCLI()
		return
	case "mirror":
		fakeMirrorCLI()
		return
	case "slow-start":
		fakeSlowStartCLI()
		return
	default:
		fakeUsageLimitCLI()
		return
	}
	if spec := os.Getenv("FLOWER_TEST_WORKFLOW_HELPER"); spec != "" {
		if err := workflowHelper(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv("FLOWER_TEST_LINEAGE_HELPER"); dir != "" {
		if err := lineageHelper(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv("FLOWER_TEST_MANIFEST_WRITER"); spec != "" {
		if err := manifestHelper(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// fakeUsageLimitCLI rejects its first session with a usage limit that
// resets two seconds later; a resumed session succeeds.
func fakeUsageLimitCLI() {
	if fakecli.AnsweredVersion() {
		os.Exit(0)
	}
	s := fakecli.Connect()
	s.Read() // the prompt
	const sid = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
	resumed := false
	for _, a := range os.Args {
		resumed = resumed || a == "--resume="+sid
	}
	s.Init(sid)
	if resumed {
		s.Say(sid, "resumed after the reset")
		s.Success(sid, "resumed after the reset")
		s.Drain()
		os.Exit(0)
	}
	reset := time.Now().Add(2 * time.Second).Unix()
	s.Send(map[string]any{"type": "rate_limit_event", "session_id": sid, "uuid": "r",
		"rate_limit_info": map[string]any{"status": "rejected", "resetsAt": reset, "rateLimitType": "five_hour"}})
	s.Send(map[string]any{"type": "assistant", "session_id": sid, "uuid": "a1", "parent_tool_use_id": nil, "error": "rate_limit",
		"message": map[string]any{"id": "m1", "model": "<synthetic>", "content": []any{map[string]any{"type": "text", "text": "You've hit your session limit · resets soon"}}}})
	s.Send(map[string]any{"type": "result", "subtype": "success", "is_error": true, "duration_ms": 1, "duration_api_ms": 1,
		"num_turns": 1, "result": "You've hit your session limit · resets soon", "session_id": sid, "api_error_status": 429, "terminal_reason": "api_error"})
	s.Drain()
	os.Exit(1)
}

// fakeSlowStartCLI takes five seconds to answer initialize (a
// loaded machine, slow MCP servers), then answers at once.
func fakeSlowStartCLI() {
	if fakecli.AnsweredVersion() {
		os.Exit(0)
	}
	time.Sleep(5 * time.Second)
	s := fakecli.Connect()
	s.Read() // the prompt
	const sid = "aaaaaaaa-bbbb-cccc-dddd-ffffffffffff"
	s.Init(sid)
	s.Success(sid, "up at last")
	s.Drain()
	os.Exit(0)
}

// fakeCLI makes this test binary, scripted as scenario, every session's
// CLI, with env added to its minimal environment.
func fakeCLI(t *testing.T, scenario string, env ...string) Option {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return WithSessionOptions(func(o *claude.Options) {
		o.CLIPath = exe
		o.BaseEnv = append([]string{"PATH=" + os.Getenv("PATH"), "FLOWER_FAKE_CLI=" + scenario}, env...)
	})
}

func TestFakeASlowStartIsNoStall(t *testing.T) {
	t.Parallel()
	rt, err := New(t.TempDir(), WithLanguage(Chinese), WithRunDir(t.TempDir()),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}),
		WithResilience(Resilience{MaxAttempts: 1, StallTimeout: 3 * time.Second, Probe: fastResilience.Probe}),
		fakeCLI(t, "slow-start"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(runCtx(t), testSpec(), "work", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Attempts != 1 {
		t.Fatalf("result = %+v: a start-up slower than StallTimeout (bounded by the initialize timeout) is no stall", res)
	}
}

func TestFakeUsageLimitWaitsForTheResetWithoutSpendingAnAttempt(t *testing.T) {
	t.Parallel()
	rt, err := New(t.TempDir(), WithLanguage(Chinese), WithRunDir(t.TempDir()),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}),
		WithResilience(Resilience{MaxAttempts: 1, UsageLimitMargin: -1, Probe: fastResilience.Probe}),
		fakeCLI(t, "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var log eventLog
	begin := time.Now()
	res, err := rt.Run(runCtx(t), testSpec(), "work", RunOptions{OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(begin)
	if !res.OK || res.Text != "resumed after the reset" || res.Attempts != 1 || !res.Resumed {
		t.Fatalf("result = %+v (MaxAttempts 1: the wait must not spend an attempt)", res)
	}
	if waited < time.Second {
		t.Errorf("the step went on after %s, before the reset", waited)
	}
	var said bool
	for _, e := range log.of(event.Retry, "") {
		said = said || strings.Contains(e.Text, "用量到上限")
		// flower report tells a usage wait from a retry by this, not by
		// the localized text.
		if strings.Contains(e.Text, "用量到上限") && e.Str("reason") != "usage_limit" {
			t.Errorf("the usage wait's event has reason %q, want usage_limit", e.Str("reason"))
		}
	}
	if !said {
		t.Error("no retry event told the human about the wait")
	}
}

// fakeCall is one run of the scripted CLI: its arguments and the prompt it
// was sent, kept in FLOWER_FAKE_DIR as call-<n>.json.
type fakeCall struct {
	Args   []string `json:"args"`
	Prompt string   `json:"prompt"`
}

// fakeHandoffBlipCLI scripts a handoff whose successor dies in a network
// blip before it has a session id: the first call overflows the context
// (prompt_too_long, a forced degraded handoff), the second exits before any
// message, every later one succeeds. Each call is recorded.
func fakeHandoffBlipCLI() {
	if fakecli.AnsweredVersion() {
		os.Exit(0)
	}
	s := fakecli.Connect()
	prompt := s.Read()
	text := fakecli.Text(prompt)
	dir := os.Getenv("FLOWER_FAKE_DIR")
	n := 1
	for ; ; n++ {
		f, err := os.OpenFile(fmt.Sprintf("%s/call-%d.json", dir, n), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			json.NewEncoder(f).Encode(fakeCall{Args: os.Args[1:], Prompt: text})
			f.Close()
			break
		}
		if !os.IsExist(err) {
			os.Exit(3)
		}
	}
	sid := fmt.Sprintf("aaaaaaaa-bbbb-cccc-dddd-%012d", n)
	switch n {
	case 1:
		s.Init(sid)
		s.Send(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "duration_ms": 1,
			"duration_api_ms": 1, "num_turns": 1, "result": "Prompt is too long", "session_id": sid,
			"api_error_status": 400, "terminal_reason": "prompt_too_long", "total_cost_usd": 0.01})
	case 2:
		os.Exit(1) // the blip: no message, no session id
	default:
		s.Init(sid)
		s.Say(sid, "carried on")
		s.Success(sid, "carried on")
	}
	s.Drain()
	os.Exit(0)
}

func TestFakeRetryAfterAHandoffRerunsTheSuccessorsOpening(t *testing.T) {
	t.Parallel()
	calls := t.TempDir()
	rt, err := New(t.TempDir(), WithLanguage(Chinese), WithRunDir(t.TempDir()),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}),
		WithResilience(fastResilience),
		fakeCLI(t, "handoff-blip", "FLOWER_FAKE_DIR="+calls))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(runCtx(t), testSpec(), "ORIGINAL TASK", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Text != "carried on" || len(res.Retired) != 1 {
		t.Fatalf("result = %+v", res)
	}
	var third fakeCall
	b, err := os.ReadFile(calls + "/call-3.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &third); err != nil {
		t.Fatal(err)
	}
	for _, a := range third.Args {
		if strings.HasPrefix(a, "--resume") {
			t.Errorf("the retry resumed a session (%s); the successor had none", a)
		}
	}
	if !strings.Contains(third.Prompt, doc.DegradedMarker) {
		t.Errorf("the retry's prompt is not the handoff block:\n%s", third.Prompt)
	}
}

// fakeMirrorCLI mirrors one transcript entry, then ends a clean turn.
func fakeMirrorCLI() {
	if fakecli.AnsweredVersion() {
		os.Exit(0)
	}
	s := fakecli.Connect()
	s.Read() // the prompt
	const sid = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
	path := filepath.Join(os.Getenv("CLAUDE_CONFIG_DIR"), "projects", "-w", sid+".jsonl")
	s.Send(map[string]any{"type": "transcript_mirror", "filePath": path, "entries": []any{map[string]any{"type": "user", "uuid": "e1"}}})
	s.Say(sid, "done")
	s.Success(sid, "done")
	s.Drain()
	os.Exit(0)
}

// refusingStore refuses every append.
type refusingStore struct{ claude.SessionStore }

func (refusingStore) Append(context.Context, claude.SessionKey, []json.RawMessage) error {
	return errors.New("disk full")
}

func TestFakeStoreLossIsRecordedInTheResultTheManifestAndTheEvents(t *testing.T) {
	t.Parallel()
	rt, err := New(t.TempDir(), WithLanguage(Chinese), WithRunDir(t.TempDir()), WithStore(refusingStore{}),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}),
		fakeCLI(t, "mirror", "CLAUDE_CONFIG_DIR="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), testSpec(), "work", RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const want = "session store lost 1 transcript entries of aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee (disk full)"
	if !res.OK || len(res.Errors) != 1 || !strings.HasPrefix(res.Errors[0], want) {
		t.Fatalf("result OK %v, errors %q; want the step's own outcome and the loss recorded", res.OK, res.Errors)
	}
	for _, name := range []string{"manifest.json", "events.jsonl"} {
		b, err := os.ReadFile(filepath.Join(rt.RunDir(), name))
		if err != nil || !strings.Contains(string(b), "disk full") {
			t.Errorf("%s does not record the loss: %v\n%s", name, err, b)
		}
	}
}

// The driver reads no variable of flower's: FLOWER_CLAUDE from the
// runtime's environment (WithEnv here; the .env chain alike) names the CLI.
func TestFakeFlowerClaudeFromTheRuntimeEnvironmentNamesTheCLI(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(t.TempDir(), WithLanguage(Chinese), WithRunDir(t.TempDir()), WithStore(refusingStore{}),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake", "FLOWER_CLAUDE": exe,
			"FLOWER_FAKE_CLI": "mirror", "CLAUDE_CONFIG_DIR": t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(context.Background(), testSpec(), "work", RunOptions{})
	if err != nil || res.Text != "done" {
		t.Fatalf("result %+v, err %v: the session did not run the CLI FLOWER_CLAUDE names", res, err)
	}
}

// TestStepPayloadRecordsWhatTheReportNeeds: the run directory keeps the
// budget, the window and the handoff threshold nowhere but in the step
// events, which flower report reads.
func TestStepPayloadRecordsWhatTheReportNeeds(t *testing.T) {
	rt := &Runtime{budget: 2.5, handoff: HandoffPolicy{Window: 1_000_000}.Resolved()}
	p := rt.stepPayload(map[string]any{"index": 1})
	if p["index"] != 1 || p["budget"] != 2.5 || p["window"] != 1_000_000 || p["handoff_at"] != 750_000 {
		t.Errorf("payload %v", p)
	}
	p = (&Runtime{handoff: HandoffPolicy{Disabled: true}}).stepPayload(map[string]any{})
	if len(p) != 0 {
		t.Errorf("no budget and no handoffs: payload %v", p)
	}
}

func TestFakeASessionsInitNamesItsStepAndRole(t *testing.T) {
	t.Parallel()
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}), fakeCLI(t, "slow-start"))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var log eventLog
	spec := testSpec()
	spec.Name = "judge"
	if _, err := rt.Run(runCtx(t), spec, "rule", RunOptions{StepName: "work·judge#2", OnEvent: log.add}); err != nil {
		t.Fatal(err)
	}
	var inits []Event
	for _, e := range log.of(event.System, "") {
		if e.Text == "init" {
			inits = append(inits, e)
		}
	}
	if len(inits) != 1 || inits[0].Str("step") != "work·judge#2" || inits[0].Str("role") != "judge" {
		t.Errorf("init events %+v: want one naming step work·judge#2 and role judge", inits)
	}
}
