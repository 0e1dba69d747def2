package app

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/lang"
)

// Config is the parsed command line of go (and run): what the flow needs,
// validated, with every default applied.
type Config struct {
	// Request is the ask, trimmed; "" when bare `flower` should prompt
	// (or offer to continue).
	Request string
	// Workspace is absolute; RunDir too (default <workspace>/runs).
	Workspace string
	RunDir    string
	Verbose   bool
	// Lang is "zh" or "en" ("" = the run directory's, else Chinese).
	Lang string

	// MaxAsks is the question quota; -1 means unlimited.
	MaxAsks int
	// Rounds is the total number of work rounds, at least 1.
	Rounds int
	NoGoal bool
	// JudgeCanRun gives Bash to both judges (goal and round).
	JudgeCanRun bool
	// AskTimeout is how long a question waits: 0 settles every question
	// at once, human.Forever waits until answered.
	AskTimeout time.Duration
	Isolate    bool
	// Window is the context window in tokens; 0 means guess from the model.
	Window    int
	NoHandoff bool
	New       bool
	// Continue: a request given after an achieved goal adds to it instead
	// of starting something new (--continue).
	Continue bool
	// ClarifyOnly stops after the brief.
	ClarifyOnly bool
	// Trim trims resumed sessions (on for go, off for run unless -T).
	Trim bool
	// Workbench is -W: a workbench under <run_dir>/workbench, for run
	// workflows that declare none.
	Workbench bool
	// BudgetUSD caps the whole run's cost; 0 means no cap.
	BudgetUSD float64
	// Notify is a shell command run whenever a question starts waiting.
	Notify string
	// NoBequest turns off the end-of-run hand-over.
	NoBequest bool
}

// globals are the flags every subcommand accepts, before or after it.
type globals struct {
	workspace, runDir, lang string
	verbose, workbench      bool
	trim, noTrim            bool
}

type globalSpec struct {
	names  []string
	valued bool
}

var globalSpecs = []globalSpec{
	{[]string{"w", "workspace"}, true}, {[]string{"r", "run-dir"}, true},
	{[]string{"v", "verbose"}, false}, {[]string{"W", "workbench"}, false},
	{[]string{"T", "trim"}, false}, {[]string{"no-trim"}, false}, {[]string{"lang"}, true},
}

// globalFlag reports whether a is a global flag (-w, --workspace=x …).
func globalFlag(a string) (globalSpec, bool) {
	if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
		return globalSpec{}, false
	}
	name := strings.TrimLeft(a, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, g := range globalSpecs {
		for _, n := range g.names {
			if n == name {
				return g, true
			}
		}
	}
	return globalSpec{}, false
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.workspace, "w", ".", "")
	fs.StringVar(&g.workspace, "workspace", ".", "")
	fs.StringVar(&g.runDir, "r", "", "")
	fs.StringVar(&g.runDir, "run-dir", "", "")
	fs.BoolVar(&g.verbose, "v", false, "")
	fs.BoolVar(&g.verbose, "verbose", false, "")
	fs.BoolVar(&g.workbench, "W", false, "")
	fs.BoolVar(&g.workbench, "workbench", false, "")
	fs.BoolVar(&g.trim, "T", false, "")
	fs.BoolVar(&g.trim, "trim", false, "")
	fs.BoolVar(&g.noTrim, "no-trim", false, "")
	fs.StringVar(&g.lang, "lang", "", "")
}

// resolve makes the paths absolute: the workspace is created; the run
// directory defaults to <workspace>/runs (the original's CWD-relative
// default split a run from its workbench), an explicit relative one is
// relative to the current directory, as every path typed in a shell is.
func (g *globals) resolve() (ws, runDir string, err error) {
	ws, err = filepath.Abs(g.workspace)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", g.workspace, err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return "", "", fmt.Errorf("cannot create the workspace %s: %w\nchoose a writable one with -w DIR", ws, err)
	}
	runDir = flower.DefaultRunDir(ws)
	if g.runDir != "" {
		if runDir, err = filepath.Abs(g.runDir); err != nil {
			return "", "", fmt.Errorf("run directory %s: %w", g.runDir, err)
		}
	}
	return ws, runDir, nil
}

