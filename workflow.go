package flower

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/workbench"
)

// The keys Workflow.Run and the starter flow's mechanisms write into a Ctx.
// All begin with "_", which no step name may: they never collide.
const (
	// KeyRuntime holds the *Runtime, for gates that run an agent of their
	// own (a judge).
	KeyRuntime = "_runtime"
	// KeyOnEvent holds the run's event sink (func(Event)), so that a
	// gate's agent shows in the same UI; absent when Run got none.
	KeyOnEvent = "_on_event"
	// KeySessions holds the step name → session id map (map[string]string).
	KeySessions = "_sessions"
	// KeyResults holds the step name → last StepResult map.
	KeyResults = "_results"
	// KeyLineage holds the *Lineage (continuous workflows only).
	KeyLineage = "_lineage"
	// KeyWoke holds which wake of the run directory this is (int, 1 first).
	KeyWoke = "_woke"
	// KeyAborted holds the reason of this run's last StepAbort (string).
	KeyAborted = "_aborted"
	// KeyAbortedStep holds the name of the step that StepAbort ended.
	KeyAbortedStep = "_aborted_step"
	// KeyFailedAt holds the name of the step that stopped the workflow.
	KeyFailedAt = "_failed_at"
	// BriefKey holds the clarified Brief.
	BriefKey = "_brief"
	// MissingKey holds the names of the brief's missing sections.
	MissingKey = "_brief_missing"
	// GoalKey holds the Goal.
	GoalKey = "_goal"
	// VerdictKey holds the latest Verdict.
	VerdictKey = "_verdict"
	// RoundKey holds how many judge rounds ran in this ctx.
	RoundKey = "_goal_rounds"
	// RestoredKey holds the files ([]string, each once) the goal guard put
	// back because a tool, not the person or flower, wrote them: the brief,
	// the goal, the Q&A log.
	RestoredKey = "_restored"
)

// ErrNoOutput is wrapped by Ctx.Output's error for a step that wrote no
// value: skipped by When, failed with OnFail skip or stop, or not run yet.
var ErrNoOutput = errors.New("flower: the step wrote no output")

// ErrNoSession is wrapped by Workflow.Run's error when a step's ResumeFrom
// names a step that has no session (skipped, not run, or never started).
var ErrNoSession = errors.New("flower: the step to resume has no session")

// Ctx is the state a workflow carries from step to step: each step's value
// under its name (what Reduce returned, else the result's text) and the
// private keys above. It is the seed's dict: one Ctx reused by later runs
// of the same Workflow keeps the earlier runs' keys. It is safe for use by
// several goroutines (a gate may start its own).
type Ctx struct {
	mu     sync.Mutex
	values map[string]any
}

// NewCtx returns an empty Ctx.
func NewCtx() *Ctx { return &Ctx{values: map[string]any{}} }

// Get returns the value under key and whether there is one.
func (c *Ctx) Get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.values[key]
	return v, ok
}

// Set puts v under key.
func (c *Ctx) Set(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.values == nil {
		c.values = map[string]any{}
	}
	c.values[key] = v
}

// Delete removes key.
func (c *Ctx) Delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.values, key)
}

// Keys lists the keys present, in no order.
func (c *Ctx) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.values))
	for k := range c.values {
		keys = append(keys, k)
	}
	return keys
}

// Output is step's value. A step that wrote none is an error wrapping
// ErrNoOutput, never an empty string: a prompt built on a skipped step
// fails loudly instead of sending a hole to the model. The starter steps
// answer to their names in every language ("clarify" finds 确认需求 and
// the other way round), so a program reads them whatever language its
// Runtime speaks.
func (c *Ctx) Output(step string) (string, error) {
	v, ok := c.Get(step)
	if !ok {
		if other := otherStarterName(step); other != "" {
			v, ok = c.Get(other)
		}
	}
	if !ok {
		return "", fmt.Errorf("%w: %q (skipped by its When, failed with OnFail skip, or not run yet; use OnFail continue to carry a failed step's text)", ErrNoOutput, step)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("flower: ctx[%q] holds a %T, not a step's output", step, v)
	}
	return s, nil
}

