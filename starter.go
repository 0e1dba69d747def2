package flower

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/judge"
	"github.com/flowerrun/flower/workbench"
)

// StarterWorkflowName is the starter flow's Workflow name.
const StarterWorkflowName = "starter"

// StarterOptions configure StarterFlow and WakeState. The zero value is the
// seed's defaults. WakeState must get the same Workspace, RunDir, Isolate
// and file names as the StarterFlow it foretells.
type StarterOptions struct {
	// Workspace is the folder the agents work in; default ".".
	Workspace string
	// RunDir is the run directory; default DefaultRunDir(Workspace),
	// <Workspace>/runs, the Runtime's default too. The workflow records
	// it (Workflow.RunDir) and says so when its Runtime uses another.
	RunDir string
	// New archives the lineage, the brief and the goal into
	// notes/archive/<timestamp>/ (moved, never deleted) and starts afresh.
	New bool
	// Isolate runs each worker in a git worktree of its own; the workspace
	// must be a git work tree and the workbench moves beside it
	// (workbench.Location).
	Isolate bool
	// ClarifyOnly builds the clarify step alone.
	ClarifyOnly bool
	// NoGoal leaves out the goal step and the goal guard: the work step's
	// word that it is done is taken for it.
	NoGoal bool
	// Rounds is the total number of work rounds under the goal guard; 0
	// means DefaultRounds (3), a negative value is an error.
	Rounds int
	// JudgeCanRun gives both judges (the one that sets the goal and the
	// one that rules on each round) Bash.
	JudgeCanRun bool
	// CheckNetwork lets flower's own runs of the checklist's commands,
	// before each verdict, use the network; by default they run without
	// it, and a failure for want of it is reported as that.
	CheckNetwork bool
	// MaxAsks caps the questions: nil unlimited, 0 none.
	MaxAsks *int
	// Timeout is how long a question waits: 0 means human.DefaultTimeout
	// (1800 s), a negative value settles every question at once
	// (unattended), human.Forever waits for ever.
	Timeout time.Duration
	// Instructions follow the clarifier's rules.
	Instructions string
	// WorkerPrompt is the coder's prompt; default "you implement; run a
	// check after every change".
	WorkerPrompt string
	// BriefName, GoalName and LogName name the files in the workbench's
	// notes/; defaults from StarterNamesFor.
	BriefName, GoalName, LogName string
	// Lang is the language of a new run directory. A run directory that
	// recorded a language on its first run keeps it (RunDirLanguage), so
	// step and file names never change under a continuing run.
	Lang Lang
	// NoBequest turns the bequest off: by default, when the run ends, the
	// work step's coordinator writes a short hand-over that flower puts
	// into CLAUDE.md and AGENTS.md at the workspace root.
	NoBequest bool
}

// starterPlace is where a starter flow's things are: the one computation
// StarterFlow and WakeState share.
type starterPlace struct {
	ws, runDir  string
	lang        Lang
	names       StarterNames
	wb          *workbench.Workbench
	brief, goal string
	log         string
	// briefAtGoal is the brief as it was when the goal was last set (in
	// the run directory): a brief that differs from it was amended since.
	briefAtGoal string
}

func (o StarterOptions) place() (starterPlace, error) {
	wsIn := o.Workspace
	if wsIn == "" {
		wsIn = "."
	}
	ws, err := filepath.Abs(wsIn)
	if err != nil {
		return starterPlace{}, fmt.Errorf("flower: workspace %s: %w", wsIn, err)
	}
	runDir := o.RunDir
	if runDir == "" {
		runDir = DefaultRunDir(ws)
	}
	if runDir, err = filepath.Abs(runDir); err != nil {
		return starterPlace{}, fmt.Errorf("flower: run directory %s: %w", o.RunDir, err)
	}
	lang := o.Lang.Canonical()
	if l, ok, err := RunDirLanguage(runDir); err == nil && ok {
		lang = l
	}
	names := StarterNamesFor(lang)
	p := starterPlace{ws: ws, runDir: runDir, lang: lang, names: names, wb: workbench.At(ws, o.Isolate)}
	p.wb.Texts = workbench.TextsFor(lang)
	notes := p.wb.Notes()
	p.brief = filepath.Join(notes, or(o.BriefName, names.Brief))
	p.goal = filepath.Join(notes, or(o.GoalName, names.GoalFile))
	p.log = filepath.Join(notes, or(o.LogName, names.Log))
	p.briefAtGoal = filepath.Join(runDir, BriefAtGoalName)
	return p, nil
}

// BriefAtGoalName is the run directory's copy of the brief as it was when
// the goal was set.
const BriefAtGoalName = "brief-at-goal.md"

