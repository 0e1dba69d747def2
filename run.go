package flower

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/runstate"
)

// RunOptions are the per-call settings of Run.
type RunOptions struct {
	// StepName labels the step (manifest, events); default spec.Name.
	StepName string
	// Resume continues session id; Fork copies it into a new session;
	// ResumeAt resumes only up to an entry. Fork and ResumeAt need Resume.
	Resume   string
	Fork     bool
	ResumeAt string
	// OnEvent receives the step's events, synchronously. A panic in it is
	// recovered and logged: a UI cannot fail a step.
	OnEvent func(Event)
	// OnSession is called the moment a session id is known, successors
	// after a handoff included.
	OnSession func(step, sessionID string)
	// Aside marks a run beside the work, such as a gate's judge: it
	// neither takes the words a human left for the next step nor answers
	// an Interrupt. Words given while it runs wait for the next step that
	// is not aside (Interrupt reports false), so they reach the work, never
	// the judge.
	Aside bool
	// OneAttempt runs the step once: no retry, no wait for the network or
	// for a usage limit's reset, whatever the Runtime's resilience. For a
	// run that is a courtesy after the work stopped (the bequest), where
	// another hour of waiting is worse than no answer.
	OneAttempt bool
}

// StepError is Run's error for a step that ran but did not succeed; the
// StepResult has the details.
type StepError struct {
	Step   string
	Reason string
}

func (e *StepError) Error() string { return fmt.Sprintf("flower: step %s: %s", e.Step, e.Reason) }

// Run runs one step to its end: success, a failure that retries cannot
// mend, or a stop (interrupt without a session, budget, generations). The
// StepResult is always filled and recorded in the manifest; the error is a
// *StepError when the step did not succeed, or says why it could not start.
//
// Words a human gave Interrupt while no step ran are added to this step's
// prompt, after it.
func (rt *Runtime) Run(ctx context.Context, spec AgentSpec, prompt string, ro RunOptions) (StepResult, error) {
	if (ro.Fork || ro.ResumeAt != "") && ro.Resume == "" {
		return StepResult{}, fmt.Errorf("%w: Fork and ResumeAt need Resume (the session to fork or cut)", ErrInvalidSpec)
	}
	if spec.Compact != nil {
		if _, err := spec.Compact.Env(); err != nil {
			return StepResult{}, err
		}
	}
	spec = spec.inLang(rt.lang)
	step := ro.StepName
	if step == "" {
		step = spec.Name
	}
	r := NewStepResult(step)
	if !rt.mayWrite() {
		return StepResult{}, fmt.Errorf("flower: step %s not started: %w", step, runstate.ErrLeaseLost)
	}
	if rt.db != nil {
		var stop context.CancelFunc
		ctx, stop = rt.db.watch(ctx)
		defer stop()
	}
	s := &stepRun{rt: rt, spec: spec, r: r, step: step, ro: ro}
	if rt.db != nil {
		// Said from the store's goroutine, not the loop's: the event goes
		// out without touching the step's result.
		say := func(why string) {
			e := event.New(event.Retry, why, map[string]any{"step": step, "reason": "database"})
			rt.logEvent(step, e)
			s.deliver(e)
		}
		rt.db.onWait.Store(&say)
		defer rt.db.onWait.Store(nil)
	}
	rt.mu.Lock()
	if rt.running {
		rt.mu.Unlock()
		return StepResult{}, errors.New("flower: a step is already running on this Runtime; use one Runtime per concurrent step")
	}
	snap := r.clone()
	rt.running, rt.aside, rt.inflight, rt.rescuedRow = true, ro.Aside, &snap, -1
	carried := ""
	if !ro.Aside {
		carried = strings.Join(rt.words, "\n\n")
		rt.words = nil
	}
	rt.mu.Unlock()
	if !ro.Aside {
		select { // an interrupt of an earlier step must not hit this one
		case <-rt.interrupts:
		default:
		}
	}
	if carried != "" {
		prompt += "\n\n" + fmt.Sprintf(textsFor(rt.lang).betweenSteps, carried)
	}

	s.prompt = prompt
	s.loop(ctx)
	if rt.db != nil {
		select {
		case <-rt.db.Lost():
			r.OK, r.Error = false, fmt.Sprintf("flower: %v: the step stopped and wrote nothing more", runstate.ErrLeaseLost)
		default:
		}
	}

	r.EndedAt = time.Now()
	rt.mu.Lock()
	rt.running, rt.aside = false, false
	// A step that Rescue recorded and that ended after all replaces its
	// rescued row: the real end is the better record.
	if rt.rescuedRow >= 0 {
		rt.results[rt.rescuedRow] = r.clone()
	} else {
		rt.results = append(rt.results, r.clone())
	}
	rt.inflight, rt.rescuedRow = nil, -1
	rt.mu.Unlock()
	rt.writeManifest()
	if rt.db != nil {
		if err := rt.syncDatabase(ctx, s); err != nil {
			if r.OK {
				r.OK, r.Error = false, err.Error()
			}
			return *r, &StepError{Step: step, Reason: r.Error}
		}
	}
	if !r.OK {
		return *r, &StepError{Step: step, Reason: r.Error}
	}
	return *r, nil
}

