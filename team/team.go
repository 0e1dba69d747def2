// Package team is a team's queue of runs on one PostgreSQL database: runs
// submitted from any machine against a git repository, worked by a pool of
// worker machines, each run on its own branch, its state (transcripts,
// lineage, the human's side, the workbench) in the same database (see
// flower.OpenDatabase), so that any worker continues a run another left.
//
// The queue is River (github.com/riverqueue/river): a run is one River
// job. River hands a job to one worker at a time, retries it after a
// failure, and its rescuer gives a job whose worker vanished (SIGKILL,
// power, network) to another worker once the job has not been confirmed
// for the rescue interval; River's remote cancel stops a running job.
// What River lacks and this package adds is small: a worker confirms its
// job while it works (River has no job heartbeat; the worker refreshes the
// job's attempted_at, the very column River's rescuer reads), the run's
// own row (state, step, cost, the reasons it failed), replies and events,
// both with LISTEN/NOTIFY.
//
// A run is a tenant, and a stranger: its processes (flower's child, the
// CLI, every tool call) run whatever a model or a repository tells them.
// So the worker is the only client of the database and the only holder of
// the model's key, and the kernel keeps each run to its own folders:
//   - The run's process works on plain local files and a local session
//     store; the worker lays them out from the database before it starts
//     and writes them back while it runs and when it ends, as that run's
//     state and only while its attempt holds the run. A per-run socket
//     the worker served would have been a second protocol to fence; a
//     per-run database role with row security a credential the run still
//     holds. Mirroring is what the worker did for the branch already.
//   - The model is reached through the worker's proxy on 127.0.0.1, which
//     adds the worker's key to requests that carry the run's own token;
//     the token dies with the attempt. The run's environment never holds
//     the database's URL, libpq's settings or the key, under any name.
//   - bubblewrap confines the run's process: of the machine only what is
//     listed (its programs and libraries, what programs read of /etc),
//     read-only; /root, /home, /tmp and /run empty; the
//     run's checkout, HOME, state and tmp folders its only writable ones,
//     the checkout's .git read-only (the worker's own git would run what
//     a repository's config names), its own PID namespace (no other
//     process, environment or command line), no capability as root. A
//     worker that cannot confine its runs does not start unless told
//     --unconfined.
package team

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/gitwork"
	"github.com/flowerrun/flower/internal/pgmigrate"
	"github.com/flowerrun/flower/store/postgres"
)

// The states of a run, as `flower runs` shows them.
const (
	Queued    = "queued"    // waiting for a free worker
	Running   = "running"   // a worker works it
	Waiting   = "waiting"   // a question waits for a person
	Achieved  = "achieved"  // it ended with its goal achieved (or every step passed)
	Stopped   = "stopped"   // it ended short of its goal (rounds or budget spent, judged unreachable)
	Failed    = "failed"    // parked: it failed on too many workers, or cannot be worked; Reason says why
	Cancelled = "cancelled" // a person cancelled it
)

// Ended reports whether a run in state s is over.
func Ended(s string) bool {
	return s == Achieved || s == Stopped || s == Failed || s == Cancelled
}

// queueName is River's queue for runs.
const queueName = "flower_runs"

// Channels of LISTEN/NOTIFY: a reply given, an event recorded, a cancel
// asked for; the payload is the run's id.
const (
	replyChannel  = "flower_team_reply"
	eventChannel  = "flower_team_event"
	cancelChannel = "flower_team_cancel"
)

// migrateLock serialises River's migrations when many workers start on a
// new database at once.
const migrateLock = 0x72697672 // "rivr"

