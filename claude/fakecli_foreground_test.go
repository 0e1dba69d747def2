package claude_test

import (
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

func init() {
	// foreground-agent: a subagent the model waits for (is_backgrounded
	// false, as CLIs 2.1.310 to 2.1.332 say) starts and ends within the
	// turn; its notification is the turn's own, no follow-up turn comes.
	fakeScripts["foreground-agent"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.system("task_started", map[string]any{"task_id": "a1", "task_type": "local_agent", "is_backgrounded": false})
		f.system("task_updated", map[string]any{"task_id": "a1", "patch": map[string]any{"status": "completed"}})
		f.system("task_notification", map[string]any{"task_id": "a1", "status": "completed"})
		f.result("done", false)
		f.waitEOF()
	}
	// background-agent: the same with is_backgrounded true, whose
	// notification may bring a follow-up turn: stdin waits for it.
	fakeScripts["background-agent"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.system("task_started", map[string]any{"task_id": "a1", "task_type": "local_agent", "is_backgrounded": true})
		f.system("task_notification", map[string]any{"task_id": "a1", "status": "completed"})
		f.result("first", false)
		f.system("init", map[string]any{"cwd": "/x", "model": "fake"})
		f.result("second", false)
		f.waitEOF()
	}
}

// A coordinator's session ends right after its result when its worker ran
// in the foreground: waiting FollowUpWait for a follow-up turn that never
// comes cost every dispatching session 3 s (the driver benchmark's worker
// variant showed it between the last request and the end).
func TestFakeForegroundAgentDoesNotHoldStdinOpen(t *testing.T) {
	opts := fakeOptions(t, "foreground-agent")
	opts.FollowUpWait = 20 * time.Second
	opts.Hooks = noopHook(claude.PreToolUse)
	start := time.Now()
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(t, msgs); r.Result != "done" {
		t.Fatalf("result = %q", r.Result)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the session took %s: stdin waited FollowUpWait after a foreground agent's notification", d)
	}
}

func TestFakeBackgroundAgentWaitsForItsFollowUp(t *testing.T) {
	opts := fakeOptions(t, "background-agent")
	opts.Hooks = noopHook(claude.PreToolUse)
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	results := resultTexts(msgs)
	if len(results) != 2 || results[1] != "second" {
		t.Fatalf("results = %q; the follow-up turn of a background agent must be read", results)
	}
}
