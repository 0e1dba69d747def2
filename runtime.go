package flower

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/workbench"
)

// Runtime runs steps: one verb, Run, inside which a step survives API
// faults (back off, wait for the network, resume the same session), a
// human's interrupt (resume with their words) and a full context (the
// session writes a handoff document, a fresh session continues from it).
//
// A Runtime keeps a run directory (sessions.db, manifest.json,
// events.jsonl) and is safe for use by one Run at a time; Interrupt and
// Rescue may be called from any goroutine.
type Runtime struct {
	workspace   string
	runDir      string
	lang        Lang
	portable    bool
	store       claude.SessionStore
	closeStore  func() error
	resilience  Resilience
	handoff     HandoffPolicy
	workbench   *workbench.Workbench
	spill       int
	budget      float64
	env         map[string]string
	sessionOpts func(*claude.Options)
	pluginDirs  []string
	prompts     Prompts
	runID       string

	interrupts chan struct{}

	mu       sync.Mutex
	results  []StepResult
	inflight *StepResult
	words    []string
	running  bool
	events   *os.File
}

// Option configures a Runtime.
type Option func(*config)

type config struct {
	runDir      string
	lang        Lang
	notPortable bool
	trim        store.TrimPolicy
	ephemeral   store.EphemeralPolicy
	keepDenials int
	workbench   *workbench.Workbench
	defaultWB   bool
	spill       int
	resilience  Resilience
	handoff     HandoffPolicy
	budget      float64
	store       claude.SessionStore
	env         map[string]string
	sessionOpts func(*claude.Options)
	pluginDirs  []string
}

// WithRunDir puts the run directory (sessions.db, manifest.json,
// events.jsonl, the default workbench) at dir, resolved against the
// current directory. Default "runs".
func WithRunDir(dir string) Option { return func(c *config) { c.runDir = dir } }

// WithLanguage chooses the runtime's language: prompts, documents and file
// names (roles take theirs from WithLang).
// Default Chinese, the original's.
func WithLanguage(l Lang) Option { return func(c *config) { c.lang = l } }

// NotPortable lets sessions read the project's .claude/ settings. By
// default they read no settings at all, so a run behaves the same on any
// machine.
func NotPortable() Option { return func(c *config) { c.notPortable = true } }

// WithTrim turns on trimming of bulky old tool results when a session is
// resumed (off by default), with policy p.
func WithTrim(p store.TrimPolicy) Option {
	return func(c *config) { p.Disabled = false; c.trim = p }
}

// WithEphemeral sets the expiry of stale glance outputs on resume (on by
// default; Disabled turns it off).
func WithEphemeral(p store.EphemeralPolicy) Option { return func(c *config) { c.ephemeral = p } }

// WithKeepDenials keeps the newest n permission denials on resume (default
// 1; 0 keeps none).
func WithKeepDenials(n int) Option {
	return func(c *config) {
		if n == 0 {
			n = -1 // the store's spelling of "none"
		}
		c.keepDenials = n
	}
}

// WithWorkbench gives every agent the workbench wb (scripts/, artifacts/,
// notes/ and its INDEX). Off by default.
func WithWorkbench(wb *workbench.Workbench) Option { return func(c *config) { c.workbench = wb } }

// WithDefaultWorkbench puts the workbench at <run dir>/workbench, outside
// the workspace.
func WithDefaultWorkbench() Option { return func(c *config) { c.defaultWB = true } }

// WithSpillThreshold spills tool results longer than n characters to the
// workbench (default 4000; negative turns spilling off).
func WithSpillThreshold(n int) Option { return func(c *config) { c.spill = n } }

// WithResilience sets the retry policy (on by default).
func WithResilience(r Resilience) Option { return func(c *config) { c.resilience = r } }

// WithHandoff sets the handoff policy (on by default).
func WithHandoff(h HandoffPolicy) Option { return func(c *config) { c.handoff = h } }

// WithBudget caps the whole run's cost in USD (off by default). A step's
// own cap becomes the smaller of its cap and what remains; reaching the
// budget stops cleanly, and a later run can continue the step.
func WithBudget(usd float64) Option { return func(c *config) { c.budget = usd } }