// otherStarterName is the starter step's name in the other language, or "".
func otherStarterName(step string) string {
	en, zh := StarterNamesFor(English), StarterNamesFor(Chinese)
	for _, pair := range [][2]string{{en.Clarify, zh.Clarify}, {en.Goal, zh.Goal}, {en.Work, zh.Work}} {
		switch step {
		case pair[0]:
			return pair[1]
		case pair[1]:
			return pair[0]
		}
	}
	return ""
}

// Session is the session step last used in this ctx (this run's, or one
// the lineage carried over), if any.
func (c *Ctx) Session(step string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, _ := c.values[KeySessions].(map[string]string)
	sid, ok := m[step]
	return sid, ok && sid != ""
}

// Sessions is a copy of the step name → session id map.
func (c *Ctx) Sessions() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, _ := c.values[KeySessions].(map[string]string)
	return maps.Clone(m)
}

// Result is step's last StepResult, if it ran.
func (c *Ctx) Result(step string) (StepResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, _ := c.values[KeyResults].(map[string]StepResult)
	r, ok := m[step]
	return r, ok
}

// FailedAt names the step that stopped the workflow; ok false means the
// workflow succeeded (the one test of success).
func (c *Ctx) FailedAt() (string, bool) { return c.str(KeyFailedAt) }

// Aborted is the reason of this run's last StepAbort, if any.
func (c *Ctx) Aborted() (string, bool) { return c.str(KeyAborted) }

// AbortedIn is the reason of the StepAbort that ended step, if the last
// abort of this run ended that step: the reason a failure of step gives,
// never another step's.
func (c *Ctx) AbortedIn(step string) (string, bool) {
	if at, _ := c.str(KeyAbortedStep); at != step {
		return "", false
	}
	return c.str(KeyAborted)
}

// Woke is which wake of the run directory this run is (1 on the first, and
// 1 for a workflow without continuity).
func (c *Ctx) Woke() int {
	v, _ := c.Get(KeyWoke)
	n, _ := v.(int)
	return n
}

// Runtime is the Runtime the workflow runs on, nil outside a run.
func (c *Ctx) Runtime() *Runtime {
	v, _ := c.Get(KeyRuntime)
	rt, _ := v.(*Runtime)
	return rt
}

// emit logs e in the run's events.jsonl and sends it through the run's
// event sink, if any: what the workflow and its gates say themselves (the
// goal guard's rulings, which the report and a team's worker read in the
// log).
func (c *Ctx) emit(step string, e Event) {
	if rt := c.Runtime(); rt != nil {
		rt.logEvent(step, e)
	}
	if f := c.OnEvent(); f != nil {
		safeCall("OnEvent", func() { f(e) })
	}
}

// OnEvent is the run's event sink, nil when the run got none.
func (c *Ctx) OnEvent() func(Event) {
	v, _ := c.Get(KeyOnEvent)
	f, _ := v.(func(Event))
	return f
}

// Lineage is the continuous workflow's lineage, nil without continuity.
func (c *Ctx) Lineage() *Lineage {
	v, _ := c.Get(KeyLineage)
	l, _ := v.(*Lineage)
	return l
}

func (c *Ctx) str(key string) (string, bool) {
	v, ok := c.Get(key)
	s, _ := v.(string)
	return s, ok
}

// setSession writes step's session.
func (c *Ctx) setSession(step, sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessionsLocked()[step] = sid
}

// defaultSession sets step's session unless it has one: this run's own
// sessions win over the lineage's.
func (c *Ctx) defaultSession(step, sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.sessionsLocked()
	if _, ok := m[step]; !ok {
		m[step] = sid
	}
}

func (c *Ctx) setResult(step string, r StepResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resultsLocked()[step] = r
}

// ensureMaps set-defaults the two maps, keeping a reused ctx's.
func (c *Ctx) ensureMaps() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessionsLocked()
	c.resultsLocked()
}

// sessionsLocked and resultsLocked return the two maps, creating them, or
// replacing a value of another type that a callback put there.
func (c *Ctx) sessionsLocked() map[string]string {
	if c.values == nil {
		c.values = map[string]any{}
	}
	m, ok := c.values[KeySessions].(map[string]string)
	if !ok {
		m = map[string]string{}
		c.values[KeySessions] = m
	}
	return m
}

