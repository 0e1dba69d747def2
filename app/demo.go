package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen"
)

// runDemo is `flower demo`: the whole starter flow (clarify with one
// question, brief, goal, two rounds, the bequest) on the pinned real CLI
// against a scripted model served in this process on 127.0.0.1. No
// credentials are read or needed and nothing leaves the machine; the
// simulated human answers the question unless you do first. Its model
// follows what a person tries (demo.Handler).
// demoHome is the simulated model's HOME in the demo's run directory:
// its being there marks the folder as a demo's (isDemo).
const demoHome = "demo-home"

func (m *Command) runDemo(ctx context.Context, args []string) error {
	var g globals
	fs := newFlagSet("demo")
	g.register(fs)
	pos, err := m.parse(fs, m.demoUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf(text(m.argLang(args), "demoArgs"), m.name(), pos[0], m.name())
	}
	if err := g.checkLang(); err != nil {
		return err
	}
	explicit := isSet(fs, "w") || isSet(fs, "workspace")
	cli, create, err := m.demoPreflight(ctx, &g, explicit)
	if err != nil {
		return err
	}
	if g.workspace == "." && !explicit {
		// The demo's files go to a fresh folder, never into the
		// directory it was started in.
		if g.workspace, err = os.MkdirTemp("", "flower-demo-"); err != nil {
			return fmt.Errorf("flower demo: a folder for the demo: %w; give one with -w DIR", err)
		}
		// A git work tree of its own, as a person's repository is: the
		// judge gets its change report and the ending lists the files the
		// demo wrote. Without git the ending says it has none, as anywhere.
		_, _ = git(ctx, g.workspace, "init", "-q")
	}
	pause, err := demoPause(m.getenv("FLOWER_DEMO_PAUSE"))
	if err != nil {
		return err
	}
	cfg := Config{MaxAsks: -1, Rounds: 2, AskTimeout: time.Minute, Verbose: g.verbose, Trim: true}
	if cfg.Workspace, cfg.RunDir, err = g.resolve(); err != nil {
		return err
	}
	if err := makeWorkspace(cfg.Workspace, create); err != nil {
		return err
	}
	cfg.Lang = m.language(&g, cfg.RunDir)
	texts := demo.TextsFor(cfg.Lang)
	srv, err := fakeapi.Start(demo.Handler(cfg.Lang, cfg.Workspace))
	if err != nil {
		return fmt.Errorf("flower demo: the simulated model: %w", err)
	}
	defer srv.Close()
	// Usage as a bill shows it, the prompt cache priced: the demo's costs,
	// context and report read like a real run's.
	srv.PriceWith(fakeapi.NewPromptCache(nil))
	home := filepath.Join(cfg.RunDir, demoHome)
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return fmt.Errorf("flower demo: %w; give a writable folder with -w DIR", err)
	}
	// The CLI inherits this process's environment: point it at the
	// simulated model with the variables that keep every request on the
	// loopback, and blank those that would send it elsewhere.
	env := fakeapi.CLIEnv(srv.URL, home, tmp)
	env["FLOWER_CLAUDE"] = cli
	env["XDG_CONFIG_HOME"] = filepath.Join(home, ".config")
	for k, v := range env {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("flower demo: setting %s: %w", k, err)
		}
	}

	stdin := m.Stdin
	if f, ok := stdin.(*os.File); !ok || !screen.IsTerminal(int(f.Fd())) {
		// Off a terminal nobody types: an input that never ends keeps
		// the question open for the simulated human instead of settling
		// it as unanswered.
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("flower demo: %w", err)
		}
		defer r.Close()
		defer w.Close()
		stdin = r
	}
	orig := m.Stdin
	m.Stdin = stdin
	ui := m.newUI(cfg.Lang)
	m.Stdin = orig
	defer ui.Screen.Close()
	ui.answerer = true
	// A quit by Ctrl-C says how to continue the demo: bare flower in its
	// folder would look for credentials and a real model.
	m.quitHint = fmt.Sprintf(ui.T("demoQuit"), m.name(), shellQuote(cfg.Workspace))
	ui.Screen.Line(screen.Yellow, ui.T("demoSimulated"))
	ui.languageHint()
	ui.Printf(ui.T("demoWhere"), cfg.Workspace, texts.Ask)
	if ui.Interactive {
		ui.Screen.Line(screen.Dim, ui.T("demoTry"))
	}
	wf, err := demoProgram(ctx, cfg, ui, texts.Ask)
	if err != nil {
		return err
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	if ch, ok := wf.Channel.(*human.Channel); ok {
		go func() {
			defer close(done)
			answerAsDemo(actx, ui, ch, texts.Answer, pause)
		}()
	} else {
		close(done)
	}
	err = Drive(ctx, wf, cfg, ui)
	stop()
	<-done
	if err != nil {
		return err
	}
	ui.Printf(ui.T("demoDone"), filepath.Join(cfg.Workspace, texts.File), cfg.Workspace)
	if pkg, ok := strings.CutPrefix(commandName(), "go run "); ok {
		// Run by go run: the hints above say go run, which works only
		// in the clone; real work wants flower on PATH.
		ui.Printf(ui.T("goRunInstall"), pkg)
	}
	return nil
}