// Schema is the queue's own tables beside River's.
var Schema = pgmigrate.Component{Name: "team", TablePrefix: "team_", Migrations: []string{`
create table team_runs (
	id bigserial primary key,
	request text not null,
	repo text not null,
	base text not null default '',
	branch text not null,
	budget_usd double precision not null default 0,
	cost_usd double precision not null default 0,
	state text not null default 'queued',
	host text not null default '',
	step text not null default '',
	round integer not null default 0,
	reason text not null default '',
	question text not null default '',
	version text not null default '',
	pushed text not null default '',
	job_id bigint not null default 0,
	failures jsonb not null default '[]',
	submitted_by text not null default '',
	created_at timestamptz not null default now(),
	updated_at timestamptz not null default now(),
	ended_at timestamptz
);
create table team_replies (
	id bigserial primary key,
	run bigint not null references team_runs(id) on delete cascade,
	question text not null default '',
	text text not null,
	skip boolean not null default false,
	given_at timestamptz not null default now(),
	delivered_at timestamptz
);
create index team_replies_waiting on team_replies (run) where delivered_at is null;
create table team_events (
	id bigserial primary key,
	run bigint not null references team_runs(id) on delete cascade,
	at timestamptz not null default now(),
	worker text not null default '',
	event jsonb not null
);
create index team_events_run on team_events (run, id);
create table team_settings (
	key text primary key,
	value text not null
);`,
	// Operator control: a cancel asked for is the run's own (River's
	// cleaner deletes its jobs); the state protocol a run was started
	// with; how many failures a retry left behind; the workers.
	`
alter table team_runs add column cancel_requested_at timestamptz;
alter table team_runs add column protocol integer not null default 0;
alter table team_runs add column failures_before integer not null default 0;
create table team_workers (
	name text primary key,
	host text not null,
	pid integer not null,
	version text not null default '',
	rescue_seconds double precision not null,
	started timestamptz not null default now(),
	heartbeat timestamptz not null default now(),
	state text not null default 'working'
);`,
	fenceMigration,
	// The commit a push is of, said before the push: a push whose record
	// was lost is still the run's.
	`alter table team_runs add column pushing text not null default '';`,
	// When and by which worker that push was said: a push that has not
	// reached the branch is waited for a while (its worker may be
	// paused), then given up with where the work may be.
	`alter table team_runs add column pushing_at timestamptz;
alter table team_runs add column pushing_by text not null default '';`,
	workersMigration,
	// The variables a worker passes its runs (--pass-env), for `flower
	// workers` to show.
	`alter table team_workers add column pass_env text[] not null default '{}';`,
	// The key the run's replies are signed with (human.SignReply), made
	// by the first worker that delivers one: only workers read it.
	`alter table team_runs add column reply_key bytea;`,
	// The hosts a run may reach through its worker (flower submit
	// --net): none unless listed.
	`alter table team_runs add column net_hosts text[] not null default '{}';`}}

// Run is one run of the queue.
type Run struct {
	ID      int64
	Request string
	Repo    string // the repository's address as shown: a token in it masked (see gitwork.Redact)
	Base    string // the branch the run's branch was made from ("" = the remote's default)
	Branch  string // the run's own branch
	Budget  float64
	// NetHosts are the hosts its processes may reach through the worker
	// (flower submit --net); none when empty.
	NetHosts []string
	Cost     float64 // spent so far, across every worker that worked it
	State    string
	Host     string // the worker working it (or that last did)
	Step     string
	Round    int
	Reason   string // why it waits, ended or was parked
	Question string // the question waiting for a person
	Version  string // the flower version it was started with
	// Protocol is the state protocol it was started with (see
	// StateProtocol; 0 before its first attempt).
	Protocol int
	// CancelRequested is when a person asked to cancel it (zero: never).
	CancelRequested time.Time
	// FailuresBefore is how many of Failures came before its last retry
	// (`flower retry`): only the later ones count towards parking it.
	FailuresBefore int
	Pushed         string // the last commit pushed to Branch
	JobID          int64
	Failures       []Failure
	// Attempted is when its current (or last) attempt began, River's
	// attempted_at: zero before its first.
	Attempted time.Time
	Created   time.Time
	Updated   time.Time
	Ended     time.Time // zero while it is not over

	// cloneURL is the address as submitted, token and all: what a worker
	// clones and pushes to, and nothing shows.
	cloneURL string
}

// Name is how commands name the run: "r" and its number.
func (r Run) Name() string { return RunName(r.ID) }

// RunName is the name of run id.
func RunName(id int64) string { return "r" + strconv.FormatInt(id, 10) }

// ParseRun reads a run's name ("r12" or "12").
func ParseRun(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), "r"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%q is not a run: runs are named r1, r2, … (`flower runs` lists them)", s)
	}
	return id, nil
}