func (c *Ctx) resultsLocked() map[string]StepResult {
	if c.values == nil {
		c.values = map[string]any{}
	}
	m, ok := c.values[KeyResults].(map[string]StepResult)
	if !ok {
		m = map[string]StepResult{}
		c.values[KeyResults] = m
	}
	return m
}

// PromptFunc renders a step's prompt from the ctx. An error (a step's
// output missing, say) stops the workflow before the step starts.
type PromptFunc func(c *Ctx) (string, error)

// Text is a fixed prompt.
func Text(s string) PromptFunc { return func(*Ctx) (string, error) { return s, nil } }

// OnFail is what a failed step does to the workflow.
type OnFail string

// The three values of OnFail, as the seed has them.
const (
	// OnFailStop records the step in KeyFailedAt and ends the workflow;
	// the default ("").
	OnFailStop OnFail = "stop"
	// OnFailSkip goes on without writing the step's value.
	OnFailSkip OnFail = "skip"
	// OnFailContinue goes on with the result's text, not reduced, as the
	// step's value.
	OnFailContinue OnFail = "continue"
)

// StepAbort, returned (or wrapped) by a Gate or an OnReject, means "trying
// again will not help": the step fails at once without using its
// remaining retries, KeyAborted records the reason, and OnFail applies.
// Returning false from a Gate means "not this time, try again".
type StepAbort struct{ Reason string }

func (e *StepAbort) Error() string { return "flower: step aborted: " + e.Reason }

// Step declares one step of a Workflow: one Runtime.Run (and its retries).
// Workflow.Run never modifies a Step; the same value may run twice.
//
// The callbacks other than Reduce may block (run an agent, wait for a
// human) and must return when their context.Context ends. An error from
// one of them that is not a StepAbort stops the workflow and is returned.
type Step struct {
	// Name is the step's cross-process key: its ctx value, KeyResults,
	// the manifest, the lineage. Renaming a step breaks its lineage. It
	// must not be empty, begin with "_" or contain "#".
	Name string
	// Spec is the agent the step runs.
	Spec AgentSpec
	// Prompt renders the step's prompt (Text for a fixed one). Required.
	Prompt PromptFunc
	// ResumeFrom continues the session of that earlier step. A step
	// without a session there is an error (ErrNoSession), never a silent
	// fresh start. It takes priority over the lineage.
	ResumeFrom string
	// Fork copies the resumed session into a new one; it applies only
	// when the step resumes (ResumeFrom, or the lineage).
	Fork bool
	// Fresh starts every run of the step in a new session: the lineage
	// never carries one into it and never records its sessions, so a
	// later run cannot resume it either. A judge is Fresh (the seed: a
	// judging session is always new); NoContinuity is the same for every
	// step. Fresh and ResumeFrom contradict each other.
	Fresh bool
	// Retries is how many extra attempts a failed step or gate gets.
	Retries int
	// Gate judges an attempt that ran (it is not called when the result is
	// not OK): true passes. It runs exactly once per attempt, so it may
	// have side effects. A StepAbort stops the step at once.
	Gate func(ctx context.Context, r StepResult, c *Ctx) (bool, error)
	// OnFail is what a failed step does: OnFailStop ("" too), OnFailSkip
	// or OnFailContinue.
	OnFail OnFail
	// When, false, skips the step entirely: no event, no result, no value.
	When func(ctx context.Context, c *Ctx) (bool, error)
	// OnReject changes what a retry is: the next attempt resumes the
	// rejected session with the returned text as its prompt, Fork off. An
	// empty text, or an attempt without a session, starts over instead.
	OnReject func(ctx context.Context, r StepResult, c *Ctx) (string, error)
	// ResumePrompt, when set, replaces Prompt when the step continues its
	// own session from the lineage: what that session already holds need
	// not be sent again.
	ResumePrompt PromptFunc
	// Reduce gives the ctx value of a step that passed; by default the
	// result's text. It must not block.
	Reduce func(r StepResult, c *Ctx) string

	// relang, set by ClarifyStep, GoalStep and WithGoal given no Lang,
	// rebuilds the step in the language of the Runtime that runs it.
	relang func(Lang) Step
	// ungated, set by WithGoal, runs after an attempt that ran but whose
	// Gate will not run (its result is not OK, or ctx ended), before the
	// step retries or stops: the tools of a round that ended in an error
	// may have written what the goal guard protects, and waiting for the
	// next gate would let the next round, the bequest or the next run
	// read it.
	ungated func(c *Ctx)
	// rounds, set by WithGoal: the step's retries are the goal guard's
	// rounds, which its step event says. Another step's retries are
	// attempts at the same thing (a goal asked for again), not rounds.
	rounds bool
}

