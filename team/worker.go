package team

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/gitwork"
	"github.com/flowerrun/flower/store/postgres"
)

// Defaults of a worker.
const (
	// DefaultRescue is how long a run's job may go unconfirmed before
	// River gives it to another worker: how soon a dead machine's runs
	// move. A live worker confirms every quarter of it.
	DefaultRescue = 2 * time.Minute
	// DefaultMaxFailures parks a run that failed on this many different
	// workers (or twice as many times in all).
	DefaultMaxFailures = 3
	// stopGrace is how long a run stopped by its worker (a cancel, the
	// worker's own stop) may take to write its state back before it is
	// killed.
	stopGrace = time.Minute
)

// WorkerOptions configure a worker.
type WorkerOptions struct {
	// Name says which worker works a run in `flower runs` (default
	// host-pid: two workers on one host are two workers).
	Name string
	// Dir holds each run's checkout, the CLI's HOME and the logs
	// (default ./flower-worker).
	Dir string
	// Concurrency is how many runs this worker works at once (default 1).
	Concurrency int
	// Rescue is River's RescueStuckJobsAfter (default DefaultRescue).
	Rescue time.Duration
	// TeamBudget, when above 0, stops every worker from taking new work
	// once all runs together have spent it.
	TeamBudget float64
	// MaxFailures as DefaultMaxFailures.
	MaxFailures int
	// Flower is the flower binary each run runs in (default this
	// executable: a program built on app.Main runs its own flow).
	Flower string
	// Env is the runs' environment before the worker adds its own
	// (default os.Environ()): credentials and the CLI's settings.
	Env []string
	// Args are added to each run's command line before the request
	// (e.g. "--lang", "en").
	Args []string
	// Version is the flower version runs are started with; a run started
	// with another is left to a worker of that version (default: this
	// build's module version and commit).
	Version string
	// Log gets the worker's own lines (default slog.Default()).
	Log *slog.Logger
	// Unconfined runs the runs without bubblewrap: each run's processes
	// can then read and write whatever the worker's user can. Without
	// it, a worker that cannot confine its runs does not start.
	Unconfined bool
}

// BuildVersion is this build's version: its module version and commit.
func BuildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			v += "-dirty"
		}
	}
	return v
}

// Worker works runs of a Team.
type Worker struct {
	t       *Team
	url     string
	o       WorkerOptions
	log     *slog.Logger
	client  *river.Client[pgx.Tx]
	proxy   *keyProxy     // the runs' way to the model's API; nil when the worker holds no key
	confine confinement   // how runs are fenced in
	drain   chan struct{} // closed when the worker stops: runs in flight are released
	drained sync.Once

	// secrets are what no push of a run may carry: the model's keys this
	// worker hands its runs, the database's password (see pushSecrets).
	secrets []gitwork.Secret

	mu       sync.Mutex
	attempts map[int64]*attempt
}