// checkLang validates --lang.
func (g *globals) checkLang() error {
	if err := lang.Check(g.lang); err != nil {
		return usageErrorf("--lang %q: flower speaks zh (Chinese, the default) and en; try --lang en", g.lang)
	}
	return nil
}

// trimFor resolves -T/--trim and --no-trim with the path's default.
func (g *globals) trimFor(def bool) (bool, error) {
	if g.trim && g.noTrim {
		return false, usageErrorf("--trim and --no-trim contradict each other; give one")
	}
	switch {
	case g.trim:
		return true, nil
	case g.noTrim:
		return false, nil
	}
	return def, nil
}

// parseInterspersed parses args with fs, allowing flags after positional
// arguments (`flower "build X" --rounds 2`); "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet makes a subcommand's FlagSet: errors are returned, never
// printed by the flag package (parse prints them once, with the fix).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses a subcommand's args: -h prints usage to stdout (exit 0),
// an error becomes a usage error that names the fix.
func (m *Command) parse(fs *flag.FlagSet, usage string, args []string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err == flag.ErrHelp {
		fmt.Fprint(m.Stdout, usage)
		return nil, errHelp
	}
	if err != nil {
		return nil, flagError(fs.Name(), m.name(), err)
	}
	return pos, nil
}

// flagError turns a FlagSet error into a usage error that says the fix.
func flagError(cmd, prog string, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return usageErrorf("%s %s: unknown flag %s; `%s %s --help` lists the flags%s", prog, cmd, rest, prog, cmd, didYouMean(rest))
	}
	return usageErrorf("%s %s: %s; `%s %s --help` shows the flags", prog, cmd, msg, prog, cmd)
}

func didYouMean(flagText string) string {
	known := map[string]string{"round": "--rounds", "ask": "--asks", "workdir": "-w", "dir": "-w",
		"runs": "-r", "no-goals": "--no-goal", "windows": "--window", "budget-usd": "--budget",
		"language": "--lang", "model": "ANTHROPIC_MODEL (set it, or run `flower setup`)"}
	if s, ok := known[strings.TrimLeft(flagText, "-")]; ok {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// timeoutValue is --timeout: seconds (0 = settle at once) or "forever".
type timeoutValue struct{ d *time.Duration }

func (v timeoutValue) String() string {
	if v.d == nil {
		return ""
	}
	if *v.d == human.Forever {
		return "forever"
	}
	return strconv.FormatFloat(v.d.Seconds(), 'f', -1, 64)
}

func (v timeoutValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "forever") || strings.EqualFold(s, "inf") {
		*v.d = human.Forever
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return fmt.Errorf("%q is not a number of seconds (0 = answer every question at once, forever = wait until answered)", s)
	}
	if f < 0 {
		return fmt.Errorf("%s is negative: use 0 to settle every question at once, or forever to wait", s)
	}
	if f*float64(time.Second) >= float64(human.Forever) {
		*v.d = human.Forever
		return nil
	}
	*v.d = time.Duration(f * float64(time.Second))
	return nil
}

// budgetValue is a cost in USD, 0 or more.
type budgetValue struct{ f *float64 }

func (v budgetValue) String() string {
	if v.f == nil {
		return ""
	}
	return strconv.FormatFloat(*v.f, 'f', -1, 64)
}

func (v budgetValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%q is not an amount in USD (for example 5 or 12.50)", s)
	}
	if f < 0 {
		return fmt.Errorf("%s is negative: give a cap in USD, or leave the flag out for none", s)
	}
	*v.f = f
	return nil
}

// isSet reports whether the flag name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
