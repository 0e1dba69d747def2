package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/workbench"
)

// RuntimeOptions are the Runtime's options for cfg: run directory,
// language, trim, handoff (window, or off), whole-run budget, and the
// workbench: the workflow's (always beating -W), else -W's
// <run_dir>/workbench, else the Runtime's default.
func (cfg Config) RuntimeOptions(wf *flower.Workflow) []flower.Option {
	opts := []flower.Option{
		flower.WithRunDir(cfg.RunDir),
		flower.WithHandoff(flower.HandoffPolicy{Disabled: cfg.NoHandoff, Window: cfg.Window}),
	}
	if cfg.Trim {
		// WithTrim turns trimming on whatever its policy says: off is the
		// Runtime's default, so --no-trim passes nothing.
		opts = append(opts, flower.WithTrim(store.TrimPolicy{}))
	}
	opts = append(opts, flower.WithLanguage(cfg.Lang))
	if cfg.CLIPath != "" {
		opts = append(opts, flower.WithSessionOptions(func(o *claude.Options) { o.CLIPath = cfg.CLIPath }))
	}
	if cfg.CLIApart != "" {
		launcher := flower.CLIApart(cfg.CLIApart)
		opts = append(opts, flower.WithSessionOptions(func(o *claude.Options) { o.Launcher = launcher }))
	}
	if cfg.BudgetUSD > 0 {
		opts = append(opts, flower.WithBudget(cfg.BudgetUSD))
	}
	if cfg.Database != nil {
		opts = append(opts, flower.WithDatabase(cfg.Database))
	}
	switch {
	case wf != nil && wf.Workbench != nil:
		opts = append(opts, flower.WithWorkbench(wf.Workbench))
	case cfg.Workbench:
		wb := &workbench.Workbench{Workspace: cfg.Workspace, Home: filepath.Join(cfg.RunDir, "workbench"), Texts: workbench.TextsFor(cfg.Lang)}
		if wf != nil {
			wf.Workbench = wb
		}
		opts = append(opts, flower.WithWorkbench(wb))
	}
	return opts
}

