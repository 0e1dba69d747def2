package flower

// Workflow tests on the pinned Claude Code CLI against claudetest's fake
// Messages API.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/store/sqlite"
)

func TestRealTwoStepWorkflowResumesFromTheFirstStep(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText("SCENARIO:second") && r.HasText("SCENARIO:first"):
			return claudetest.Say("second saw the first")
		case r.HasText("SCENARIO:second"):
			return claudetest.Say("second without history")
		default:
			return claudetest.Say("the word is ember")
		}
	})
	rt := newTestRuntime(t, srv)
	wf := &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "取词", Spec: testSpec(), Prompt: Text("SCENARIO:first")},
		{Name: "造句", Spec: testSpec(), ResumeFrom: "取词", Prompt: func(c *Ctx) (string, error) {
			w, err := c.Output("取词")
			return "SCENARIO:second after " + w, err
		}},
	}}
	var steps []string
	c, err := wf.Run(runCtx(t), rt, nil, func(s Step, r StepResult) { steps = append(steps, s.Name+"="+fmt.Sprint(r.OK)) })
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := c.FailedAt(); failed {
		t.Fatalf("the workflow failed: %v", steps)
	}
	if v, _ := c.Output("造句"); v != "second saw the first" {
		t.Errorf("ctx[造句] = %q: resume_from did not continue the first step's session", v)
	}
	s := c.Sessions()
	if s["取词"] == "" || s["造句"] != s["取词"] {
		t.Errorf("sessions = %v; the second step continues the first's", s)
	}
	if strings.Join(steps, ",") != "取词=true,造句=true" {
		t.Errorf("OnStep = %v", steps)
	}
}

func TestRealContinuousWorkflowResumesItsStepInANewRuntime(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText("SCENARIO:carry-on") && r.HasText("SCENARIO:task"):
			return claudetest.Say("carried on with the history")
		case r.HasText("SCENARIO:carry-on"):
			return claudetest.Say("carried on without history")
		default:
			return claudetest.Say("task done")
		}
	})
	ws, runDir := t.TempDir(), t.TempDir()
	build := func() *Workflow {
		return &Workflow{Steps: []Step{{Name: "work", Spec: testSpec(), Prompt: Text("SCENARIO:task"), ResumePrompt: Text("SCENARIO:carry-on")}}}
	}
	// Each Runtime gets a fresh HOME: the resume can only come from the
	// store in the run directory.
	c1, err := build().Run(runCtx(t), newTestRuntimeIn(t, ws, srv, WithRunDir(runDir)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := c1.Session("work")
	if v, _ := c1.Output("work"); v != "task done" || first == "" {
		t.Fatalf("first run: %q, session %q", v, first)
	}
	var log eventLog
	c2, err := build().Run(runCtx(t), newTestRuntimeIn(t, ws, srv, WithRunDir(runDir)), log.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c2.Output("work"); v != "carried on with the history" {
		t.Errorf("second run: %q; want the same session resumed with the resume prompt", v)
	}
	if sid, _ := c2.Session("work"); sid != first {
		t.Errorf("second run's session %q, want %q", sid, first)
	}
	if evs := log.of(event.Step, ""); len(evs) != 1 || !evs[0].Bool("resumed") || evs[0].Int("woke") != 2 {
		t.Errorf("step events = %+v", evs)
	}
}

// workflowHelperConfig is what the killed-process helper runs.
type workflowHelperConfig struct {
	WS, RunDir, CLI string
	Env             map[string]string
	// Starter runs the starter flow with this ask instead (no human:
	// every question settles at once).
	Starter string
}

// workflowHelper runs a one-step continuous workflow on the real CLI, in a
// process of its own that the test kills.
func workflowHelper(spec string) error {
	var cfg workflowHelperConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		return err
	}
	wf := killedWorkflow()
	var opts []Option
	if cfg.Starter != "" {
		var err error
		if wf, err = StarterFlow(cfg.Starter, StarterOptions{Lang: Chinese, Workspace: cfg.WS, RunDir: cfg.RunDir, Timeout: -1}); err != nil {
			return err
		}
		opts = append(opts, WithWorkbench(wf.Workbench))
	}
	rt, err := New(cfg.WS, append(opts, WithLanguage(Chinese), WithRunDir(cfg.RunDir), WithEnv(cfg.Env), WithResilience(fastResilience),
		WithSessionOptions(func(o *claude.Options) {
			o.CLIPath = cfg.CLI
			o.BaseEnv = claudetest.BaseEnv()
		}))...)
	if err != nil {
		return err
	}
	defer rt.Close()
	// A hang guard only: the test that starts the helper waits up to five
	// minutes for the moment it kills it, and under load (ci13's older
	// CLI pass) the steps before that moment took longer than two.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, err = wf.Run(ctx, rt, nil, nil)
	return err
}

func killedWorkflow() *Workflow {
	return &Workflow{Steps: []Step{{Name: "work", Spec: testSpec(), Prompt: Text("SCENARIO:kill"), ResumePrompt: Text("SCENARIO:after-kill")}}}
}

func TestRealAKilledProcessKeepsItsSessionInTheLineage(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	var hung atomic.Bool
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.HasText("SCENARIO:after-kill") && r.HasText("SCENARIO:kill"):
			return claudetest.Say("resumed the killed session")
		case r.HasText("SCENARIO:after-kill"):
			return claudetest.Say("a new session")
		case len(r.ToolResults()) == 0:
			return bashReply("echo started")
		default: // the killed turn: hang until the test lets go
			hung.Store(true)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return claudetest.Say("too late")
		}
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the server closes
	ws, runDir := t.TempDir(), t.TempDir()
	cfg, err := json.Marshal(workflowHelperConfig{WS: ws, RunDir: runDir, CLI: claudetest.CLIPath(t), Env: claudetest.Env(t, srv)})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FLOWER_TEST_WORKFLOW_HELPER="+string(cfg))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	kill := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	// Wait until the step's session is in the lineage and in the store,
	// with its turn still running; then kill the process outright.
	var sid string
	deadline := time.Now().Add(5 * time.Minute)
	for sid == "" || !hung.Load() || !storeHas(t, runDir, ws, sid) {
		select {
		case err := <-exited:
			t.Fatalf("the helper ended before it was killed: %v\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			kill()
			t.Fatalf("before the kill: lineage session %q, turn hung %v, in store %v\n%s", sid, hung.Load(), sid != "" && storeHas(t, runDir, ws, sid), out.String())
		}
		sid, _ = OpenLineage(runDir, ws).Session("work")
	}
	kill()
	once.Do(func() { close(release) })

	rt := newTestRuntimeIn(t, ws, srv, WithRunDir(runDir))
	c, err := killedWorkflow().Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Output("work"); v != "resumed the killed session" {
		t.Errorf("after the kill: %q; want the killed step's session resumed from the lineage", v)
	}
	if got, _ := c.Session("work"); got != sid {
		t.Errorf("session %q, want the killed one %q", got, sid)
	}
}

// storeHas reports whether the run directory's store holds session sid.
func storeHas(t *testing.T, runDir, ws, sid string) bool {
	t.Helper()
	if sid == "" {
		return false
	}
	if _, err := os.Stat(filepath.Join(runDir, "sessions.db")); err != nil {
		return false
	}
	db, err := sqlite.Open(filepath.Join(runDir, "sessions.db"))
	if err != nil {
		return false
	}
	defer db.Close()
	ok, err := db.HasSession(context.Background(), claude.ProjectKey(ws), sid)
	return err == nil && ok
}