// briefChange tells how the brief on disk differs from the one the goal
// was set from: "" when it does not (or no goal was set yet), the text
// added at its end when the old brief is its beginning (mail, a wake's
// words, a hand edit appending), else the whole brief. A brief once
// confirmed and now incomplete (a hand edit that broke it) is an error
// that says what to do; nothing is overwritten.
func (p starterPlace) briefChange(lang Lang) (string, error) {
	old, err := os.ReadFile(p.briefAtGoal)
	if err != nil {
		return "", nil // no goal set from a brief yet: nothing to compare
	}
	now, err := os.ReadFile(p.brief)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // no brief: clarify runs again
	}
	if err != nil {
		return "", fmt.Errorf("flower: the brief %s cannot be read: %w", p.brief, err)
	}
	if b := doc.ParseBrief(string(now)); !b.Complete() {
		return "", fmt.Errorf(starterTextsFor(lang).briefBroken, p.brief, strings.Join(b.Missing(lang), ", "))
	}
	if string(now) == string(old) {
		return "", nil
	}
	if added, ok := strings.CutPrefix(string(now), string(old)); ok {
		return strings.TrimSpace(added), nil
	}
	return strings.TrimSpace(string(now)), nil
}

// logRecord is flower's own copy of the Q&A log, in the human's folder
// outside the workspace (human.Dir), where no tool is let write.
func (p starterPlace) logRecord() string {
	return filepath.Join(human.Dir(p.runDir), filepath.Base(p.log))
}

// copies is where the goal guard keeps the brief's and the goal's last
// good content between runs: the human's folder, outside the workspace.
func (p starterPlace) copies() guardCopies {
	return guardCopies{dir: filepath.Join(human.Dir(p.runDir), "guarded")}
}

// personsBlocks returns, from the brief a cut run left, the amend blocks
// not in its last good content (good) holding words the person typed (the
// words journal, flower's record outside the workspace, says they went
// into the brief), each under one of the channel's own labels: the rest,
// whatever its form, was a tool's.
func (p starterPlace) personsBlocks(path string, good, now []byte) []byte {
	if !sameFile(path, p.brief) {
		return nil
	}
	words, _ := human.OpenWords(filepath.Join(human.Dir(p.runDir), human.WordsDir)).List()
	var labels []string
	for _, l := range []Lang{English, Chinese} {
		t := human.TextsFor(l)
		labels = append(labels, regexp.QuoteMeta(t.AmendLabel), regexp.QuoteMeta(t.WakeLabel))
	}
	head := `\n## (?:` + strings.Join(labels, "|") + `) ?\(\d\d:\d\d:\d\d\)\n`
	var kept []byte
	for _, w := range words {
		if !w.InBrief {
			continue
		}
		m := regexp.MustCompile(head + regexp.QuoteMeta(strings.TrimSpace(w.Text)) + `\n`).Find(now)
		if m != nil && !bytes.Contains(good, m) && !bytes.Contains(kept, m) {
			kept = append(kept, m...)
		}
	}
	return kept
}

