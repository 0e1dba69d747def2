package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/screen"
)

// runDemo is `flower demo`: the whole starter flow (clarify with one
// question, brief, goal, two rounds, the bequest) on the pinned real CLI
// against a scripted model served in this process on 127.0.0.1. No
// credentials are read or needed and nothing leaves the machine; the
// simulated human answers the question unless you do first.
func (m *Command) runDemo(ctx context.Context, args []string) error {
	var g globals
	fs := newFlagSet("demo")
	g.register(fs)
	pos, err := m.parse(fs, m.demoUsage(), args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErrorf("`%s demo` takes no request (got %q): its model is scripted for one; `%s \"your request\"` runs yours", m.name(), pos[0], m.name())
	}
	if err := g.checkLang(); err != nil {
		return err
	}
	cli, err := m.demoCLI()
	if err != nil {
		return err
	}
	if g.workspace == "." && !isSet(fs, "w") && !isSet(fs, "workspace") {
		// The demo's files go to a fresh folder, never into the
		// directory it was started in.
		if g.workspace, err = os.MkdirTemp("", "flower-demo-"); err != nil {
			return fmt.Errorf("flower demo: a folder for the demo: %w; give one with -w DIR", err)
		}
	}
	cfg := Config{MaxAsks: -1, Rounds: 2, AskTimeout: time.Minute, Lang: g.lang, Verbose: g.verbose, Trim: true}
	if cfg.Workspace, cfg.RunDir, err = g.resolve(); err != nil {
		return err
	}
	texts := demo.TextsFor(cfg.Lang)
	srv, err := fakeapi.Start(demo.Script(cfg.Lang, cfg.Workspace).Handler())
	if err != nil {
		return fmt.Errorf("flower demo: the simulated model: %w", err)
	}
	defer srv.Close()
	home := filepath.Join(cfg.RunDir, "demo-home")
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
	ui.Screen.Line(screen.Yellow, ui.T("demoSimulated"))
	ui.Printf(ui.T("demoWhere"), cfg.Workspace, texts.Ask)
	cfg.Request = texts.Ask
	wf, err := starterProgram(ctx, cfg, ui)
	if err != nil {
		return err
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	if ch, ok := wf.Channel.(*human.Channel); ok {
		go func() {
			defer close(done)
			answerAsDemo(actx, ui, ch, texts.Answer)
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
	return nil
}

// answerAsDemo is the simulated human: a moment after each question shows
// (time for a human at the terminal to answer first), it answers.
func answerAsDemo(ctx context.Context, ui *UI, ch *human.Channel, answer string) {
	for {
		a, err := ch.NextAsk(ctx)
		if err != nil {
			return
		}
		select {
		case <-time.After(demoPause):
		case <-ctx.Done():
			return
		}
		if ch.Answer(a.ID, answer) {
			ui.Screen.Line(screen.Dim, fmt.Sprintf(ui.T("demoAnswers"), answer))
		}
	}
}

// demoPause is how long the simulated human lets you answer first.
var demoPause = 3 * time.Second

// demoCLI finds the pinned real CLI: FLOWER_CLAUDE, else the one
// tools/claude-cli/install.sh puts under the module, looked for above the
// current directory and above the flower executable.
func (m *Command) demoCLI() (string, error) {
	if p := m.getenv("FLOWER_CLAUDE"); p != "" {
		if isExecutableFile(p) {
			return p, nil
		}
		return "", fmt.Errorf("flower demo: FLOWER_CLAUDE=%s is not an executable file; point it at the claude binary, or unset it and run tools/claude-cli/install.sh", p)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, fakeapi.PinnedCLI)
			if isExecutableFile(p) {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("flower demo needs the pinned Claude Code CLI and found none (looked for %s above %v)\nrun tools/claude-cli/install.sh in flower's source tree (it needs npm), or set FLOWER_CLAUDE to a claude binary", fakeapi.PinnedCLI, starts)
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