// WithStore replaces the session store (by default the pruning SQLite
// store at <run dir>/sessions.db).
func WithStore(s claude.SessionStore) Option { return func(c *config) { c.store = s } }

// WithEnv adds variables to every session's environment (under each
// spec's own); credentials given here count for CheckCredentials.
func WithEnv(env map[string]string) Option {
	return func(c *config) {
		for k, v := range env {
			c.env[k] = v
		}
	}
}

// WithPluginDirs loads the Claude Code plugins in these folders into every
// session (skills, agents, hooks that travel with a repository). A folder
// that does not exist is skipped; one that cannot be read fails the step.
func WithPluginDirs(dirs ...string) Option {
	return func(c *config) { c.pluginDirs = append(c.pluginDirs, dirs...) }
}

// WithSessionOptions adjusts the driver options of every session just
// before it starts (the CLI's path, a stderr sink, …).
func WithSessionOptions(f func(*claude.Options)) Option {
	return func(c *config) { c.sessionOpts = f }
}

// New builds a Runtime for workspace. It loads .env files (LoadDotenv) and
// checks the credentials before anything is spent: missing ones are an
// error naming what to set.
func New(workspace string, opts ...Option) (*Runtime, error) {
	c := config{runDir: "runs", lang: Chinese, env: map[string]string{}, trim: store.TrimPolicy{Disabled: true}}
	for _, o := range opts {
		o(&c)
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("flower: workspace %s: %w", workspace, err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, fmt.Errorf("flower: create the workspace: %w", err)
	}
	runDir, err := filepath.Abs(c.runDir)
	if err != nil {
		return nil, fmt.Errorf("flower: run directory %s: %w", c.runDir, err)
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("flower: create the run directory: %w", err)
	}
	if err := c.handoff.Validate(); err != nil {
		return nil, err
	}
	report, err := LoadDotenv()
	if err != nil {
		return nil, err
	}
	for _, w := range report.Warnings {
		slog.Warn("flower: .env", "warning", w)
	}
	creds := Environment{LookupEnv: func(k string) (string, bool) {
		if v, ok := c.env[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}}
	if err := creds.CheckCredentials(); err != nil {
		return nil, err
	}
	rt := &Runtime{
		workspace: ws, runDir: runDir, lang: c.lang, portable: !c.notPortable,
		resilience: c.resilience.Resolved(), handoff: c.handoff.Resolved(), spill: c.spill,
		budget: c.budget, env: c.env, sessionOpts: c.sessionOpts, pluginDirs: c.pluginDirs, prompts: PromptsFor(c.lang),
		runID: newRunID(time.Now()), interrupts: make(chan struct{}, 1),
	}
	switch {
	case c.workbench != nil:
		rt.workbench = c.workbench
	case c.defaultWB:
		rt.workbench = workbench.New(ws)
		rt.workbench.Home = filepath.Join(runDir, "workbench")
	}
	if rt.workbench != nil {
		rt.workbench.Texts = workbench.TextsFor(string(c.lang))
		if _, err := rt.workbench.Refresh(); err != nil {
			return nil, fmt.Errorf("flower: workbench: %w", err)
		}
	}
	rt.store = c.store
	if rt.store == nil {
		db, err := store.Open(filepath.Join(runDir, "sessions.db"))
		if err != nil {
			return nil, err
		}
		keep := c.keepDenials
		p, err := store.NewPruning(db, ws, c.trim, store.PrunePolicy{KeepDenials: keep}, c.ephemeral)
		if err != nil {
			db.Close()
			return nil, err
		}
		rt.store, rt.closeStore = p, db.Close
	}
	return rt, nil
}

// newRunID is YYYYmmdd-HHMMSS-<6 hex>: unique per Runtime, since the
// manifest tells runs apart by it.
func newRunID(now time.Time) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return now.Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// RunID identifies this Runtime's rows in the manifest.
func (rt *Runtime) RunID() string { return rt.runID }

// Workspace is the absolute workspace directory.
func (rt *Runtime) Workspace() string { return rt.workspace }

// RunDir is the absolute run directory.
func (rt *Runtime) RunDir() string { return rt.runDir }

// ManifestPath is <run dir>/manifest.json.
func (rt *Runtime) ManifestPath() string { return filepath.Join(rt.runDir, ManifestName) }

// Store is the session store every session mirrors to.
func (rt *Runtime) Store() claude.SessionStore { return rt.store }

// Workbench is the runtime's workbench, nil when it has none.
func (rt *Runtime) Workbench() *workbench.Workbench { return rt.workbench }

// ProjectKey is the CLI's project key of the workspace.
func (rt *Runtime) ProjectKey() string { return claude.ProjectKey(rt.workspace) }

// Results are this process's finished steps, in order.
func (rt *Runtime) Results() []StepResult {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]StepResult(nil), rt.results...)
}