// Drive runs wf on a Runtime made from cfg and renders it: step rules, the
// agents' lines, the human channel's questions (and its file front end for
// `flower reply`, and --notify), the closing line with the total cost and
// the manifest. A workflow that stopped at a step returns the error that
// names it (exit 1).
func Drive(ctx context.Context, wf *flower.Workflow, cfg Config, ui *UI) error {
	rt, err := flower.New(cfg.Workspace, cfg.RuntimeOptions(wf)...)
	if err != nil {
		return fmt.Errorf("%w\ncheck that the workspace and the run directory are writable (-w DIR, -r DIR)", err)
	}
	defer rt.Close()
	ui.OnRescue(rt.Rescue)
	if cfg.Verbose {
		if rt.Trimming() {
			ui.Printf("- %s", ui.T("trimOn"))
		} else {
			ui.Printf("- %s", ui.T("trimOff"))
		}
		for _, l := range (flower.Environment{Lang: ui.Lang}).DescribeCredentials() {
			ui.Printf("- %s", l)
		}
	}
	ui.Screen.Block(screen.Dim, firstScreen(ui, cfg)...)
	start := time.Now()
	var own []string
	if wb := rt.Workbench(); wb != nil {
		own = append(own, wb.Root())
	}
	started := startGit(ctx, cfg.Workspace, append(own, cfg.RunDir)...)
	status := NewStatus(ui.Lang, cfg.BudgetUSD)
	r := NewRenderer(ui, cfg.Verbose)
	notifier := NewNotifier(cfg.Notify, cfg.Workspace, cfg.RunDir, func(err error) {
		ui.Screen.Line(screen.Yellow, "! "+err.Error())
	})
	defer notifier.Close()
	aside := NewAside(ctx, ui, cfg, rt.Workbench())
	trace := startTracing(ctx, ui, rt)
	var console *Console
	sink := func(e event.Event) {
		trace.Event(e)
		status.Event(e)
		if e.Kind == event.Step {
			ui.Screen.Line(screen.Cyan, StepRule(ui.Lang, e.Text, e.Int("index"), e.Int("total"), e.Bool("resumed"), e.Int("woke"), ui.Screen.Width()))
			return
		}
		// A question cancelled by Ctrl-C: the console's line says so;
		// the renderer's "skipped" would say it twice.
		if console == nil || !console.CancelledByInterrupt(e) {
			r.Event(e)
		}
		notifier.Event(e)
		aside.Event(e)
		if console != nil {
			console.Event(e)
		}
	}
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Add(1)
	go func() {
		defer wg.Done()
		status.Show(sctx, ui.Screen)
	}()
	// The words journal: every word typed is on disk before its receipt,
	// and what the last run never delivered goes to this run's first
	// working step (the Runtime carries words given between steps).
	var journal *human.Words
	var delivered []string // journal entries this run delivers
	if ch, ok := wf.Channel.(*human.Channel); ok && ch != nil {
		journal = wordsJournal(cfg.RunDir)
		ch.UseWords(journal)
		left, err := journal.Pending()
		if err != nil {
			ui.Screen.Line(screen.Yellow, "! "+err.Error())
		}
		unheard, err := unheardWords(ctx, rt, journal)
		if err != nil {
			ui.Screen.Line(screen.Yellow, "! "+err.Error())
		}
		left = append(left, unheard...)
		slices.SortFunc(left, func(a, b human.Word) int { return strings.Compare(a.Name, b.Name) })
		if len(left) > 0 {
			ui.Screen.Line(screen.Cyan, fmt.Sprintf(ui.T("leftWords"), len(left)))
			brief, _ := os.ReadFile(ch.AmendPath())
			var texts []string
			for _, w := range left {
				delivered = append(delivered, w.Name)
				if w.InBrief && strings.Contains(string(brief), w.Text) {
					// The brief holds them: the goal is derived again from
					// it and the coordinator is sent the change. Sent here
					// too, they arrived twice.
					ui.Screen.Line(screen.Plain, "   · "+clipRunes(w.Text, 200)+" "+ui.T("wordsInBrief"))
					continue
				}
				ui.Screen.Line(screen.Plain, "   · "+clipRunes(w.Text, 200))
				texts = append(texts, w.Text)
			}
			if len(texts) > 0 {
				rt.Interrupt(strings.Join(texts, "\n\n"))
			}
		}
		console = NewConsole(ui, ch, aside.Ask, func(words string) {
			// Ctrl-C said the round is interrupted once the words are
			// given; the runtime's event says when it resumes. Words are
			// on disk before the Runtime gets them.
			var kept human.Word
			if words != "" {
				var err error
				if kept, err = journal.Add(human.WordInterrupt, words); err != nil {
					ui.Screen.Line(screen.Yellow, "! "+err.Error())
				}
			}
			// Before the interrupt: the cut call's result may come
			// at once.
			r.Interrupting(true)
			if !rt.Interrupt(words) {
				r.Interrupting(false)
				if !console.toldWaiting() {
					ui.Screen.Line(screen.Yellow, ui.T("interruptWait"))
				}
				if words != "" {
					ui.Screen.Line(screen.Dim, fmt.Sprintf(ui.T("interruptKept"), clipRunes(words, 120)))
				}
			}
			if kept.Name != "" {
				delivered = append(delivered, kept.Name)
			}
		})
		console.SayBeforeInterrupting(rt.Interruptible)
		if ui.Interactive {
			ui.OnInterrupt(console.Interrupted)
			defer ui.OnInterrupt(nil)
		} else if ch.Timeout() > 0 && !ui.answerer {
			ui.Screen.Line(screen.Yellow, ui.T("noTTY"))
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			console.Run(sctx)
		}()
		go func() {
			defer wg.Done()
			var key []byte
			if cfg.ReplyKey != "" {
				key = []byte(cfg.ReplyKey)
			}
			if err := human.ServeSignedFiles(sctx, ch, ReplyDir(cfg.RunDir), key); err != nil {
				ui.Screen.Line(screen.Yellow, "! flower reply will not reach this run: "+err.Error())
			}
		}()
	}
	wctx, err := wf.Run(ctx, rt, sink, nil)
	stop()
	wg.Wait()
	aside.Wait()
	if err == nil && journal != nil {
		// The run ended on its own: the words it carried and the mail its
		// inbox handed out reached their calls. Words the workflow left
		// over went back to the inbox (a journal entry of their own);
		// mail never taken stays for the next run.
		if all, lerr := journal.List(); lerr == nil {
			for _, w := range all {
				if w.Taken {
					delivered = append(delivered, w.Name)
				}
			}
		}
		if ferr := journal.Forget(delivered...); ferr != nil {
			ui.Screen.Line(screen.Yellow, "! "+ferr.Error())
		}
	}
	if left, _ := journal.Pending(); err == nil && len(left) > 0 {
		// Words given too late for any step of this run (during the last
		// judge, or the hand-over) were kept: the person is told so, not
		// left believing a step read them. (A run that stopped forgot
		// nothing, so what is pending then may have reached a step; its
		// wake lists it.)
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("wordsForNext"), len(left)))
		for _, w := range left {
			ui.Screen.Line(screen.Plain, "   · "+clipRunes(w.Text, 200))
		}
	}
	end := outcomeOf(wctx, err, errors.Is(context.Cause(ctx), errQuit), ui.Lang)
	if cfg.Database != nil && !cfg.Database.Valid() {
		select {
		case <-cfg.Database.Lost():
			end = Ending{Outcome: OutcomeTakenOver}
		default:
		}
	}
	end.Request, end.Rounds = cmp.Or(ui.request, cfg.Request), status.Rounds()
	end.Started, end.Ended, end.CostUSD = start, time.Now(), rt.TotalCost()
	end.TokensIn, end.TokensOut = rt.TotalTokens()
	end.changes = started.since(context.WithoutCancel(ctx), cfg.Workspace)
	// The last spans leave before the ending is shown, so that a warning
	// about them is not the screen's last line; bounded by
	// tracing.ShutdownTimeout.
	trace.End(ctx, end)
	showEnding(ui, end, endingPlace{runDir: cfg.RunDir, workspace: cfg.Workspace, name: commandName(), manifest: rt.ManifestPath(), demo: ui.answerer})
	if err != nil {
		return err
	}
	if end.Outcome == OutcomeTakenOver {
		return &exitError{code: ExitFailure, err: errors.New(ui.T("endTakenOver")), silent: true}
	}
	if step, failed := wctx.FailedAt(); failed {
		msg := fmt.Sprintf(ui.T("aborted"), step)
		res, _ := wctx.Result(step)
		if end.Reason != "" {
			msg += ": " + end.Reason
		}
		if looksLikeBadCredentials(res.Error) && ui.Interactive {
			// One offer to reconfigure, then the same command again
			// continues where this one stopped.
			ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("badCreds"), clipRunes(res.Error, 120)))
			if err := wizard(ctx, ui, ui.T("reconfigure"), false); err != nil {
				return err
			}
			return errorText(ui.Lang, "reconfigured")
		}
		// The ending above said how it stopped and why: the exit code is
		// what is left to give.
		return &exitError{code: ExitFailure, err: errors.New(msg), silent: true}
	}
	if end.Outcome == OutcomeNeedsLook {
		// Not achieved until the person looked: a script that runs flower
		// must not read it as done.
		return &exitError{code: ExitFailure, err: errors.New(end.Reason), silent: true}
	}
	return nil
}

