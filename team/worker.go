package team

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/gitwork"
	"github.com/flowerrun/flower/internal/tracing"
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

// drainGrace is how long a stopping worker waits for its attempts to end:
// a run's process may take stopGrace to stop, then its work is pushed for
// up to pushBound, then written back. A shorter grace (it was 90 s) left
// a worker mid-push, its run's work only on its machine.
func drainGrace(rescue time.Duration) time.Duration {
	return stopGrace + pushBound(rescue) + 30*time.Second
}

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
	// TeamBudget, when given, sets the team's budget: every worker stops
	// taking new work once all runs together have spent it; 0 lifts it.
	// nil leaves it as it is.
	TeamBudget *float64
	// MaxFailures as DefaultMaxFailures.
	MaxFailures int
	// Flower is the flower binary each run runs in (default this
	// executable: a program built on app.Main runs its own flow).
	Flower string
	// Env is the runs' environment before the worker adds its own
	// (default os.Environ()): credentials and the CLI's settings.
	Env []string
	// PassEnv names the variables of Env each run gets besides the ones
	// every run gets (PATH, the locale, TERM, the CLI's switches that turn
	// its traffic off): a run's environment starts empty, so a token the
	// worker holds reaches no run unless named here. Each must pass
	// CheckPassEnv.
	PassEnv []string
	// Args are added to each run's command line before the request
	// (e.g. "--lang", "en").
	Args []string
	// Version is the flower version, recorded on the runs this worker
	// starts and on its row in team_workers (default: this build's module
	// version and commit). It does not choose who continues a run: the
	// state protocol does.
	Version string
	// Protocol is the newest state protocol this worker reads (default
	// StateProtocol): it leaves a run started with a newer one.
	Protocol int
	// Log gets the worker's own lines (default slog.Default()).
	Log *slog.Logger
	// Unconfined runs the runs without bubblewrap: each run's processes
	// can then read and write whatever the worker's user can. Without
	// it, a worker that cannot confine its runs does not start.
	Unconfined bool
	// Readable are files and folders every run may read beyond the
	// machine's system folders (systemFolders and systemEtc, which it sees
	// read-only, with /tmp, /var/tmp, /run, /root and /home empty): what a
	// CLI wrapper runs, a toolchain under /home or /opt. Each must be an absolute path
	// that exists. flower and the CLI itself (resolved) are always there.
	Readable []string
	// Lang is the language of what the worker says about itself (a broken
	// environment): English or Chinese.
	Lang flower.Lang
	// KeepFailed is how long the folder of a run that failed (parked) is
	// kept under Dir for a person to look into (default DefaultKeepFailed);
	// a run that ended otherwise has its folder removed when it ends.
	KeepFailed time.Duration
	// KeepEnded is how long the folder of a run that ended otherwise
	// (achieved, stopped, cancelled) is kept (default 0: removed when it
	// ends, or at the next quarter round once that long has passed).
	KeepEnded time.Duration
	// Clock is the worker's clock (default time.Now). Nothing the worker
	// decides reads it against the database's: its heartbeat records only
	// how far off it is, for `flower workers` to show.
	Clock func() time.Time
	// Metrics, when given, is where the worker serves its Prometheus
	// metrics (/metrics) and its health (/healthz) while it runs; nil
	// serves none. The caller listens (an address in use is its error,
	// before the worker starts); Run closes it.
	Metrics net.Listener
}

// DefaultKeepFailed is how long a failed run's folder stays on its worker.
const DefaultKeepFailed = 72 * time.Hour

