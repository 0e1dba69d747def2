package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/screen"
)

// Outcomes of a run, as the ending block and ending.json say them: the
// library's (flower.RunOutcome decides them), and one of the command's
// own.
const (
	OutcomeAchieved           = flower.OutcomeAchieved           // the judge ruled the goal achieved
	OutcomeAchievedUnmeasured = flower.OutcomeAchievedUnmeasured // achieved by the judge's reading alone: no sandbox here
	OutcomeAchievedExcept     = flower.OutcomeAchievedExcept     // achieved but for the items that cannot be verified here
	OutcomeNeedsLook          = flower.OutcomeNeedsLook          // achieved by the judge, held by the change report's flags
	OutcomeAccepted           = flower.OutcomeAccepted           // the person accepted a goal the judge did not rule achieved
	OutcomeDone               = flower.OutcomeDone               // every step passed, nothing judged
	OutcomeNotAchieved        = flower.OutcomeNotAchieved        // the rounds ran out
	OutcomeUnreachable        = flower.OutcomeUnreachable        // the judge ruled it unreachable and nobody decided otherwise
	OutcomeStopped            = flower.OutcomeStopped            // Ctrl-C to quit, or the budget (Budget)
	OutcomeFailed             = flower.OutcomeFailed             // a step failed or stopped; Reason says why
	// OutcomeTakenOver: another process took the run over (its database
	// lease lapsed while this one was paused or cut off); it goes on
	// there, and this process writes nothing more, not even its ending.
	OutcomeTakenOver = "taken_over"
)

// endingFile is the last run's ending in the run directory: what bare
// `flower` shows before it asks whether to continue.
const endingFile = "ending.json"

// Ending is how one go/run/once ended.
type Ending struct {
	Request string `json:"request,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
	Step    string `json:"step,omitempty"` // the step that stopped
	Round   int    `json:"round,omitempty"`
	// Budget says a stopped run was stopped by its cost budget.
	Budget  bool      `json:"budget,omitempty"`
	Rounds  int       `json:"rounds,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// CostUSD and the tokens are this process's.
	CostUSD   float64 `json:"cost_usd"`
	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	// Restored are the files a tool wrote that were the person's or
	// flower's (the brief, the goal, the Q&A log), put back during the run.
	Restored []string `json:"restored,omitempty"`

	changes changes
}

// LoadEnding reads a run directory's last ending; ok false when there is
// none (or it cannot be read: the wake then says less, nothing fails).
func LoadEnding(runDir string) (Ending, bool) {
	data, err := os.ReadFile(filepath.Join(runDir, endingFile))
	if err != nil {
		return Ending{}, false
	}
	var e Ending
	if json.Unmarshal(data, &e) != nil || e.Outcome == "" {
		return Ending{}, false
	}
	return e, true
}

func (e Ending) save(runDir string) error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(runDir, endingFile), append(data, '\n'), 0o644)
}

// outcomeOf is the ending of a workflow's run: the outcome the library
// decided once (flower.OutcomeOf), which the bequest and the report show
// too. A workflow that never ran (its steps invalid) is decided here from
// its error; quit says the human pressed Ctrl-C to quit.
func outcomeOf(wctx *flower.Ctx, err error, quit bool, lang flower.Lang) Ending {
	o, ok := flower.OutcomeOf(wctx)
	if !ok {
		var cause error
		if quit {
			cause = errQuit
		}
		o = flower.RunOutcome(wctx, err, cause)
	}
	e := Ending{Outcome: o.State, Reason: o.Reason, Step: o.Step, Round: o.Round, Budget: o.Budget}
	if wctx != nil {
		if x, ok := wctx.Get(flower.RestoredKey); ok {
			e.Restored, _ = x.([]string)
		}
	}
	if e.Outcome == OutcomeStopped && !e.Budget {
		e.Step = "" // the person's stop needs no step to explain it
	}
	if e.Outcome == OutcomeFailed && e.Reason == "" {
		e.Reason = text(lang, "noReasonGiven")
	}
	return e
}

// finished reports whether an ending's request is finished (achieved,
// accepted, or done with nothing to judge): the next bare flower starts
// something new rather than continuing it.
func (e Ending) finished() bool { return flower.Outcome{State: e.Outcome}.Finished() }

// changes is what the run changed in a git work tree: git diff --stat
// against the commit it started from, files that are new since, and
// commits made.
type changes struct {
	git       bool
	stat      []string
	untracked []string
	commits   []string
}

// gitStart is the work tree's state when the run starts.
type gitStart struct {
	ok        bool
	head      string // "" in a repository without commits
	base      string // head, or the uncommitted work tree at the start
	untracked map[string]bool
	exclude   []string // flower's own folders, as pathspecs
}

// gitTimeout bounds each git command: a hung git never holds the ending.
const gitTimeout = 10 * time.Second

