package team

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// workersMigration records what `flower workers` shows beyond a worker's
// heartbeat: how many runs it works at once, a person's request that it
// drain (seen at its next quarter round, or at once through drainChannel),
// and how far its own clock is from the database's (silence is judged by
// the database's clock alone; the difference is only shown).
const workersMigration = `
alter table team_workers add column concurrency integer not null default 0;
alter table team_workers add column drain_requested_at timestamptz;
alter table team_workers add column clock_skew_seconds double precision not null default 0;`

// drainChannel: a person asked a worker to drain; the payload is its name.
const drainChannel = "flower_team_drain"

// The states of a worker, as `flower workers` shows them.
const (
	WorkerWorking  = "working"  // it holds at least one run
	WorkerIdle     = "idle"     // it holds none and takes the next
	WorkerDraining = "draining" // it finishes its tool calls, pushes, releases its runs and leaves
	WorkerSilent   = "silent"   // not heard from for longer than its rescue interval (dead, paused, cut off)
	WorkerGone     = "gone"     // it stopped cleanly
	WorkerBroken   = "broken"   // its own environment is broken: it takes no run (Reason says why)
)

// WorkerInfo is one worker of the team as its row in team_workers and the
// runs it holds show it. (Worker is the worker itself.)
type WorkerInfo struct {
	Name    string
	Host    string
	PID     int
	Version string // the flower version it runs
	// Concurrency is how many runs it works at once (0: a worker older
	// than this record).
	Concurrency int
	Rescue      time.Duration // its rescue interval: silent past it
	Started     time.Time
	Heartbeat   time.Time
	// Silence is how long ago its last heartbeat was, by the database's
	// clock (a worker's own clock plays no part).
	Silence time.Duration
	State   string // WorkerWorking, ...
	Reason  string // why it is broken, or that it was drained on request
	// Runs are the runs it holds (their jobs running under it).
	Runs []int64
	// DrainRequested is when a person asked it to drain (zero: never,
	// since it last started).
	DrainRequested time.Time
	// ClockSkew is its clock minus the database's at its last heartbeat
	// (positive: ahead); a difference of a second or two is the trip.
	ClockSkew time.Duration
	// PassEnv names the variables of its own environment it gives its
	// runs beyond the ones every run gets (WorkerOptions.PassEnv).
	PassEnv []string
}

// Live reports whether the worker is still there to take or finish runs.
func (w WorkerInfo) Live() bool { return w.State != WorkerGone && w.State != WorkerSilent }