// Failure is one attempt of a run that failed.
type Failure struct {
	Host   string    `json:"host"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// runArgs is the River job of a run.
type runArgs struct {
	Run int64 `json:"run"`
}

func (runArgs) Kind() string { return "flower_run" }

// ErrNoRun is returned for a run the database does not have.
var ErrNoRun = errors.New("team: no such run")

// Team is a queue on one database.
type Team struct {
	pool  *pgxpool.Pool
	river *river.Client[pgx.Tx]
	url   string // redacted
	raw   string // as given: what a reader of the run's sessions connects with
}

// DatabaseError is a failure to reach the team's database or to bring its
// tables up to date. URL is the database's address with its password
// masked; a command shows the two in its user's language.
type DatabaseError struct {
	URL string
	Err error
}

func (e *DatabaseError) Error() string { return fmt.Sprintf("the database at %s: %v", e.URL, e.Err) }

func (e *DatabaseError) Unwrap() error { return e.Err }

// Open connects to the database at url and brings River's and the queue's
// tables up to date. Errors name the URL with its password masked.
func Open(ctx context.Context, url string) (*Team, error) {
	shown := postgres.Redact(url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("the database URL %s does not parse (want postgres://user:password@host:port/database): %v", shown, postgres.Scrub(err, url))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, &DatabaseError{URL: shown, Err: postgres.Scrub(err, url)}
	}
	fail := func(err error) (*Team, error) {
		pool.Close()
		return nil, &DatabaseError{URL: shown, Err: postgres.Scrub(err, url)}
	}
	if err := migrateRiver(ctx, pool); err != nil {
		return fail(err)
	}
	if err := pgmigrate.Apply(ctx, pool, Schema); err != nil {
		return fail(err)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		return fail(err)
	}
	return &Team{pool: pool, river: client, url: shown, raw: url}, nil
}

func migrateRiver(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	// River's migrations take a transaction each (one adds an enum value
	// the next uses): the lock is the session's, on a connection of its
	// own.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", migrateLock); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "select pg_advisory_unlock($1)", migrateLock)
	_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// URL is the database's URL with its password masked.
func (t *Team) URL() string { return t.url }

// Close disconnects.
func (t *Team) Close() { t.pool.Close() }

// Submission is what `flower submit` enqueues.
type Submission struct {
	Request string
	Repo    string  // a git URL or path every worker can reach
	Base    string  // the branch to start from ("" = the remote's default)
	Budget  float64 // USD for the whole run, across workers; 0 = none
	By      string  // who submitted (host), for the record
	// NetHosts are the hosts the run may reach (ParseNetHosts' form);
	// empty: none, its network has nothing but the model's API.
	NetHosts []string
}

// Submit enqueues a run: its row and its River job in one transaction.
func (t *Team) Submit(ctx context.Context, s Submission) (Run, error) {
	if strings.TrimSpace(s.Request) == "" {
		return Run{}, errors.New("a run needs a request: flower submit --repo REPO \"what to do\"")
	}
	if strings.TrimSpace(s.Repo) == "" {
		return Run{}, errors.New("a run needs a repository every worker can reach: --repo URL-or-path")
	}
	if s.Budget < 0 {
		return Run{}, fmt.Errorf("--budget %v: give an amount in USD above 0, or 0 for none", s.Budget)
	}
	hosts, err := ParseNetHosts(s.NetHosts)
	if err != nil {
		return Run{}, err
	}
	var id int64
	err = pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `insert into team_runs (request, repo, base, branch, budget_usd, submitted_by, net_hosts)
			values ($1, $2, $3, '', $4, $5, $6) returning id`, s.Request, s.Repo, s.Base, s.Budget, s.By, append([]string{}, hosts...)).Scan(&id)
		if err != nil {
			return err
		}
		res, err := t.river.InsertTx(ctx, tx, runArgs{Run: id}, &river.InsertOpts{
			Queue: queueName, MaxAttempts: maxAttempts, Priority: priorityQueued, UniqueOpts: river.UniqueOpts{ByArgs: true},
		})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "update team_runs set branch = $2, job_id = $3 where id = $1", id, "flower/"+RunName(id), res.Job.ID); err != nil {
			return err
		}
		return recordEvent(ctx, tx, id, stateEvent(Queued, "", "submitted by "+cmp.Or(s.By, "?")))
	})
	if err != nil {
		return Run{}, fmt.Errorf("the database at %s: %w", t.url, err)
	}
	return t.Run(ctx, id)
}

// maxAttempts bounds River's attempts; the queue parks a run well before
// (see WorkerOptions.MaxFailures): this only stops a loop the queue's own
// count would miss.
const maxAttempts = 100

const runColumns = `r.id, r.request, r.repo, r.base, r.branch, r.budget_usd, r.cost_usd, ` + shownState + `, r.host, r.step, r.round, r.reason,
	r.question, r.version, r.protocol, r.cancel_requested_at, r.failures_before, r.pushed, r.job_id, r.failures, r.created_at, r.updated_at, r.ended_at, r.net_hosts, coalesce(j.state::text, ''),
	j.attempted_at, coalesce(extract(epoch from now() - j.attempted_at)::float8, 0), coalesce((j.metadata->>'flower_lease')::float8, 0)`

// runsFrom joins each run with its River job: a job River ended while no
// worker held it (cancelled, or discarded by the rescuer) ends the run.
const runsFrom = " from team_runs r left join river_job j on j.id = r.job_id"

// shownState is a run's state as shown: its row's, which is the truth once
// the run ended; a run not ended whose job River ended while no worker
// held it (or whose job is gone, River's cleaner deletes ended jobs) is
// cancelled when a person asked for it, failed when River gave up.
const shownState = `case
	when r.state in ('achieved', 'stopped', 'failed', 'cancelled') then r.state
	when r.cancel_requested_at is not null and (j.id is null or j.state in ('cancelled', 'discarded', 'completed')) then 'cancelled'
	when j.state = 'cancelled' then 'cancelled'
	when j.state = 'discarded' then 'failed'
	else r.state end`

func scanRun(row pgx.Row) (Run, error) {
	var r Run
	var failures []byte
	var ended *time.Time
	var job string
	var cancelAsked, attempted *time.Time
	var silent, lease float64
	err := row.Scan(&r.ID, &r.Request, &r.cloneURL, &r.Base, &r.Branch, &r.Budget, &r.Cost, &r.State, &r.Host, &r.Step,
		&r.Round, &r.Reason, &r.Question, &r.Version, &r.Protocol, &cancelAsked, &r.FailuresBefore, &r.Pushed, &r.JobID, &failures,
		&r.Created, &r.Updated, &ended, &r.NetHosts, &job, &attempted, &silent, &lease)
	if err != nil {
		return r, err
	}
	if (r.State == Running || r.State == Waiting) && attempted != nil && lease > 0 {
		// Its worker is not heard from: say so, and when another takes
		// it (the first worker that looks, within a quarter interval).
		since := attempted.Local().Format("15:04:05")
		switch {
		case job == "running" && silent > lease:
			by := attempted.Add(time.Duration(lease * 1.25 * float64(time.Second))).Local().Format("15:04:05")
			r.Reason = fmt.Sprintf("worker %s silent since %s; taken over by about %s", r.Host, since, by)
		case job == "available" || job == "retryable" || job == "scheduled":
			r.Reason = fmt.Sprintf("worker %s silent since %s; the next free worker takes it over", r.Host, since)
		}
	}
	r.Repo = gitwork.Redact(r.cloneURL)
	if cancelAsked != nil {
		r.CancelRequested = *cancelAsked
	}
	if attempted != nil {
		r.Attempted = *attempted
	}
	if ended != nil {
		r.Ended = *ended
	} else if Ended(r.State) {
		// Ended by River's tables (see shownState), not yet by its row.
		r.Ended = r.Updated
		switch r.State {
		case Cancelled:
			r.Reason = "cancelled while no worker held it (its worker had stopped or died)"
		case Failed:
			r.Reason = "River gave up on its job after its last attempt"
		}
	}
	_ = json.Unmarshal(failures, &r.Failures)
	return r, nil
}

// Run reads one run.
func (t *Team) Run(ctx context.Context, id int64) (Run, error) {
	r, err := scanRun(t.pool.QueryRow(ctx, "select "+runColumns+runsFrom+" where r.id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("%w %s in %s (`flower runs` lists them)", ErrNoRun, RunName(id), t.url)
	}
	return r, err
}

// RunFilter chooses runs for Runs. Its zero value is every run.
type RunFilter struct {
	// States keeps the runs in one of these states (as shown: Queued,
	// Running, ...); none keeps every state.
	States []string
	// Search keeps the runs whose request holds it (any case).
	Search string
	// Before keeps the runs older than this one (its id): the next page
	// after a page that ended with it. 0 starts at the newest.
	Before int64
	// Limit is the most runs returned, newest first (0: no limit).
	Limit int
}

// States are the states of a run, in the order of its life.
var States = []string{Queued, Running, Waiting, Achieved, Stopped, Failed, Cancelled}

// where is f as a query's condition and its arguments.
func (f RunFilter) where() (string, []any, error) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.States) > 0 {
		for _, s := range f.States {
			if !slices.Contains(States, s) {
				return "", nil, fmt.Errorf("%w %q: a run is %s", ErrNoState, s, strings.Join(States, ", "))
			}
		}
		conds = append(conds, "("+shownState+") = any("+arg(f.States)+")")
	}
	if f.Search != "" {
		// The words as typed: % and _ match themselves.
		like := strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(f.Search)
		conds = append(conds, "r.request ilike "+arg("%"+like+"%"))
	}
	if f.Before > 0 {
		conds = append(conds, "r.id < "+arg(f.Before))
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	return " where " + strings.Join(conds, " and "), args, nil
}

// ErrNoState is returned for a state no run can be in.
var ErrNoState = errors.New("team: no run state")

// Runs reads the runs f chooses, newest first.
func (t *Team) Runs(ctx context.Context, f RunFilter) ([]Run, error) {
	if f.Limit < 0 {
		return nil, fmt.Errorf("team: a limit of %d runs: give 1 or more, or 0 for all", f.Limit)
	}
	cond, args, err := f.where()
	if err != nil {
		return nil, err
	}
	q := "select " + runColumns + runsFrom + cond + " order by r.id desc"
	if f.Limit > 0 {
		q += " limit " + strconv.Itoa(f.Limit)
	}
	rows, err := t.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Run, error) { return scanRun(row) })
}

// CountRuns is how many runs f chooses, its Limit aside.
func (t *Team) CountRuns(ctx context.Context, f RunFilter) (int, error) {
	cond, args, err := f.where()
	if err != nil {
		return 0, err
	}
	var n int
	err = t.pool.QueryRow(ctx, "select count(*)"+runsFrom+cond, args...).Scan(&n)
	return n, err
}

// Spent is what every run of the team has cost so far.
func (t *Team) Spent(ctx context.Context) (float64, error) {
	var spent float64
	err := t.pool.QueryRow(ctx, "select coalesce(sum(cost_usd), 0) from team_runs").Scan(&spent)
	return spent, err
}

// TeamBudget is the budget across all runs that workers were given
// (--team-budget), 0 for none.
func (t *Team) TeamBudget(ctx context.Context) (float64, error) {
	var v string
	err := t.pool.QueryRow(ctx, "select value from team_settings where key = 'team_budget_usd'").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}

// setTeamBudget sets the team's budget; 0 lifts it.
func (t *Team) setTeamBudget(ctx context.Context, usd float64) error {
	if usd == 0 {
		_, err := t.pool.Exec(ctx, "delete from team_settings where key = 'team_budget_usd'")
		return err
	}
	_, err := t.pool.Exec(ctx, `insert into team_settings (key, value) values ('team_budget_usd', $1)
		on conflict (key) do update set value = excluded.value`, strconv.FormatFloat(usd, 'f', -1, 64))
	return err
}

// Reply: see replies.go.

// EndedError is a cancel or retry of a run in a state that refuses it
// (a cancel of an ended run, a retry of one not failed).
type EndedError struct {
	Run   Run
	Retry bool // the refused request was a retry (else a cancel)
}

func (e *EndedError) Error() string {
	if e.Retry {
		return fmt.Sprintf("%s is %s: only a failed (parked) run can be retried", e.Run.Name(), e.Run.State)
	}
	return fmt.Sprintf("%s is already %s (it ended %s): there is nothing to cancel",
		e.Run.Name(), e.Run.State, e.Run.Ended.Local().Format("2006-01-02 15:04"))
}

// Cancel stops a run, whatever its age: the request is recorded on the
// run's own row (the truth whatever River's tables say later) and
// announced. A queued run, or one no worker holds, ends cancelled now or
// when a worker next takes its job, without starting anything; a running
// one is stopped by its worker (at once, or at its next confirmation),
// its resumable state written back and its work pushed. An ended run is
// an *EndedError.
func (t *Team) Cancel(ctx context.Context, id int64) (Run, error) {
	r, err := t.Run(ctx, id)
	if err != nil {
		return r, err
	}
	if Ended(r.State) {
		return r, &EndedError{Run: r}
	}
	err = pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `update team_runs set cancel_requested_at = coalesce(cancel_requested_at, now()), updated_at = now()
			where id = $1 and state not in ('achieved', 'stopped', 'failed', 'cancelled')`, id)
		if err != nil || tag.RowsAffected() == 0 {
			return err // ended meanwhile: said below
		}
		// A job no worker holds is ended here; a running one is its
		// worker's to end (it pushes the work first). River's own remote
		// cancel also reaches a young attempt at once.
		var job string
		err = tx.QueryRow(ctx, "select state::text from river_job where id = $1 for update", r.JobID).Scan(&job)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			job = ""
		case err != nil:
			return err
		}
		if job != "running" {
			if job != "" {
				if _, err := t.river.JobCancelTx(ctx, tx, r.JobID); err != nil {
					return err
				}
			}
			why := "cancelled before a worker took it"
			if r.Pushed != "" {
				why = "cancelled while no worker held it; its work is on " + r.Branch
			}
			if err := setStateTx(ctx, tx, id, Cancelled, "", why, true); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "select pg_notify($1, $2)", cancelChannel, strconv.FormatInt(id, 10))
		return err
	})
	if err != nil {
		return r, err
	}
	if r, err = t.Run(ctx, id); err == nil && Ended(r.State) && r.State != Cancelled {
		return r, &EndedError{Run: r}
	}
	if err == nil && r.State != Cancelled {
		_, _ = t.river.JobCancel(ctx, r.JobID)
	}
	return r, err
}

// Retry puts a failed (parked) run back in the queue with a new job: a
// worker continues it from its pushed branch and its state. Its failures
// stay in its record; only those after the retry count towards parking it
// again. A run in any other state is an *EndedError.
func (t *Team) Retry(ctx context.Context, id int64, by string) (Run, error) {
	r, err := t.Run(ctx, id)
	if err != nil {
		return r, err
	}
	if r.State != Failed {
		return r, &EndedError{Run: r, Retry: true}
	}
	err = pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		// The row, locked, still failed: two retries make one job.
		var state string
		if err := tx.QueryRow(ctx, "select "+shownState+runsFrom+" where r.id = $1 for update of r", id).Scan(&state); err != nil {
			return err
		}
		if state != Failed {
			r.State = state
			return &EndedError{Run: r, Retry: true}
		}
		// A new job, not River's retry of the old one: River would
		// complete a job whose attempts ran out without working it.
		res, err := t.river.InsertTx(ctx, tx, runArgs{Run: id}, &river.InsertOpts{Queue: queueName, MaxAttempts: maxAttempts})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `update team_runs set job_id = $2, failures_before = jsonb_array_length(failures),
			cancel_requested_at = null, ended_at = null where id = $1`, id, res.Job.ID); err != nil {
			return err
		}
		why := "retried by a person"
		if by != "" {
			why += " on " + by
		}
		if r.Pushed != "" {
			why += "; it continues from " + r.Branch
		}
		return setStateTx(ctx, tx, id, Queued, "", why, false)
	})
	if err != nil {
		return r, err
	}
	return t.Run(ctx, id)
}

// setState records a run's new state and its event.
func (t *Team) setState(ctx context.Context, id int64, state, host, reason string, end bool) error {
	return pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error { return setStateTx(ctx, tx, id, state, host, reason, end) })
}

// setStateTx is setState in tx; host, when given, is the worker that
// writes it.
func setStateTx(ctx context.Context, tx pgx.Tx, id int64, state, host, reason string, end bool) error {
	_, err := tx.Exec(ctx, `update team_runs set state = $2, host = coalesce(nullif($3, ''), host), reason = $4,
		updated_at = now(), ended_at = case when $5 then now() else ended_at end,
		question = case when $2 = 'waiting' then question else '' end where id = $1`, id, state, host, reason, end)
	if err != nil {
		return err
	}
	return recordEventBy(ctx, tx, id, host, stateEvent(state, host, reason))
}

// stateEvent is a state change as an event: System, Text "team_state".
func stateEvent(state, host, reason string) event.Event {
	return event.New(event.System, "team_state", map[string]any{"state": state, "host": host, "reason": reason})
}

func recordEvent(ctx context.Context, tx pgx.Tx, run int64, e event.Event) error {
	return recordEventBy(ctx, tx, run, "", e)
}

// recordEventBy records e of run, written by worker ("" for a command).
func recordEventBy(ctx context.Context, tx pgx.Tx, run int64, worker string, e event.Event) error {
	e.Raw = nil
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "insert into team_events (run, worker, event) values ($1, $2, $3)", run, worker, data); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "select pg_notify($1, $2)", eventChannel, strconv.FormatInt(run, 10))
	return err
}

// Event is one recorded event of a run.
type Event struct {
	ID     int64
	Run    int64
	At     time.Time
	Worker string // the worker that recorded it ("" for a command: submit, reply, cancel)
	event.Event
}

// Events reads run's events after the one with id after (0: from the
// first), at most limit (0: all).
func (t *Team) Events(ctx context.Context, run, after int64, limit int) ([]Event, error) {
	q := "select id, run, at, worker, event from team_events where run = $1 and id > $2 order by id"
	args := []any{run, after}
	if limit > 0 {
		q = "select * from (select id, run, at, worker, event from team_events where run = $1 and id > $2 order by id desc limit $3) e order by id"
		args = append(args, limit)
	}
	rows, err := t.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanEvent)
}

// EventsBefore reads the at most limit events of run just before the one
// with id before, in order: the page before a page that starts with it.
func (t *Team) EventsBefore(ctx context.Context, run, before int64, limit int) ([]Event, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("team: a page of %d events: give 1 or more", limit)
	}
	rows, err := t.pool.Query(ctx, `select * from (select id, run, at, worker, event from team_events
		where run = $1 and id < $2 order by id desc limit $3) e order by id`, run, before, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanEvent)
}

// Follow calls fn with every event recorded from now on, of every run,
// until ctx ends: LISTEN for the notice, then the rows after the last seen.
// It holds a connection of its own, outside the pool, for as long as it
// follows, and closes it at the end: a pooled one would go back to the
// pool still listening (its buffer growing with every notice), and a
// follower per dashboard tab would leave the pool's other users waiting.
func (t *Team) Follow(ctx context.Context, fn func(Event)) error {
	conn, err := pgx.ConnectConfig(ctx, t.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "listen "+eventChannel); err != nil {
		return err
	}
	var last int64
	if err := conn.QueryRow(ctx, "select coalesce(max(id), 0) from team_events").Scan(&last); err != nil {
		return err
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, "select id, run, at, worker, event from team_events where id > $1 order by id", last)
		if err != nil {
			return err
		}
		evs, err := pgx.CollectRows(rows, scanEvent)
		if err != nil {
			return err
		}
		for _, e := range evs {
			last = e.ID
			fn(e)
		}
	}
}

// Pool is the queue's connection pool, for a dashboard's own queries.
func (t *Team) Pool() *pgxpool.Pool { return t.pool }

func scanEvent(row pgx.CollectableRow) (Event, error) {
	var e Event
	var data []byte
	if err := row.Scan(&e.ID, &e.Run, &e.At, &e.Worker, &data); err != nil {
		return e, err
	}
	return e, json.Unmarshal(data, &e.Event)
}
