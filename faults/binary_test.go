package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
)

// The workflow binary: examples/ownflow (a plan step, then a build step
// continuing the plan's session) on package app, built once per test
// process, on first use.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func ownflow(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "faults-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ownflow")
		out, err := exec.Command("go", "build", "-o", binPath, "../examples/ownflow").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build ./examples/ownflow: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// removeBin removes the built binary (TestMain, after the cases).
func removeBin() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// binScene is a workflow binary's world: its fake API, workspace (the run
// directory is <ws>/runs) and hermetic environment.
type binScene struct {
	t       *testing.T
	srv     *claudetest.Server
	ws      string
	env     map[string]string
	capture string
	cmdEnv  []string
}

func newBinScene(t *testing.T, h claudetest.Handler) *binScene {
	t.Helper()
	ownflow(t) // built before the clock of any case's context starts
	srv := claudetest.NewServer(t, h)
	bs := &binScene{t: t, srv: srv, ws: t.TempDir(), env: claudetest.Env(t, srv), capture: t.TempDir()}
	bs.cmdEnv = claudetest.BaseEnv()
	for k, v := range bs.env {
		bs.cmdEnv = append(bs.cmdEnv, k+"="+v)
	}
	bs.cmdEnv = append(bs.cmdEnv, "FLOWER_CLAUDE="+capturingCLI(t, claudetest.CLIPath(t), bs.capture), "XDG_CONFIG_HOME="+t.TempDir())
	return bs
}

func (bs *binScene) runDir() string { return filepath.Join(bs.ws, "runs") }

// command is the workflow binary on the scene's workspace, bounded by ctx.
func (bs *binScene) command(ctx context.Context) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, ownflow(bs.t), "-w", bs.ws, "--lang", "en", "add a --json flag")
	cmd.Env, cmd.Dir = bs.cmdEnv, bs.t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

func readLineage(t *testing.T, runDir string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(runDir, flower.LineageName))
	if err != nil {
		t.Fatalf("lineage: %v", err)
	}
	var l struct {
		Steps map[string]string `json:"steps"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatalf("lineage: %v\n%s", err, data)
	}
	return l.Steps
}

// flowHandler answers the binary's probe and both steps; hold, when it
// returns true for a build request, holds that request for ever (until the
// client goes).
func flowHandler(hold func(*claudetest.Request) bool) claudetest.Handler {
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.MaxTokens == 16:
			return claudetest.Say("hi")
		case len(r.Tools) == 0:
			return claudetest.Say("ok")
		case r.HasText("Now make the change"):
			if hold != nil && hold(r) {
				return claudetest.Reply{Fault: &claudetest.Fault{Delay: 10 * time.Minute}}
			}
			return claudetest.Say("made the change")
		}
		return claudetest.Say("the plan: one flag")
	}
}

func TestFaultFlowerKilledMidStepAndStartedAgain(t *testing.T) {
	t.Parallel()
	fault(t, "the workflow binary killed with SIGKILL in its second step and started again continues from the lineage: the build step resumes its own session (which holds the plan), the run finishes, and the store holds every entry of the CLI's JSONL")
	holding := make(chan struct{})
	var held atomic.Bool
	bs := newBinScene(t, flowHandler(func(*claudetest.Request) bool {
		if held.CompareAndSwap(false, true) {
			close(holding)
			return true
		}
		return false
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first, out1 := bs.command(ctx)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-holding:
	case <-ctx.Done():
		t.Fatalf("the build step never reached the model:\n%s", out1)
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	// A SIGKILLed flower cannot end its CLI, which runs in a process group
	// of its own; it is ended here as the machine going down would.
	orphans := cliPIDs(t, bs.env["CLAUDE_CONFIG_DIR"])
	t.Logf("CLIs left running by the killed flower: %v", orphans)
	for _, pid := range orphans {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	lin := readLineage(t, bs.runDir())
	if lin["plan"] == "" || lin["build"] == "" {
		t.Fatalf("the lineage does not hold both steps' sessions after the kill: %v", lin)
	}

	second, out2 := bs.command(ctx)
	if err := second.Run(); err != nil {
		t.Fatalf("the second run: %v\n%s", err, out2)
	}
	if !strings.Contains(out2.String(), "made the change") {
		t.Errorf("the second run's screen lacks the build's answer:\n%s", out2)
	}
	again := readLineage(t, bs.runDir())
	if again["build"] != lin["build"] {
		t.Errorf("the build step did not continue its session: lineage %v, then %v", lin, again)
	}
	// The held request of the first run and the answered one of the
	// second both carry the plan: the build continued the plan's session.
	withPlan := 0
	for _, r := range bs.srv.Requests() {
		if r.HasText("Now make the change") && r.HasText("the plan: one flag") {
			withPlan++
		}
	}
	if withPlan < 2 {
		t.Errorf("%d build requests held the plan, want one per run", withPlan)
	}
	rows := readManifest(t, bs.runDir())
	t.Logf("manifest after both runs: %+v", rows)
	if len(rows) == 0 || !rows[len(rows)-1].OK || rows[len(rows)-1].Step != "build" {
		t.Errorf("the manifest's last row is not a finished build: %+v", rows)
	}
	checkTranscripts(t, bs.ws, bs.runDir(), killed, bs.env["CLAUDE_CONFIG_DIR"], bs.capture)
}

func TestFaultTwoFlowersStartTogether(t *testing.T) {
	t.Parallel()
	for _, existing := range []bool{false, true} {
		t.Run(map[bool]string{false: "fresh store", true: "existing store"}[existing], func(t *testing.T) {
			t.Parallel()
			fault(t, "two workflow binaries started at the same moment in one run directory both finish, or one stops with a message saying why; the manifest stays one consistent list, the lineage names both steps, and no transcript entry is lost")
			bs := newBinScene(t, flowHandler(nil))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			before := 0
			if existing {
				first, out := bs.command(ctx)
				if err := first.Run(); err != nil {
					t.Fatalf("the first run: %v\n%s", err, out)
				}
				before = len(readManifest(t, bs.runDir()))
			}
			a, outA := bs.command(ctx)
			b, outB := bs.command(ctx)
			start := make(chan struct{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, c := range []*exec.Cmd{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[i] = c.Run()
				}()
			}
			close(start)
			wg.Wait()
			finished := 0
			for i, err := range errs {
				out := []*bytes.Buffer{outA, outB}[i]
				if err == nil {
					finished++
					continue
				}
				t.Logf("process %d stopped: %v\n%s", i, err, out)
				if !strings.Contains(out.String(), "run") {
					t.Errorf("process %d stopped without saying why: %v\n%s", i, err, out)
				}
			}
			if finished == 0 {
				t.Errorf("neither process finished:\n%s\n---\n%s", outA, outB)
			}
			rows := checkManifest(t, bs.runDir(), len(readManifest(t, bs.runDir())))
			if len(rows) < before+2*finished {
				t.Errorf("manifest has %d rows, want at least %d (%d before, 2 per finished run): %+v", len(rows), before+2*finished, before, rows)
			}
			lin := readLineage(t, bs.runDir())
			if lin["plan"] == "" || lin["build"] == "" {
				t.Errorf("the lineage lacks a step: %v", lin)
			}
			checkTranscripts(t, bs.ws, bs.runDir(), shared, bs.env["CLAUDE_CONFIG_DIR"], bs.capture)
		})
	}
}