// TotalCost is what this process spent, finished steps and the one in
// flight, rounded to 1/10000 USD.
func (rt *Runtime) TotalCost() float64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return math.Round(rt.spentLocked()*1e4) / 1e4
}

func (rt *Runtime) spentLocked() float64 {
	var sum float64
	for _, r := range rt.results {
		sum += r.CostUSD
	}
	if rt.inflight != nil {
		sum += rt.inflight.CostUSD
	}
	return sum
}

// HasSession reports whether the store holds session id of this workspace.
func (rt *Runtime) HasSession(ctx context.Context, id string) (bool, error) {
	if c, ok := rt.store.(store.SessionChecker); ok {
		return c.HasSession(ctx, rt.ProjectKey(), id)
	}
	entries, err := rt.store.Load(ctx, claude.SessionKey{ProjectKey: rt.ProjectKey(), SessionID: id})
	return len(entries) > 0, err
}

// ContextOf is the context size of session id's last main-thread turn.
func (rt *Runtime) ContextOf(ctx context.Context, id string) (int, error) {
	if c, ok := rt.store.(store.LastContextReader); ok {
		return c.LastContext(ctx, rt.ProjectKey(), id)
	}
	return 0, fmt.Errorf("flower: the session store cannot tell a session's context: %w", errors.ErrUnsupported)
}

// Interrupt stops the running step at its next message boundary (the CLI
// is interrupted at once, so a long tool call does not hold it up) and
// resumes the same session with words. It is safe from any goroutine and
// reports whether a step was running to take it.
func (rt *Runtime) Interrupt(words string) bool {
	rt.mu.Lock()
	if !rt.running {
		rt.mu.Unlock()
		return false
	}
	if w := strings.TrimSpace(words); w != "" {
		rt.words = append(rt.words, w)
	}
	rt.mu.Unlock()
	select {
	case rt.interrupts <- struct{}{}:
	default:
	}
	return true
}

func (rt *Runtime) takeWords() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	w := strings.Join(rt.words, "\n\n")
	rt.words = nil
	return w
}

// Rescue records the step in flight as ended (its error kept, else
// killed-by-signal) and writes the manifest: what a signal handler calls
// before the process exits. It never fails; problems are logged.
func (rt *Runtime) Rescue() {
	rt.mu.Lock()
	if rt.inflight == nil {
		rt.mu.Unlock()
		return
	}
	r := *rt.inflight
	rt.inflight = nil
	r.EndedAt = time.Now()
	if r.Error == "" {
		r.Error = KilledBySignal
	}
	r.OK = false
	rt.results = append(rt.results, r)
	rt.mu.Unlock()
	rt.writeManifest()
}

// Close releases the session store the Runtime opened and the event log.
func (rt *Runtime) Close() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var errs []error
	if rt.events != nil {
		errs = append(errs, rt.events.Close())
		rt.events = nil
	}
	if rt.closeStore != nil {
		errs = append(errs, rt.closeStore())
		rt.closeStore = nil
	}
	return errors.Join(errs...)
}

func (rt *Runtime) writeManifest() {
	rt.mu.Lock()
	results := append([]StepResult(nil), rt.results...)
	rt.mu.Unlock()
	rec, err := WriteManifest(rt.ManifestPath(), rt.runID, results)
	if err != nil {
		slog.Error("flower: manifest not written", "path", rt.ManifestPath(), "err", err)
	}
	if rec != nil {
		slog.Warn("flower: manifest was unreadable; kept aside and rebuilt", "notice", rec.String())
	}
}