// syncDatabase writes the run's files back at the end of a step, waiting
// (with a retry event saying so) for a database that does not answer.
func (rt *Runtime) syncDatabase(ctx context.Context, s *stepRun) error {
	if ctx.Err() != nil {
		// Stopped: one try, no wait; what it could not write stays here
		// and is written when the run is opened again on this machine.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := rt.db.mirror.Sync(ctx); err != nil {
			slog.Warn("flower: the run's files were not written to the database", "err", err)
		}
		return nil
	}
	return rt.db.Sync(ctx, func(why string) {
		s.emit(event.New(event.Retry, why, s.retryPayload("database", 0)))
	})
}

// stepRun is one Run in progress. Its StepResult belongs to the loop's
// goroutine; others read the copy publish keeps under the Runtime's lock.
type stepRun struct {
	rt     *Runtime
	spec   AgentSpec
	r      *StepResult
	step   string
	prompt string
	ro     RunOptions

	watermark int  // highest main-thread context of this generation
	warned    bool // the near event of this generation was sent
	// runCapped says the last attempt's budget cap was the run budget.
	runCapped bool
	// loops are the loop guard's reports waiting to be emitted.
	loops loopQueue
	// offered are the tools the current session's CLI offers.
	offered offeredTools
	// deliverMu keeps OnEvent calls one at a time: the database's wait is
	// said from another goroutine than the loop's.
	deliverMu sync.Mutex
}

// publish copies the step's result to the Runtime's in-flight snapshot,
// which TotalCost and Rescue read from other goroutines.
func (s *stepRun) publish() {
	snap := s.r.clone()
	s.rt.mu.Lock()
	if s.rt.inflight != nil {
		*s.rt.inflight = snap
	}
	s.rt.mu.Unlock()
}

func (s *stepRun) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Kind == event.System && e.Text == "init" && e.Payload != nil {
		// Which of flower's steps and roles this CLI session is: a UI
		// names what runs (a judge's session looks like any other).
		e.Payload["step"], e.Payload["role"] = s.step, s.spec.Name
	}
	s.publish()
	s.rt.logEvent(s.step, e)
	s.deliver(e)
}

// deliver hands e to OnEvent, one event at a time whichever goroutine
// says it.
func (s *stepRun) deliver(e Event) {
	if s.ro.OnEvent == nil {
		return
	}
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			slog.Error("flower: OnEvent panicked; the step goes on", "step", s.step, "panic", p)
		}
	}()
	s.ro.OnEvent(e)
}

func (s *stepRun) retryEvent(text string, attempt int) {
	s.retryEventFor("", text, attempt)
}