var badCredentials = regexp.MustCompile(`(?i)401|invalid[_ ]?api[_ ]?key|authentication|unauthorized|无效.*(key|token|密钥)`)

// looksLikeBadCredentials is the original's test of a failed step's error.
func looksLikeBadCredentials(s string) bool { return s != "" && badCredentials.MatchString(s) }

// StepRule is a step's header: "== <name> ====…  i/total", with the wake
// note when the step continues its session.
func StepRule(lang flower.Lang, name string, i, total int, resumed bool, woke, width int) string {
	if width <= 0 {
		width = screen.DefaultWidth
	}
	tail := fmt.Sprintf("  %d/%d", i, total)
	if resumed {
		tail += fmt.Sprintf(text(lang, "stepResumed"), max(woke, 1))
	}
	head := "== " + name + " "
	fill := max(4, width-screen.Columns(head)-screen.Columns(tail))
	return head + strings.Repeat("=", fill) + tail
}

// WakeBanner is the line a continuing run starts with: where, whether the
// brief is confirmed, the goal's checks (when any), the work session's
// last context (when known) and which wake this is.
func WakeBanner(lang flower.Lang, workspace, home string, briefDone bool, goalChecks, workContext, wake int) string {
	where := workspace
	if home != "" && (where == home || strings.HasPrefix(where, home+string(filepath.Separator))) {
		where = "~" + strings.TrimPrefix(where, home)
	}
	var parts []string
	if briefDone {
		parts = append(parts, text(lang, "briefDone"))
	}
	if goalChecks > 0 {
		parts = append(parts, fmt.Sprintf(text(lang, "goalN"), goalChecks))
	}
	if workContext > 0 {
		parts = append(parts, fmt.Sprintf(text(lang, "workContext"), Tokens(workContext)))
	}
	parts = append(parts, fmt.Sprintf(text(lang, "wakeN"), wake))
	return fmt.Sprintf(text(lang, "wakeBanner"), where, strings.Join(parts, " · "))
}