// logEvent appends e to <run dir>/events.jsonl.
func (rt *Runtime) logEvent(step string, e Event) {
	line, err := json.Marshal(struct {
		Run  string `json:"run"`
		Step string `json:"step"`
		Event
	}{rt.runID, step, e})
	if err != nil {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.events == nil {
		f, err := os.OpenFile(filepath.Join(rt.runDir, "events.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			slog.Warn("flower: events.jsonl", "err", err)
			return
		}
		rt.events = f
	}
	_, _ = rt.events.Write(append(line, '\n'))
}

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
func (rt *Runtime) Run(ctx context.Context, spec AgentSpec, prompt string, ro RunOptions) (StepResult, error) {
	if (ro.Fork || ro.ResumeAt != "") && ro.Resume == "" {
		return StepResult{}, fmt.Errorf("%w: Fork and ResumeAt need Resume (the session to fork or cut)", ErrInvalidSpec)
	}
	if spec.Compact != nil {
		if _, err := spec.Compact.Env(); err != nil {
			return StepResult{}, err
		}
	}
	step := ro.StepName
	if step == "" {
		step = spec.Name
	}
	r := NewStepResult(step)
	rt.mu.Lock()
	if rt.running {
		rt.mu.Unlock()
		return StepResult{}, errors.New("flower: a step is already running on this Runtime; use one Runtime per concurrent step")
	}
	rt.running, rt.inflight, rt.words = true, r, nil
	rt.mu.Unlock()
	select { // an interrupt of an earlier step must not hit this one
	case <-rt.interrupts:
	default:
	}

	s := &stepRun{rt: rt, spec: spec, r: r, step: step, prompt: prompt, ro: ro}
	s.loop(ctx)

	r.EndedAt = time.Now()
	rt.mu.Lock()
	rt.running = false
	if rt.inflight == r { // else Rescue already recorded it
		rt.inflight = nil
		rt.results = append(rt.results, *r)
	}
	rt.mu.Unlock()
	rt.writeManifest()
	if !r.OK {
		return *r, &StepError{Step: step, Reason: r.Error}
	}
	return *r, nil
}

// stepRun is one Run in progress.
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
}

func (s *stepRun) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	s.rt.logEvent(s.step, e)
	if s.ro.OnEvent == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("flower: OnEvent panicked; the step goes on", "step", s.step, "panic", p)
		}
	}()
	s.ro.OnEvent(e)
}

func (s *stepRun) retryEvent(text string, attempt int) {
	s.emit(event.New(event.Retry, text, map[string]any{"step": s.step, "attempt": attempt}))
}

