package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/flowerrun/flower/claude"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/workbench"
)

// permissionModes are the values --permission-mode accepts.
var permissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// onceOptions is once's command line.
type onceOptions struct {
	g            globals
	prompt       string
	instructions string
	tools        string
	mode         string
	budget       float64
	resume       string
	fork         bool
}

func (m *Command) parseOnce(args []string) (onceOptions, error) {
	var o onceOptions
	fs := newFlagSet("once")
	o.g.register(fs)
	for _, n := range []string{"i", "instructions"} {
		fs.StringVar(&o.instructions, n, "", "")
	}
	for _, n := range []string{"t", "tools"} {
		fs.StringVar(&o.tools, n, "Read,Glob,Grep", "")
	}
	for _, n := range []string{"p", "permission-mode"} {
		fs.StringVar(&o.mode, n, "default", "")
	}
	for _, n := range []string{"b", "budget"} {
		fs.Var(budgetValue{&o.budget}, n, "")
	}
	fs.StringVar(&o.resume, "resume", "", "")
	fs.BoolVar(&o.fork, "fork", false, "")
	pos, err := m.parse(fs, m.onceUsage(m.argLang(args)), args)
	if err != nil {
		return o, err
	}
	if err := o.g.checkLang(); err != nil {
		return o, err
	}
	o.prompt = strings.TrimSpace(strings.Join(pos, " "))
	switch {
	case o.prompt == "":
		return o, usageErrorf(text(m.argLang(args), "onceNoPrompt"), m.name(), m.name())
	case !contains(permissionModes, o.mode):
		return o, usageErrorf(text(m.argLang(args), "oncePermissionMode"), o.mode, strings.Join(permissionModes, ", "))
	case o.fork && o.resume == "":
		return o, usageErrorf("%s", text(m.argLang(args), "onceFork"))
	}
	return o, nil
}

// runOnce is `flower once "prompt"`: one step of an ad-hoc agent, no
// workflow, no questions, no interrupt: the first Ctrl-C ends it.
func (m *Command) runOnce(ctx context.Context, args []string) error {
	o, err := m.parseOnce(args)
	if err != nil {
		return err
	}
	trim, err := o.g.trimFor(false)
	if err != nil {
		return err
	}
	ws, runDir, err := o.g.resolve()
	if err != nil {
		return err
	}
	ui := m.newUI(m.language(&o.g, runDir))
	defer ui.Screen.Close()
	create, err := m.checkWorkspace(ctx, ui, &o.g, ws)
	if err != nil {
		return err
	}
	loadEnv(ui)
	cli, err := m.findCLI(ctx, ui, o.g.yes)
	if err != nil {
		return err
	}
	if err := makeWorkspace(ws, create); err != nil {
		return err
	}
	if err := m.ensureCredentials(ctx, ui); err != nil {
		return err
	}
	opts := []flower.Option{flower.WithRunDir(runDir), flower.WithLanguage(ui.Lang),
		flower.WithSessionOptions(func(o *claude.Options) { o.CLIPath = cli })}
	if trim {
		opts = append(opts, flower.WithTrim(store.TrimPolicy{}))
	}
	if o.g.workbench {
		opts = append(opts, flower.WithWorkbench(&workbench.Workbench{Workspace: ws, Home: filepath.Join(runDir, "workbench"), Texts: workbench.TextsFor(ui.Lang)}))
	}
	rt, err := flower.New(ws, opts...)
	if err != nil {
		return fmt.Errorf("%w\ncheck that the workspace and the run directory are writable (-w DIR, -r DIR)", err)
	}
	defer rt.Close()
	ui.OnRescue(rt.Rescue)
	if o.g.verbose {
		ui.Printf("- workspace %s · run dir %s", ws, runDir)
		for _, l := range (flower.Environment{Lang: ui.Lang}).DescribeCredentials() {
			ui.Printf("- %s", l)
		}
	}
	spec := flower.AgentSpec{Name: "ad-hoc", Instructions: o.instructions, AllowedTools: splitList(o.tools),
		PermissionMode: o.mode, MaxBudgetUSD: o.budget}
	start := time.Now()
	started := startGit(ctx, ws, runDir, filepath.Join(runDir, "workbench"))
	status := NewStatus(ui.Lang, o.budget)
	r := NewRenderer(ui, o.g.verbose)
	sctx, stop := context.WithCancel(ctx)
	shown := make(chan struct{})
	go func() {
		defer close(shown)
		status.Show(sctx, ui.Screen)
	}()
	trace := startTracing(ctx, ui, rt)
	// The manifest's step is "ad-hoc" in every language (a key); the
	// screen says it in the person's.
	shownName := ui.T("onceStep")
	status.Event(event.New(event.Step, shownName, nil))
	trace.Event(event.New(event.Step, spec.Name, nil))
	res, err := rt.Run(ctx, spec, o.prompt, flower.RunOptions{Resume: o.resume, Fork: o.fork, OnEvent: func(e event.Event) {
		trace.Event(e)
		status.Event(withoutRole(e))
		r.Event(e)
	}})
	stop()
	<-shown
	end := Ending{Outcome: OutcomeDone, Request: o.prompt, Started: start, Ended: time.Now(), CostUSD: rt.TotalCost()}
	switch {
	case errors.Is(context.Cause(ctx), errQuit):
		end.Outcome = OutcomeStopped
	case err != nil:
		end.Outcome, end.Step, end.Reason = OutcomeFailed, shownName, firstLine(cmp.Or(res.Error, err.Error()))
	}
	end.TokensIn, end.TokensOut = rt.TotalTokens()
	end.changes = started.since(context.WithoutCancel(ctx), ws)
	trace.End(ctx, end)
	showEnding(ui, end, endingPlace{runDir: runDir, workspace: ws, name: m.name(), once: true, manifest: rt.ManifestPath()})
	if err != nil {
		var se *flower.StepError
		if errors.As(err, &se) {
			return fmt.Errorf("%s: %s\nmanifest: %s", fmt.Sprintf(ui.T("aborted"), shownName), res.Error, rt.ManifestPath())
		}
		return err
	}
	return nil
}

// withoutRole is e without the role its session's init names: the
// ad-hoc agent is the step, which the status line already names in the
// person's language.
func withoutRole(e event.Event) event.Event {
	if e.Kind == event.System && e.Text == "init" && e.Payload != nil {
		e.Payload = maps.Clone(e.Payload)
		delete(e.Payload, "role")
	}
	return e
}

func splitList(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
