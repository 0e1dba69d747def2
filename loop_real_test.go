package flower

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/guard"
)

// TestRealLoopGuardStopsAStuckWorker: a scripted worker keeps running `cat
// same.txt` until something tells it to stop. Through a real Runtime run of
// a coordinator and the pinned CLI, the 4th identical call is refused with
// the loop text, the worker sees that text and gives up, the coordinator's
// turn goes on to its end, and the run's event stream (OnEvent and
// events.jsonl) carries one Loop event for the worker's thread.
func TestRealLoopGuardStopsAStuckWorker(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "same.txt"), []byte("the same line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refusal := fmt.Sprintf(guard.EnglishTexts.LoopRepeat, "Bash", guard.DefaultLoopRepeats)
	var cats, sawRefusal atomic.Int32
	stuck := claudetest.Func(func(req *claudetest.Request) claudetest.Reply {
		if r, ok := req.LastToolResult(); ok && strings.Contains(r.Content, refusal) {
			sawRefusal.Add(1)
			return claudetest.Say("I was going in circles on same.txt; stopping.")
		}
		cats.Add(1)
		return bashReply("cat same.txt")
	})
	// More turns than the guard allows: a guard that never refuses lets
	// the worker run out of script, which fails the checks below.
	worker := make([]claudetest.Responder, 8)
	for i := range worker {
		worker[i] = stuck
	}
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:lead": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "read", "prompt": "SUBAGENT:loop", "subagent_type": "reader", "run_in_background": false})),
			claudetest.Say("led on"),
		},
		"SUBAGENT:loop": worker,
	}.Handler())
	runDir := t.TempDir()
	cli := claudetest.CLIPath(t)
	rt, err := New(ws, WithRunDir(runDir), WithEnv(claudetest.Env(t, srv)), WithResilience(fastResilience),
		WithLanguage(English),
		WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() }))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	lead := Coordinator("lead", "", map[string]claude.AgentDefinition{
		"reader": Worker("reads files", "You read files.", WithTools("Bash", "Read")),
	}, WithLang(English))
	var log eventLog
	r, err := rt.Run(runCtx(t), lead, "SCENARIO:lead", RunOptions{OnEvent: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK || !strings.Contains(r.Text, "led on") {
		t.Errorf("the run did not go on after the loop: OK %v, text %q", r.OK, r.Text)
	}
	if got := cats.Load(); got != guard.DefaultLoopRepeats+1 {
		t.Errorf("the worker asked for cat %d times, want %d (the last one refused)", got, guard.DefaultLoopRepeats+1)
	}
	if sawRefusal.Load() != 1 {
		t.Errorf("the loop text reached the worker's model %d times, want once: %q", sawRefusal.Load(), refusal)
	}
	loops := log.of(event.Loop, "")
	if len(loops) != 1 {
		t.Fatalf("%d Loop events, want 1: %v", len(loops), loops)
	}
	e := loops[0]
	if e.Tool != "Bash" || e.Int("count") != guard.DefaultLoopRepeats+1 || !e.Subagent() || e.Str("agent_id") == "" || e.Str("step") != "lead" {
		t.Errorf("Loop event %+v", e)
	}
	jsonl, err := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(jsonl), `"kind":"loop"`) {
		t.Error("events.jsonl holds no loop event")
	}
}
