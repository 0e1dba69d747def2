package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/sqlite"
)

// StarterFlow is the program bare `flower` runs: the root's starter flow
// (clarify, goal, work rounds). A build that wants another default flow
// sets it before Main.
var StarterFlow Program = starterProgram

// StarterOptions maps go's command line onto the starter flow's options.
func (cfg Config) StarterOptions() flower.StarterOptions {
	o := flower.StarterOptions{
		Workspace: cfg.Workspace, RunDir: cfg.RunDir, New: cfg.New, Isolate: cfg.Isolate,
		ClarifyOnly: cfg.ClarifyOnly, NoGoal: cfg.NoGoal, Rounds: cfg.Rounds, JudgeCanRun: cfg.JudgeCanRun, CheckNetwork: cfg.CheckNetwork,
		Lang: cfg.Lang, NoBequest: cfg.NoBequest,
	}
	if cfg.MaxAsks >= 0 {
		n := cfg.MaxAsks
		o.MaxAsks = &n
	}
	switch {
	case cfg.AskTimeout <= 0:
		// --timeout 0: every question settled at once (the library's
		// zero means its default, so at once is spelled negative).
		o.Timeout = -1
	case cfg.AskTimeout == human.Forever:
		o.Timeout = human.Forever
	default:
		o.Timeout = cfg.AskTimeout
	}
	return o
}

// starterProgram is go's path: the wake state (waking unless --new); what
// the last run was and how it ended, before asking; the request asked for
// when none was given (/new archives and asks again, Enter on a waking run
// continues, or after an achieved goal starts something new, /continue
// then continues); a request given after an achieved goal starts anew
// unless --continue, and says which; the wake banner; the starter flow.
func starterProgram(ctx context.Context, cfg Config, ui *UI) (*flower.Workflow, error) {
	o := cfg.StarterOptions()
	wake, err := flower.WakeState(o)
	if err != nil {
		return nil, err
	}
	waking := wake.Waking && !o.New
	if waking && o.ClarifyOnly {
		// The original ran clarify again as a silent no-op and counted a
		// wake; say that there is nothing to clarify, and how to start
		// another request (§13 #12).
		return nil, fmt.Errorf(ui.T("clarified"), wake.Brief)
	}
	// Not in the demo: its folder is a throwaway one flower made, and its
	// judge needs no change report to show what a run looks like.
	if !cfg.NoGoal && !cfg.ClarifyOnly && !ui.answerer && !inGitWorkTree(ctx, cfg.Workspace) {
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("noGitJudge"), cfg.Workspace))
	}
	last, ended := LoadEnding(wake.RunDir)
	finished := ended && last.finished()
	// A run stopped or failed before its brief was confirmed is not
	// forgotten: its request is what bare flower offers to continue (the
	// clarifier's session resumes), as a wake after the brief would.
	beforeBrief := !waking && !o.New && !o.ClarifyOnly && !cfg.ResumeRun && ended && !finished &&
		last.Outcome != OutcomeTakenOver && strings.TrimSpace(last.Request) != ""
	if waking || beforeBrief {
		ui.Screen.Block(screen.Cyan, LastRun(ui.Lang, wake, last, ended, time.Now())...)
	}
	ask := cfg.Request
	if beforeBrief {
		return continueBeforeBrief(ctx, cfg, ui, o, wake, last)
	}
	if cfg.ResumeRun && waking {
		// The run's own request again (a team's next attempt): not new
		// words, so the brief stays and the goal set from it stands.
		ui.request, ask = cmp.Or(ask, last.Request), ""
		ui.Screen.Line(screen.Cyan, ui.T("continuingWith"))
		home, _ := os.UserHomeDir()
		ui.Screen.Line(screen.Cyan, WakeBanner(ui.Lang, cfg.Workspace, home, true, wake.Checks, workContext(ctx, wake, cfg.Workspace, cfg.Database), wake.Woke+1))
		return flower.StarterFlow("", o)
	}
	if ask == "" {
		mode := askStart
		switch {
		case waking && finished:
			mode = askAfterAchieved
		case waking:
			mode = askWake
		}
		req, err := ui.askRequest(ctx, mode)
		if err != nil {
			return nil, err
		}
		if mode == askAfterAchieved && req.Continue && !wake.BriefChanged && !hasWordsLeft(wake.RunDir) {
			if err := confirmRerun(ctx, ui, cfg.Yes || cfg.Submitted, last.CostUSD); err != nil {
				return nil, err
			}
		}
		if req.New {
			o.New, waking = true, false
			if req, err = ui.askRequest(ctx, askStart); err != nil {
				return nil, err
			}
		}
		if mode == askAfterAchieved && req.Text != "" {
			// Words typed after an achieved goal are a new request.
			o.New, waking = true, false
			ui.Screen.Line(screen.Yellow, ui.T("startingNew"))
		}
		ask = req.Text
	} else if waking && finished && !cfg.Continue {
		o.New, waking = true, false
		ui.Screen.Line(screen.Yellow, ui.T("startingNewFlag"))
	} else if waking {
		ui.Screen.Line(screen.Cyan, ui.T("continuingWith"))
	}
	if ask != "" && ask != strings.TrimSpace(last.Request) {
		if err := checkRequest(ctx, ui, cfg.Yes || cfg.Submitted, ask); err != nil {
			return nil, err
		}
	}
	ui.request = ask
	if waking {
		if ask == "" && ended {
			ui.request = last.Request
		}
		home, _ := os.UserHomeDir()
		ui.Screen.Line(screen.Cyan, WakeBanner(ui.Lang, cfg.Workspace, home, true, wake.Checks, workContext(ctx, wake, cfg.Workspace, cfg.Database), wake.Woke+1))
	}
	if o.New {
		sayWordsLeftBehind(ui, wake.RunDir)
	}
	return flower.StarterFlow(ask, o)
}

