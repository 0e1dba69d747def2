package flower

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/internal/lang"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/sqlite"
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
	workspace  string
	runDir     string
	lang       Lang
	portable   bool
	store      claude.SessionStore
	closeStore func() error
	// db holds the run's state in PostgreSQL (WithDatabase), nil for the
	// run directory's files and SQLite.
	db          *Database
	resilience  Resilience
	handoff     HandoffPolicy
	workbench   *workbench.Workbench
	spill       int
	budget      float64
	env         map[string]string
	sessionOpts []func(*claude.Options)
	pluginDirs  []string
	prompts     Prompts
	runID       string
	// trimming says the session store trims resumed sessions: the
	// built-in store with trimming on (WithTrim).
	trimming bool

	interrupts chan struct{}

	mu      sync.Mutex
	results []StepResult
	// inflight is a copy of the running step's result, refreshed by the
	// loop at every event: what TotalCost and Rescue read, so that they
	// never touch the result the loop is writing.
	inflight *StepResult
	// rescuedRow is the index in results of the row Rescue wrote for the
	// step in flight, -1 if none: the step's real end replaces it.
	rescuedRow int
	// words are a human's interrupt words not yet delivered: for the
	// running step, or kept for the next one.
	words   []string
	running bool
	// aside says the running step is an aside run (RunOptions.Aside),
	// which an Interrupt does not reach.
	aside  bool
	events *os.File
}

// Option configures a Runtime.
type Option func(*config)

type config struct {
	runDir      string
	lang        Lang
	langSet     bool
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
	db          *Database
	env         map[string]string
	sessionOpts []func(*claude.Options)
	pluginDirs  []string
}

// WithRunDir puts the run directory (sessions.db, manifest.json,
// events.jsonl) at dir, resolved against the current directory. Default
// DefaultRunDir(workspace), as for the starter flow and the command. The files flower creates there are this user's only (0600); a
// directory New creates is 0700 and holds a .gitignore that keeps it out of
// git.
func WithRunDir(dir string) Option { return func(c *config) { c.runDir = dir } }

// DefaultRunDir is the run directory of a workspace when none is given:
// <workspace>/runs, for the Runtime, the starter flow and the command alike
// (a run started from another directory must find its lineage, and a
// library user's New must archive what the command would).
func DefaultRunDir(workspace string) string { return filepath.Join(workspace, "runs") }

// WithLanguage chooses the runtime's language: prompts, documents, file
// names, events and errors, and everything it runs that chose no language
// of its own: roles without WithLang, a Workflow's ClarifyStep, GoalStep
// and WithGoal without Lang (their step names too) and its human channel
// without human.WithLang. Default English (the zero Lang); "zh…" means
// Chinese, the original's literals; New refuses any other tag. A run directory keeps the language of its first
// run (see RunDirLanguage): a later Runtime on it speaks that language,
// whatever it asks for, so its step and file names do not change.
func WithLanguage(l Lang) Option { return func(c *config) { c.lang, c.langSet = l, true } }

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
// 1; 0 or less keeps none).
func WithKeepDenials(n int) Option {
	return func(c *config) {
		if n <= 0 {
			n = -1 // the store's spelling of "none"
		}
		c.keepDenials = n
	}
}

// WithWorkbench gives every agent the workbench wb (scripts/, artifacts/,
// notes/ and its INDEX). Off by default. The Runtime works on its own copy
// and never changes wb: a wb with no Texts gets the run's language in the
// copy only. For isolated workers, pass workbench.At(workspace, true).
func WithWorkbench(wb *workbench.Workbench) Option { return func(c *config) { c.workbench = wb } }

// WithDefaultWorkbench gives every agent the workspace's workbench, at
// workbench.Location(workspace, false): <workspace>/.flower. (The original
// put it in <run dir>/workbench; one place decides it now, as for the
// command's -W.)
func WithDefaultWorkbench() Option { return func(c *config) { c.defaultWB = true } }