// retryEventFor is retryEvent with payload reason (interrupt, usage_limit,
// offline; "" for a plain retry), which flower report reads: the text is
// in the run's language and may change.
func (s *stepRun) retryEventFor(reason, text string, attempt int) {
	s.emit(event.New(event.Retry, text, s.retryPayload(reason, attempt)))
}

func (s *stepRun) retryPayload(reason string, attempt int) map[string]any {
	p := map[string]any{"step": s.step, "attempt": attempt}
	if reason != "" {
		p["reason"] = reason
	}
	return p
}

// interruptEvent is the retry event of an interrupt, with the human's
// words in payload words: the log is the run's only record of them, and
// flower report shows them on its timeline.
func (s *stepRun) interruptEvent(words string, attempt int) {
	p := s.retryPayload("interrupt", attempt)
	if words != "" {
		p["words"] = words
	}
	s.emit(event.New(event.Retry, s.texts().interrupted(words != ""), p))
}

// betweenTurnsEvent is interruptEvent for words sayBetweenTurns sent:
// payload between_turns says that no turn was cut, and the stopped
// background tasks' cut calls are still to come.
func (s *stepRun) betweenTurnsEvent(words string) {
	p := s.retryPayload("interrupt", s.r.Attempts)
	p["between_turns"] = true
	if words != "" {
		p["words"] = words
	}
	s.emit(event.New(event.Retry, s.texts().interrupted(words != ""), p))
}

// stepPayload adds what the run directory keeps nowhere else to a step
// event's payload, for flower report: the run budget (when set) and the
// handoff threshold and window (when handoffs are on).
func (rt *Runtime) stepPayload(p map[string]any) map[string]any {
	if rt.budget > 0 {
		p["budget"] = rt.budget
	}
	if rt.handoff.Enabled() {
		p["window"], p["handoff_at"] = rt.handoff.Resolved().Window, rt.handoff.At()
	}
	return p
}

// opening is how a generation starts: the prompt and what it resumes. A
// retry before the generation has a session of its own reruns it.
type opening struct {
	prompt, resume, resumeAt string
	fork                     bool
}

