package faults

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
)

// faultFirst answers the step's first n requests (those holding marker)
// with fault, then "done".
func faultFirst(n int32, marker string, fault *claudetest.Fault) claudetest.Handler {
	var seen atomic.Int32
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText(marker) && seen.Add(1) <= n {
			return claudetest.Reply{Blocks: []claudetest.ReplyBlock{claudetest.Text("never seen")}, Fault: fault}
		}
		return claudetest.Say("done: " + marker)
	}
}

func TestFault429WithRetryAfter(t *testing.T) {
	t.Parallel()
	fault(t, "a 429 with retry-after 2s is waited out by the CLI itself: one attempt, the step succeeds, nothing lost")
	sc := newScene(t, faultFirst(1, "FAULT:429", claudetest.RateLimited(2*time.Second)), fastResilience())
	begin := time.Now()
	r, _, err := sc.run(spec(), "FAULT:429")
	if err != nil || !r.OK || r.Attempts != 1 {
		t.Fatalf("step: ok %v attempts %d err %v", r.OK, r.Attempts, err)
	}
	if n := marked(sc.srv, "FAULT:429"); n != 2 {
		t.Errorf("%d requests of the step, want 2 (the 429, then the retry)", n)
	}
	if d := time.Since(begin); d < 1500*time.Millisecond {
		t.Errorf("the retry came after %s, before the retry-after of 2s", d)
	}
	sc.afterwards(1)
}

func TestFault529BurstLongerThanTheCLIsRetries(t *testing.T) {
	t.Parallel()
	fault(t, "5 overloaded 529s outlast the CLI's 2 retries: the runtime retries the attempt, says so, and the step succeeds")
	sc := newScene(t, faultFirst(5, "FAULT:529", claudetest.Overloaded()), fastResilience(), flower.WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "2"}))
	r, ev, err := sc.run(spec(), "FAULT:529")
	if err != nil || !r.OK || r.Attempts < 2 {
		t.Fatalf("step: ok %v attempts %d err %v (%s)", r.OK, r.Attempts, err, r.Error)
	}
	if !ev.said("retry", "transient") {
		t.Error("no retry event said the attempt failed on a transient error")
	}
	if n := marked(sc.srv, "FAULT:529"); n != 6 {
		t.Errorf("%d requests of the step, want 6 (5 overloaded, then one answered)", n)
	}
	sc.afterwards(1)
}

func TestFault500s(t *testing.T) {
	t.Parallel()
	fault(t, "a run of 500s beyond the CLI's retries is retried by the runtime and the step succeeds")
	sc := newScene(t, faultFirst(3, "FAULT:500", claudetest.ServerError()), fastResilience(), flower.WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "1"}))
	r, _, err := sc.run(spec(), "FAULT:500")
	if err != nil || !r.OK || r.Attempts < 2 {
		t.Fatalf("step: ok %v attempts %d err %v (%s)", r.OK, r.Attempts, err, r.Error)
	}
	sc.afterwards(1)
}

func TestFault500sForeverStopResumable(t *testing.T) {
	t.Parallel()
	fault(t, "500s that never end stop the step after MaxAttempts with the session kept (resumable) and an error naming the 500")
	res := fastResilience()
	res.MaxAttempts = 2
	sc := newScene(t, faultFirst(1000, "FAULT:500", claudetest.ServerError()), res, flower.WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "0"}))
	r, _, err := sc.run(spec(), "FAULT:500")
	if err == nil || r.OK || r.Attempts != 2 {
		t.Fatalf("step: ok %v attempts %d err %v", r.OK, r.Attempts, err)
	}
	if !strings.Contains(r.Error, "500") || r.SessionID == "" {
		t.Errorf("the error must name the 500 and the session must be kept to resume: error %q session %q", r.Error, r.SessionID)
	}
	sc.afterwards(1)
}

func TestFaultConnectionResets(t *testing.T) {
	t.Parallel()
	fault(t, "connections reset before any byte are retried and the step succeeds")
	sc := newScene(t, faultFirst(2, "FAULT:reset", claudetest.ConnReset()), fastResilience())
	r, _, err := sc.run(spec(), "FAULT:reset")
	if err != nil || !r.OK {
		t.Fatalf("step: ok %v attempts %d err %v (%s)", r.OK, r.Attempts, err, r.Error)
	}
	if n := marked(sc.srv, "FAULT:reset"); n < 3 {
		t.Errorf("%d requests of the step, want at least 3 (2 reset)", n)
	}
	sc.afterwards(1)
}