// WithSpillThreshold spills tool results longer than n characters to the
// workbench's spill/ folder (it needs a workbench). Default 4000 when the
// option is not given; 0 or a negative n means no spill guard, the seed's
// None/0.
func WithSpillThreshold(n int) Option { return func(c *config) { c.spill = max(n, 0) } }

// WithResilience sets the retry policy (on by default).
func WithResilience(r Resilience) Option { return func(c *config) { c.resilience = r } }

// WithHandoff sets the handoff policy (on by default).
func WithHandoff(h HandoffPolicy) Option { return func(c *config) { c.handoff = h } }

// WithBudget caps the whole run's cost in USD (off by default). A step's
// own cap becomes the smaller of its cap and what remains; reaching the
// budget stops cleanly, and a later run can continue the step.
func WithBudget(usd float64) Option { return func(c *config) { c.budget = usd } }

// WithStore replaces the session store (by default the pruning SQLite
// store at <run dir>/sessions.db). The Runtime does not close it.
func WithStore(s claude.SessionStore) Option { return func(c *config) { c.store = s } }

// WithDatabase keeps the run's whole state in d (see OpenDatabase): its
// sessions in d's store instead of <run dir>/sessions.db (unless WithStore
// gives another), and its files written back to d as they change, so
// that another machine can continue the run. The Runtime neither opens nor
// closes d. While d's hold on the run is not confirmed (this process was
// paused past its lease, or another took the run over) the Runtime writes
// nothing and a step stops.
func WithDatabase(d *Database) Option { return func(c *config) { c.db = d } }

// WithEnv adds variables to every session's environment (under each
// spec's own); credentials given here count for CheckCredentials, and a key
// given here, even empty, is never filled from a .env file.
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
// before it starts (the CLI's path, a stderr sink, …). Given more than
// once, each adjusts in the order given.
func WithSessionOptions(f func(*claude.Options)) Option {
	return func(c *config) {
		if f != nil {
			c.sessionOpts = append(c.sessionOpts, f)
		}
	}
}

// resumeDirMaxAge is how long an untouched resume directory of the driver
// may stay in the temporary folder: a crashed run leaves one behind, with
// credentials. A live session writes into its own all the time.
const resumeDirMaxAge = 24 * time.Hour

// sweepResumeDirs removes this user's stale resume directories (a kept one
// keeps its transcript, never its credentials).
func sweepResumeDirs() {
	removed, err := claude.SweepResumeDirs(resumeDirMaxAge)
	if err != nil {
		slog.Warn("flower: stale resume directories not swept", "err", err)
	}
	if len(removed) > 0 {
		slog.Info("flower: removed stale resume directories", "dirs", removed)
	}
}