// wordsJournal is the words journal of the runs in runDir.
func wordsJournal(runDir string) *human.Words {
	return human.OpenWords(filepath.Join(ReplyDir(runDir), human.WordsDir))
}

// hasWordsLeft says the last runs left words undelivered: something new
// for the next run of the request.
func hasWordsLeft(runDir string) bool {
	left, _ := wordsJournal(runDir).Pending()
	return len(left) > 0
}

// sayWordsLeftBehind lists the words the last request's runs never
// delivered, before a new request archives them with it: the person
// typed them for that task, and is told this one starts without them.
func sayWordsLeftBehind(ui *UI, runDir string) {
	left, _ := wordsJournal(runDir).Pending()
	if len(left) == 0 {
		return
	}
	ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("wordsLeftBehind"), len(left)))
	for _, w := range left {
		ui.Screen.Line(screen.Plain, "   · "+clipRunes(w.Text, 200))
	}
}

// inGitWorkTree says whether dir is in a git work tree: the judge's
// change report (what the round changed, from git) needs one.
func inGitWorkTree(ctx context.Context, dir string) bool {
	out, err := git(ctx, dir, "rev-parse", "--is-inside-work-tree")
	return err == nil && strings.TrimSpace(out) == "true"
}

// continueBeforeBrief is go's path for a run directory whose last run
// stopped or failed before its brief was confirmed: Enter at the wake
// prompt (or the same request on the command line) continues that
// request; other words, typed or given, start them as a new request, and
// /new asks for one.
func continueBeforeBrief(ctx context.Context, cfg Config, ui *UI, o flower.StarterOptions, wake flower.Wake, last Ending) (*flower.Workflow, error) {
	ask := strings.TrimSpace(cfg.Request)
	if ask == "" {
		req, err := ui.askRequest(ctx, askBeforeBrief)
		if err != nil {
			return nil, err
		}
		switch {
		case req.New:
			if req, err = ui.askRequest(ctx, askStart); err != nil {
				return nil, err
			}
			o.New, ask = true, req.Text
		case req.Continue:
			ask = last.Request
		default:
			o.New, ask = true, req.Text
		}
	} else if ask != strings.TrimSpace(last.Request) {
		o.New = true
	}
	if ask != "" && ask != strings.TrimSpace(last.Request) {
		if err := checkRequest(ctx, ui, cfg.Yes || cfg.Submitted, ask); err != nil {
			return nil, err
		}
	}
	ui.request = ask
	if o.New {
		ui.Screen.Line(screen.Yellow, ui.T("startingNewNoBrief"))
		sayWordsLeftBehind(ui, wake.RunDir)
		return flower.StarterFlow(ask, o)
	}
	ui.Screen.Line(screen.Cyan, ui.T("continuingNoBrief"))
	home, _ := os.UserHomeDir()
	ui.Screen.Line(screen.Cyan, WakeBanner(ui.Lang, cfg.Workspace, home, false, 0, 0, wake.Woke+1))
	return flower.StarterFlow(ask, o)
}