// StateProtocol is the version of what a run's state in the database
// means (its files, its rows, how a worker lays them out and continues
// them). A worker continues any run of a protocol it reads, whatever build
// started it; the same commit built with other flags is the same protocol.
// Raise it only when an older worker would misread a newer run's state.
const StateProtocol = 1

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
	// drainRequest is closed when a person asks the worker to drain
	// (Team.Drain): it then stops as on SIGTERM.
	drainRequest chan struct{}
	asked        sync.Once

	// secrets are what no push of a run may carry: the model's keys this
	// worker hands its runs, the database's password (see pushSecrets).
	secrets []gitwork.Secret

	host  string  // this machine's name, in team_workers
	retry backoff // how far apart a failing run's attempts are

	// health is what the worker knows of its own environment (health.go).
	health healthState
	// m counts what the worker does and sees (metrics.go).
	m *metrics
	// tracing exports the runs' spans (trace.go); nil when off.
	tracing *tracing.Provider

	mu       sync.Mutex
	attempts map[int64]*attempt
	// cancels stop the runs this worker works, as a person's cancel does.
	cancels map[int64]context.CancelCauseFunc
}

// errCancelled stops a run a person cancelled (flower cancel) as River's
// own remote cancel does: the attempt ends it cancelled, its work pushed.
var errCancelled = fmt.Errorf("a person cancelled the run: %w", river.ErrJobCancelledRemotely)

// NewWorker prepares a worker on the team's database at url (the URL the
// Team was opened with: the runs get it unmasked).
func (t *Team) NewWorker(url string, o WorkerOptions) (*Worker, error) {
	if o.Concurrency < 0 || o.Rescue < 0 || o.KeepFailed < 0 || (o.TeamBudget != nil && *o.TeamBudget < 0) || o.MaxFailures < 0 || o.Protocol < 0 {
		return nil, errors.New("team: worker options cannot be negative")
	}
	o.Concurrency = cmp.Or(o.Concurrency, 1)
	o.Rescue = cmp.Or(o.Rescue, DefaultRescue)
	if o.Rescue < 4*time.Second {
		return nil, &RescueTooShortError{Rescue: o.Rescue}
	}
	o.Protocol = cmp.Or(o.Protocol, StateProtocol)
	o.MaxFailures = cmp.Or(o.MaxFailures, DefaultMaxFailures)
	o.Version = cmp.Or(o.Version, BuildVersion())
	o.KeepFailed = cmp.Or(o.KeepFailed, DefaultKeepFailed)
	if o.Clock == nil {
		o.Clock = time.Now
	}
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
	for _, name := range o.PassEnv {
		if err := CheckPassEnv(name); err != nil {
			return nil, err
		}
	}
	for _, p := range o.Readable {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("team: a readable path must be absolute: %s", p)
		}
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("team: a readable path must exist: %w", err)
		}
	}
	confine, err := detectConfinement(o.Unconfined)
	if err != nil {
		return nil, err
	}
	password := t.pool.Config().ConnConfig.Password
	w := &Worker{t: t, url: withPassword(url, password), o: o, confine: confine, drain: make(chan struct{}), drainRequest: make(chan struct{}), attempts: map[int64]*attempt{},
		cancels: map[int64]context.CancelCauseFunc{},
		secrets: pushSecrets(o.Env, o.PassEnv, url, password), m: newMetrics(t)}
	// Every line names the worker and shows none of its secrets, whatever
	// handler the caller gave: the masking is the handler's own.
	w.log = slog.New(withSecrets(cmp.Or(o.Log, slog.Default()).Handler(), w.secretValues())).With("worker", o.Name)
	w.retry = backoff{first: min(10*time.Second, o.Rescue), most: max(10*o.Rescue, 2*time.Minute)}
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
		RetryPolicy: w.retry,
		// River's own lines (job counts every few seconds) only when
		// they warn: the worker says what it does itself. They go
		// through the worker's handler: folded on one line, masked,
		// marked as River's.
		Logger: slog.New(warnOnly{w.log.Handler()}).With("component", "river"),
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// MinRescue is the shortest rescue interval: a worker confirms its runs
// every quarter of it, and a second is too short for a database's reply.
const MinRescue = 4 * time.Second

// RescueTooShortError is a rescue interval below MinRescue.
type RescueTooShortError struct{ Rescue time.Duration }

func (e *RescueTooShortError) Error() string {
	return fmt.Sprintf("team: a rescue interval of %s leaves no time to confirm a job: give at least %s", e.Rescue, MinRescue)
}