// protectPersonal keeps every step's tools off the Q&A log and the human's
// side of the run (pending questions, replies, the words journal, flower's
// copy of the log), which flower alone writes: no tool call of any role,
// subagents included, may. Bash can write without naming them, so the goal
// guard also checks the log at every round's boundary (CheckLog).
func (p starterPlace) protectPersonal(wf *Workflow) {
	personal := guard.Protect([]string{p.log, human.Dir(p.runDir)}, protectTextsFor(p.lang).logRefusal)
	for i := range wf.Steps {
		wf.Steps[i].Spec.Hooks = guard.MergeHooks(wf.Steps[i].Spec.Hooks, map[string][]claude.HookMatcher{claude.PreToolUse: {personal}})
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// StarterFlow builds the ready-to-run workflow the flower command runs:
// clarify (ask the human, freeze the brief), goal (a judge turns the brief
// into a checklist) and work (a coordinator dispatches a coder; after every
// round a fresh judge rules, and a round that falls short goes back to the
// same session), as the seed assembles it. ask is the human's request, one
// line is enough; it may be empty only when a complete brief is on disk (a
// wake).
//
// The workflow's Channel is a *human.Channel (the Q&A log and the amend
// file, the brief, in the workbench's notes/) and its Workbench is
// workbench.At(workspace, isolate): give the Runtime the same Workbench
// (WithWorkbench), and the run directory and language WakeState(o)
// reports (WithRunDir, WithLanguage).
//
// On a wake (a complete brief on disk), new words land in all three places
// that need them, or they are silently void: the brief, amended once under
// the wake label; the goal, derived again from it; and the coordinator,
// whose continued session is given them with the new checklist. Isolate
// outside a git work tree is an error before anything is written or paid
// for.
func StarterFlow(ask string, o StarterOptions) (*Workflow, error) {
	p, err := o.place()
	if err != nil {
		return nil, err
	}
	t, names := starterTextsFor(p.lang), p.names
	if o.Rounds < 0 {
		return nil, fmt.Errorf("flower: Rounds is %d; give 1 or more (0 means %d)", o.Rounds, DefaultRounds)
	}
	if o.Isolate && !isGitWorkTree(p.ws) {
		return nil, fmt.Errorf(t.isolateNotGit, p.ws)
	}
	if err := p.wb.Ensure(); err != nil {
		return nil, fmt.Errorf("flower: the workbench: %w", err)
	}
	if o.New {
		// The words journal goes with the task it was typed for: words too
		// late for the last run were kept for its next run, never for a
		// new request.
		words := filepath.Join(human.Dir(p.runDir), human.WordsDir)
		if _, err := OpenLineage(p.runDir, p.ws).Archive(filepath.Join(p.wb.Notes(), "archive"), p.brief, p.goal, p.briefAtGoal, words); err != nil {
			return nil, err
		}
	}
	// A run cut off before its last check left a tool's change to the
	// brief or the goal: it is put back (and reported when the work
	// begins), never read as the person's edit below.
	putBack := p.copies().recoverAfterCut(p.personsBlocks, p.brief, p.goal)
	// Read before the wake's words amend it: a brief changed since the
	// goal was set (mail during the last run, a hand edit) is amended.
	change, err := p.briefChange(p.lang)
	if err != nil {
		return nil, err
	}
	ask = strings.TrimSpace(ask)
	brief, _ := doc.LoadBrief(p.brief) // missing or unreadable: absent
	waking := brief != nil && brief.Complete()
	if !waking && ask == "" {
		return nil, errors.New(t.emptyAsk)
	}
	hopts := []human.Option{human.WithLogPath(p.log), human.WithLogRecord(p.logRecord()), human.WithAmendPath(p.brief), human.WithLang(p.lang)}
	if o.MaxAsks != nil {
		hopts = append(hopts, human.WithMaxAsks(*o.MaxAsks))
	}
	switch {
	case o.Timeout < 0:
		hopts = append(hopts, human.WithTimeout(0))
	case o.Timeout > 0:
		hopts = append(hopts, human.WithTimeout(o.Timeout))
	}
	ch := human.New(hopts...)
	// Before any tool runs: a Q&A log a tool writes later is told apart
	// from flower's own copy.
	if err := ch.KeepLogRecord(); err != nil {
		return nil, fmt.Errorf("flower: %w", err)
	}
	amended := waking && ask != "" && ch.AmendOnce(ask, ch.Texts().WakeLabel)
	amended = amended || (waking && change != "")

	clarify := ClarifyStep(ch, p.brief, Text(ask), ClarifyOptions{Name: names.Clarify, Instructions: o.Instructions, Lang: p.lang})
	wf := &Workflow{Name: StarterWorkflowName, Channel: ch, Workbench: p.wb, RunDir: p.runDir, Steps: []Step{clarify}}
	if o.ClarifyOnly {
		p.protectPersonal(wf)
		return wf, nil
	}
	goal := !o.NoGoal
	if goal {
		gs := GoalStep(ch, p.goal, GoalOptions{
			Name: names.Goal, BriefKey: names.Clarify, AlwaysSet: amended, CanRun: o.JudgeCanRun, Lang: p.lang,
			StateDir: p.copies().dir})
		setGoal := gs.Gate
		gs.Gate = func(ctx context.Context, r StepResult, c *Ctx) (bool, error) {
			ok, err := setGoal(ctx, r, c)
			if ok && err == nil {
				// The brief the goal was set from, to tell later whether
				// it changed since.
				if data, rerr := os.ReadFile(p.brief); rerr == nil {
					// The flow's run directory may not exist yet: a
					// Runtime given another one writes nothing there.
					werr := os.MkdirAll(p.runDir, 0o700)
					if werr == nil {
						werr = atomicfile.Write(p.briefAtGoal, data, 0o600)
					}
					if werr != nil {
						return false, fmt.Errorf("the goal is set but the brief it was set from cannot be kept; make %s writable and run again: %w", p.runDir, werr)
					}
				}
			}
			return ok, err
		}
		wf.Steps = append(wf.Steps, gs)
	}
	coordinator := Coordinator(names.Coordinator, "", map[string]claude.AgentDefinition{
		names.Coder: workerFor(t, o, p.lang),
	}, WithChannel(ch), WithLang(p.lang))
	// The goal and the brief are the person's and the judge's: no tool call
	// of the coordinator or its workers writes them (the goal guard also
	// checks them between rounds, since Bash can write without naming).
	coordinator.Hooks = guard.MergeHooks(coordinator.Hooks, map[string][]claude.HookMatcher{
		claude.PreToolUse: {guard.Protect([]string{p.brief, p.goal}, protectTextsFor(p.lang).refusal)},
	})
	goalPart := func(c *Ctx) string {
		if g := ctxGoal(c); goal && g != nil {
			return g.PromptBlock(p.lang)
		}
		return ""
	}
	work := Step{
		Name: names.Work,
		Spec: coordinator,
		Prompt: func(c *Ctx) (string, error) {
			brief, err := c.Output(names.Clarify)
			if err != nil {
				return "", err
			}
			prompt := fmt.Sprintf(t.work, brief)
			if g := goalPart(c); g != "" {
				prompt += fmt.Sprintf(t.workGoal, g)
			}
			return prompt, nil
		},
		ResumePrompt: func(c *Ctx) (string, error) {
			prompt := t.carryOn
			if ask != "" && waking {
				prompt = ask
			}
			if change != "" && waking {
				prompt += fmt.Sprintf(t.briefChanged, change)
			}
			if g := goalPart(c); amended && g != "" {
				prompt += fmt.Sprintf(t.rederived, g)
			}
			return prompt, nil
		},
	}
	if goal {
		work = WithGoal(work, ch, GoalGuardOptions{GoalPath: p.goal, BriefPath: p.brief, Rounds: o.Rounds, CanRun: o.JudgeCanRun, Lang: p.lang,
			Measure:  judge.MeasureOptions{Network: o.CheckNetwork},
			StateDir: p.copies().dir, putBack: putBack})
	}
	wf.Steps = append(wf.Steps, work)
	p.protectPersonal(wf)
	var b *bequest
	if !o.NoBequest {
		b = &bequest{place: p, work: wf.Steps[len(wf.Steps)-1]}
	}
	wf.Finally = func(ctx context.Context, rt *Runtime, c *Ctx) {
		if b != nil {
			b.write(ctx, rt, c)
		}
		finalCheck(c, p.lang)
	}
	return wf, nil
}

func workerFor(t starterTexts, o StarterOptions, lang Lang) claude.AgentDefinition {
	opts := []RoleOption{WithLang(lang)}
	if o.Isolate {
		opts = append(opts, Isolate())
	}
	return Worker(t.coderDesc, or(o.WorkerPrompt, t.coderPrompt), opts...)
}

// isGitWorkTree asks git, as the original did, whether dir is inside a
// work tree.
func isGitWorkTree(dir string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--is-inside-work-tree").Output()
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// Wake is what WakeState finds: whether a starter run would continue the
// last one, and from what.
type Wake struct {
	// Waking: a complete brief is on disk, so the run continues.
	Waking bool
	// Brief and Goal are the documents' paths (present or not).
	Brief, Goal string
	// Checks is the number of checks of a complete goal on disk, 0
	// without one.
	Checks int
	// Woke is how many times the run directory was woken so far.
	Woke int
	// BriefChanged: the brief differs from the one the goal was set from
	// (mail during the last run, a hand edit), so a wake has something
	// new to carry on with.
	BriefChanged bool
	// Steps is a copy of the lineage's step → session map.
	Steps map[string]string
	// Workbench is the workbench folder, RunDir the run directory (give
	// the Runtime the same: WithRunDir) and Lang the run's language
	// (WithLanguage).
	Workbench, RunDir string
	Lang              Lang
}

// WakeState tells, before a run, whether a StarterFlow with the same
// options would continue the last run or start afresh. It writes nothing:
// no workbench, no lineage, no language record.
func WakeState(o StarterOptions) (Wake, error) {
	p, err := o.place()
	if err != nil {
		return Wake{}, err
	}
	w := Wake{Brief: p.brief, Goal: p.goal, Workbench: p.wb.Root(), RunDir: p.runDir, Lang: p.lang}
	if b, err := doc.LoadBrief(p.brief); err == nil {
		w.Waking = b.Complete()
	}
	change, err := p.briefChange(p.lang)
	if err != nil {
		return w, err
	}
	w.BriefChanged = change != ""
	if g, err := doc.LoadGoal(p.goal); err == nil && g.Complete() {
		w.Checks = len(g.Checks)
	}
	lin := OpenLineage(p.runDir, p.ws)
	w.Woke, w.Steps = lin.Woke(), lin.Steps()
	return w, nil
}