// inLang is the step as a Runtime speaking l runs it: rebuilt in l when
// its constructor was given no language, else the step itself.
func (s Step) inLang(l Lang) Step {
	if s.relang == nil || l.IsEnglish() {
		return s
	}
	return s.relang(l)
}

// languageFollower is a channel that takes a Runtime's language unless it
// chose its own (the *human.Channel: FollowLang).
type languageFollower interface {
	FollowLang(l Lang) bool
}

// Label is the manifest label of attempt (0 first): Name, then
// Name#round<attempt+1> with OnReject or Name#retry<attempt> without.
func (s Step) Label(attempt int) string {
	switch {
	case attempt == 0:
		return s.Name
	case s.OnReject != nil:
		return s.Name + "#round" + strconv.Itoa(attempt+1)
	default:
		return s.Name + "#retry" + strconv.Itoa(attempt)
	}
}

func (s Step) check() error {
	switch {
	case s.Name == "":
		return errors.New("a step has no Name; name it (it is the step's key in ctx, the manifest and the lineage)")
	case strings.HasPrefix(s.Name, "_"):
		return fmt.Errorf("step name %q begins with _, which the workflow's own ctx keys use; rename the step", s.Name)
	case strings.Contains(s.Name, "#"):
		return fmt.Errorf("step name %q contains #, which retry labels use; rename the step", s.Name)
	case s.Prompt == nil:
		return fmt.Errorf("step %s has no Prompt; give one (Text(\"…\") for a fixed text)", s.Name)
	case s.Fresh && s.ResumeFrom != "":
		return fmt.Errorf("step %s is Fresh and resumes step %s; a fresh step starts a new session, so drop one of the two", s.Name, s.ResumeFrom)
	case s.Retries < 0:
		return fmt.Errorf("step %s: Retries is %d; give 0 or more", s.Name, s.Retries)
	}
	switch s.OnFail {
	case "", OnFailStop, OnFailSkip, OnFailContinue:
		return nil
	}
	return fmt.Errorf("step %s: OnFail %q is none of %q, %q, %q", s.Name, s.OnFail, OnFailStop, OnFailSkip, OnFailContinue)
}

// EventChannel is a Channel that reports events of its own (a question
// asked, an answer): Workflow.Run hands it the run's event sink when it
// has none, so its events show in the same UI as the steps'. The
// *human.Channel is one.
type EventChannel interface {
	Channel
	// AttachOnEvent makes fn the channel's event sink unless it already
	// has one, and reports whether it did. It is safe from any goroutine.
	AttachOnEvent(fn func(Event)) bool
}

// Workflow runs its steps in order, deciding per step whether it runs
// (When), which session it continues (ResumeFrom, the lineage), whether it
// passes (Gate, Retries, OnReject) and what a failure does (OnFail).
type Workflow struct {
	// Steps run in order. Their names must be distinct.
	Steps []Step
	// Name names the workflow in errors and logs; default "workflow".
	Name string
	// Context is the ctx, reused by every Run: a later run sees the keys
	// of the earlier. Nil: Run creates one and keeps it here.
	Context *Ctx
	// Channel is the human channel the steps' roles use, if any. Run gives
	// an EventChannel the run's event sink when it has none.
	Channel Channel
	// Workbench is the workbench the steps write into (a brief, a goal).
	// Give the Runtime the same one (WithWorkbench), so that what is
	// written is what the agents' index shows.
	Workbench *workbench.Workbench
	// RunDir, when set, is the run directory the workflow's documents and
	// lineage belong with (the starter flow sets it): Run says so when the
	// Runtime's run directory is another, since the lineage, the manifest
	// and what New archives are then not where the workflow expects.
	RunDir string
	// NoContinuity turns off continuity across processes: by default a
	// step without ResumeFrom continues the session its name last used in
	// the run directory's lineage, and every session is recorded there.
	NoContinuity bool
	// Finally, when set, runs once after the steps however they ended
	// (all passed, one failed or aborted, Run about to return an error),
	// before Run returns; it is not called for a workflow whose steps are
	// invalid. Its ctx may have ended. The starter flow writes its bequest
	// here. A panic in it is recovered and logged.
	Finally func(ctx context.Context, rt *Runtime, c *Ctx)
}