func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.quotePath=true"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.Output()
	return string(out), err
}

// startGit records the work tree's HEAD and untracked files; ok false
// outside a git work tree. runDir and workbench are left out of what
// changed: they are flower's own files.
func startGit(ctx context.Context, workspace string, own ...string) gitStart {
	var g gitStart
	if out, err := git(ctx, workspace, "rev-parse", "--is-inside-work-tree"); err != nil || strings.TrimSpace(out) != "true" {
		return g
	}
	g.ok = true
	if out, err := git(ctx, workspace, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		g.head = strings.TrimSpace(out)
		g.base = g.head
		// A work tree with uncommitted changes: its state now, as a
		// commit object no ref points at (the work tree, the index and
		// the stash stay as they are), so that only the run's own
		// changes count.
		if out, err := git(ctx, workspace, "stash", "create"); err == nil && strings.TrimSpace(out) != "" {
			g.base = strings.TrimSpace(out)
		}
	}
	for _, p := range own {
		if rel, err := filepath.Rel(workspace, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			g.exclude = append(g.exclude, ":(exclude)"+filepath.ToSlash(rel))
		}
	}
	g.untracked = map[string]bool{}
	for _, f := range g.listUntracked(ctx, workspace) {
		g.untracked[f] = true
	}
	return g
}