// NewWorker prepares a worker on the team's database at url (the URL the
// Team was opened with: the runs get it unmasked).
func (t *Team) NewWorker(url string, o WorkerOptions) (*Worker, error) {
	if o.Concurrency < 0 || o.Rescue < 0 || o.TeamBudget < 0 || o.MaxFailures < 0 {
		return nil, errors.New("team: worker options cannot be negative")
	}
	o.Concurrency = cmp.Or(o.Concurrency, 1)
	o.Rescue = cmp.Or(o.Rescue, DefaultRescue)
	if o.Rescue < 4*time.Second {
		return nil, fmt.Errorf("team: a rescue interval of %s leaves no time to confirm a job: give at least 4s", o.Rescue)
	}
	o.MaxFailures = cmp.Or(o.MaxFailures, DefaultMaxFailures)
	o.Version = cmp.Or(o.Version, BuildVersion())
	if o.Name == "" {
		host, _ := os.Hostname()
		o.Name = cmp.Or(host, "host") + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Dir == "" {
		o.Dir = "flower-worker"
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	if o.Flower == "" {
		if o.Flower, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	confine, err := detectConfinement(o.Unconfined)
	if err != nil {
		return nil, err
	}
	password := t.pool.Config().ConnConfig.Password
	w := &Worker{t: t, url: withPassword(url, password), o: o, confine: confine, log: cmp.Or(o.Log, slog.Default()), drain: make(chan struct{}), attempts: map[int64]*attempt{},
		secrets: pushSecrets(o.Env, url, password)}
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(w.work))
	w.client, err = river.NewClient(riverpgxv5.New(t.pool), &river.Config{
		ID:                   o.Name,
		Queues:               map[string]river.QueueConfig{queueName: {MaxWorkers: o.Concurrency}},
		Workers:              workers,
		RescueStuckJobsAfter: o.Rescue,
		// No deadline: a run lasts as long as its worker confirms it
		// (attempt.confirm). River's rescuer leaves a job without a
		// timeout alone, and says nothing of it as stuck: the workers
		// give a silent worker's run away themselves (rescueLoop), as
		// soon as its interval has passed rather than at the leader's
		// next look.
		JobTimeout:  -1,
		RetryPolicy: retryAfter{2 * time.Second},
		// River's own lines (job counts every few seconds) only when
		// they warn: the worker says what it does itself.
		Logger: slog.New(warnOnly{w.log.Handler()}),
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// retryAfter retries a failed run soon (on whichever worker is free): the
// queue's own count parks a run that keeps failing.
type retryAfter struct{ d time.Duration }

func (r retryAfter) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(r.d) }

// Run works runs until ctx ends, then stops taking runs, stops those it
// works (each writes its state back and pushes its work) and releases
// them to other workers, within stopGrace.
func (w *Worker) Run(ctx context.Context) error {
	if err := os.MkdirAll(w.o.Dir, 0o700); err != nil {
		return err
	}
	if w.o.TeamBudget > 0 {
		if err := w.t.setTeamBudget(ctx, w.o.TeamBudget); err != nil {
			return err
		}
	}
	proxy, err := newKeyProxy(w.o.Env, w.log)
	if err != nil {
		return err
	}
	if proxy != nil {
		w.proxy = proxy
		defer proxy.Close()
	}
	lctx, lcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer lcancel()
	listening := make(chan error, 1)
	go func() { listening <- w.listen(lctx) }()
	if err := w.client.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	go w.rescueLoop(lctx)
	<-ctx.Done()
	w.drained.Do(func() { close(w.drain) })
	sctx, cancel := context.WithTimeout(context.Background(), stopGrace+30*time.Second)
	defer cancel()
	err = w.client.Stop(sctx)
	lcancel()
	<-listening
	return err
}

// listen delivers replies to the runs this worker works as they are given.
func (w *Worker) listen(ctx context.Context) error {
	for ctx.Err() == nil {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		w.log.Warn("flower worker: listening for replies", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
		// A reply given while the connection was down is delivered now.
		w.mu.Lock()
		for _, a := range w.attempts {
			a.kickReplies()
		}
		w.mu.Unlock()
	}
	return nil
}

func (w *Worker) listenOnce(ctx context.Context) error {
	conn, err := w.t.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "listen "+replyChannel); err != nil {
		return err
	}
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			conn.Conn().Close(context.Background()) // a LISTENing connection is not given back
			return err
		}
		id, _ := strconv.ParseInt(n.Payload, 10, 64)
		w.mu.Lock()
		a := w.attempts[id]
		w.mu.Unlock()
		if a != nil {
			a.kickReplies()
		}
	}
}

// work is River's call for one run's job.
func (w *Worker) work(ctx context.Context, job *river.Job[runArgs]) error {
	id := job.Args.Run
	r, err := w.t.Run(ctx, id)
	if errors.Is(err, ErrNoRun) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if Ended(r.State) {
		return nil
	}
	if r.Version != "" && r.Version != w.o.Version {
		reason := fmt.Sprintf("started with flower %s; worker %s has %s and leaves it to a worker of that version", r.Version, w.o.Name, w.o.Version)
		w.t.note(ctx, id, reason)
		return river.JobSnooze(w.o.Rescue)
	}
	if budget, err := w.t.TeamBudget(ctx); err == nil && budget > 0 {
		if spent, err := w.t.Spent(ctx); err == nil && spent >= budget {
			if err := w.t.setState(ctx, id, Queued, "", fmt.Sprintf("not taken: the team budget of $%.2f is spent ($%.2f)", budget, spent), false); err != nil {
				return err
			}
			return river.JobSnooze(time.Minute)
		}
	}
	if r.Budget > 0 && r.Cost >= r.Budget {
		return w.t.end(ctx, id, Stopped, fmt.Sprintf("its budget of $%.2f is spent ($%.4f)", r.Budget, r.Cost))
	}
	a := &attempt{w: w, run: r, job: job.JobRow, replies: make(chan struct{}, 1)}
	w.mu.Lock()
	w.attempts[id] = a
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.attempts, id)
		w.mu.Unlock()
	}()
	err = a.work(detach(ctx))
	if errors.Is(err, errLost) {
		return a.lost()
	}
	return err
}

