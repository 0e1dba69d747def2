package flower

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/judge"
)

// BaselineName is the file that holds the workspace as it was when the
// goal was set (in the guard's state folder; see judge.ChangeReport).
const BaselineName = judge.BaselineName

// baselineTimeout bounds the baseline taken as the work begins.
const baselineTimeout = 2 * time.Minute

// changeInput is what the change report compares for the goal g, its
// baseline kept in stateDir (the person's state folder, out of every
// tool's reach), or in the run directory when none is given.
func changeInput(rt *Runtime, stateDir string, g *doc.Goal, notes []string, lang Lang) judge.ChangeInput {
	in := judge.ChangeInput{Workspace: rt.Workspace(), BaselineDir: or(stateDir, rt.RunDir()), Items: judge.Items(g), Notes: notes, Lang: lang,
		Getenv: rt.toolGetenv()}
	if wb := rt.Workbench(); wb != nil {
		in.Workbench = wb.Root()
	}
	return in
}

// GoalOptions adjust GoalStep. The zero value is the seed's defaults.
type GoalOptions struct {
	// Name is the step's name; default StarterNamesFor(Lang).Goal (goal;
	// 设定目标 in Chinese).
	Name string
	// BriefKey is the step whose value is the brief; default
	// StarterNamesFor(Lang).Clarify.
	BriefKey string
	// Spec replaces the default Judge(Name, ch) role.
	Spec *AgentSpec
	// Instructions follow the judge's rules in the default role.
	Instructions string
	// CanRun gives the goal-setting judge Bash, so that it can look at the
	// environment first as its rules say (uname -a). The original had no
	// such switch (its judge_can_run reached only the round judge).
	CanRun bool
	// AlwaysSet derives the goal again even when a complete one is on
	// disk: the brief changed.
	AlwaysSet bool
	// OnFail and Retries are the step's (default stop, no retry).
	OnFail  OnFail
	Retries int
	// Lang is the language of the goal, the rules and the name. The zero
	// Lang takes the language of the Runtime that runs the workflow.
	Lang Lang
	// StateDir, when set, is a folder outside every tool's reach (the
	// person's state folder) where the change report's baseline is kept,
	// so that no tool can rewrite it; give WithGoal the same. "" keeps it
	// in the run directory.
	StateDir string
}