// loop is the seed's loop with its four exits.
func (s *stepRun) loop(ctx context.Context) {
	rt, r, t := s.rt, s.r, s.texts()
	// gen is the current generation's opening: the step's own until a
	// handoff, then the handoff block on a new session.
	gen := opening{prompt: s.prompt, resume: s.ro.Resume, fork: s.ro.Fork, resumeAt: s.ro.ResumeAt}
	cur := gen
	degradedInARow := 0
	reopened := false
	for attempt := 1; ; attempt++ {
		r.Attempts = attempt
		if rt.budget > 0 && s.remaining() <= 0 {
			s.budgetStop()
			return
		}
		out := s.attempt(ctx, cur.prompt, cur.resume, cur.fork, cur.resumeAt)
		switch {
		case r.OK:
			return
		case out.invalid:
			// A spec that cannot be compiled stays so: no retry.
			return
		case ctx.Err() != nil:
			r.Error = fmt.Sprintf(t.cancelled, context.Cause(ctx))
			return
		case r.Error == ErrInterrupted:
			words := rt.takeWords()
			if r.SessionID == "" {
				rt.keepWords(words) // nothing to resume: the next step gets them
				return
			}
			s.interruptEvent(words, attempt)
			cur = opening{resume: r.SessionID, prompt: t.interruptPrompt(words) + "\n\n" + rt.prompts.InterruptNote}
			r.Resumed = true
			attempt--
			continue
		case r.Error == ErrHandoffDue || (rt.handoff.Enabled() && r.SessionID != "" && out.overflowed):
			if reason := rt.handoff.StopReason(rt.lang, len(r.Retired), degradedInARow); reason != "" {
				r.Error = reason
				return
			}
			h, degraded := s.writeHandoff(ctx, out.overflowed)
			if degraded {
				degradedInARow++
			} else {
				degradedInARow = 0
			}
			// Stopping here keeps the session: it is the step's last real
			// one, which a later run (and the lineage) continues from.
			if reason := rt.handoff.StopReason(rt.lang, len(r.Retired)+1, degradedInARow); degradedInARow >= MaxDegradedInARow && reason != "" {
				r.Error = reason
				return
			}
			r.Retire()
			gen = opening{prompt: h.PromptBlock(rt.lang)}
			// An interrupt that landed while the handoff came due or was
			// being written is for the work, not for the handoff turn: its
			// words follow the handoff block in the successor's prompt.
			if !s.ro.Aside {
				s.drainInterrupt()
				if words := rt.takeWords(); words != "" {
					gen.prompt += "\n\n" + t.interruptPrompt(words)
				}
			}
			cur = gen
			s.watermark, s.warned = 0, false
			s.publish()
			attempt--
			continue
		}
		if s.runCapped && out.budgetStop {
			s.budgetStop()
			return
		}
		if s.ro.OneAttempt {
			return
		}
		kind := ClassifyFailure(out.failure)
		// A retry that resumed the step's own session, which the CLI then
		// did not find: its CLI died before anything of it was kept (killed
		// at the start of its turn). Nothing to resume, so the generation's
		// opening runs again, once.
		if cur.resume != "" && cur.resume != gen.resume && !reopened && noConversation.MatchString(r.Error) {
			reopened = true
			s.retryEvent(fmt.Sprintf(t.failed, attempt, kind), attempt)
			cur = gen
			r.Resumed = false
			attempt-- // the refusal reached no model
			continue
		}
		if kind == ErrorUsageLimit && rt.resilience.Enabled() {
			if wait, ok := rt.resilience.UsageLimitWait(out.failure.ResetsAt(), time.Now()); ok {
				s.retryEventFor("usage_limit", t.usageWait(time.Now().Add(wait)), attempt)
				if !sleepCtx(ctx, wait) {
					r.Error = fmt.Sprintf(t.cancelledUsage, context.Cause(ctx))
					return
				}
				cur = s.retryOpening(gen)
				attempt-- // waiting out a usage limit spends no attempt
				continue
			}
		}
		if !rt.resilience.Enabled() || attempt >= rt.resilience.MaxAttempts || !rt.resilience.ShouldRetry(kind) {
			return
		}
		note := fmt.Sprintf(t.failed, attempt, kind)
		if stall := (*StallError)(nil); errors.As(out.failure.Err, &stall) {
			note += ": " + stall.Error() // nothing else would say why it ended
		}
		s.retryEvent(note, attempt)
		if err := rt.waitOnline(ctx, func(note string) { s.retryEventFor("offline", note, attempt) }); err != nil {
			if ctx.Err() != nil {
				r.Error += " | " + fmt.Sprintf(t.cancelledOffline, context.Cause(ctx))
			} else {
				r.Error += " | " + rt.resilience.OfflineNote()
			}
			return
		}
		if !sleepCtx(ctx, rt.resilience.DelayFor(attempt)) {
			r.Error = fmt.Sprintf(t.cancelled, context.Cause(ctx))
			return
		}
		cur = s.retryOpening(gen)
	}
}

// retryOpening is what a retry runs: the generation's live session resumed
// with the resume prompt, or, before the generation has a session, its
// opening again (after a handoff, the handoff block on a new session; never
// the step's original task).
func (s *stepRun) retryOpening(gen opening) opening {
	if sid := s.r.SessionID; sid != "" {
		s.r.Resumed = true
		return opening{resume: sid, prompt: s.rt.resilience.ResumePromptFor(s.rt.lang)}
	}
	return gen
}

// drainInterrupt takes a pending interrupt signal, so that it does not cut
// the next session short: its words are delivered by other means.
func (s *stepRun) drainInterrupt() {
	select {
	case <-s.rt.interrupts:
	default:
	}
}