// mailbox is a channel that takes a human's words for the inbox (the
// *human.Channel).
type mailbox interface {
	Send(text string) (human.Mail, bool)
}

func (w *Workflow) name() string {
	if w.Name == "" {
		return "workflow"
	}
	return w.Name
}

func checkSteps(steps []Step) error {
	seen := map[string]bool{}
	for _, s := range steps {
		if err := s.check(); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("two steps are named %s; names are keys (ctx, manifest, lineage) and must be distinct", s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// Run runs the steps in order on rt and returns the ctx. onEvent (may be
// nil) receives every step's events and a step event before each step:
// its name as text, payload {index (from 1), total, resumed (it continues
// its own session from the lineage), woke}. onStep (may be nil) receives
// each step's final result, failures too. Panics in either are recovered
// and logged.
//
// A step that ran and failed (a *StepError from the Runtime, a gate that
// said no or aborted) is the workflow's business: retries, then OnFail;
// Run then returns the ctx and a nil error, and ctx.FailedAt tells whether
// the workflow succeeded. An error means the workflow could not go on:
// invalid steps, a ResumeFrom without a session (ErrNoSession), a prompt
// that cannot be rendered, a step that could not start, a callback's
// error, or ctx ended; it says where and why.
//
// Words a human gives rt.Interrupt between steps are never lost here: the
// Runtime keeps them and the next step's Run delivers them.
//
// Words given rt.Interrupt while an aside run (a gate's judge) ran wait for
// the next step; left over when the last step is done, they go to the
// channel's inbox when it has one (and so into the brief), else they stay
// with the Runtime for its next Run. Finally runs last.
func (w *Workflow) Run(ctx context.Context, rt *Runtime, onEvent func(Event), onStep func(Step, StepResult)) (*Ctx, error) {
	if w.Context == nil {
		w.Context = NewCtx()
	}
	c := w.Context
	if rt == nil {
		return c, fmt.Errorf("flower: %s: no Runtime given", w.name())
	}
	if f, ok := w.Channel.(languageFollower); ok && !noChannel(w.Channel) {
		f.FollowLang(rt.Language())
	}
	steps := make([]Step, len(w.Steps))
	for i, st := range w.Steps {
		steps[i] = st.inLang(rt.Language())
	}
	if err := checkSteps(steps); err != nil {
		return c, fmt.Errorf("flower: %s: %w", w.name(), err)
	}
	c, err := w.run(ctx, rt, c, steps, onEvent, onStep)
	// The outcome is decided once, here, before Finally: the bequest, the
	// front end's ending and the report (through events.jsonl) all read
	// this one answer.
	o := RunOutcome(c, err, context.Cause(ctx))
	c.Set(OutcomeKey, o)
	c.emit("", outcomeEvent(o))
	if w.Finally != nil {
		safeCall("Finally", func() { w.Finally(ctx, rt, c) })
	}
	if mb, ok := w.Channel.(mailbox); ok && !noChannel(w.Channel) {
		if words := rt.takeWords(); words != "" {
			if _, sent := mb.Send(words); !sent {
				rt.keepWords(words)
			}
		}
	}
	return c, err
}

func (w *Workflow) run(ctx context.Context, rt *Runtime, c *Ctx, steps []Step, onEvent func(Event), onStep func(Step, StepResult)) (*Ctx, error) {
	c.Set(KeyRuntime, rt)
	// A reused ctx keeps the earlier runs' keys: this run's sink (or none)
	// replaces the last run's, and the last run's abort and failure are
	// not this run's.
	c.Delete(KeyOnEvent)
	c.Delete(KeyAborted)
	c.Delete(KeyAbortedStep)
	c.Delete(KeyFailedAt)
	c.Delete(AcceptedKey)
	c.Delete(OutcomeKey)
	if onEvent != nil {
		c.Set(KeyOnEvent, onEvent)
	}
	if ch, ok := w.Channel.(EventChannel); ok && !noChannel(w.Channel) {
		// A question asked and its answer are the run's events: in
		// events.jsonl (which a team's worker follows and the report
		// reads) as well as in the run's sink, whichever is current.
		ch.AttachOnEvent(func(e Event) { c.emit("", e) })
	}
	c.ensureMaps()
	emit := c.emit

	if wb := w.Workbench; wb != nil && (rt.Workbench() == nil || rt.Workbench().Root() != wb.Root()) {
		// The original's silent trap: documents written into one folder
		// while the agents' index shows another. Said, not fatal.
		text := fmt.Sprintf(lineageTextsFor(rt.Language()).workbench, wb.Root())
		slog.Warn("flower: workbench", "workflow", w.name(), "notice", text)
		emit("", event.New(event.System, text, map[string]any{"workbench": wb.Root()}))
	}
	if w.RunDir != "" {
		if want, err := filepath.Abs(w.RunDir); err == nil && want != rt.RunDir() {
			text := fmt.Sprintf(lineageTextsFor(rt.Language()).runDir, want, rt.RunDir())
			slog.Warn("flower: run directory", "workflow", w.name(), "notice", text)
			emit("", event.New(event.System, text, map[string]any{"run_dir": rt.RunDir(), "workflow_run_dir": want}))
		}
	}
	woke := 1
	var lin *Lineage
	if !w.NoContinuity {
		lin = w.openLineage(ctx, rt, c, emit)
		woke = lin.Woke()
	}
	c.Set(KeyWoke, woke)

	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return c, fmt.Errorf("flower: %s stopped before step %s: %w", w.name(), st.Name, context.Cause(ctx))
		}
		if st.When != nil {
			run, err := st.When(ctx, c)
			if err != nil {
				return c, fmt.Errorf("flower: %s: step %s: When: %w", w.name(), st.Name, err)
			}
			if !run {
				continue
			}
		}
		resume, carried := "", false
		if st.ResumeFrom != "" {
			sid, ok := c.Session(st.ResumeFrom)
			if !ok {
				return c, fmt.Errorf("%w: %s: step %s resumes step %s, which has no session (skipped, not run, or it never started); run that step first or drop ResumeFrom",
					ErrNoSession, w.name(), st.Name, st.ResumeFrom)
			}
			resume = sid
		} else if lin != nil && !st.Fresh {
			resume, carried = c.Session(st.Name)
		}
		payload := map[string]any{"index": i + 1, "total": len(steps), "resumed": carried, "woke": woke, "role": st.Spec.Name}
		if st.rounds {
			payload["rounds"] = st.Retries + 1
		}
		emit(st.Name, event.New(event.Step, st.Name, rt.stepPayload(payload)))
		render := st.Prompt
		if carried && st.ResumePrompt != nil {
			render = st.ResumePrompt
		}
		prompt, err := render(c)
		if err != nil {
			return c, fmt.Errorf("flower: %s: step %s: its prompt cannot be rendered: %w", w.name(), st.Name, err)
		}
		stepLin := lin
		if st.Fresh {
			stepLin = nil // never remembered, so never resumed
		}
		var fresh func() (string, error)
		if carried {
			fresh = func() (string, error) { return st.Prompt(c) }
		}
		res, passed, err := w.attempts(ctx, rt, c, stepLin, st, prompt, resume, fresh, onEvent)
		if res.StartedAt.IsZero() { // no attempt started: nothing to record
			return c, err
		}
		c.setResult(st.Name, res)
		if res.SessionID != "" {
			c.setSession(st.Name, res.SessionID)
			remember(stepLin, st.Name, res.SessionID)
		}
		if onStep != nil {
			safeCall("OnStep", func() { onStep(st, res) })
		}
		if err != nil {
			return c, err
		}
		switch {
		case passed && st.Reduce != nil:
			c.Set(st.Name, st.Reduce(res, c))
		case passed:
			c.Set(st.Name, res.Text)
		case st.OnFail == OnFailSkip:
		case st.OnFail == OnFailContinue:
			c.Set(st.Name, res.Text)
		default:
			c.Set(KeyFailedAt, st.Name)
			return c, nil
		}
	}
	return c, nil
}

// openLineage opens the run directory's lineage, counts this wake and
// set-defaults into the ctx each recorded session the store still holds.
// Nothing here fails the run: what cannot be used is said and skipped.
func (w *Workflow) openLineage(ctx context.Context, rt *Runtime, c *Ctx, emit func(string, Event)) *Lineage {
	lin := OpenLineage(rt.RunDir(), rt.Workspace())
	t := lineageTextsFor(rt.Language())
	notice := func(text string) {
		slog.Warn("flower: lineage", "workflow", w.name(), "notice", text)
		emit("", event.New(event.System, text, map[string]any{"lineage": "ignored"}))
	}
	if err := lin.Ignored(); err != nil {
		notice(fmt.Sprintf(t.ignored, err))
	}
	c.Set(KeyLineage, lin)
	if _, err := lin.Bump(); err != nil {
		notice(fmt.Sprintf(t.ignored, err))
	}
	for step, sid := range lin.Steps() {
		ok, err := rt.HasSession(ctx, sid)
		switch {
		case err != nil:
			notice(fmt.Sprintf(t.unknown, step, sid, err))
		case !ok:
			notice(fmt.Sprintf(t.gone, step, sid))
		default:
			c.defaultSession(step, sid)
		}
	}
	return lin
}

// lineageTexts are the notices a workflow shows about its lineage and
// workbench, in the run directory's language.
type lineageTexts struct {
	workbench string // the workflow's workbench root
	runDir    string // the workflow's run directory, the Runtime's
	ignored   string // the error
	gone      string // step, session
	empty     string // step, session
	unknown   string // step, session, error
}

func lineageTextsFor(l Lang) lineageTexts {
	if l.IsEnglish() {
		return lineageTexts{
			workbench: "the workflow's workbench %s is not the Runtime's: give the Runtime the same one (WithWorkbench), or what the steps write there is not what the agents' index shows",
			runDir:    "the workflow's run directory %s is not the Runtime's (%s): give the Runtime the same one (WithRunDir), or the lineage and the manifest are not where the workflow keeps its documents and a later --new archives nothing",
			ignored:   "continuity: %v",
			gone:      "continuity: step %s's last session %s is no longer in the session store; the step starts a new session",
			empty:     "continuity: step %s's last session %s holds no conversation the CLI can continue (its process was killed before it wrote one); the step starts a new session",
			unknown:   "continuity: cannot tell whether step %s's last session %s is still in the session store (%v); the step starts a new session",
		}
	}
	return lineageTexts{
		workbench: "工作流的工作台 %s 不是 Runtime 的:把同一个交给 Runtime(WithWorkbench),否则步骤写进去的东西不在智能体看到的索引里",
		runDir:    "工作流的运行目录 %s 不是 Runtime 的(%s):把同一个交给 Runtime(WithRunDir),否则接续记录和 manifest 不在工作流放文档的地方,以后 --new 什么也归档不了",
		ignored:   "接续:%v",
		gone:      "接续:步骤 %s 上次的会话 %s 已不在会话库里;这一步开新会话",
		empty:     "接续:步骤 %s 上次的会话 %s 里没有 CLI 能接着的对话(它的进程在写下对话之前就被杀了);这一步开新会话",
		unknown:   "接续:查不到步骤 %s 上次的会话 %s 是否还在会话库里(%v);这一步开新会话",
	}
}

// attempts runs st's attempts: the Runtime's Run, then the gate, until one
// passes, the retries are spent or a StepAbort. The prompt, resume and fork
// of the current attempt are locals: st is never written. fresh, for a step
// that continues the last run's session, renders its prompt for a new
// session: when the CLI finds no conversation in that session (the last
// process was killed before it wrote one), there is nothing to continue,
// and the step starts anew, once, instead of failing on every wake.
func (w *Workflow) attempts(ctx context.Context, rt *Runtime, c *Ctx, lin *Lineage, st Step,
	prompt, resume string, fresh func() (string, error), onEvent func(Event)) (StepResult, bool, error) {
	fork := st.Fork && resume != ""
	curPrompt, curResume, curFork := prompt, resume, fork
	var res StepResult
	for a := 0; a <= st.Retries; a++ {
		ro := RunOptions{StepName: st.Label(a), Resume: curResume, Fork: curFork, OnEvent: onEvent}
		if lin != nil {
			// Attached to this one Run only, and under the step's own
			// name: a gate's judge, run after it returns, never enters the
			// lineage, and a killed process keeps the session it had.
			ro.OnSession = func(_, sid string) { remember(lin, st.Name, sid) }
		}
		r, err := rt.Run(ctx, st.Spec, curPrompt, ro)
		var se *StepError
		if err != nil && !errors.As(err, &se) {
			// Not a step that ran and failed: retrying cannot mend it.
			return res, false, fmt.Errorf("flower: %s: step %s could not start: %w", w.name(), ro.StepName, err)
		}
		res = r
		if fresh != nil && curResume != "" && !res.OK && ctx.Err() == nil && noConversation.MatchString(res.Error) {
			if p, err := fresh(); err == nil {
				text := fmt.Sprintf(lineageTextsFor(rt.Language()).empty, st.Name, curResume)
				slog.Warn("flower: lineage", "workflow", w.name(), "notice", text)
				c.emit(st.Name, event.New(event.System, text, map[string]any{"lineage": "ignored"}))
				fresh, prompt, resume, fork = nil, p, "", false
				curPrompt, curResume, curFork = prompt, resume, fork
				a-- // the refusal reached no model
				continue
			}
		}
		if st.ungated != nil && (!res.OK || ctx.Err() != nil) {
			st.ungated(c)
		}
		if ctx.Err() != nil {
			return res, false, fmt.Errorf("flower: %s stopped in step %s: %w", w.name(), ro.StepName, context.Cause(ctx))
		}
		passed := res.OK
		if passed && st.Gate != nil {
			ok, err := st.Gate(ctx, res, c)
			if abort := (*StepAbort)(nil); errors.As(err, &abort) {
				c.Set(KeyAborted, abort.Reason)
				c.Set(KeyAbortedStep, st.Name)
				return res, false, nil
			}
			if err != nil {
				return res, false, fmt.Errorf("flower: %s: step %s: gate: %w", w.name(), ro.StepName, err)
			}
			passed = ok
		}
		if passed {
			return res, true, nil
		}
		if a == st.Retries {
			break
		}
		curPrompt, curResume, curFork = prompt, resume, fork
		if st.OnReject != nil {
			text, err := st.OnReject(ctx, res, c)
			if abort := (*StepAbort)(nil); errors.As(err, &abort) {
				c.Set(KeyAborted, abort.Reason)
				c.Set(KeyAbortedStep, st.Name)
				return res, false, nil
			}
			if err != nil {
				return res, false, fmt.Errorf("flower: %s: step %s: OnReject: %w", w.name(), ro.StepName, err)
			}
			if text != "" && res.SessionID != "" {
				curPrompt, curResume, curFork = text, res.SessionID, false
			}
		}
	}
	return res, false, nil
}

// remember records a session in the lineage; a write that fails is logged
// and the run goes on (continuity is a bonus).
func remember(lin *Lineage, step, sid string) {
	if lin == nil {
		return
	}
	if err := lin.Remember(step, sid); err != nil {
		slog.Warn("flower: lineage not written", "step", step, "session", sid, "err", err)
	}
}

// safeCall runs a caller's callback; a panic in it is logged, since a UI
// cannot fail a workflow.
func safeCall(what string, f func()) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("flower: callback panicked; the workflow goes on", "callback", what, "panic", p)
		}
	}()
	f()
}