// backoff spaces a failing run's retries (on whichever worker is free):
// first, three times that, nine times, ... up to most, so that a short
// outage (the remote, the network) is waited out, not counted six times in
// a few seconds. The queue's own count parks a run that keeps failing.
type backoff struct{ first, most time.Duration }

// after is the wait before the retry that follows the n-th failure.
func (b backoff) after(n int) time.Duration {
	d := b.first
	for i := 1; i < n && d < b.most; i++ {
		d *= 3
	}
	return min(d, b.most)
}

// NextRetry counts the job's failed attempts (River keeps an error for
// each; a retried run's job is new, so its count starts afresh).
func (b backoff) NextRetry(j *rivertype.JobRow) time.Time {
	return time.Now().Add(b.after(len(j.Errors) + 1)) // this failure's error is not in j yet
}

// Run works runs until ctx ends, then stops taking runs, stops those it
// works (each writes its state back and pushes its work) and releases
// them to other workers, within stopGrace. A ctx that ends is the way
// to stop it, at any moment: that is no error.
func (w *Worker) Run(ctx context.Context) (err error) {
	defer func() {
		// Stopped while it registered or started (a person's Ctrl-C in
		// its first second): what gave up was only the stop asked for.
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			err = nil
		}
	}()
	if w.o.Metrics != nil {
		// Served from the start, so that a supervisor sees a worker that
		// cannot register (its database away) as unhealthy.
		defer w.serveMetrics(w.o.Metrics).stop()
	}
	if err := w.register(ctx); err != nil {
		return err
	}
	defer w.unregister()
	defer w.startTracing(ctx)()
	if w.o.TeamBudget != nil {
		if err := w.t.setTeamBudget(ctx, *w.o.TeamBudget); err != nil {
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
		if w.confine.bwrap != "" {
			w.confine.apiSocket = proxy.socket
		}
	}
	lctx, lcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer lcancel()
	listening := make(chan error, 1)
	go func() { listening <- w.listen(lctx) }()
	// A worker whose own environment is broken (its --dir, the CLI, the
	// model's key) starts, says so and fetches nothing until it is whole:
	// it neither fails others' runs nor exits under a supervisor that
	// would only start it again.
	if p := w.checkEnv(ctx); p != nil {
		w.setBroken(ctx, p)
	}
	w.killOrphans()
	defer w.killOrphans()
	// A silent worker's runs are given back before this one fetches: they
	// go first.
	w.rescueSilent(ctx)
	if err := w.startQueue(ctx); err != nil {
		return err
	}
	ticking := make(chan struct{})
	go func() { defer close(ticking); w.everyQuarter(lctx) }()
	// A signal (the context) and a person's request (flower worker
	// --drain) drain alike.
	select {
	case <-ctx.Done():
	case <-w.drainRequest:
	}
	w.drained.Do(func() { close(w.drain) })
	w.markRow(ctx, "draining")
	sctx, cancel := context.WithTimeout(context.Background(), drainGrace(w.o.Rescue))
	defer cancel()
	err = w.client.Stop(sctx)
	lcancel()
	<-listening
	<-ticking
	return err
}

// startQueue starts River's client, again while the database is too slow
// to answer (River gives its first fetch 10 s, and a busy machine or
// database takes longer) or a connection stalls (a machine paused past a
// LISTEN: River's notifier gives up after 5 s): the worker waits and says
// so rather than exits. It returns nil when ctx ends first; what retrying
// cannot mend (the database refusing a statement) is returned at once.
func (w *Worker) startQueue(ctx context.Context) error {
	return retryStart(ctx, func() error { return w.client.Start(context.WithoutCancel(ctx)) }, func(err error, wait time.Duration) {
		w.m.dbFailed(err)
		w.log.Warn("flower worker: the queue did not start (the database answered too slowly); trying again", "err", err, "in", wait)
	})
}