// New builds a Runtime for workspace. It reads the .env chain and checks
// the credentials before anything is spent: missing ones are an error, in
// the run's language, naming what to set. It also sweeps this user's stale
// resume directories of the driver (see claude.SweepResumeDirs).
//
// New never changes the process environment. What the .env chain gives is
// kept in the Runtime's own environment, which every session's CLI gets on
// top of the process's. Per key the first source wins, in the seed's
// order: the spec's Env; WithEnv; the process environment; $FLOWER_ENV;
// ./.env of the current directory; the per-user file `flower setup` writes
// (UserEnvPath); the .env beside the executable; and last, for the nine
// CredentialKeys only, the env blocks of ~/.claude/settings.json and
// settings.local.json.
func New(workspace string, opts ...Option) (*Runtime, error) {
	c := config{env: map[string]string{}, trim: store.TrimPolicy{Disabled: true},
		spill: guard.DefaultSpillThreshold}
	for _, o := range opts {
		o(&c)
	}
	if err := lang.Check(c.lang); err != nil {
		return nil, fmt.Errorf("flower: WithLanguage: %w", err)
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("flower: workspace %s: %w", workspace, err)
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, fmt.Errorf("flower: create the workspace: %w", err)
	}
	if c.runDir == "" {
		c.runDir = DefaultRunDir(ws)
	}
	runDir, err := filepath.Abs(c.runDir)
	if err != nil {
		return nil, fmt.Errorf("flower: run directory %s: %w", c.runDir, err)
	}
	// The run directory holds whole transcripts: this user's only, and,
	// when flower creates it, out of git (an existing one is its owner's).
	_, statErr := os.Stat(runDir)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, fmt.Errorf("flower: create the run directory: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := workbench.KeepOutOfGit(runDir); err != nil {
			return nil, fmt.Errorf("flower: run directory: %w", err)
		}
	}
	if err := c.handoff.Validate(); err != nil {
		return nil, err
	}
	runLang, err := recordLanguage(runDir, c.lang)
	if err != nil {
		return nil, err
	}
	if c.langSet && runLang.IsEnglish() != c.lang.IsEnglish() {
		slog.Warn("flower: the run directory keeps the language of its first run", "dir", runDir, "asked", c.lang, "kept", runLang)
	}
	c.lang = runLang

	sweepResumeDirs()
	env, report, err := loadEnv(c.env)
	if err != nil {
		return nil, err
	}
	for _, w := range report.Warnings {
		slog.Warn("flower: .env", "warning", w)
	}
	lookup := func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		return os.LookupEnv(k)
	}
	if err := (Environment{LookupEnv: lookup, Lang: c.lang}).CheckCredentials(); err != nil {
		return nil, err
	}
	if c.handoff.Window == 0 {
		c.handoff.Window = defaultWindow(func(k string) string { v, _ := lookup(k); return v })
	}
	res := c.resilience.Resolved()
	if res.Lang == "" {
		res.Lang = c.lang
	}
	rt := &Runtime{
		workspace: ws, runDir: runDir, lang: c.lang, portable: !c.notPortable,
		resilience: res, handoff: c.handoff.Resolved(), spill: c.spill,
		budget: c.budget, env: env, sessionOpts: c.sessionOpts, pluginDirs: c.pluginDirs, prompts: PromptsFor(c.lang),
		runID: newRunID(time.Now()), interrupts: make(chan struct{}, 1), rescuedRow: -1,
	}
	var wb *workbench.Workbench
	switch {
	case c.workbench != nil:
		own := *c.workbench // the caller's stays as given: others share it
		wb = &own
	case c.defaultWB:
		wb = workbench.At(ws, false)
	}
	if wb != nil {
		if wb.Texts == (workbench.Texts{}) {
			wb.Texts = workbench.TextsFor(c.lang)
		}
		if err := wb.CheckWritable(); err != nil {
			return nil, fmt.Errorf("flower: the workbench cannot be used (give a folder you can write, or none): %w", err)
		}
		if _, err := wb.Refresh(); err != nil {
			return nil, fmt.Errorf("flower: workbench: %w", err)
		}
		rt.workbench = wb
	}
	rt.store, rt.db = c.store, c.db
	if rt.store == nil {
		var base claude.SessionStore
		closeBase := func() error { return nil }
		if c.db != nil {
			base = c.db.Sessions()
		} else {
			db, err := sqlite.Open(filepath.Join(runDir, "sessions.db"))
			if err != nil {
				return nil, err
			}
			base, closeBase = db, db.Close
		}
		// What the store writes into a resumed history speaks the run's
		// language unless the caller chose its own words.
		t := textsFor(c.lang)
		if c.trim.Stub == "" {
			c.trim.Stub = t.trimStub
		}
		if c.ephemeral.Text == "" {
			c.ephemeral.Text = t.expired
		}
		if c.ephemeral.PointerText == "" {
			c.ephemeral.PointerText = t.expiredPointer
		}
		prune := store.PrunePolicy{KeepDenials: c.keepDenials, InterruptText: t.interruptedResult, OrphanText: t.orphan}
		p, err := store.NewPruning(base, ws, c.trim, prune, c.ephemeral)
		if err != nil {
			closeBase()
			return nil, err
		}
		rt.store, rt.closeStore = p, closeBase
		rt.trimming = !c.trim.Disabled
	}
	return rt, nil
}