// demoProgram is the demo's starter flow: its request in a fresh folder;
// in a folder where a demo stopped after its brief, the same flow woken
// with no new words (the request again would be added to the brief as
// new words), under the wake banner.
func demoProgram(ctx context.Context, cfg Config, ui *UI, ask string) (*flower.Workflow, error) {
	o := cfg.StarterOptions()
	wake, err := flower.WakeState(o)
	if err != nil {
		return nil, err
	}
	if !wake.Waking {
		cfg.Request = ask
		return starterProgram(ctx, cfg, ui)
	}
	home, _ := os.UserHomeDir()
	ui.Screen.Line(screen.Cyan, WakeBanner(ui.Lang, cfg.Workspace, home, true, wake.Checks, workContext(ctx, wake, cfg.Workspace, cfg.Database), wake.Woke+1))
	return flower.StarterFlow("", o)
}

// answerAsDemo is the simulated human: it answers each question with
// answer once demoAnswerDue says the person has had their turn.
func answerAsDemo(ctx context.Context, ui *UI, ch *human.Channel, answer string, pause time.Duration) {
	for {
		a, err := ch.NextAsk(ctx)
		if err != nil {
			return
		}
		for {
			wait := time.Until(demoAnswerDue(a.AskedAt, ui.LastInput(), pause))
			if wait <= 0 && ui.heldQuestion.Load() {
				// The person pressed Ctrl-C at it: theirs to cancel at
				// Enter; look again in a moment.
				wait = time.Second
			}
			if wait <= 0 {
				break
			}
			// The person may give input meanwhile: look at the due time
			// again when this one comes.
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		if ch.Answer(a.ID, answer) {
			ui.Screen.Line(screen.Dim, fmt.Sprintf(ui.T("demoAnswers"), answer))
		}
	}
}

// defaultDemoPause is how long the simulated human lets a person answer a
// question first: time to read it and type a few words.
const defaultDemoPause = 15 * time.Second

// demoAnswerDue is when the simulated human may answer a question shown
// at shown: once the person has had pause to answer it, and pause again
// after their last input (a line, a Ctrl-C; lastInput, zero for none), so
// that a person busy at the terminal, or reading the answer to a side
// question, is not answered over (a third of pause answered a person who
// had asked a side question while they read its answer).
func demoAnswerDue(shown, lastInput time.Time, pause time.Duration) time.Time {
	due := shown.Add(pause)
	if quiet := lastInput.Add(pause); !lastInput.IsZero() && quiet.After(due) {
		due = quiet
	}
	return due
}

// demoPause reads FLOWER_DEMO_PAUSE (a Go duration; unset: 15 s), the
// tests' knob for the simulated human's patience.
func demoPause(v string) (time.Duration, error) {
	if v == "" {
		return defaultDemoPause, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usageErrorf("FLOWER_DEMO_PAUSE=%q is not a duration such as 15s; unset it for the default", v)
	}
	return d, nil
}

// demoPreflight runs the checks that come before the demo writes
// anything: a -w directory that does not exist (explicit), then the one
// CLI lookup every subcommand shares (findCLI). It reports the CLI and
// whether the workspace is to be created.
func (m *Command) demoPreflight(ctx context.Context, g *globals, explicit bool) (string, bool, error) {
	ui := m.newUI(m.language(g, ""))
	defer ui.Screen.Close()
	create := false
	if explicit {
		ws, _, err := g.resolve()
		if err != nil {
			return "", false, err
		}
		if create, err = m.checkWorkspace(ctx, ui, g, ws); err != nil {
			return "", false, err
		}
	}
	cli, err := m.findCLI(ctx, ui, g.yes)
	return cli, create, err
}