// GoalStep builds the step in which a judge turns the brief into a goal
// and its checklist, frozen at goalPath. It has ClarifyStep's shape: When
// skips it for a complete goal on disk (loaded into GoalKey and the step's
// value; a goal that cannot be loaded counts as absent); the gate parses
// the reply, writes a complete goal and loads it, and fails an incomplete
// one; Reduce is the goal's prompt block. A check tagged as not verifiable
// here is announced at once with a task event {unverifiable, total, path}
// through the run's event sink: it never passes, and now is the time to
// change it. The step is Fresh: its judge never continues
// an earlier session, and no ResumePrompt: setting a goal needs the whole
// brief again.
func GoalStep(ch *human.Channel, goalPath string, o GoalOptions) Step {
	names := StarterNamesFor(o.Lang)
	name, briefKey := o.Name, o.BriefKey
	if name == "" {
		name = names.Goal
	}
	if briefKey == "" {
		briefKey = names.Clarify
	}
	lang, t := o.Lang, starterTextsFor(o.Lang)
	var spec AgentSpec
	if o.Spec != nil {
		spec = *o.Spec
	} else {
		opts := []RoleOption{WithLang(lang), WithInstructions(o.Instructions)}
		if o.CanRun {
			opts = append(opts, CanRun())
		}
		spec = Judge(name, channelOrNil(ch), opts...)
	}
	if len(spec.OutputSchema) == 0 {
		spec.OutputSchema = judge.GoalSchema
	}
	hydrate := func(c *Ctx, g *doc.Goal) {
		c.Set(GoalKey, g)
		c.Set(name, g.PromptBlock(lang))
	}
	// Why the last answer could not be read, for OnReject: a reply that
	// fails the schema is asked again once.
	var unread error
	return Step{
		Name:    name,
		Spec:    spec,
		Fresh:   true, // a judge: never resumed
		OnFail:  o.OnFail,
		Retries: max(o.Retries, 1),
		Prompt: func(c *Ctx) (string, error) {
			brief, err := c.Output(briefKey)
			if err != nil || strings.TrimSpace(brief) == "" {
				brief = t.noBrief
			}
			return PromptsFor(lang).SetGoalPrompt(brief), nil
		},
		// An answer that could not be read is asked again in the same
		// session, told why.
		OnReject: func(context.Context, StepResult, *Ctx) (string, error) {
			if unread == nil {
				return "", nil
			}
			return judge.AskAgain(lang, unread), nil
		},
		When: func(_ context.Context, c *Ctx) (bool, error) {
			if o.AlwaysSet {
				return true, nil
			}
			if g := loadDoc(c, lang, langPick(lang, "目标", "goal"), goalPath, doc.LoadGoal); g != nil && g.Complete() {
				hydrate(c, g)
				return false, nil
			}
			return true, nil
		},
		Gate: func(ctx context.Context, r StepResult, c *Ctx) (bool, error) {
			reply, err := judge.ReadAnswer(answerOf(r), judge.ParseGoalReply)
			if err != nil {
				unread = err
				emitTask(c, judge.AskAgain(lang, err), map[string]any{"goal_guard": "unreadable"})
				return false, nil
			}
			unread = nil
			g := reply.Goal(lang)
			// The goal came as a tool's input, not as prose: the person
			// sees it here.
			c.emit(name, event.New(event.Text, g.PromptBlock(lang), map[string]any{"goal": true}))
			if err := g.Write(lang, goalPath); err != nil {
				return false, fmt.Errorf("the goal is complete but cannot be written; make %s writable and run again: %w", goalPath, err)
			}
			hydrate(c, g)
			if rt := c.Runtime(); rt != nil {
				// What the round judge is shown as changed is counted from
				// here.
				if err := judge.RecordBaseline(ctx, changeInput(rt, o.StateDir, g, nil, lang)); err != nil {
					slog.Info("flower: no baseline for the change report", "err", err)
				}
			}
			if len(judge.Commands(reply.Checklist)) == 0 {
				emitTask(c, fmt.Sprintf(t.noCommands, len(reply.Checklist), g.Path), map[string]any{"goal_guard": "no_commands"})
			}
			if bad := g.Unverifiable(); len(bad) > 0 {
				rows := []string{fmt.Sprintf(t.unverifiable, len(bad), len(g.Checks), g.Path)}
				for _, b := range bad {
					rows = append(rows, fmt.Sprintf(t.unverifiableRow, b))
				}
				emitTask(c, strings.Join(rows, "\n"), map[string]any{
					"unverifiable": len(bad), "total": len(g.Checks), "path": g.Path})
			}
			return true, nil
		},
		Reduce: func(r StepResult, c *Ctx) string {
			if g := ctxGoal(c); g != nil {
				return g.PromptBlock(lang)
			}
			return r.Text
		},
		relang: relangWith(o.Lang, ch, func(l Lang) Step {
			o.Lang = l
			return GoalStep(ch, goalPath, o)
		}),
	}
}

// GoalGuardOptions adjust WithGoal.
type GoalGuardOptions struct {
	// GoalPath is the goal file (read when the ctx has no complete goal,
	// written when the human amends it).
	GoalPath string
	// BriefPath is the brief file, if any. The goal and the brief are
	// protected while the step works: a change found at a round boundary
	// that did not come from the person (the channel's amend) or the guard
	// itself is reported and undone.
	BriefPath string
	// Spec replaces the default Judge(Name, ch) role of the round judge.
	Spec *AgentSpec
	// Rounds is the total number of rounds, the first included; 0 means
	// 3. The step's Retries becomes Rounds-1.
	Rounds int
	// Instructions follow the judge's rules in the default role.
	Instructions string
	// CanRun gives the round judge Bash, to run the checks itself.
	CanRun bool
	// Name labels the judge: its runs are <Name>#<round>; default
	// <step>·判定 (<step>·judge in English).
	Name string
	// Lang is the language of the judge's rules, prompts and texts. The
	// zero Lang takes the language of the Runtime that runs the workflow.
	Lang Lang
	// Measure bounds flower's own runs of the checklist's commands before
	// each judgement (a time limit, the network off unless Network).
	Measure judge.MeasureOptions
	// StateDir, when set, is a folder outside every tool's reach (the
	// human's folder) where the guard keeps the goal's and the brief's
	// last good content and a mark while the step works: a run cut off
	// before its round's check leaves a tool's change for the next run to
	// put back instead of taking it for the person's edit.
	StateDir string
	// putBack are the files the starter put back before the run (a tool's
	// change left by a run cut off); the guard reports them when the work
	// begins.
	putBack []string
}

