package team

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/flowerrun/flower/runstate"
)

// The River job attempt is a run's only lease (one thing, one owner): a
// worker confirms its attempt by moving the job's attempted_at every
// quarter of its rescue interval; every write, process start, push and
// result of the attempt happens only while the job is still that attempt's
// (fenced); the run's process lives only while the worker confirms (the
// leash); the run's files are written under the same fence (the run-state
// lease is taken by whoever holds the attempt, see openState); and a job
// whose attempt was not confirmed for its interval is given to another
// worker by the first live worker that looks (rescueSilent), not by
// River's leader once every 30 s.

// attemptKey and leaseKey are the job's metadata: the attempt that
// finishes (River merges it when the attempt returns, whatever it
// returns) and the interval its worker confirms within.
const (
	attemptKey = "flower_attempt"
	leaseKey   = "flower_lease"
)

// fenceMigration keeps a stale attempt's result off the job's row. River
// writes an attempt's result to the job if it is running, whichever
// attempt runs it now: an attempt that lost its run and returned (a paused
// worker stopped by SIGTERM) would end the new holder's job. The attempt
// names itself in the metadata River merges with its result; a result
// that names another attempt than the job's is not written.
const fenceMigration = `
create function team_fence_stale_result() returns trigger language plpgsql as $$
begin
	if OLD.kind = 'flower_run' and NEW.metadata ? 'flower_attempt'
		and NEW.metadata->'flower_attempt' is distinct from OLD.metadata->'flower_attempt'
		and (NEW.metadata->>'flower_attempt')::int <> OLD.attempt then
		return null;
	end if;
	return NEW;
end $$;
create trigger team_fence_stale_result before update on river_job
	for each row execute function team_fence_stale_result();`

// priorityTakeover puts a run taken over from a silent worker (or released
// by a stopping one) ahead of runs that wait for their first attempt: it
// was promised to someone already. River takes lower numbers first.
const (
	priorityTakeover = 1
	priorityQueued   = 2
)

// rescueSilent gives every run whose worker was silent for the interval it
// confirms within back to the queue, ahead of queued runs, and returns
// how many. A stale attempt can write nothing from then on: its attempt
// is not the job's.
func (t *Team) rescueSilent(ctx context.Context, fallback time.Duration) (int64, error) {
	tag, err := t.pool.Exec(ctx, `update river_job set
			state = case when metadata ? 'cancel_attempted_at' then 'cancelled'::river_job_state
				when attempt >= max_attempts then 'discarded'::river_job_state
				else 'available'::river_job_state end,
			finalized_at = case when metadata ? 'cancel_attempted_at' or attempt >= max_attempts then now() end,
			scheduled_at = now(), priority = $2,
			errors = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt, 'trace', '',
				'error', 'its worker was silent for ' || coalesce(metadata->>'flower_lease', $1::text) || ' s: given to another worker'))
		where kind = 'flower_run' and state = 'running'
			and attempted_at < now() - make_interval(secs => coalesce((metadata->>'flower_lease')::float8, $1))`,
		fallback.Seconds(), priorityTakeover)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// rescueSilent gives back the runs of silent workers (every quarter
// interval, see everyQuarter): with every worker looking, a silent
// worker's run moves within 1¼ intervals of its last confirmation.
func (w *Worker) rescueSilent(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, w.o.Rescue/4)
	defer cancel()
	n, err := w.t.rescueSilent(cctx, w.o.Rescue)
	switch {
	case err != nil && ctx.Err() == nil:
		w.m.dbFailed(err)
		w.log.Debug("flower worker: looking for silent workers' runs", "err", err)
	case n > 0:
		w.m.takeovers.Add(float64(n))
		w.log.Info("flower worker: runs of a silent worker given back to the queue", "runs", n)
	}
}

// holds checks, inside tx, that the run's job is still this attempt's and
// was confirmed within the interval, and holds the job's row (FOR SHARE)
// until tx ends: no takeover happens in between. It fails with errLost
// otherwise.
func (a *attempt) holds(ctx context.Context, tx pgx.Tx) error {
	var one int
	err := tx.QueryRow(ctx, `select 1 from river_job where id = $1 and state = 'running' and attempt = $2
		and attempted_at > now() - make_interval(secs => $3) for share`, a.job.ID, a.job.Attempt, a.w.o.Rescue.Seconds()).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return errLost
	}
	return err
}

// holdsState is holds for the run's files: a lost attempt is the run
// state's lost lease.
func (a *attempt) holdsState(ctx context.Context, tx pgx.Tx) error {
	if err := a.holds(ctx, tx); errors.Is(err, errLost) {
		return fmt.Errorf("%w: %w", runstate.ErrLeaseLost, err)
	} else if err != nil {
		return err
	}
	return nil
}

// nameAttempt makes River's result of this attempt carry its number (see
// fenceMigration).
func (a *attempt) nameAttempt(ctx context.Context) error {
	if err := river.MetadataSet(ctx, attemptKey, a.job.Attempt); err != nil {
		return fmt.Errorf("naming the attempt in its result: %w", err)
	}
	return nil
}

// leash is the run's process's tie to its attempt: the worker writes a
// byte down a pipe each time it confirmed the attempt, and the process
// stops itself (and every process it started) when no byte came for the
// interval or the pipe closed (the worker died). So a worker paused past
// its interval, or cut off from the database, leaves no run working on
// without it; the process has no heartbeat of its own that could outlive
// the attempt.
type leash struct {
	r, w *os.File
}

func newLeash() (*leash, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &leash{r: r, w: w}, nil
}

// tug says the attempt was confirmed just now. It never blocks the
// worker: a process that does not read is one that is stopping.
func (l *leash) tug() {
	_ = l.w.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = l.w.Write([]byte{1})
}

func (l *leash) close() {
	l.r.Close()
	l.w.Close()
}