// loop is the seed's loop with its four exits.
func (s *stepRun) loop(ctx context.Context) {
	rt, r := s.rt, s.r
	resume, fork, resumeAt := s.ro.Resume, s.ro.Fork, s.ro.ResumeAt
	prompt := s.prompt
	degradedInARow := 0
	for attempt := 1; ; attempt++ {
		r.Attempts = attempt
		if rt.budget > 0 && s.remaining() <= 0 {
			s.budgetStop()
			return
		}
		out := s.attempt(ctx, prompt, resume, fork, resumeAt)
		switch {
		case r.OK:
			return
		case ctx.Err() != nil:
			r.Error = "cancelled: " + context.Cause(ctx).Error()
			return
		case r.Error == ErrInterrupted:
			words := rt.takeWords()
			if r.SessionID == "" {
				return
			}
			s.retryEvent(s.texts().interrupted(words != ""), attempt)
			resume, fork, resumeAt = r.SessionID, false, ""
			prompt = s.texts().interruptPrompt(words) + "\n\n" + rt.prompts.InterruptNote
			r.Resumed = true
			attempt--
			continue
		case r.Error == ErrHandoffDue || (rt.handoff.Enabled() && r.SessionID != "" && out.overflowed):
			if reason := rt.handoff.StopReason(len(r.Retired), degradedInARow); reason != "" {
				r.Error = reason
				return
			}
			h, degraded := s.writeHandoff(ctx, out.overflowed)
			if degraded {
				degradedInARow++
			} else {
				degradedInARow = 0
			}
			r.Retire()
			if reason := rt.handoff.StopReason(len(r.Retired), degradedInARow); degradedInARow >= MaxDegradedInARow && reason != "" {
				r.Error = reason
				return
			}
			resume, fork, resumeAt = "", false, ""
			prompt = h.PromptBlock(rt.lang)
			s.watermark, s.warned = 0, false
			attempt--
			continue
		}
		if s.runCapped && out.budgetStop {
			s.budgetStop()
			return
		}
		kind := ClassifyFailure(out.failure)
		if kind == ErrorUsageLimit && rt.resilience.Enabled() {
			if wait, ok := rt.resilience.UsageLimitWait(out.failure.ResetsAt(), time.Now()); ok {
				s.retryEvent(s.texts().usageWait(time.Now().Add(wait)), attempt)
				if !sleepCtx(ctx, wait) {
					r.Error = "cancelled while waiting for the usage limit to reset"
					return
				}
				if r.SessionID != "" {
					resume, fork, resumeAt = r.SessionID, false, ""
					prompt = rt.resilience.ResumePromptFor(rt.lang)
					r.Resumed = true
				}
				attempt-- // waiting out a usage limit spends no attempt
				continue
			}
		}
		if !rt.resilience.Enabled() || attempt >= rt.resilience.MaxAttempts || !rt.resilience.ShouldRetry(kind) {
			return
		}
		s.retryEvent(fmt.Sprintf(s.texts().failed, attempt, kind), attempt)
		if err := rt.waitOnline(ctx, func(note string) { s.retryEvent(note, attempt) }); err != nil {
			r.Error += " | " + rt.resilience.OfflineNote()
			return
		}
		if !sleepCtx(ctx, rt.resilience.DelayFor(attempt)) {
			r.Error = "cancelled: " + context.Cause(ctx).Error()
			return
		}
		if r.SessionID != "" {
			resume, fork, resumeAt = r.SessionID, false, ""
			prompt = rt.resilience.ResumePromptFor(rt.lang)
			r.Resumed = true
		} else {
			resume, fork, resumeAt, prompt = s.ro.Resume, s.ro.Fork, s.ro.ResumeAt, s.prompt
		}
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
	s.rt.mu.Lock()
	defer s.rt.mu.Unlock()
	return s.rt.budget - s.rt.spentLocked()
}

func (s *stepRun) budgetStop() {
	s.r.OK = false
	s.r.Error = fmt.Sprintf(s.texts().budget, s.rt.budget, s.rt.TotalCost(), s.r.SessionID)
}

// attemptOut is what the loop needs to know of one attempt beyond the
// StepResult.
type attemptOut struct {
	failure    Failure
	overflowed bool
	budgetStop bool
}

// attempt runs one CLI session turn: a new session, or a resumed one.
func (s *stepRun) attempt(ctx context.Context, prompt, resume string, fork bool, resumeAt string) attemptOut {
	a := s.r.BeginAttempt()
	spec := s.spec
	s.runCapped = false
	if left := s.remaining(); !math.IsInf(left, 1) && (spec.MaxBudgetUSD <= 0 || left < spec.MaxBudgetUSD) {
		spec.MaxBudgetUSD, s.runCapped = left, true
	}
	opts, err := s.options(spec, resume, fork, resumeAt)
	if err != nil {
		a.Finish(err)
		return attemptOut{failure: a.Failure()}
	}
	if resume == "" {
		prompt = FirstMessage(s.rt.workbench, spec, prompt)
	}
	var interrupted atomic.Bool
	var stopped string
	err = s.session(ctx, opts, prompt, &interrupted, func(m claude.Message) bool {
		s.noteSession(m)
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
		s.emit(event.New(event.Handoff, fmt.Sprintf("上下文 %s/%s · 还有约 %s 到换代", kilo(c), kilo(h.Window), kilo(max(0, h.At()-c))),
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
		Handoff: rt.handoff.Enabled(), Lang: rt.lang, PluginDirs: rt.pluginDirs,
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
	opts.Env = env
	if rt.sessionOpts != nil {
		rt.sessionOpts(&opts)
	}
	return opts, nil
}

// session runs one CLI process for one prompt and hands every message to
// onMessage, which returns true to stop the turn (the CLI is interrupted
// and the rest of the turn still flows in). With interrupted non-nil, a
// human's Interrupt marks it and interrupts the CLI at once, so a long tool
// call is cut now rather than at its end.
func (s *stepRun) session(ctx context.Context, opts claude.Options, prompt string,
	interrupted *atomic.Bool, onMessage func(claude.Message) bool) error {
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Send(ctx, prompt); err != nil {
		return err
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
	if interrupted != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-s.rt.interrupts:
				interrupted.Store(true)
				interruptCLI()
			case <-done:
			}
		}()
	}
	defer func() {
		close(done)
		wg.Wait()
	}()
	for m, err := range cl.Messages(ctx) {
		if err != nil {
			return err
		}
		if onMessage(m) {
			interruptCLI()
		}
	}
	return nil
}

// writeHandoff has the session write its handoff document (forced: the
// context cannot even hold that turn, so a degraded one is built at once),
// keeps it in the workbench's notes and reports whether it is degraded.
func (s *stepRun) writeHandoff(ctx context.Context, forced bool) (*doc.Handoff, bool) {
	rt, r := s.rt, s.r
	h := rt.handoff
	s.emit(event.New(event.Handoff, fmt.Sprintf("上下文 %s/%s —— 正在写交接…", kilo(s.watermark), kilo(h.Window)),
		map[string]any{"phase": "writing", "step": s.step, "context": s.watermark, "window": h.Window}))
	var hd *doc.Handoff
	why := ""
	if forced {
		why = s.texts().tooFull
	} else {
		hd, why = s.handoffTurn(ctx)
	}
	if why != "" {
		hd = doc.Degraded(rt.lang, s.step, s.prompt, why)
		r.Errors = append(r.Errors, fmt.Sprintf(s.texts().degraded, why))
	}
	hd.Step = s.step
	path := ""
	if wb := rt.workbench; wb != nil {
		path = s.keepHandoff(wb, hd)
	}
	s.emit(event.New(event.Handoff, fmt.Sprintf("上下文满了,写交接换新会话(%s)", s.step), map[string]any{
		"phase": "done", "step": s.step, "context": s.watermark, "window": h.Window,
		"degraded": why != "", "path": path,
		"sections": map[string]any{"doing": hd.Doing, "decided": hd.Decided, "deadends": hd.Deadends, "next": hd.Next},
	}))
	return hd, why != ""
}

// handoffTurn asks the session itself for its handoff: one more turn on the
// same session, with no budget cap (the document must get written; its
// cost still counts), no UI events and no threshold. It returns the parsed
// document, or why it could not be had.
func (s *stepRun) handoffTurn(ctx context.Context) (*doc.Handoff, string) {
	rt, r := s.rt, s.r
	spec := s.spec
	spec.MaxBudgetUSD = 0
	opts, err := s.options(spec, r.SessionID, false, "")
	if err != nil {
		return nil, errorType(err)
	}
	scratch := NewStepResult(s.step)
	a := scratch.BeginAttempt()
	prompt := rt.prompts.HandoffPrompt(kilo(s.watermark), kilo(rt.handoff.Window))
	err = s.session(ctx, opts, prompt, nil, func(m claude.Message) bool {
		a.Observe(m)
		return false
	})
	a.Finish(err)
	r.CostUSD += scratch.CostUSD
	r.NumTurns += scratch.NumTurns
	if !scratch.OK {
		if err != nil {
			return nil, errorType(err)
		}
		return nil, "error result"
	}
	hd := doc.ParseHandoff(scratch.Text)
	if missing := hd.Missing(rt.lang); len(missing) > 0 {
		return nil, s.texts().missing + strings.Join(missing, "/")
	}
	return hd, ""
}

// keepHandoff writes the document to notes/, moving an earlier one of the
// same step to the archive first. It returns the path, or "" on failure
// (the successor still gets the document through its prompt).
func (s *stepRun) keepHandoff(wb *workbench.Workbench, hd *doc.Handoff) string {
	t := s.texts()
	name := safeStepName(s.step)
	path := filepath.Join(wb.Notes(), t.handoffFile+"-"+name+".md")
	if _, err := os.Stat(path); err == nil {
		archive := filepath.Join(wb.Notes(), "archive", t.handoffFile)
		if err := os.MkdirAll(archive, 0o755); err == nil {
			dst := uniquePath(filepath.Join(archive, name+"-"+time.Now().Format("20060102-150405")), ".md")
			if err := os.Rename(path, dst); err != nil {
				slog.Warn("flower: earlier handoff not archived", "path", path, "err", err)
			}
		}
	}
	if err := hd.Write(s.rt.lang, path); err != nil {
		slog.Warn("flower: handoff not written to the workbench", "path", path, "err", err)
		return ""
	}
	return path
}

// uniquePath is base+ext, or base-2+ext, base-3+ext… the first that does
// not exist: two handoffs in one second must not overwrite each other.
func uniquePath(base, ext string) string {
	p := base + ext
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return p
		}
		p = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
}

// safeStepName makes a step label usable as a file name.
func safeStepName(step string) string {
	s := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`/\:*?"<>|`, r) {
			return -1
		}
		return r
	}, step)
	if strings.TrimSpace(s) == "" {
		return "step"
	}
	return s
}

