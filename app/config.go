package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

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
	// Yes (--yes) answers yes where flower would ask first: installing
	// the CLI, sending a request longer than a person types.
	Yes bool
	// Submitted: a team worker's run, whose request a person submitted to
	// the queue; its length is not asked about again (nobody is there).
	Submitted bool
	// Lang is the command's language: --lang, else the run directory's
	// recorded one, else the locale's (LC_ALL, LC_MESSAGES, LANG: zh* is
	// Chinese, anything else English).
	Lang flower.Lang

	// MaxAsks is the question quota; -1 means unlimited.
	MaxAsks int
	// Rounds is the total number of work rounds, at least 1.
	Rounds int
	NoGoal bool
	// JudgeCanRun gives Bash to both judges (goal and round).
	JudgeCanRun bool
	// CheckNetwork lets flower's own runs of the checklist's commands use
	// the network.
	CheckNetwork bool
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
	// ResumeRun carries the directory's run on where it stopped without
	// asking (--resume-run): Request is the run's own, used only when no
	// brief was written yet, never added to the brief as a wake's words.
	ResumeRun bool
	// ClarifyOnly stops after the brief.
	ClarifyOnly bool
	// Trim trims resumed sessions (on for go, off for run unless -T).
	Trim bool
	// Workbench is -W: a workbench under <run_dir>/workbench, for run
	// workflows that declare none.
	Workbench bool
	// Database holds the run's state when $FLOWER_DATABASE_URL names one
	// (opened by go before the flow reads the run), nil for files.
	Database *flower.Database
	// BudgetUSD caps the whole run's cost; 0 means no cap.
	BudgetUSD float64
	// Notify is a shell command run whenever a question starts waiting.
	Notify string
	// CLIPath is the claude binary the command found (FLOWER_CLAUDE,
	// flower's pinned copy in the user's cache, PATH) or installed; ""
	// leaves the choice to the Runtime (FLOWER_CLAUDE, then PATH).
	CLIPath string
	// NoBequest turns off the end-of-run hand-over.
	NoBequest bool
	// ReplyKey, when set, makes the run's file front end take only the
	// reply files signed with it (a team run: see flower.ReplyKeyFDEnv).
	// The key's bytes as a string: a Config stays comparable.
	ReplyKey string
	// CLIApart, when set, is the bubblewrap each CLI of the run starts
	// through, apart from the run's flower (a confined team run: see
	// flower.CLIApart).
	CLIApart string
}

// globals are the flags every subcommand accepts, before or after it.
type globals struct {
	workspace, runDir, lang string
	verbose, workbench      bool
	trim, noTrim            bool
	// yes installs the CLI without asking; create makes a missing -w
	// directory.
	yes, create bool
}

type globalSpec struct {
	names  []string
	valued bool
}

var globalSpecs = []globalSpec{
	{[]string{"w", "workspace"}, true}, {[]string{"r", "run-dir"}, true},
	{[]string{"v", "verbose"}, false}, {[]string{"W", "workbench"}, false},
	{[]string{"T", "trim"}, false}, {[]string{"no-trim"}, false}, {[]string{"lang"}, true},
	{[]string{"yes"}, false}, {[]string{"create"}, false},
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
	fs.BoolVar(&g.yes, "yes", false, "")
	fs.BoolVar(&g.create, "create", false, "")
}

