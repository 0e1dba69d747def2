package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/runstate"
)

// runGo is `flower go [flags] ["ask"]`: the starter flow (or the program's
// own flow) on one request.
func (m *Command) runGo(ctx context.Context, args []string) (err error) {
	prog, own := m.Program, m.Program != nil
	if !own {
		prog = StarterFlow
	}
	cfg, err := m.parseGo(args, own)
	if err != nil {
		return err
	}
	if err := m.holdLeash(); err != nil {
		return err
	}
	if cfg.ReplyKey, err = m.takeReplyKey(); err != nil {
		return err
	}
	if m.getenv(flower.LeashFDEnv) != "" {
		// Only a team's worker starts runs apart from their CLIs.
		cfg.CLIApart = m.getenv(flower.CLIApartEnv)
		cfg.Submitted = true
	}
	if err := m.forwardAPI(); err != nil {
		return err
	}
	ui := m.newUI(cfg.Lang)
	defer ui.Screen.Close()
	if sub := typoOf(cfg.Request); sub != "" && !own && !m.typedGo {
		// A typo costs nothing: a paid run of the word "reprot" is never
		// what was meant.
		if !ui.Interactive {
			return usageErrorf(ui.T("typoNoTTY"), cfg.Request, sub)
		}
		if yes, err := ui.askYesNo(ctx, fmt.Sprintf(ui.T("typoAsk"), sub, cfg.Request), true); err != nil {
			return err
		} else if yes {
			ui.Screen.Close()
			return m.dispatch(ctx, rewrite(replaceArg(args, cfg.Request, sub)))
		}
	}
	create, err := m.checkWorkspace(ctx, ui, &m.flags, cfg.Workspace)
	if err != nil {
		return err
	}
	loadEnv(ui)
	// Nothing is written before the CLI is there: a run that cannot start
	// leaves no run directory behind.
	if cfg.CLIPath, err = m.findCLI(ctx, ui, m.flags.yes); err != nil {
		return err
	}
	if err := makeWorkspace(cfg.Workspace, create); err != nil {
		return err
	}
	if cfg.Request == "" && !own && ui.Interactive && isDemo(cfg.RunDir) {
		// A stopped demo's folder: bare flower would set up credentials
		// and wake the demo's run against a real model.
		if yes, err := ui.askYesNo(ctx, ui.T("demoContinueAsk"), true); err != nil {
			return err
		} else if yes {
			ui.Screen.Close()
			return m.dispatch(ctx, []string{"demo", "-w", cfg.Workspace, "--lang", string(cfg.Lang)})
		}
	}
	if err := m.ensureCredentials(ctx, ui); err != nil {
		return err
	}
	db, err := m.openDatabase(ctx, ui, &cfg)
	if err != nil {
		return err
	}
	if db != nil {
		defer func() { err = closeDatabase(ctx, ui, db, err) }()
		cfg.Database = db
	}
	wf, err := prog(ctx, cfg, ui)
	if err != nil {
		return err
	}
	return Drive(ctx, wf, cfg, ui)
}

// closeDatabase writes the run's last files back to its database and lets
// the run go. Its failure is the run's outcome: a run whose last files did
// not reach the database did not end well, whatever it achieved here (the
// next machine would wake it as it was before), so the person is told
// what is missing and what to do, and the exit is not 0. runErr is what
// the run returned.
func closeDatabase(ctx context.Context, ui *UI, db *flower.Database, runErr error) error {
	cerr := db.Close(context.WithoutCancel(ctx))
	if cerr == nil {
		return runErr
	}
	var msg string
	var nw *runstate.NotWrittenError
	switch {
	case errors.Is(cerr, runstate.ErrLeaseLost):
		msg = ui.T("endTakenOver")
	case errors.As(cerr, &nw) && len(nw.Files) > 0:
		const shown = 10
		list := "   · " + strings.Join(nw.Files[:min(len(nw.Files), shown)], "\n   · ")
		if len(nw.Files) > shown {
			list += "\n   · " + fmt.Sprintf(ui.T("databaseNotWrittenMore"), len(nw.Files)-shown)
		}
		msg = fmt.Sprintf(ui.T("databaseNotWritten"), db.Name(), db.URL(), nw.Err, list)
	default:
		msg = fmt.Sprintf(ui.T("databaseNotWrittenAll"), db.Name(), db.URL(), cerr)
	}
	if runErr == nil {
		return &exitError{code: ExitFailure, err: errors.New(msg)}
	}
	// The run already failed and said so (its exit code stays): the
	// database's part is said as well.
	ui.Screen.Line(screen.Red, msg)
	return runErr
}