// Workers reads every worker that ever joined the team, live ones first,
// by name.
func (t *Team) Workers(ctx context.Context) ([]WorkerInfo, error) {
	rows, err := t.pool.Query(ctx, `select w.name, w.host, w.pid, w.version, w.concurrency, w.rescue_seconds, w.started, w.heartbeat,
			greatest(extract(epoch from now() - w.heartbeat)::float8, 0), w.state, w.drain_requested_at, w.clock_skew_seconds, w.pass_env,
			coalesce((select array_agg(r.id order by r.id) from team_runs r join river_job j on j.id = r.job_id
				where r.host = w.name and j.state = 'running' and r.state in ('running', 'waiting')), '{}')
		from team_workers w
		order by w.state = 'stopped', w.name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkerInfo, error) {
		var w WorkerInfo
		var rescue, silence, skew float64
		var said string
		var drain *time.Time
		err := row.Scan(&w.Name, &w.Host, &w.PID, &w.Version, &w.Concurrency, &rescue, &w.Started, &w.Heartbeat,
			&silence, &said, &drain, &skew, &w.PassEnv, &w.Runs)
		if err != nil {
			return w, err
		}
		w.Rescue = seconds(rescue)
		w.Silence = seconds(silence)
		w.ClockSkew = seconds(skew)
		if drain != nil {
			w.DrainRequested = *drain
		}
		w.State, w.Reason = workerState(said, w.Silence, w.Rescue, drain != nil, len(w.Runs))
		return w, nil
	})
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// workerState is what a worker's row (its own word: working, draining,
// stopped, broken: why) and its silence make of it. A worker's word goes
// only as far as its heartbeat: one silent past its rescue interval is
// silent whatever it last said, unless it said it stopped.
func workerState(row string, silence, rescue time.Duration, drainAsked bool, runs int) (state, reason string) {
	if drainAsked {
		reason = "drained at a person's request"
	}
	switch {
	case row == "stopped":
		return WorkerGone, reason
	case silence > rescue:
		return WorkerSilent, ""
	case row == "draining" || drainAsked:
		return WorkerDraining, reason
	case strings.HasPrefix(row, "broken"):
		return WorkerBroken, strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(row, "broken"), ":"))
	case runs > 0:
		return WorkerWorking, ""
	}
	return WorkerIdle, ""
}

// ErrNoWorker is returned for a worker name the team does not have.
var ErrNoWorker = errors.New("team: no such worker")

// UnknownWorkerError is a worker name the team does not have; Names are
// those it has.
type UnknownWorkerError struct {
	Name  string
	Names []string
}

func (e *UnknownWorkerError) Error() string {
	if len(e.Names) == 0 {
		return fmt.Sprintf("no worker is named %s: no worker has joined this team yet", e.Name)
	}
	return fmt.Sprintf("no worker is named %s; the team's workers are %s (`flower workers` shows them)", e.Name, strings.Join(e.Names, ", "))
}

func (e *UnknownWorkerError) Unwrap() error { return ErrNoWorker }

// WorkerGoneError is a drain of a worker that stopped already.
type WorkerGoneError struct{ Worker WorkerInfo }

func (e *WorkerGoneError) Error() string {
	return fmt.Sprintf("worker %s stopped already (at %s): there is nothing to drain", e.Worker.Name, e.Worker.Heartbeat.Local().Format("2006-01-02 15:04:05"))
}

// Drain asks the worker named name to finish and leave, as SIGTERM on its
// machine would: it takes no new run, lets each tool call in flight
// finish, pushes its runs' work, gives them back to the queue (another
// worker continues them) and exits. It sees the request at once when it
// listens, else at its next quarter round. A silent worker drains if it
// comes back; a gone one is a *WorkerGoneError, an unknown name an
// *UnknownWorkerError.
func (t *Team) Drain(ctx context.Context, name string) (WorkerInfo, error) {
	find := func() (WorkerInfo, []string, error) {
		all, err := t.Workers(ctx)
		if err != nil {
			return WorkerInfo{}, nil, err
		}
		var names []string
		for _, w := range all {
			if w.Name == name {
				return w, nil, nil
			}
			names = append(names, w.Name)
		}
		return WorkerInfo{}, names, &UnknownWorkerError{Name: name, Names: names}
	}
	w, _, err := find()
	if err != nil {
		return w, err
	}
	if w.State == WorkerGone {
		return w, &WorkerGoneError{Worker: w}
	}
	err = pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `update team_workers set drain_requested_at = coalesce(drain_requested_at, now())
			where name = $1 and state <> 'stopped'`, name); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "select pg_notify($1, $2)", drainChannel, name)
		return err
	})
	if err != nil {
		return w, err
	}
	w, _, err = find()
	return w, err
}

// drainAsked reports whether a person asked this worker to drain.
func (w *Worker) drainAsked(ctx context.Context) bool {
	var asked bool
	err := w.t.pool.QueryRow(ctx, "select drain_requested_at is not null from team_workers where name = $1 and host = $2 and pid = $3",
		w.o.Name, w.host, os.Getpid()).Scan(&asked)
	return err == nil && asked
}

// askDrain starts the worker's drain on a person's request (once).
func (w *Worker) askDrain() {
	w.asked.Do(func() {
		w.log.Info("flower worker: a person asked it to drain (flower worker --drain): it takes no new run, finishes its tool calls, releases its runs and stops", "worker", w.o.Name)
		close(w.drainRequest)
	})
}

// Drained reports whether the worker stopped because a person asked it to
// (flower worker --drain), rather than by a signal.
func (w *Worker) Drained() bool {
	select {
	case <-w.drainRequest:
		return true
	default:
		return false
	}
}