func TestFaultStreamCutHalfWay(t *testing.T) {
	t.Parallel()
	fault(t, "an SSE reply cut inside an event is not taken as an answer: the request is repeated and the step gets the whole reply")
	sc := newScene(t, faultFirst(1, "FAULT:cut", &claudetest.Fault{CutMidEvent: true}), fastResilience())
	r, _, err := sc.run(spec(), "FAULT:cut")
	if err != nil || !r.OK || !strings.Contains(r.Text, "done: FAULT:cut") || strings.Contains(r.Text, "never") {
		t.Fatalf("step: ok %v text %q err %v (%s)", r.OK, r.Text, err, r.Error)
	}
	sc.afterwards(1)
}

func TestFaultPromptTooLong(t *testing.T) {
	t.Parallel()
	fault(t, "'prompt is too long' on every request is never retried as is: the handoff is tried, and when even that does not fit the step stops with its session and a message saying which setting to change")
	sc := newScene(t, faultFirst(1000, "FAULT:ptl", claudetest.PromptTooLong()), fastResilience())
	r, _, err := sc.run(spec(), "FAULT:ptl")
	if err == nil || r.OK || r.SessionID == "" {
		t.Fatalf("step: ok %v session %q err %v", r.OK, r.SessionID, err)
	}
	if r.Attempts != 1 {
		t.Errorf("attempts %d: an overflow must not be retried as is", r.Attempts)
	}
	if !strings.Contains(r.Error, "--window") || !strings.Contains(r.Error, "--no-handoff") {
		t.Errorf("error %q does not say what to change", r.Error)
	}
	sc.afterwards(1)
}

func TestFaultPromptTooLongHandsOff(t *testing.T) {
	t.Parallel()
	fault(t, "'prompt is too long' with the handoff on moves the work to a successor session and the step succeeds")
	var overflowed atomic.Bool
	h := func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("FAULT:ptl") && !r.HasText("handoff") && overflowed.CompareAndSwap(false, true) {
			return claudetest.Reply{Fault: claudetest.PromptTooLong()}
		}
		return claudetest.Say("done")
	}
	sc := newScene(t, h, fastResilience(), flower.WithHandoff(flower.HandoffPolicy{Window: 200000}))
	r, _, err := sc.run(spec(), "FAULT:ptl")
	if err != nil || !r.OK {
		t.Fatalf("step: ok %v err %v (%s)", r.OK, err, r.Error)
	}
	if len(r.Retired) != 1 {
		t.Errorf("retired sessions %v, want the overflowed one", r.Retired)
	}
	sc.afterwards(1)
}

// fakeCLIRuntime is a Runtime whose sessions run the test binary as the
// scripted CLI mode.
func fakeCLIRuntime(t *testing.T, mode string, res flower.Resilience, env ...string) (*flower.Runtime, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runDir := t.TempDir()
	rt, err := flower.New(t.TempDir(), flower.WithRunDir(runDir), flower.WithLanguage(flower.English),
		flower.WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}), flower.WithResilience(res),
		flower.WithSessionOptions(func(o *claude.Options) {
			o.CLIPath = exe
			o.BaseEnv = append([]string{"PATH=" + os.Getenv("PATH"), helperEnv + "=" + mode}, env...)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt, runDir
}

func TestFaultUsageLimitWithAResetTime(t *testing.T) {
	t.Parallel()
	fault(t, "a usage-limit rejection with a reset time 2 s away is waited out (the wait is announced with its end, no attempt is spent), then the session is resumed and the step succeeds")
	// A scripted CLI (helper mode usage-limit-cli): the real CLI emits
	// rate_limit_event only for subscriptions, so it writes no transcript
	// here and the store-against-JSONL check does not apply.
	res := fastResilience()
	res.MaxAttempts, res.UsageLimitMargin = 1, -1
	rt, runDir := fakeCLIRuntime(t, "usage-limit-cli", res, "FAULT_RESET_IN=2")
	var ev events
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := rt.Run(ctx, spec(), "work", flower.RunOptions{OnEvent: ev.add})
	if err != nil || !r.OK || r.Attempts != 1 || !r.Resumed || r.Text != "resumed after the reset" {
		t.Fatalf("step: ok %v attempts %d resumed %v text %q err %v", r.OK, r.Attempts, r.Resumed, r.Text, err)
	}
	if d := time.Since(begin); d < time.Second {
		t.Errorf("the step went on after %s, before the reset", d)
	}
	if !ev.said("retry", "usage limit") {
		t.Errorf("no retry event announced the wait: %+v", ev.evs)
	}
	rt.Close()
	checkManifest(t, runDir, 1)
}