func (g gitStart) listUntracked(ctx context.Context, workspace string) []string {
	out, err := git(ctx, workspace, append([]string{"ls-files", "--others", "--exclude-standard", "-z", "--", "."}, g.exclude...)...)
	if err != nil {
		return nil
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files
}

// since is what changed from g to now.
func (g gitStart) since(ctx context.Context, workspace string) changes {
	c := changes{git: g.ok}
	if !g.ok {
		return c
	}
	if g.head != "" {
		if out, err := git(ctx, workspace, append([]string{"diff", "--stat=100", g.base, "--", "."}, g.exclude...)...); err == nil {
			c.stat = nonEmptyLines(out)
		}
		if out, err := git(ctx, workspace, "log", "--oneline", "--no-decorate", "-n", "10", g.head+"..HEAD"); err == nil {
			c.commits = nonEmptyLines(out)
		}
	} else if out, err := git(ctx, workspace, "log", "--oneline", "--no-decorate", "-n", "10"); err == nil {
		c.commits = nonEmptyLines(out)
	}
	for _, f := range g.listUntracked(ctx, workspace) {
		if !g.untracked[f] {
			c.untracked = append(c.untracked, f)
		}
	}
	return c
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

// endingPlace is where the ending points: the run directory (for the
// report) and the workspace (to continue).
type endingPlace struct {
	runDir, workspace string
	// name is the command's name; once's continuation is its own.
	name     string
	once     bool
	manifest string
	// demo: its own closing line says what comes next (flower there would
	// ask for credentials), so the block gives no way to continue.
	demo bool
}

// Block is the ending's lines: outcome (and what to do), rounds, files
// changed, time, tokens, cost, the report and how to continue. Every file
// name and reason is untrusted text; the screen sanitizes each line.
func (e Ending) Block(lang flower.Lang, p endingPlace) []string {
	head, outcome, rest := e.blockParts(lang, p)
	return slices.Concat(head, outcome, rest)
}

// blockParts is Block in three: the head line, the outcome's lines (the
// screen colours them as the verdict lines are), and the rest.
func (e Ending) blockParts(lang flower.Lang, p endingPlace) (head, outcome, rest []string) {
	t := func(k string) string { return text(lang, k) }
	head = []string{t("endingHead")}
	var lines []string
	switch e.Outcome {
	case OutcomeAchieved:
		if e.Round > 0 {
			lines = append(lines, fmt.Sprintf(t("endAchievedRound"), e.Round))
		} else {
			lines = append(lines, t("endAchieved"))
		}
	case OutcomeAchievedUnmeasured:
		lines = append(lines, fmt.Sprintf(t("endAchievedUnmeasured"), e.Round, orNone(lang, e.Reason)))
	case OutcomeAchievedExcept:
		lines = append(lines, fmt.Sprintf(t("endAchievedExcept"), e.Round))
		for _, item := range strings.Split(strings.TrimSpace(e.Reason), "\n") {
			lines = append(lines, "   "+item)
		}
	case OutcomeNeedsLook:
		lines = append(lines, fmt.Sprintf(t("endNeedsLook"), e.Round))
		for _, f := range strings.Split(strings.TrimSpace(e.Reason), "\n") {
			lines = append(lines, "   "+f)
		}
		lines = append(lines, t("endNeedsLookDo"))
	case OutcomeAccepted:
		lines = append(lines, fmt.Sprintf(t("endAccepted"), orNone(lang, e.Reason)))
	case OutcomeDone:
		lines = append(lines, t("endDone"))
	case OutcomeNotAchieved:
		lines = append(lines, fmt.Sprintf(t("endNotAchieved"), e.Round, orNone(lang, e.Reason)), t("endNotAchievedDo"))
	case OutcomeUnreachable:
		lines = append(lines, fmt.Sprintf(t("endUnreachable"), orNone(lang, e.Reason)), t("endUnreachableDo"))
	case OutcomeStopped:
		if e.Budget {
			lines = append(lines, fmt.Sprintf(t("endBudget"), orNone(lang, e.Reason)))
		} else {
			lines = append(lines, t("endStopped"))
		}
	case OutcomeTakenOver:
		lines = append(lines, t("endTakenOver"), t("endTakenOverDo"))
	default:
		what := e.Reason
		if e.Step != "" {
			what = fmt.Sprintf(t("aborted"), e.Step) + ": " + e.Reason
		}
		lines = append(lines, fmt.Sprintf(t("endFailed"), what), t("endFailedDo"))
	}
	outcome, lines = lines, nil
	if e.Rounds > 1 && e.Round > 0 {
		lines = append(lines, fmt.Sprintf(t("endRounds"), e.Round, e.Rounds))
	}
	if len(e.Restored) > 0 {
		lines = append(lines, fmt.Sprintf(t("endRestored"), strings.Join(e.Restored, ", ")))
	}
	c := e.changes
	switch {
	case !c.git:
		lines = append(lines, t("endNoGit"))
	case len(c.stat) == 0 && len(c.untracked) == 0 && len(c.commits) == 0:
		lines = append(lines, t("endNoChanges"))
	default:
		lines = append(lines, t("endChanged"))
		for _, l := range c.stat {
			lines = append(lines, "     "+l)
		}
		if len(c.untracked) > 0 {
			lines = append(lines, fmt.Sprintf(t("endNew"), len(c.untracked)))
			for i, f := range c.untracked {
				if i == 20 {
					lines = append(lines, fmt.Sprintf(t("endMore"), len(c.untracked)-20))
					break
				}
				lines = append(lines, "     "+f)
			}
		}
		if len(c.commits) > 0 {
			lines = append(lines, fmt.Sprintf(t("endCommits"), len(c.commits)))
			for _, l := range c.commits {
				lines = append(lines, "     "+l)
			}
		}
	}
	lines = append(lines, fmt.Sprintf(t("endNumbers"), clock(e.Ended.Sub(e.Started)), Tokens(e.TokensIn), Tokens(e.TokensOut), flower.USD(e.CostUSD)))
	runDir, ws := p.runDir, p.workspace
	if abs, err := filepath.Abs(runDir); err == nil {
		runDir = abs
	}
	report := fmt.Sprintf(t("endReport"), p.name, shellQuote(runDir))
	if p.manifest != "" {
		if abs, err := filepath.Abs(p.manifest); err == nil {
			report += fmt.Sprintf(t("endManifest"), abs)
		}
	}
	lines = append(lines, report)
	switch {
	case p.once, p.demo, e.Outcome == OutcomeTakenOver:
	case e.finished():
		lines = append(lines, fmt.Sprintf(t("endNext"), p.name, shellQuote(ws)))
	default:
		lines = append(lines, fmt.Sprintf(t("endContinue"), p.name, shellQuote(ws)))
	}
	return head, outcome, lines
}

// outcomeColor is the ending's outcome in the verdict lines' colours:
// green where the request is finished as asked, yellow where it is
// finished with something to look at (not measured, an exception, the
// person's acceptance) or held, red where it failed or is not achieved.
func (e Ending) outcomeColor() screen.Color {
	switch e.Outcome {
	case OutcomeAchieved, OutcomeDone:
		return screen.Green
	case OutcomeAchievedUnmeasured, OutcomeAchievedExcept, OutcomeAccepted, OutcomeNeedsLook, OutcomeStopped, OutcomeTakenOver:
		return screen.Yellow
	}
	return screen.Red
}

func orNone(lang flower.Lang, s string) string {
	if strings.TrimSpace(s) == "" {
		return text(lang, "noReasonGiven")
	}
	return firstLine(s)
}

// shellQuote quotes a path for a command a person copies, only when it
// needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '~' || r == '+' || r == ',' || r == ':' || r == '@' ||
			r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// showEnding prints the ending block and records it for the next wake (a
// run directory that cannot take it is said, not fatal).
func showEnding(ui *UI, e Ending, p endingPlace) {
	head, outcome, rest := e.blockParts(ui.Lang, p)
	ui.Screen.Block(screen.Plain, head...)
	ui.Screen.Block(e.outcomeColor(), outcome...)
	ui.Screen.Block(screen.Plain, rest...)
	if p.once || e.Outcome == OutcomeTakenOver {
		return
	}
	if err := e.save(p.runDir); err != nil && !errors.Is(err, os.ErrNotExist) {
		ui.Screen.Line(screen.Yellow, "! "+err.Error())
	}
}
