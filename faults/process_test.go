package faults

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
)

func TestFaultCLIHangsWithNoOutput(t *testing.T) {
	t.Parallel()
	fault(t, "a CLI that sends nothing (its API call hangs) is ended after Resilience.StallTimeout (8 s here: a CLI that takes longer than 2 s to start on a loaded machine was ended as stalled too), the attempt is retried from its session with a message saying it stalled, and the step succeeds")
	var hung atomic.Int32
	var hungAt atomic.Int64 // when the hung call reached the API
	h := func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("FAULT:hang") && hung.Add(1) == 1 {
			hungAt.Store(time.Now().UnixNano())
			return claudetest.Reply{Fault: &claudetest.Fault{Delay: 10 * time.Minute}} // ends when the CLI goes
		}
		return claudetest.Say("done after the stall")
	}
	res := fastResilience()
	res.StallTimeout = 8 * time.Second
	sc := newScene(t, h, res)
	r, ev, err := sc.run(spec(), "FAULT:hang")
	if err != nil || !r.OK || r.Attempts != 2 || !r.Resumed {
		t.Fatalf("step: ok %v attempts %d resumed %v err %v (%s)", r.OK, r.Attempts, r.Resumed, err, r.Error)
	}
	// From the hung call to the retry that ended it: 8 s and the kill,
	// far from the fault's 10 minutes. (Counted from the step's start, as
	// before, it held two CLI starts too: 69 s in ci20's older pass, on a
	// machine running three packages' real CLIs.)
	if d := ev.firstAt("retry", "sent nothing for 8s").Sub(time.Unix(0, hungAt.Load())); d > 45*time.Second {
		t.Errorf("the stall was ended %s after the hung call; the bound is 8 s", d)
	}
	if !ev.said("retry", "sent nothing for 8s") || !ev.said("retry", "raise Resilience.StallTimeout") {
		t.Error("no retry event said the CLI stalled, and what to do if it repeats")
	}
	sc.afterwards(1)
}

// cliPIDs are the real CLI processes running with configDir: the scene's own.
func cliPIDs(t *testing.T, configDir string) []int {
	t.Helper()
	cli := claudetest.CLIPath(t)
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte(cli+"\x00")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte("\x00CLAUDE_CONFIG_DIR="+configDir+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killer answers the step's model calls and kills the scene's CLI with
// SIGKILL, once, while it holds the call that kill picks; the calls after it
// are answered. Side requests without tools (a title, a summary) are
// answered and never picked. With persisted set, the kill waits until the
// CLI's local transcript holds that text: the CLI writes its file on a
// timer, and a kill before the write is the other case (nothing kept).
func killer(t *testing.T, sc **scene, kill func(*claudetest.Request) bool, toolFirst bool, persisted string) claudetest.Handler {
	var killed atomic.Bool
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if !r.HasText("FAULT:kill") || len(r.Tools) == 0 {
			return claudetest.Say("ok")
		}
		if kill(r) && killed.CompareAndSwap(false, true) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				config := (*sc).env["CLAUDE_CONFIG_DIR"]
				if persisted != "" && !waitTranscriptHolds(config, persisted, time.Minute) {
					t.Errorf("the CLI's transcript never held %q: the kill would not be mid-turn", persisted)
				}
				for _, pid := range cliPIDs(t, config) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}()
			return claudetest.Reply{Fault: &claudetest.Fault{Delay: 10 * time.Minute}}
		}
		if toolFirst && len(r.ToolResults()) == 0 {
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "echo mid-turn", "description": "echo"}))
		}
		return claudetest.Say("done after the kill")
	}
}

// waitTranscriptHolds polls the CLI's JSONL files under config until one
// holds text.
func waitTranscriptHolds(config, text string, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(config, "projects", "*", "*.jsonl"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), text) {
				return true
			}
		}
	}
	return false
}

func TestFaultCLIKilledMidTurn(t *testing.T) {
	t.Parallel()
	fault(t, "a CLI killed with SIGKILL mid-turn (after a tool call, waiting on the model) is retried by resuming its session, and the step succeeds with nothing lost")
	var sc *scene
	sc = newScene(t, killer(t, &sc, func(r *claudetest.Request) bool {
		res, ok := r.LastToolResult()
		return ok && strings.Contains(res.Content, "mid-turn")
	}, true, "mid-turn"), fastResilience())
	r, ev, err := sc.run(spec(), "FAULT:kill")
	if err != nil || !r.OK || r.Attempts != 2 || !r.Resumed {
		t.Fatalf("step: ok %v attempts %d resumed %v err %v (%s)", r.OK, r.Attempts, r.Resumed, err, r.Error)
	}
	if !ev.said("retry", "attempt 1") {
		t.Error("no retry event said the first attempt failed")
	}
	sc.afterKill(1)
}

func TestFaultCLIKilledBeforeItsFirstEntry(t *testing.T) {
	t.Parallel()
	fault(t, "a CLI killed before the store holds any entry of its session is not resumed (the CLI would refuse: no conversation): the step's opening runs again and succeeds")
	var sc *scene
	sc = newScene(t, killer(t, &sc, func(*claudetest.Request) bool { return true }, false, ""), fastResilience())
	r, _, err := sc.run(spec(), "FAULT:kill")
	if err != nil || !r.OK || r.Attempts != 2 {
		t.Fatalf("step: ok %v attempts %d err %v (%s)", r.OK, r.Attempts, err, r.Error)
	}
	sc.afterKill(1)
}

func TestFaultNetworkGoesAwayAndComesBack(t *testing.T) {
	t.Parallel()
	fault(t, "while the API is unreachable the runtime probes it (wait-online), says it is waiting and when it is back, and the step then succeeds")
	var srv *claudetest.Server
	var gone, back atomic.Bool
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	// The outage lasts until the runtime's probe has found the endpoint
	// away (at most 30 s): a fixed 3 s ended before the first probe on a
	// loaded machine (the CLI's own retry and exit took longer), and the
	// runtime then had nothing to wait for or say.
	probedAway := make(chan struct{})
	var sawAway sync.Once
	h := func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.HasText("FAULT:offline") && gone.CompareAndSwap(false, true) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				srv.GoOffline()
				select {
				case <-probedAway:
				case <-time.After(30 * time.Second):
				}
				back.Store(true)
				srv.ComeBack()
			}()
			return claudetest.Reply{Fault: claudetest.ConnReset()}
		}
		if gone.Load() && !back.Load() {
			// A request that reached the server before it went away.
			return claudetest.Reply{Fault: claudetest.ConnReset()}
		}
		return claudetest.Say("done after the outage")
	}
	res := fastResilience()
	res.ProbeInterval, res.ProbeTimeout, res.MaxOfflineWait = 300*time.Millisecond, time.Second, time.Minute
	// The real TCP probe of the endpoint, watched.
	res.Probe = func(ctx context.Context, host string, port int) bool {
		up := flower.Reachable(ctx, host, port, time.Second)
		if !up {
			sawAway.Do(func() { close(probedAway) })
		}
		return up
	}
	// the CLI gives up at once; the runtime waits
	sc := newScene(t, h, res, flower.WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "1"}))
	srv = sc.srv
	r, ev, err := sc.run(spec(), "FAULT:offline")
	if err != nil || !r.OK {
		t.Fatalf("step: ok %v attempts %d err %v (%s)", r.OK, r.Attempts, err, r.Error)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if !ev.said("retry", host) {
		t.Errorf("no retry event named the unreachable endpoint %s", host)
	}
	sc.afterwards(1)
}