// waitOnline waits for the API endpoint the sessions use: the base URL
// given with WithEnv if any, else the process environment's.
func (rt *Runtime) waitOnline(ctx context.Context, notify func(string)) error {
	if u, ok := rt.env["ANTHROPIC_BASE_URL"]; ok {
		host, port := EndpointOf(u)
		return rt.resilience.waitOnline(ctx, host, port, notify)
	}
	return rt.resilience.WaitOnline(ctx, notify)
}

// remaining is what the run budget leaves, +Inf without one.
func (s *stepRun) remaining() float64 {
	if s.rt.budget <= 0 {
		return math.Inf(1)
	}
	return s.rt.budget - s.spent()
}

// spent is what this process spent so far, this step's latest cost
// included (read from the loop's own result, not the published copy).
func (s *stepRun) spent() float64 {
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	return s.rt.finishedLocked() + s.r.CostUSD
}

func (s *stepRun) budgetStop() {
	s.r.OK = false
	s.r.Error = fmt.Sprintf(s.texts().budget, s.rt.budget, math.Round(s.spent()*1e4)/1e4, s.r.SessionID)
}

// attemptOut is what the loop needs to know of one attempt beyond the
// StepResult.
type attemptOut struct {
	// invalid says the session's options could not be built (an invalid
	// spec): retrying cannot mend it.
	invalid    bool
	failure    Failure
	overflowed bool
	budgetStop bool
}

// attempt runs one CLI session turn: a new session, or a resumed one.
func (s *stepRun) attempt(ctx context.Context, prompt, resume string, fork bool, resumeAt string) attemptOut {
	a := s.r.BeginAttempt()
	a.Lang = s.rt.lang
	spec := s.spec
	s.runCapped = false
	if left := s.remaining(); !math.IsInf(left, 1) && (spec.MaxBudgetUSD <= 0 || left < spec.MaxBudgetUSD) {
		spec.MaxBudgetUSD, s.runCapped = left, true
	}
	opts, err := s.options(spec, resume, fork, resumeAt)
	if err != nil {
		a.Finish(err)
		return attemptOut{invalid: true, failure: a.Failure()}
	}
	if resume == "" {
		prompt = FirstMessage(s.rt.workbench, spec, prompt)
	}
	var interrupted atomic.Bool
	listen := &interrupted
	if s.ro.Aside {
		listen = nil // an aside run is never interrupted: the words wait
	}
	var stopped string
	err = s.session(ctx, opts, prompt, listen, func(m claude.Message) bool {
		s.flushLoops() // a refusal's tool result follows its hook
		s.noteSession(m)
		if sm, ok := m.(*claude.SystemMessage); ok && sm.Init != nil {
			s.offered.set(sm.Init.Tools)
		}
		stop := false
		if stopped == "" {
			switch {
			case s.rt.handoff.Enabled() && s.watermark >= s.rt.handoff.At() && s.r.SessionID != "":
				stopped, stop = ErrHandoffDue, true
			case interrupted.Load():
				stopped = ErrInterrupted
			}
		}
		for _, e := range a.Observe(m) {
			s.watch(e)
			s.emit(e)
		}
		return stop
	})
	s.flushLoops()
	if stopped == "" && interrupted.Load() {
		stopped = ErrInterrupted
	}
	if stopped != "" {
		a.Stop(stopped)
	}
	a.Finish(err)
	res := a.Result()
	return attemptOut{
		failure:    a.Failure(),
		overflowed: stopped == "" && a.Overflowed(),
		budgetStop: res != nil && (res.TerminalReason == "budget_exhausted" || res.Subtype == "error_max_budget_usd"),
	}
}