// resolve makes the paths absolute; it creates nothing (checkWorkspace
// and makeWorkspace do, once the command's checks have passed). The run
// directory defaults to <workspace>/runs (the original's CWD-relative
// default split a run from its workbench), an explicit relative one is
// relative to the current directory, as every path typed in a shell is.
func (g *globals) resolve() (ws, runDir string, err error) {
	ws, err = filepath.Abs(g.workspace)
	if err != nil {
		return "", "", fmt.Errorf("workspace %s: %w", g.workspace, err)
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
	if err := lang.Check(flower.Lang(g.lang)); err != nil {
		return usageErrorf("--lang %q: flower speaks en (English) and zh (Chinese); try --lang en", g.lang)
	}
	return nil
}

// language is the command's language: --lang when given, else the
// language runDir recorded on its first run ("" for none), else the
// locale's. It never returns the zero Lang.
func (m *Command) language(g *globals, runDir string) flower.Lang {
	if g.lang != "" {
		return flower.Lang(g.lang).Canonical()
	}
	if runDir != "" {
		if l, ok, err := flower.RunDirLanguage(runDir); err == nil && ok {
			return l
		}
	}
	return lang.FromLocale(m.getenv)
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
// an error becomes a usage error that names the fix, in the language of
// the command line (its --lang, else the locale).
func (m *Command) parse(fs *flag.FlagSet, usage string, args []string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err == flag.ErrHelp {
		m.printHelp(usage)
		return nil, errHelp
	}
	if err != nil {
		return nil, flagError(fs, m.name(), m.argLang(args), err)
	}
	return pos, nil
}

// flagError turns a FlagSet error into a usage error that says the fix:
// an unknown flag names the nearest one the command has.
func flagError(fs *flag.FlagSet, prog string, l flower.Lang, err error) error {
	cmd, msg := fs.Name(), err.Error()
	if rest, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		// The flag package names every flag with one dash; the help
		// writes a long one with two, and so does the person.
		if name := strings.TrimLeft(rest, "-"); len([]rune(name)) > 1 {
			rest = "--" + name
		}
		hint := ""
		if near := nearestFlag(fs, rest, l); near != "" {
			hint = fmt.Sprintf(text(l, "flagHint"), near)
		}
		return usageErrorf(text(l, "unknownFlag"), prog, cmd, rest, prog, cmd, hint)
	}
	return usageErrorf(text(l, "badFlag"), prog, cmd, msg, prog, cmd)
}

// knownSlips are flags people type from other tools or from memory, with
// what flower calls them: too far for the edit distance to find.
var knownSlips = map[string]string{"workdir": "-w", "dir": "-w", "runs": "-r",
	"budget-usd": "--budget", "language": "--lang"}

// nearestFlag is the flag of fs (or -h/--help, and --version for the run,
// which every command line takes) nearest to the unknown typed, written
// as it is typed (-x, --name), or "" when none is a typo away.
func nearestFlag(fs *flag.FlagSet, typed string, l flower.Lang) string {
	name := strings.TrimLeft(typed, "-")
	name, _, _ = strings.Cut(name, "=")
	if name == "model" {
		return text(l, "flagModel")
	}
	if s, ok := knownSlips[name]; ok {
		return s
	}
	names := []string{"help"}
	if fs.Name() == "go" {
		names = append(names, "version")
	}
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	best, bestD := "", 0
	for _, n := range names {
		d := editDistance(strings.ToLower(name), n)
		if d > 0 && d <= typoDistance(n) && d < len([]rune(n)) && (best == "" || d < bestD) {
			best, bestD = n, d
		}
	}
	switch {
	case best == "":
		return ""
	case len(best) == 1:
		return "-" + best
	}
	return "--" + best
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

// listValue gathers a repeated flag's values.
type listValue struct{ values *[]string }

func (v listValue) String() string {
	if v.values == nil {
		return ""
	}
	return strings.Join(*v.values, ",")
}

func (v listValue) Set(s string) error {
	*v.values = append(*v.values, s)
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

// checkWorkspace decides about a workspace that does not exist: --create
// makes it, a person on a terminal is asked (default no), anything else is
// a usage error that names the closest existing sibling ("did you mean").
// It reports whether makeWorkspace must create it; it creates nothing.
func (m *Command) checkWorkspace(ctx context.Context, ui *UI, g *globals, ws string) (bool, error) {
	fi, err := os.Stat(ws)
	switch {
	case err == nil && fi.IsDir():
		if err := canWriteIn(ws); err != nil {
			return false, usageErrorf(ui.T("wsReadOnly"), ws, err)
		}
		return false, nil
	case err == nil:
		return false, usageErrorf(ui.T("wsFile"), ws)
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("workspace %s: %w\nchoose another with -w DIR", ws, err)
	case g.create:
		return true, nil
	}
	hint := ""
	if near := closestSibling(ws); near != "" {
		hint = fmt.Sprintf(ui.T("wsHint"), near)
	}
	if ui.Interactive {
		yes, err := ui.askYesNo(ctx, fmt.Sprintf(ui.T("wsAsk"), ws, hint), false)
		if err != nil {
			return false, err
		}
		if yes {
			return true, nil
		}
		return false, &exitError{code: ExitFailure, err: errorText(ui.Lang, "cancelled")}
	}
	return false, usageErrorf(ui.T("wsMissing"), ws, hint)
}

// canWriteIn reports why flower cannot write in dir (a read-only file
// system, no permission), nil when it can: the run directory and the
// workbench go there, and a run that finds out only when it creates them
// says "read-only file system" with no word of what to do. It writes one
// empty file and removes it.
func canWriteIn(dir string) error {
	f, err := os.CreateTemp(dir, ".flower-write-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err // the path is in the message already
		}
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// makeWorkspace creates the workspace when checkWorkspace said so.
func makeWorkspace(ws string, create bool) error {
	if !create {
		return nil
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return fmt.Errorf("cannot create the workspace %s: %w\nchoose a writable one with -w DIR", ws, err)
	}
	return nil
}

// closestSibling is the existing directory beside path whose name is
// nearest to path's (a typo away), or "".
func closestSibling(path string) string {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return ""
	}
	base, best, bestD := filepath.Base(path), "", 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if d := editDistance(base, e.Name()); d <= typoDistance(base) && (best == "" || d < bestD) {
			best, bestD = filepath.Join(filepath.Dir(path), e.Name()), d
		}
	}
	return best
}

// typoDistance is how many edits still read as a typo of a word this long.
func typoDistance(word string) int {
	if len([]rune(word)) <= 4 {
		return 1
	}
	return 2
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours (reprot is one
// edit from report).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// typoOf is what a one-word request was most likely meant as, or "": a
// subcommand within typoDistance of it (verison, hepl), or, for a word
// that starts with dashes the flag parser does not read as one (the
// em dash a phone or a word processor turns -- into: —help), the flag
// --help or --version it is, or is a typo away from.
func typoOf(request string) string {
	if request == "" || strings.ContainsFunc(request, unicode.IsSpace) {
		return ""
	}
	word := strings.ToLower(request)
	bare := strings.TrimLeft(word, "-‐‑–—−")
	if bare != word {
		for _, f := range []string{"help", "version"} {
			if d := editDistance(bare, f); d <= typoDistance(f) && d < len(f) {
				return "--" + f
			}
		}
		return ""
	}
	best, bestD := "", 0
	for _, c := range subcommands {
		if d := editDistance(word, c); d > 0 && d <= typoDistance(c) && d < len([]rune(c)) && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}