// parseGo parses and validates go's command line into a Config. own is a
// workflow program's command line: the original's `run` defaults (trim off
// unless -T; -W gives a workflow without a workbench one).
func (m *Command) parseGo(args []string, own bool) (Config, error) {
	var g globals
	cfg := Config{MaxAsks: -1, Rounds: 3, AskTimeout: human.DefaultTimeout}
	fs := newFlagSet("go")
	g.register(fs)
	fs.IntVar(&cfg.MaxAsks, "asks", -1, "")
	fs.IntVar(&cfg.Rounds, "rounds", 3, "")
	fs.BoolVar(&cfg.NoGoal, "no-goal", false, "")
	fs.BoolVar(&cfg.JudgeCanRun, "judge-can-run", false, "")
	fs.BoolVar(&cfg.CheckNetwork, "check-network", false, "")
	fs.Var(timeoutValue{&cfg.AskTimeout}, "timeout", "")
	fs.BoolVar(&cfg.Isolate, "isolate", false, "")
	fs.IntVar(&cfg.Window, "window", 0, "")
	fs.BoolVar(&cfg.NoHandoff, "no-handoff", false, "")
	fs.BoolVar(&cfg.New, "new", false, "")
	fs.BoolVar(&cfg.Continue, "continue", false, "")
	fs.BoolVar(&cfg.ClarifyOnly, "clarify-only", false, "")
	fs.BoolVar(&cfg.ResumeRun, "resume-run", false, "")
	fs.Var(budgetValue{&cfg.BudgetUSD}, "budget", "")
	fs.StringVar(&cfg.Notify, "notify", "", "")
	fs.BoolVar(&cfg.NoBequest, "no-bequest", false, "")
	pos, err := m.parse(fs, m.goUsage(m.argLang(args)), args)
	if err != nil {
		return cfg, err
	}
	if err := g.checkLang(); err != nil {
		return cfg, err
	}
	if g.workbench && !own {
		return cfg, usageErrorf("%s", text(m.argLang(args), "goWorkbench"))
	}
	switch {
	case isSet(fs, "window") && cfg.Window <= 0:
		return cfg, usageErrorf(text(m.argLang(args), "goWindow"), cfg.Window)
	case cfg.Rounds < 1:
		return cfg, usageErrorf(text(m.argLang(args), "goRounds"), cfg.Rounds)
	case cfg.ResumeRun && (cfg.New || cfg.ClarifyOnly):
		return cfg, usageErrorf("%s", text(m.argLang(args), "goResumeRun"))
	case cfg.New && cfg.Continue:
		return cfg, usageErrorf("%s", text(m.argLang(args), "goNewContinue"))
	case cfg.MaxAsks < -1:
		return cfg, usageErrorf(text(m.argLang(args), "goAsks"), cfg.MaxAsks)
	}
	cfg.Workbench = g.workbench
	if cfg.Trim, err = g.trimFor(!own); err != nil {
		return cfg, err
	}
	if cfg.Notify == "" {
		cfg.Notify = strings.TrimSpace(m.getenv(NotifyEnv))
	}
	cfg.Verbose, cfg.Yes = g.verbose, g.yes
	m.flags = g
	if len(pos) > 0 {
		cfg.Request = strings.TrimSpace(strings.Join(pos, " "))
		if cfg.Request == "" {
			return cfg, &exitError{code: ExitFailure, err: errorText(m.language(&g, ""), "empty")}
		}
	}
	if cfg.Workspace, cfg.RunDir, err = g.resolve(); err != nil {
		return cfg, err
	}
	// A continuing run speaks the language its run directory recorded:
	// flower's lines and the flow's agree.
	cfg.Lang = m.language(&g, cfg.RunDir)
	if cfg.Isolate {
		if out, err := exec.Command("git", "-C", cfg.Workspace, "rev-parse", "--git-dir").CombinedOutput(); err != nil {
			return cfg, fmt.Errorf("--isolate gives each worker a git worktree, and %s is not in a git repository (%s)\nrun `git init` there, or drop --isolate", cfg.Workspace, strings.TrimSpace(string(out)))
		}
	}
	return cfg, nil
}

// replaceArg is args with the first argument equal to old replaced by new.
func replaceArg(args []string, old, new string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		if strings.TrimSpace(a) == old {
			out[i] = new
			break
		}
	}
	return out
}

// isDemo reports a run directory flower demo ran in: it keeps the
// simulated model's home there.
func isDemo(runDir string) bool {
	fi, err := os.Stat(filepath.Join(runDir, demoHome))
	return err == nil && fi.IsDir()
}
