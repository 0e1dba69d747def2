package flower

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/human"
)

// A nil *human.Channel is no channel wherever a Channel is taken: no
// panic, and no ask tool offered to the model.
func TestATypedNilChannelIsNoChannel(t *testing.T) {
	var ch *human.Channel
	specs := map[string]func() AgentSpec{
		"Judge":   func() AgentSpec { return Judge("j", ch) },
		"Clarify": func() AgentSpec { return Clarify("c", ch) },
		"Coordinator WithChannel": func() AgentSpec {
			return Coordinator("k", "", map[string]claude.AgentDefinition{"coder": Worker("d", "p")}, WithChannel(ch))
		},
	}
	for name, build := range specs {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panicked: %v", p)
				}
			}()
			spec := build()
			for _, tool := range spec.AllowedTools {
				if tool == AskTool || tool == InboxTool {
					t.Errorf("%s offered without a channel", tool)
				}
			}
			if len(spec.MCPServers) != 0 {
				t.Errorf("MCP servers without a channel: %v", spec.MCPServers)
			}
		})
	}
	t.Run("Workflow.Channel", func(t *testing.T) {
		f := newFakeFlow(t)
		wf := &Workflow{NoContinuity: true, Channel: ch, Steps: []Step{{Name: "a", Spec: wfSpec(), Prompt: Text("do a")}}}
		rt := f.runtime()
		rt.Interrupt("words left for the inbox") // Run hands left words to a mailbox channel
		if _, err := wf.Run(runCtx(t), rt, func(Event) {}, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// A Workflow run again on its ctx starts clean: a run without a sink does
// not hand its gates the last run's, and the last run's failure and abort
// are not this run's.
func TestFakeAReusedWorkflowRunStartsClean(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	fail := true
	var sinks []bool
	wf := &Workflow{NoContinuity: true, Steps: []Step{{
		Name: "a", Spec: wfSpec(), Prompt: Text("do a"),
		Gate: func(_ context.Context, _ StepResult, c *Ctx) (bool, error) {
			sinks = append(sinks, c.OnEvent() != nil)
			if fail {
				return false, &StepAbort{Reason: "no compiler here"}
			}
			return true, nil
		},
	}}}
	c, err := wf.Run(runCtx(t), rt, func(Event) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at, failed := c.FailedAt(); !failed || at != "a" {
		t.Fatalf("run 1: FailedAt %q %v", at, failed)
	}
	fail = false
	c, err = wf.Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sinks) != 2 || !sinks[0] || sinks[1] {
		t.Errorf("the gate saw a sink: %v; the second run has none", sinks)
	}
	if at, failed := c.FailedAt(); failed {
		t.Errorf("run 2 succeeded but FailedAt still says %q", at)
	}
	if why, ok := c.Aborted(); ok {
		t.Errorf("run 2 reports run 1's abort %q", why)
	}
}

// The reason a stopped workflow gives is the stopped step's own, never an
// earlier step's abort.
func TestFakeAFailedStepNeverGivesAnotherStepsAbortReason(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	wf := &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "a", Spec: wfSpec(), Prompt: Text("do a"), OnFail: OnFailSkip,
			Gate: func(context.Context, StepResult, *Ctx) (bool, error) {
				return false, &StepAbort{Reason: "a's own reason"}
			}},
		{Name: "b", Spec: wfSpec(), Prompt: Text("do b FAIL")},
	}}
	c, err := wf.Run(runCtx(t), f.runtime(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at, _ := c.FailedAt(); at != "b" {
		t.Fatalf("FailedAt %q", at)
	}
	if why, ok := c.AbortedIn("b"); ok {
		t.Errorf("b's failure gives a's abort reason %q", why)
	}
	if why, ok := c.AbortedIn("a"); !ok || why != "a's own reason" {
		t.Errorf("AbortedIn(a) = %q %v", why, ok)
	}
}

// One run-directory default: the Runtime's is the starter flow's
// (<workspace>/runs), wherever the process runs; a Workflow whose run
// directory is not its Runtime's says so.
func TestOneRunDirDefaultAndAWarningWhenTheyDisagree(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	rt, err := New(ws, WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	w, err := WakeState(StarterOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if rt.RunDir() != filepath.Join(ws, "runs") || w.RunDir != rt.RunDir() {
		t.Errorf("the Runtime's run dir %s, the starter flow's %s; both must be <workspace>/runs", rt.RunDir(), w.RunDir)
	}

	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	wf, err := StarterFlow("帮我做一个 hello", StarterOptions{Workspace: f.ws, NoBequest: true})
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	if _, err := wf.Run(runCtx(t), f.runtime(WithWorkbench(wf.Workbench)), func(e Event) {
		if e.Kind == "system" {
			notices = append(notices, e.Text)
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	said := false
	for _, n := range notices {
		said = said || strings.Contains(n, "工作流的运行目录 "+filepath.Join(f.ws, "runs")+" 不是 Runtime 的("+f.runDir+")")
	}
	if !said {
		t.Errorf("no notice that the workflow's and the Runtime's run directories differ: %q", notices)
	}
}