// loadEnv reads the .env chain into a map of its own, never into the
// process environment: given's keys (WithEnv) and the process's claim
// theirs first. The result is what sessions get on top of the process's
// environment: given over what was loaded.
func loadEnv(given map[string]string) (map[string]string, DotenvReport, error) {
	loaded := map[string]string{}
	e := Environment{
		LookupEnv: func(k string) (string, bool) {
			if v, ok := given[k]; ok {
				return v, true
			}
			if v, ok := loaded[k]; ok {
				return v, true
			}
			return os.LookupEnv(k)
		},
		Setenv: func(k, v string) error { loaded[k] = v; return nil },
	}
	report, err := e.LoadDotenv()
	if err != nil {
		return nil, report, err
	}
	env := make(map[string]string, len(loaded)+len(given))
	maps.Copy(env, loaded)
	maps.Copy(env, given)
	return env, report, nil
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

// Language is the runtime's language: the run directory's, recorded on its
// first run.
func (rt *Runtime) Language() Lang { return rt.lang }

// Workspace is the absolute workspace directory.
func (rt *Runtime) Workspace() string { return rt.workspace }

// RunDir is the absolute run directory.
func (rt *Runtime) RunDir() string { return rt.runDir }

// Trimming reports whether resumed sessions are trimmed: the Runtime's own
// session store with WithTrim. Off by default; a store given with
// WithStore trims as it was built to, and this reports false.
func (rt *Runtime) Trimming() bool { return rt.trimming }

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
// flight, rounded to 1/10000 USD. It is safe from any goroutine.
func (rt *Runtime) TotalCost() float64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	sum := rt.finishedLocked()
	if rt.inflight != nil {
		sum += rt.inflight.CostUSD
	}
	return math.Round(sum*1e4) / 1e4
}

// TotalTokens is what every step of this Runtime read and wrote (the
// step in flight included), counted as the manifest counts them.
func (rt *Runtime) TotalTokens() (in, out int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for i, r := range rt.results {
		if i != rt.rescuedRow {
			in, out = in+r.TokensIn, out+r.TokensOut
		}
	}
	if rt.inflight != nil {
		in, out = in+rt.inflight.TokensIn, out+rt.inflight.TokensOut
	}
	return in, out
}