// DefaultRounds is WithGoal's total number of rounds.
const DefaultRounds = 3

// WithGoal puts a goal guard on step: after every round a fresh judge
// rules on it against the goal (achieved, not yet, unreachable), and a
// round that falls short sends the judge's reason back to the same session.
// The result is a copy of step with Retries, Gate and OnReject replaced and
// Prompt and ResumePrompt wrapped (they first note the goal and brief files
// as the work begins, and the change report's baseline if none was kept):
// what they return and everything else survive.
//
// The gate: no Runtime in the ctx is a StepAbort (a guard that cannot
// judge must not pass). It first checks the goal and brief files against
// their last good versions and puts back, with a task event to the person
// and a note to the judge, any change that did not come from the person's
// amend (see goalwatch.go); a round that ended in an error is checked the
// same way before the step goes on. Each round counts in RoundKey and is
// judged by judge.Judge: the change report since the goal was set, flower's
// own runs of the goal's command items in a sandbox (o.Measure), and a
// fresh judge in a new session labelled <Name>#<round>, beside the work
// (RunOptions.Aside: it neither takes words left for the work nor answers
// an Interrupt, and it never enters the lineage), asked for a structured
// answer (judge.VerdictSchema). A judge that did not succeed (its turn cap,
// the run budget, an API error, resilience giving up), or whose answer
// cannot be read, runs once more; a second failure is a StepAbort with the
// judge's error, so the step stops where the next run continues it: nothing
// a failed judge wrote is read, and no work round is spent on it. flower
// decides from the items (judge.Decide): achieved only when every item of
// the goal passed with evidence that flower's measurements do not
// contradict; what it would not take from the judge is told to the person
// (a task event) and the worker. The verdict goes to VerdictKey and, as the
// seed's document, to VerdictName in the run directory. Unreachable, with
// what is missing and why no work can supply it, asks the human: accept
// and go on (passes), amend the goal (the new words are appended to it,
// never overwriting it, and written back), or anything else, read as "your
// verdict is wrong" (fails, their words become the
// reason). No answer (or no channel) is a StepAbort: going round in
// circles is the dearest choice.
func WithGoal(step Step, ch *human.Channel, o GoalGuardOptions) Step {
	lang, t := o.Lang, starterTextsFor(o.Lang)
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = DefaultRounds
	}
	label := o.Name
	if label == "" {
		label = step.Name + StarterNamesFor(lang).Judge
	}
	var judgeSpec AgentSpec
	if o.Spec != nil {
		judgeSpec = *o.Spec
	} else {
		opts := []RoleOption{WithLang(lang), WithInstructions(o.Instructions)}
		if o.CanRun {
			opts = append(opts, CanRun())
		}
		judgeSpec = Judge(label, channelOrNil(ch), opts...)
	}
	if len(judgeSpec.OutputSchema) == 0 {
		judgeSpec.OutputSchema = judge.VerdictSchema
	}
	guarded := step
	guarded.Retries, guarded.rounds = max(0, rounds-1), true
	// The work begins: what the goal and brief files hold now is what the
	// clarify and goal steps (or, between runs, the person) left.
	copies := guardCopies{dir: o.StateDir}
	watch := func(c *Ctx) {
		w := goalWatchFor(c, ch, copies, o.GoalPath, o.BriefPath)
		if w.snapshot() && len(o.putBack) > 0 {
			noteRestored(c, o.putBack...)
			for _, path := range o.putBack {
				emitTask(c, fmt.Sprintf(protectTextsFor(lang).cutRestored, path), map[string]any{"goal_guard": "restored"})
			}
		}
		// The Q&A log is flower's alone, between runs too: a change found
		// now (a tool of a run that ended before its round's check) is put
		// back and said.
		if n := w.checkLog(lang); n != "" {
			noteRestored(c, ch.LogPath())
			emitTask(c, n, map[string]any{"goal_guard": "restored", "path": ch.LogPath()})
		}
		if rt := c.Runtime(); rt != nil {
			if in := changeInput(rt, o.StateDir, goalOf(c, o.GoalPath), nil, lang); !judge.HasBaseline(in) {
				ctx, cancel := context.WithTimeout(context.Background(), baselineTimeout)
				defer cancel()
				if err := judge.RecordBaseline(ctx, in); err != nil {
					slog.Info("flower: no baseline for the change report", "err", err)
				}
			}
		}
	}
	if prompt := step.Prompt; prompt != nil {
		guarded.Prompt = func(c *Ctx) (string, error) { watch(c); return prompt(c) }
	}
	if resume := step.ResumePrompt; resume != nil {
		guarded.ResumePrompt = func(c *Ctx) (string, error) { watch(c); return resume(c) }
	}
	guarded.Gate = func(ctx context.Context, r StepResult, c *Ctx) (bool, error) {
		rt := c.Runtime()
		if rt == nil {
			return false, &StepAbort{Reason: t.noRuntime}
		}
		w := goalWatchFor(c, ch, copies, o.GoalPath, o.BriefPath)
		notes := w.atGate(c, lang)
		round := 1
		if v, ok := c.Get(RoundKey); ok {
			if n, ok := v.(int); ok {
				round = n + 1
			}
		}
		c.Set(RoundKey, round)
		goal := goalOf(c, o.GoalPath)
		goalBlock, report := t.noGoal, strings.TrimSpace(r.Text)
		if goal != nil {
			goalBlock = goal.PromptBlock(lang)
		}
		if report == "" {
			report = t.noReport
		}
		jl := label + "#" + strconv.Itoa(round)
		d, err := judge.Judge(ctx, judge.Round{
			Goal:    goal,
			Changes: changeInput(rt, o.StateDir, goal, notes, lang),
			Measure: o.Measure,
			Lang:    lang,
			Prompt: func(changes, measured string) string {
				return PromptsFor(lang).VerifyPrompt(goalBlock, report, changes, measured)
			},
			Ask: func(ctx context.Context, prompt string) (judge.Answer, error) {
				return askJudge(ctx, rt, judgeSpec, prompt, RunOptions{StepName: jl, OnEvent: c.OnEvent(), Aside: true})
			},
		})
		if fe := (*judge.FailedError)(nil); errors.As(err, &fe) {
			// The judge's failure is the judge's: not a verdict on the
			// work (another round would pay for work to pass a judge that
			// cannot run), and nothing it wrote is read.
			return false, &StepAbort{Reason: fmt.Sprintf(t.judgeFailed, jl, firstLine(fe.Why), rt.ManifestPath())}
		}
		if err != nil {
			return false, err
		}
		v := d.Verdict
		c.Set(VerdictKey, v)
		if err := v.Write(lang, filepath.Join(rt.RunDir(), VerdictName)); err != nil {
			slog.Info("flower: the verdict document was not written", "err", err)
		}
		// The round's ruling, labelled with its round, for a UI, the
		// ending and events.jsonl; label and failed let a reader of the
		// log (the report) show flower's decision, not the judge's words.
		c.emit(step.Name, event.New(event.Verdict, strings.TrimSpace(v.Reason), map[string]any{
			"step": step.Name, "round": round, "rounds": rounds, "state": string(v.State),
			"label": jl, "failed": v.Failed, "unmeasured": strings.Join(v.Unmeasured, ", "), "flags": len(v.Flags), "except": len(v.Except)}))
		if len(d.Problems) > 0 {
			// The person sees why the judge's conclusion was not taken as
			// it stood; the worker reads it in the verdict's reason.
			emitTask(c, strings.Join(d.Problems, "\n"), map[string]any{"goal_guard": "doubt"})
		}
		switch d.State {
		case doc.Achieved:
			return true, nil
		case doc.NotYet:
			return false, nil
		}
		reason := strings.TrimSpace(v.Reason)
		if reason == "" {
			reason = t.noReason
		}
		abort := &StepAbort{Reason: fmt.Sprintf(t.abort, reason, o.GoalPath, rt.ManifestPath())}
		if ch == nil {
			return false, abort
		}
		a, err := ch.Ask(ctx, fmt.Sprintf(t.unreachable, reason), []string{t.accept, t.amend, t.wrong})
		if err != nil {
			return false, err
		}
		if a.State != human.Answered {
			return false, abort
		}
		answer := strings.TrimSpace(a.Answer)
		switch {
		case strings.HasPrefix(answer, t.acceptPrefix):
			// The person's word, not the judge's: the run's outcome says
			// they accepted it (RunOutcome).
			c.Set(AcceptedKey, true)
			return true, nil
		case strings.HasPrefix(answer, t.amendPrefix):
			na, err := ch.Ask(ctx, t.newGoal, nil)
			if err != nil {
				return false, err
			}
			if extra := strings.TrimSpace(na.Answer); na.State == human.Answered && extra != "" {
				g := &doc.Goal{}
				if goal != nil {
					g = &doc.Goal{Statement: goal.Statement, Checks: append([]string(nil), goal.Checks...)}
				}
				g.Amend(lang, extra)
				if err := g.Write(lang, o.GoalPath); err != nil {
					return false, fmt.Errorf("the amended goal cannot be written; make %s writable (the new goal: %s): %w", o.GoalPath, extra, err)
				}
				w.accept(o.GoalPath)
				c.Set(GoalKey, g)
				v.Reason = fmt.Sprintf(t.amended, g.PromptBlock(lang))
			}
			return false, nil
		default:
			v.Reason = fmt.Sprintf(t.overruled, answer)
			return false, nil
		}
	}
	// A round that ended in an error has no gate: its boundary is here.
	guarded.ungated = func(c *Ctx) { goalWatchFor(c, ch, copies, o.GoalPath, o.BriefPath).afterError(c, lang) }
	guarded.OnReject = func(_ context.Context, _ StepResult, c *Ctx) (string, error) {
		if v, ok := c.Get(VerdictKey); ok {
			if v, ok := v.(*doc.Verdict); ok && v != nil {
				return v.Feedback(lang), nil
			}
		}
		return "", nil
	}
	// Given no language, the guard is rebuilt in the Runtime's; a step
	// that follows the Runtime's language is rebuilt in it under the guard.
	guarded.relang = relangWith(o.Lang, ch, func(l Lang) Step {
		o.Lang = l
		return WithGoal(step.inLang(l), ch, o)
	})
	if o.Lang != "" && step.relang != nil {
		guarded.relang = func(l Lang) Step {
			inner := WithGoal(step.inLang(l), ch, o)
			inner.relang = nil
			return inner
		}
	}
	return guarded
}