// retryStart calls start until it succeeds, an error says retrying is no
// use (queueStartFinal), or ctx ends (nil), waiting 1 s, 2 s, … 30 s
// between tries and telling failed each time.
func retryStart(ctx context.Context, start func() error, failed func(error, time.Duration)) error {
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		err := start()
		switch {
		case err == nil:
			return nil
		case queueStartFinal(err):
			return err
		}
		failed(err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// queueStartFinal says a failure to start River's client is one no retry
// mends: the database answered with an error (a missing table, a refused
// permission). Everything else is time: a slow or lost connection,
// River's notifier timing out a LISTEN ("timed out waiting for interrupt
// operation", a plain error of River's, which stopped a worker after a
// pause in ci28). (River's refusals of its configuration, a client
// without queues or workers, cannot happen: NewWorker gives both.)
func queueStartFinal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// listen delivers replies to the runs this worker works as they are given.
func (w *Worker) listen(ctx context.Context) error {
	for ctx.Err() == nil {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		w.m.dbFailed(err)
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
	if _, err := conn.Exec(ctx, "listen "+replyChannel+"; listen "+cancelChannel+"; listen "+drainChannel); err != nil {
		conn.Conn().Close(context.Background())
		return err
	}
	// A cancel asked for while the connection was down is seen now (and
	// at every heartbeat).
	w.checkCancels(ctx)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			conn.Conn().Close(context.Background()) // a LISTENing connection is not given back
			return err
		}
		if n.Channel == drainChannel {
			if n.Payload == w.o.Name && w.drainAsked(ctx) {
				w.askDrain()
			}
			continue
		}
		id, _ := strconv.ParseInt(n.Payload, 10, 64)
		w.mu.Lock()
		a, cancel := w.attempts[id], w.cancels[id]
		w.mu.Unlock()
		switch {
		case n.Channel == cancelChannel && cancel != nil:
			w.log.Info("flower worker: cancelled by a person, stopping it", "run", RunName(id))
			cancel(errCancelled)
		case n.Channel == replyChannel && a != nil:
			a.kickReplies()
		}
	}
}

// work is River's call for one run's job.
func (w *Worker) work(ctx context.Context, job *river.Job[runArgs]) error {
	id := job.Args.Run
	// Before anything is written for the run: a worker that cannot work
	// it hands it back to the queue, uncounted (health.go).
	if p := w.unable(ctx); p != nil {
		return w.refuse(ctx, id, p)
	}
	r, err := w.t.Run(ctx, id)
	if errors.Is(err, ErrNoRun) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if Ended(r.State) {
		// The run's row is the truth: River's job of an ended run ends.
		return river.JobCancel(fmt.Errorf("%s already ended %s", r.Name(), r.State))
	}
	if !r.CancelRequested.IsZero() {
		// Cancelled while no worker held it: nothing starts.
		if err := w.t.endCancelled(ctx, id, "cancelled while no worker held it"); err != nil {
			return err
		}
		return river.JobCancel(errors.New("cancelled"))
	}
	if r.Protocol > w.o.Protocol {
		reason := fmt.Sprintf("started with state protocol %d (flower %s); worker %s reads protocol %d at most (flower %s) and leaves it to a newer worker",
			r.Protocol, cmp.Or(r.Version, "?"), w.o.Name, w.o.Protocol, w.o.Version)
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
	// The state protocol this run is worked with from now on: a worker
	// that reads an older one leaves it.
	if _, err := w.t.pool.Exec(ctx, "update team_runs set protocol = $2 where id = $1 and protocol = 0", id, w.o.Protocol); err != nil {
		return err
	}
	a := &attempt{w: w, run: r, job: job.JobRow, replies: make(chan struct{}, 1)}
	if !job.ScheduledAt.IsZero() && !job.AttemptedAt.IsZero() {
		w.m.queueWait.Observe(max(job.AttemptedAt.Sub(job.ScheduledAt), 0).Seconds())
	}
	rctx, cancel := context.WithCancelCause(detach(ctx))
	defer cancel(nil)
	// Once the attempt is over (the deferred calls below first): the
	// run's folder goes if the run ended for good.
	defer w.sweepFolders(context.WithoutCancel(ctx), id)
	w.mu.Lock()
	w.attempts[id], w.cancels[id] = a, cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.attempts, id)
		delete(w.cancels, id)
		w.mu.Unlock()
	}()
	// A cancel asked between the read above and now.
	w.checkCancels(ctx)
	a.startTrace(ctx)
	err = a.work(rctx)
	a.endTrace(err)
	defer func() { w.m.attempts.WithLabelValues(a.outcomeOf(err)).Inc() }()
	if errors.Is(err, errLost) {
		return a.lost()
	}
	if errors.Is(context.Cause(rctx), errCancelled) {
		// Cancelled before its process ran (while cloning, laying out):
		// the attempt may have ended otherwise; the person's word stands.
		if r, rerr := w.t.Run(context.WithoutCancel(ctx), id); rerr == nil && !Ended(r.State) {
			if err := w.t.endCancelled(context.WithoutCancel(ctx), id, "cancelled by a person before it started working"); err != nil {
				return err
			}
			return river.JobCancel(errors.New("cancelled"))
		}
	}
	return err
}