// detach is River's context for a job without River's deadline (a run
// outlives JobTimeout while its worker confirms it) but with its remote
// cancel (flower cancel).
func detach(ctx context.Context) context.Context {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	go func() {
		<-ctx.Done()
		if cause := context.Cause(ctx); errors.Is(cause, river.ErrJobCancelledRemotely) {
			cancel(cause)
		}
	}()
	return out
}

// note records why a run waits without changing its state.
func (t *Team) note(ctx context.Context, id int64, reason string) {
	_, _ = t.pool.Exec(ctx, "update team_runs set reason = $2, updated_at = now() where id = $1", id, reason)
}

// end records a run's end.
func (t *Team) end(ctx context.Context, id int64, state, reason string) error {
	return t.setState(ctx, id, state, "", reason, true)
}

// Name is the worker's name in `flower runs`.
func (w *Worker) Name() string { return w.o.Name }

// Dir is where the worker keeps its checkouts.
func (w *Worker) Dir() string { return w.o.Dir }

// warnOnly passes on what warns or worse.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(as)} }

func (h warnOnly) WithGroup(name string) slog.Handler { return warnOnly{h.Handler.WithGroup(name)} }

// envSecrets are the values a run's environment must not hold: the
// database's URL and its password and the model's key (which an operator
// may have put in other variables too).
func (w *Worker) envSecrets() []string {
	out := []string{w.url}
	if w.proxy != nil {
		for _, kv := range w.o.Env {
			if k, v, _ := strings.Cut(kv, "="); (k == "ANTHROPIC_API_KEY" || k == "ANTHROPIC_AUTH_TOKEN") && v != "" {
				out = append(out, v)
			}
		}
	}
	if cfg, err := pgconn.ParseConfig(w.url); err == nil && cfg.Password != "" {
		out = append(out, cfg.Password)
	}
	return out
}

// pushSecrets are the values a worker refuses to push: the model's keys
// and tokens (claude.SecretEnv) as its runs get them, from env and from
// every credential file a run's flower would load (the .env chain, the
// CLI's settings: every value, not only the first that wins), and the
// database's password, given in its URL or found by pgx (~/.pgpass,
// PGPASSWORD). The repository's token gitwork finds itself.
func pushSecrets(env []string, dbURL, dbPassword string) []gitwork.Secret {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var out []gitwork.Secret
	add := func(kind, v string) {
		if v == "" || slices.ContainsFunc(out, func(s gitwork.Secret) bool { return s.Value == v }) {
			return
		}
		out = append(out, gitwork.Secret{Kind: kind, Value: v})
	}
	isKey := func(k string) bool { return slices.Contains(claude.SecretEnv, k) }
	for k, v := range vars {
		if isKey(k) {
			add("the model's credential ("+k+")", v)
		}
	}
	// Every file's value: LoadDotenv takes the first per key, so each key
	// is reported unset and every value offered is kept.
	files := flower.Environment{
		LookupEnv: func(k string) (string, bool) {
			if isKey(k) {
				return "", false
			}
			v, ok := vars[k]
			return v, ok
		},
		Setenv: func(k, v string) error {
			if isKey(k) {
				add("the model's credential ("+k+")", v)
			}
			return nil
		},
		Home: vars["HOME"],
	}
	_, _ = files.LoadDotenv()
	add("the database's password", postgres.PasswordOf(dbURL))
	add("the database's password", dbPassword)
	return out
}

// withPassword is the database URL raw with the password pgx found for it
// (in ~/.pgpass or $PGPASSFILE, the worker's own) written in, for the
// runs: each has a HOME of its own, where no password file is. A URL that
// has a password, or no password found, stays as it is.
func withPassword(raw, password string) string {
	if password == "" || postgres.PasswordOf(raw) != "" {
		return raw
	}
	if u, err := neturl.Parse(raw); err == nil && u.Scheme != "" && u.Opaque == "" {
		u.User = neturl.UserPassword(u.User.Username(), password)
		return u.String()
	}
	return raw + " password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(password) + "'"
}