// errorType names an error's type, the degraded handoff's "why".
func errorType(err error) string {
	t := errorText(err)
	if name, _, ok := strings.Cut(t, ": "); ok && name != "" && !strings.Contains(name, " ") {
		return name
	}
	return t
}

// kilo renders a token count as 152.0K (window sizes as 200K).
func kilo(n int) string {
	if n%1000 == 0 && n >= 100_000 {
		return fmt.Sprintf("%dK", n/1000)
	}
	return fmt.Sprintf("%.1fK", float64(n)/1000)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runtimeTexts are the runtime's own words in one language.
type runtimeTexts struct {
	interruptWith, interruptBare string
	retryWith, retryBare         string
	failed                       string // attempt, kind
	tooFull, degraded, missing   string
	handoffFile                  string
	budget                       string // budget, spent, session
	usage                        string // reset time
}

var zhTexts = runtimeTexts{
	interruptWith: "人在这里打断了你,说:\n\n%s\n\n按这句话调整,接着做。",
	interruptBare: "人打断了一下,现在继续。",
	retryWith:     "已打断,带着你的话续跑",
	retryBare:     "已打断,继续跑",
	failed:        "第 %d 次失败(%s),准备重试",
	tooFull:       "上下文已经装不下,连交接都跑不了一轮",
	degraded:      "交接降级(%s)",
	missing:       "缺",
	handoffFile:   "交接",
	budget:        "整次运行的预算 $%.2f 已用完(已花 $%.4f)。干净地停在这里;加大预算后再跑一次,会接着会话 %s 继续。",
	usage:         "用量到上限了,等到 %s 重置后接着跑",
}

var enTexts = runtimeTexts{
	interruptWith: "A human interrupted you here and said:\n\n%s\n\nAdjust to this and carry on.",
	interruptBare: "A human interrupted briefly; carry on now.",
	retryWith:     "interrupted: resuming with your words",
	retryBare:     "interrupted: resuming",
	failed:        "attempt %d failed (%s), retrying",
	tooFull:       "the context cannot hold even the handoff turn",
	degraded:      "handoff degraded (%s)",
	missing:       "missing ",
	handoffFile:   "handoff",
	budget:        "the run budget of $%.2f is spent ($%.4f so far). Stopped cleanly here; raise the budget and run again to continue session %s.",
	usage:         "usage limit reached: waiting for the reset at %s, then resuming",
}

func (s *stepRun) texts() runtimeTexts {
	if isEnglish(s.rt.lang) {
		return enTexts
	}
	return zhTexts
}

func (t runtimeTexts) interrupted(withWords bool) string {
	if withWords {
		return t.retryWith
	}
	return t.retryBare
}

func (t runtimeTexts) interruptPrompt(words string) string {
	if words == "" {
		return t.interruptBare
	}
	return fmt.Sprintf(t.interruptWith, words)
}

func (t runtimeTexts) usageWait(until time.Time) string {
	return fmt.Sprintf(t.usage, until.Format("15:04:05"))
}