// checkCancels stops the runs this worker works that a person cancelled:
// what LISTEN missed (a dropped connection, a notice before the run was
// registered) is seen here, at every heartbeat, whatever the run's age.
func (w *Worker) checkCancels(ctx context.Context) {
	w.mu.Lock()
	ids := make([]int64, 0, len(w.cancels))
	for id := range w.cancels {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	rows, err := w.t.pool.Query(ctx, "select id from team_runs where id = any($1) and cancel_requested_at is not null", ids)
	if err != nil {
		return
	}
	cancelled, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return
	}
	for _, id := range cancelled {
		w.mu.Lock()
		cancel := w.cancels[id]
		w.mu.Unlock()
		if cancel != nil {
			cancel(errCancelled)
		}
	}
}

// endCancelled ends a run a person cancelled, unless it ended already.
func (t *Team) endCancelled(ctx context.Context, id int64, why string) error {
	return pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		var pushed, branch string
		err := tx.QueryRow(ctx, `select pushed, branch from team_runs where id = $1
			and state not in ('achieved', 'stopped', 'failed', 'cancelled') for update`, id).Scan(&pushed, &branch)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if pushed != "" {
			why += "; its work is on " + branch
		}
		return setStateTx(ctx, tx, id, Cancelled, "", why, true)
	})
}

// settleCancelled ends the runs a person cancelled whose job River ended
// or deleted while no worker held them: the run's row says so for good.
func (t *Team) settleCancelled(ctx context.Context) error {
	rows, err := t.pool.Query(ctx, `select r.id from team_runs r left join river_job j on j.id = r.job_id
		where r.cancel_requested_at is not null and r.state not in ('achieved', 'stopped', 'failed', 'cancelled')
		and (j.id is null or j.state in ('cancelled', 'discarded', 'completed'))`)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := t.endCancelled(ctx, id, "cancelled while no worker held it (its worker had stopped or died)"); err != nil {
			return err
		}
	}
	return nil
}

// everyQuarter is the worker's round every quarter of its rescue
// interval, until ctx ends: its heartbeat, its own environment checked
// (while it is not stopping), and the runs of silent workers given back.
func (w *Worker) everyQuarter(ctx context.Context) {
	every := w.o.Rescue / 4
	for {
		w.rescueSilent(ctx)
		w.sweepFolders(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		w.heartbeat(ctx)
		select {
		case <-w.drain:
		default:
			w.watchHealth(ctx)
		}
	}
}

// heartbeat writes the worker's row, sees the cancels LISTEN missed and
// settles cancelled runs nobody holds.
func (w *Worker) heartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, w.o.Rescue/4)
	defer cancel()
	// The database's clock stamps the heartbeat (silence is judged by it
	// alone); the worker's own reading only says how far off it is.
	var asked bool
	if err := w.t.pool.QueryRow(ctx, `update team_workers set heartbeat = now(), clock_skew_seconds = extract(epoch from $4::timestamptz - now())
		where name = $1 and host = $2 and pid = $3 returning drain_requested_at is not null`,
		w.o.Name, w.host, os.Getpid(), w.o.Clock()).Scan(&asked); err != nil && ctx.Err() == nil {
		w.m.dbFailed(err)
		w.log.Warn("flower worker: its heartbeat did not reach the database", "err", err)
	}
	if asked {
		w.askDrain()
	}
	w.checkCancels(ctx)
	if err := w.t.settleCancelled(ctx); err != nil && ctx.Err() == nil {
		w.m.dbFailed(err)
		w.log.Warn("flower worker: settling cancelled runs", "err", err)
	}
}