// noteSession records a new session id and tells OnSession at once.
func (s *stepRun) noteSession(m claude.Message) {
	sid := MessageSessionID(m)
	if sid == "" || sid == s.r.SessionID {
		return
	}
	s.r.SessionID = sid
	if f := s.ro.OnSession; f != nil {
		func() {
			defer func() {
				if p := recover(); p != nil {
					slog.Error("flower: OnSession panicked", "panic", p)
				}
			}()
			f(s.step, sid)
		}()
	}
}

// watch raises the watermark with main-thread context and sends the near
// event once per generation.
func (s *stepRun) watch(e Event) {
	if e.Subagent() {
		return
	}
	c := e.Int("context")
	if c <= s.watermark {
		return
	}
	s.watermark = c
	h := s.rt.handoff
	if h.Enabled() && !s.warned && c >= h.WarnAt() {
		s.warned = true
		s.emit(event.New(event.Handoff, fmt.Sprintf(s.texts().near, kilo(c), kilo(h.Window), kilo(max(0, h.At()-c))),
			map[string]any{"phase": "near", "step": s.step, "context": c, "window": h.Window, "at": h.At()}))
	}
}

// options compiles the spec for one session of this step.
func (s *stepRun) options(spec AgentSpec, resume string, fork bool, resumeAt string) (claude.Options, error) {
	rt := s.rt
	if rt.workbench != nil {
		if _, err := rt.workbench.Refresh(); err != nil {
			slog.Warn("flower: workbench index not refreshed", "err", err)
		}
	}
	opts, err := BuildOptions(spec, BuildConfig{
		Cwd: rt.workspace, Store: rt.store, Resume: resume, Fork: fork, ResumeAt: resumeAt,
		NotPortable: !rt.portable, Workbench: rt.workbench, SpillThreshold: rt.spill,
		Handoff: rt.handoff.Enabled(), Lang: rt.lang, PluginDirs: rt.pluginDirs, OnLoop: s.noteLoop, OfferedTools: s.offered.get,
	})
	if err != nil {
		return opts, err
	}
	env := make(map[string]string, len(rt.env)+len(opts.Env))
	for k, v := range rt.env {
		env[k] = v
	}
	for k, v := range opts.Env {
		env[k] = v
	}
	// A portable run loads no ~/.claude, so that it behaves the same on
	// every machine; the CLI's auto memory is ~/.claude state too (a folder
	// of notes per project, its index loaded into every session), and its
	// instructions are 2.2 KB of the system prompt, read back with every
	// request of a long run. What a run should keep goes into its
	// workbench's notes/ (the workbench's prompt asks for that) and its
	// history into the store. A value set for the variable wins.
	if _, set := env[autoMemoryEnv]; rt.portable && !set {
		if _, set := os.LookupEnv(autoMemoryEnv); !set {
			env[autoMemoryEnv] = "1"
		}
	}
	opts.Env = env
	// The driver reads no variable of flower's: FLOWER_CLAUDE names the
	// claude binary, looked up in New's order (the spec's Env, WithEnv, the
	// process, the .env chain); without it the driver looks on PATH and in
	// the usual places.
	if p := firstNonEmpty(env["FLOWER_CLAUDE"], os.Getenv("FLOWER_CLAUDE")); p != "" {
		opts.CLIPath = p
	}
	// One tool result can make a stdout line of several MiB (a large Read
	// echoed in tool_use_result); over the driver's 1 MiB default that
	// would end an hours-long step, so a runtime session allows far more.
	opts.MaxLineBytes = runtimeMaxLine
	for _, f := range rt.sessionOpts {
		f(&opts)
	}
	return opts, nil
}

// autoMemoryEnv turns the CLI's auto memory off when "1".
const autoMemoryEnv = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"

// runtimeMaxLine is the longest stdout line a runtime session accepts.
const runtimeMaxLine = 64 << 20