// unheardTimeout bounds unheardWords' search of a workspace's transcripts.
const unheardTimeout = 30 * time.Second

// unheardWords are the words a killed run's inbox handed out that no
// stored transcript holds: the run was killed between the inbox's answer
// and the call that would have carried it. They are given again with the
// words left. (A run that ends well forgets what its inbox took, so every
// taken word found at a start is a killed run's.) When the store cannot
// tell, every such word is given again: twice beats never.
func unheardWords(ctx context.Context, rt *flower.Runtime, journal *human.Words) ([]human.Word, error) {
	all, err := journal.List()
	var taken []human.Word
	var texts []string
	since := time.Now()
	for _, w := range all {
		if w.Taken {
			taken = append(taken, w)
			texts = append(texts, w.Text)
			if w.At.Before(since) {
				since = w.At
			}
		}
	}
	if len(taken) == 0 {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, unheardTimeout)
	defer cancel()
	// A minute's slack: the store's clock (a database server's) is not
	// this machine's.
	held, herr := rt.TranscriptsHolding(cctx, since.Add(-time.Minute), texts)
	if herr != nil {
		slog.Info("flower: whether a killed run's calls had its taken words is unknown; they are given again", "err", herr)
	}
	var out []human.Word
	for _, w := range taken {
		if !held[w.Text] {
			out = append(out, w)
		}
	}
	return out, err
}

// firstScreen is what a run says before its first step: where it works
// and keeps its records, which model through which gateway, what protects
// the glances, the budget, and how to interrupt or quit. The language
// hint follows, once.
func firstScreen(ui *UI, cfg Config) []string {
	model := cmp.Or(strings.TrimSpace(os.Getenv("ANTHROPIC_MODEL")), ui.T("firstModelDefault"))
	gateway := "https://api.anthropic.com"
	if u, err := url.Parse(strings.TrimSpace(os.Getenv("ANTHROPIC_BASE_URL"))); err == nil && u.Host != "" {
		// Scheme and host only: a gateway's URL may carry a token.
		gateway = u.Scheme + "://" + u.Host
	}
	budget := ui.T("firstNoBudget")
	if cfg.BudgetUSD > 0 {
		budget = fmt.Sprintf(ui.T("firstBudget"), cfg.BudgetUSD)
	}
	lines := []string{
		fmt.Sprintf(ui.T("firstWorkspace"), cfg.Workspace, cfg.RunDir),
		fmt.Sprintf(ui.T("firstModel"), model, gateway),
		strings.SplitN(protectionLine(ui), "\n", 2)[0],
		budget,
		ui.T("firstKeys"),
	}
	if !ui.langHinted {
		ui.langHinted = true
		lines = append(lines, ui.T("langHint"))
	}
	return lines
}