// noteRestored adds paths to the ctx's RestoredKey, each once, for the
// ending to name.
func noteRestored(c *Ctx, paths ...string) {
	if len(paths) == 0 {
		return
	}
	var all []string
	if v, ok := c.Get(RestoredKey); ok {
		all, _ = v.([]string)
	}
	all = slices.Clone(all)
	for _, p := range paths {
		if !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	c.Set(RestoredKey, all)
}

// emitTask sends a task event to the run's log and its event sink (Ctx.emit).
func emitTask(c *Ctx, text string, payload map[string]any) {
	c.emit("", event.New(event.Task, text, payload))
}

// VerdictName is the file in the run directory that holds the last
// round's verdict document, rendered from the judge's structured answer.
const VerdictName = "verdict.md"

// askJudge runs a round judge once, beside the work (RunOptions.Aside:
// it neither takes words left for the work nor answers an Interrupt, and
// it never enters the lineage). A judge that ran and did not succeed (its
// turn cap, the run budget, an API error, resilience giving up) is an
// Answer that is not OK; the error is non-nil only when the judge could
// not start or ctx ended.
func askJudge(ctx context.Context, rt *Runtime, spec AgentSpec, prompt string, ro RunOptions) (judge.Answer, error) {
	r, err := rt.Run(ctx, spec, prompt, ro)
	if se := (*StepError)(nil); err != nil && !errors.As(err, &se) {
		return judge.Answer{}, fmt.Errorf("the judge %s could not start: %w", ro.StepName, err)
	}
	if err := ctx.Err(); err != nil {
		return judge.Answer{}, err
	}
	return answerOf(r), nil
}

// answerOf is a step's result as the judgement reads it.
func answerOf(r StepResult) judge.Answer {
	return judge.Answer{OK: r.OK, Error: r.Error, Structured: r.Structured, Calls: r.StructuredCalls}
}

// goalOf is the complete goal in the ctx, else the one at path, else nil.
func goalOf(c *Ctx, path string) *doc.Goal {
	if g := ctxGoal(c); g != nil {
		return g
	}
	if g, err := doc.LoadGoal(path); err == nil && g.Complete() {
		return g
	}
	return nil
}

// ctxGoal is the complete goal in the ctx, nil if none.
func ctxGoal(c *Ctx) *doc.Goal {
	v, ok := c.Get(GoalKey)
	if !ok {
		return nil
	}
	g, ok := v.(*doc.Goal)
	if !ok || g == nil || !g.Complete() {
		return nil
	}
	return g
}