// finishedLocked sums the finished steps' cost; a row Rescue wrote for the
// step still in flight does not count, the step's own cost does.
func (rt *Runtime) finishedLocked() float64 {
	var sum float64
	for i, r := range rt.results {
		if i != rt.rescuedRow {
			sum += r.CostUSD
		}
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

// TranscriptsHolding returns which of texts a main transcript of this
// workspace stored since since holds (as the CLI stores it: a JSON string,
// HTML not escaped). A store that cannot list its sessions reports an
// error wrapping errors.ErrUnsupported. It reads every such transcript
// whole: a front end asks only after a kill, for the few words a killed
// run's inbox handed out.
func (rt *Runtime) TranscriptsHolding(ctx context.Context, since time.Time, texts []string) (map[string]bool, error) {
	lister, ok := rt.store.(claude.SessionLister)
	if !ok {
		return nil, fmt.Errorf("flower: the session store cannot list its sessions: %w", errors.ErrUnsupported)
	}
	sessions, err := lister.ListSessions(ctx, rt.ProjectKey())
	if err != nil {
		return nil, err
	}
	needles := make(map[string][]byte, len(texts))
	for _, t := range texts {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(t); err != nil {
			return nil, err
		}
		quoted := strings.TrimSpace(b.String())
		needles[t] = []byte(quoted[1 : len(quoted)-1])
	}
	held := map[string]bool{}
	for _, s := range sessions {
		if s.Mtime < since.UnixMilli() || len(held) == len(needles) {
			continue
		}
		entries, err := rt.store.Load(ctx, claude.SessionKey{ProjectKey: rt.ProjectKey(), SessionID: s.SessionID})
		if err != nil {
			return held, err
		}
		for _, e := range entries {
			for t, n := range needles {
				if !held[t] && bytes.Contains(e, n) {
					held[t] = true
				}
			}
		}
	}
	return held, nil
}

// Interrupt stops the running step (unless it runs Aside) at its next message boundary (the CLI
// is interrupted at once, so a long tool call does not hold it up) and
// resumes the same session with words. It is safe from any goroutine and
// reports whether a running step took it.
//
// A human's words are never dropped. An interrupt that lands while a
// handoff is due or being written is delivered to the successor, after the
// handoff block. With no step running (between steps), or when the
// interrupted step has no session to resume, non-empty words are kept and
// added to the next Run's prompt on this Runtime; Interrupt then reports
// false, so a front end can say the words wait for the next step.
func (rt *Runtime) Interrupt(words string) bool {
	w := strings.TrimSpace(words)
	rt.mu.Lock()
	if w != "" {
		rt.words = append(rt.words, w)
	}
	running := rt.running && !rt.aside
	rt.mu.Unlock()
	if !running {
		return false
	}
	select {
	case rt.interrupts <- struct{}{}:
	default:
	}
	return true
}

// Interruptible reports whether Interrupt would cut a running step now:
// false between steps and while an Aside step (a judge, the hand-over)
// runs, when the words wait for the next step. A front end says so before
// the person types them.
func (rt *Runtime) Interruptible() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.running && !rt.aside
}

func (rt *Runtime) takeWords() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	w := strings.Join(rt.words, "\n\n")
	rt.words = nil
	return w
}

// keepWords puts words back for the next step.
func (rt *Runtime) keepWords(words string) {
	if words == "" {
		return
	}
	rt.mu.Lock()
	rt.words = append([]string{words}, rt.words...)
	rt.mu.Unlock()
}

// Rescue records the step in flight as ended (its error kept, else
// killed-by-signal) and writes the manifest: what a signal handler calls
// before the process exits. It is safe from any goroutine, never fails
// (problems are logged), and reads only the copy of the step the loop
// publishes. Should the step end after all, its real row replaces the
// rescued one.
func (rt *Runtime) Rescue() {
	rt.mu.Lock()
	if rt.inflight == nil {
		rt.mu.Unlock()
		return
	}
	r := rt.inflight.clone()
	r.EndedAt = time.Now()
	if r.Error == "" {
		r.Error = KilledBySignal
	}
	r.OK = false
	if rt.rescuedRow >= 0 {
		rt.results[rt.rescuedRow] = r
	} else {
		rt.rescuedRow = len(rt.results)
		rt.results = append(rt.results, r)
	}
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

// mayWrite says whether the Runtime may write the run's files: always,
// unless its Database's hold on the run is not confirmed.
func (rt *Runtime) mayWrite() bool { return rt.db == nil || rt.db.Valid() }

func (rt *Runtime) writeManifest() {
	if !rt.mayWrite() {
		slog.Error("flower: manifest not written: this process no longer holds the run")
		return
	}
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

// logEvent appends e to <run dir>/events.jsonl, without the raw CLI
// message: the session store keeps every message whole, and the events of
// one message share it, so the log would repeat it for each.
func (rt *Runtime) logEvent(step string, e Event) {
	e.Raw = nil
	line, err := json.Marshal(struct {
		Run  string `json:"run"`
		Step string `json:"step"`
		Event
	}{rt.runID, step, e})
	if err != nil {
		return
	}
	if !rt.mayWrite() {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.events == nil {
		f, err := os.OpenFile(filepath.Join(rt.runDir, "events.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			slog.Warn("flower: events.jsonl", "err", err)
			return
		}
		rt.events = f
	}
	_, _ = rt.events.Write(append(line, '\n'))
}