// LastRun is what a wake shows before it asks: the request, how the last
// run ended and why, when, its cost and rounds. A run directory without an
// ending (an older flower, a killed run) says so.
func LastRun(lang flower.Lang, wake flower.Wake, last Ending, ended bool, now time.Time) []string {
	t := func(k string) string { return text(lang, k) }
	request := ""
	if ended {
		request = last.Request
	}
	if request == "" {
		if b, err := doc.LoadBrief(wake.Brief); err == nil {
			request = b.Goal
		}
	}
	lines := []string{fmt.Sprintf(t("lastRequest"), clipRunes(cmp.Or(request, t("noReasonGiven")), 160))}
	if !ended {
		return append(lines, t("lastUnknown"))
	}
	var how string
	switch last.Outcome {
	case OutcomeAchieved:
		how = t("lastAchieved")
	case OutcomeNeedsLook:
		how = fmt.Sprintf(t("lastNeedsLook"), strings.Count(strings.TrimSpace(last.Reason), "\n")+1)
	case OutcomeAchievedUnmeasured:
		how = fmt.Sprintf(t("lastAchievedUnmeasured"), orNone(lang, last.Reason))
	case OutcomeAchievedExcept:
		how = fmt.Sprintf(t("lastAchievedExcept"), strings.ReplaceAll(strings.TrimSpace(last.Reason), "\n", "; "))
	case OutcomeAccepted:
		how = fmt.Sprintf(t("lastAccepted"), orNone(lang, last.Reason))
	case OutcomeDone:
		how = t("lastDone")
	case OutcomeNotAchieved:
		how = fmt.Sprintf(t("lastNotAchieved"), last.Round, orNone(lang, last.Reason))
	case OutcomeUnreachable:
		how = fmt.Sprintf(t("lastUnreachable"), orNone(lang, last.Reason))
	case OutcomeStopped:
		how = t("lastStopped")
		if last.Budget {
			how = fmt.Sprintf(t("lastBudget"), orNone(lang, last.Reason))
		}
	default:
		how = fmt.Sprintf(t("lastFailed"), orNone(lang, last.Reason))
	}
	ago := strings.TrimSuffix(max(time.Minute, now.Sub(last.Ended).Round(time.Minute)).String(), "0s")
	when := fmt.Sprintf(t("lastWhen"), last.Ended.Local().Format("2006-01-02 15:04"), ago)
	rounds := ""
	if last.Round > 0 {
		rounds = " · " + fmt.Sprintf(t("lastRounds"), last.Round, max(last.Round, last.Rounds))
	}
	return append(lines, fmt.Sprintf(t("lastHow"), how, when, flower.USD(last.CostUSD), rounds))
}

// workContext is the work session's last context size for the banner, 0
// when it is not known (no session yet, no database: one is never created
// just to look).
func workContext(ctx context.Context, wake flower.Wake, workspace string, database *flower.Database) int {
	id := wake.Steps[flower.StarterNamesFor(wake.Lang).Work]
	if database != nil && id != "" {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if r, ok := database.Sessions().(store.LastContextReader); ok {
			if n, err := r.LastContext(ctx, claude.ProjectKey(workspace), id); err == nil {
				return n
			}
		}
		return 0
	}
	db := filepath.Join(wake.RunDir, "sessions.db")
	if _, err := os.Stat(db); err != nil || id == "" {
		return 0
	}
	s, err := sqlite.Open(db)
	if err != nil {
		return 0
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := s.LastContext(ctx, claude.ProjectKey(workspace), id)
	if err != nil {
		return 0
	}
	return n
}

// largeRequest is the size past which a request is asked about before it
// is sent: more than a person types, most often a file pasted or piped
// by mistake, which becomes one paid call as it is.
const largeRequest = 20 << 10

// confirmRerun asks before /continue carries on an achieved goal with
// nothing new: the goal is checked, a work round runs with its judge, and
// the hand-over is written again, for about what the last run cost, and
// likely nothing changes. Off a terminal (or with --yes) it is said, not
// asked.
func confirmRerun(ctx context.Context, ui *UI, yes bool, lastCost float64) error {
	ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("rerunWhat"), flower.USD(lastCost)))
	if yes || !ui.Interactive {
		return nil
	}
	run, err := ui.askYesNo(ctx, ui.T("rerunAsk"), false)
	if err != nil {
		return err
	}
	if !run {
		return &exitError{code: ExitFailure, err: fmt.Errorf("%s%w", ui.T("rerunDeclined"), silentWrap{errCancelled})}
	}
	return nil
}

// checkRequest refuses a request that is not text (binary piped in by
// mistake) and asks before sending one longer than largeRequest: on a
// terminal a yes/no question, elsewhere a usage error unless --yes.
func checkRequest(ctx context.Context, ui *UI, yes bool, request string) error {
	if !utf8.ValidString(request) || strings.ContainsRune(request, 0) {
		return usageErrorf(ui.T("requestNotText"), humanBytes(len(request)))
	}
	if len(request) <= largeRequest || yes {
		return nil
	}
	size := humanBytes(len(request))
	if !ui.Interactive {
		return usageErrorf(ui.T("requestLargeNoTTY"), size)
	}
	send, err := ui.askYesNo(ctx, fmt.Sprintf(ui.T("requestLargeAsk"), size), false)
	if err != nil {
		return err
	}
	if !send {
		return &exitError{code: ExitFailure, err: fmt.Errorf("%s%w", ui.T("requestNotSent"), silentWrap{errCancelled})}
	}
	return nil
}

// humanBytes is n bytes as a person reads a size: 812 bytes, 126 KB.
func humanBytes(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
}