// NameTakenError: a live worker (heard from within its rescue interval)
// already has this worker's name.
type NameTakenError struct {
	Name, Host string
	PID        int
	Heartbeat  time.Time
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("a worker named %s is already working (on host %s, pid %d, heard from %s): give this one another name with --name NAME",
		e.Name, e.Host, e.PID, e.Heartbeat.Local().Format("15:04:05"))
}

// register writes the worker's row in team_workers, refusing a name a
// live worker has. A row of the same name left by a dead process on this
// host (killed, then restarted) is taken over at once.
func (w *Worker) register(ctx context.Context) error {
	w.host, _ = os.Hostname()
	return pgx.BeginFunc(ctx, w.t.pool, func(tx pgx.Tx) error {
		var other NameTakenError
		var live bool
		err := tx.QueryRow(ctx, `select host, pid, heartbeat, state <> 'stopped' and heartbeat > now() - make_interval(secs => rescue_seconds)
			from team_workers where name = $1 for update`, w.o.Name).Scan(&other.Host, &other.PID, &other.Heartbeat, &live)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		case live && !(other.Host == w.host && !processAlive(other.PID)):
			other.Name = w.o.Name
			return &other
		}
		// A drain asked of an earlier worker of this name was that
		// worker's: this one starts afresh.
		_, err = tx.Exec(ctx, `insert into team_workers (name, host, pid, version, rescue_seconds, concurrency, clock_skew_seconds, pass_env)
			values ($1, $2, $3, $4, $5, $6, extract(epoch from $7::timestamptz - now()), $8)
			on conflict (name) do update set host = excluded.host, pid = excluded.pid, version = excluded.version,
			rescue_seconds = excluded.rescue_seconds, concurrency = excluded.concurrency, clock_skew_seconds = excluded.clock_skew_seconds,
			pass_env = excluded.pass_env, started = now(), heartbeat = now(), state = 'working', drain_requested_at = null`,
			w.o.Name, w.host, os.Getpid(), w.o.Version, w.o.Rescue.Seconds(), w.o.Concurrency, w.o.Clock(), append([]string{}, w.o.PassEnv...))
		return err
	})
}

// unregister marks the worker stopped: its name is free at once.
func (w *Worker) unregister() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = w.t.pool.Exec(ctx, "update team_workers set state = 'stopped', heartbeat = now() where name = $1 and host = $2 and pid = $3",
		w.o.Name, w.host, os.Getpid())
}

// processAlive reports whether process pid exists on this machine.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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

// RunsAsOwnUsers reports whether each run runs as a user of its own (a
// root worker confining its runs); otherwise its runs run as the worker's
// own user, or unconfined.
func (w *Worker) RunsAsOwnUsers() (own, confined bool) {
	return w.confine.setpriv != "", w.confine.bwrap != ""
}

// warnOnly passes on what warns or worse.
type warnOnly struct{ slog.Handler }

func (h warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnOnly) WithAttrs(as []slog.Attr) slog.Handler { return warnOnly{h.Handler.WithAttrs(as)} }

func (h warnOnly) WithGroup(name string) slog.Handler { return warnOnly{h.Handler.WithGroup(name)} }

// secretValues are the values no log line of the worker shows: what its
// runs' pushes may not carry (the model's keys, the database's password)
// and the database's URL with its password.
func (w *Worker) secretValues() []string {
	out := []string{w.url}
	for _, s := range w.secrets {
		out = append(out, s.Value)
	}
	return out
}

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
func pushSecrets(env, pass []string, dbURL, dbPassword string) []gitwork.Secret {
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
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		for _, v := range envSecretValues([]string{kv}, pass) {
			add("the worker's "+k, v)
		}
	}
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