// session runs one CLI process for one prompt and hands every message to
// onMessage, which returns true to stop the turn (the CLI is interrupted
// and the rest of the turn still flows in). With interrupted non-nil, a
// human's Interrupt marks it and interrupts the CLI at once, so a long tool
// call is cut now rather than at its end.
func (s *stepRun) session(ctx context.Context, opts claude.Options, prompt string,
	interrupted *atomic.Bool, onMessage func(claude.Message) bool) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		return err
	}
	defer cl.Close()
	// The watch starts once the CLI is up: its start-up (spawn, MCP
	// servers, initialize) has a bound of its own, the initialize timeout,
	// and can take seconds on a loaded machine without being a stall.
	watch := newStallWatch(s.rt.resilience.StallTimeout, stop)
	defer watch.close()
	if err := cl.Send(ctx, prompt); err != nil {
		return stallOr(ctx, err)
	}
	cl.CloseInputWhenIdle()

	var wg sync.WaitGroup
	var once sync.Once
	interruptCLI := func() {
		once.Do(func() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if err := cl.Interrupt(ictx); err != nil {
					slog.Debug("flower: interrupt not delivered", "err", err)
				}
			}()
		})
	}
	done := make(chan struct{})
	// said carries the words given between turns to the message loop,
	// which says so in the step's events (one goroutine emits).
	var said betweenTurns
	if interrupted != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-s.rt.interrupts:
					if s.sayBetweenTurns(ctx, cl, &said) {
						continue // a later interrupt cuts the turn they started
					}
					interrupted.Store(true)
					interruptCLI()
					return
				case <-done:
					return
				}
			}
		}()
	}
	defer func() {
		close(done)
		wg.Wait()
	}()
	for m, err := range cl.Messages(ctx) {
		if err != nil {
			return stallOr(ctx, err)
		}
		for _, words := range said.take() {
			s.betweenTurnsEvent(words)
		}
		watch.saw(m)
		if onMessage(m) {
			interruptCLI()
		}
	}
	return nil
}

// sayBetweenTurns delivers an interrupt that lands while the CLI waits
// between turns for background tasks only (a worker dispatched to run in
// the background): there is no turn to cut, so the CLI's interrupt would
// do nothing and no message would come until the tasks end, maybe hours
// later. The human's words go to the session at once as a new turn,
// and the tasks are stopped, as an interrupt cuts a foreground worker.
// False when the CLI is in a turn, or takes no more input: the interrupt
// then cuts the turn, and the step resumes with the words.
func (s *stepRun) sayBetweenTurns(ctx context.Context, cl *claude.Client, said *betweenTurns) bool {
	tasks, waiting := cl.WaitingOn()
	if !waiting {
		return false
	}
	words := s.rt.takeWords()
	if err := cl.Send(ctx, s.texts().interruptPrompt(words)+"\n\n"+s.rt.prompts.InterruptNote); err != nil {
		s.rt.keepWords(words)
		return false
	}
	said.add(words)
	for _, id := range tasks {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := cl.StopTask(sctx, id); err != nil {
			slog.Debug("flower: a background task was not stopped", "task", id, "err", err)
		}
		cancel()
	}
	return true
}

// betweenTurns is the words sayBetweenTurns sent, until the message loop
// says them.
type betweenTurns struct {
	mu    sync.Mutex
	words []string
}

func (b *betweenTurns) add(words string) {
	b.mu.Lock()
	b.words = append(b.words, words)
	b.mu.Unlock()
}

func (b *betweenTurns) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.words
	b.words = nil
	return w
}

// toolGetenv reads the environment the CLI and its tools start with (the
// process's without database credentials, WithEnv over it, then the
// session options, as a session's are built), for what depends on where
// the tools keep their configuration (the change report's watched files).
func (rt *Runtime) toolGetenv() func(string) string {
	opts := claude.Options{BaseEnv: withoutDatabase(os.Environ()), Env: maps.Clone(rt.env)}
	for _, f := range rt.sessionOpts {
		f(&opts)
	}
	return func(k string) string {
		if v, ok := opts.Env[k]; ok {
			return v
		}
		for _, kv := range slices.Backward(opts.BaseEnv) {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
}
