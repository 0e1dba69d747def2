package team

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PruneResult is what a prune removed.
type PruneResult struct {
	Runs []int64 // the runs removed, in order
	// Tables are the rows removed from each table, in the order removed.
	Tables []PrunedTable
}

// PrunedTable is what a prune removed from one table.
type PrunedTable struct {
	Table string
	Rows  int64
	// Bytes are the rows' size as PostgreSQL stores them (compressed
	// values as compressed), before the space is reused.
	Bytes int64
}

// Rows is every row removed.
func (p PruneResult) Rows() int64 {
	var n int64
	for _, t := range p.Tables {
		n += t.Rows
	}
	return n
}

// Bytes is the size of every row removed.
func (p PruneResult) Bytes() int64 {
	var n int64
	for _, t := range p.Tables {
		n += t.Bytes
	}
	return n
}

// LiveRunError is a prune that named a run not over (queued, running,
// waiting): its rows are its state, and it is refused.
type LiveRunError struct{ Run Run }

func (e *LiveRunError) Error() string {
	return fmt.Sprintf("%s is %s: only an ended run can be pruned (cancel it first: flower cancel %s)", e.Run.Name(), e.Run.State, e.Run.Name())
}

// endedRuns are the runs whose shown state is over and that no attempt
// holds (a job still running is an attempt finishing its last writes).
const endedRuns = `(` + shownState + `) in ('achieved', 'stopped', 'failed', 'cancelled')
	and not exists (select 1 from river_job h where h.kind = 'flower_run' and h.state = 'running' and (h.args->>'run')::bigint = r.id)`

// Prune removes every row of the runs that ended before before: their
// events, replies, River jobs, state files, transcripts and the runs
// themselves. A run not over is never touched, whatever its age.
func (t *Team) Prune(ctx context.Context, before time.Time) (PruneResult, error) {
	rows, err := t.pool.Query(ctx, "select r.id"+runsFrom+" where "+endedRuns+
		" and coalesce(r.ended_at, r.updated_at) < $1 order by r.id", before)
	if err != nil {
		return PruneResult{}, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return PruneResult{}, err
	}
	return t.prune(ctx, ids)
}

// PruneRuns removes the rows of the runs named, as Prune does; a run not
// over is a *LiveRunError, an unknown one ErrNoRun, and then nothing is
// removed.
func (t *Team) PruneRuns(ctx context.Context, ids ...int64) (PruneResult, error) {
	for _, id := range ids {
		r, err := t.Run(ctx, id)
		if err != nil {
			return PruneResult{}, err
		}
		if !Ended(r.State) {
			return PruneResult{}, &LiveRunError{Run: r}
		}
	}
	res, err := t.prune(ctx, ids)
	if err == nil && len(res.Runs) < len(ids) {
		// One came back to life (a retry) between the look and the lock.
		for _, id := range ids {
			if r, rerr := t.Run(ctx, id); rerr == nil && !Ended(r.State) {
				return res, &LiveRunError{Run: r}
			}
		}
	}
	return res, err
}

// runTables are the tables holding a run's rows, the run's own last, and
// how each is keyed: by the run's id, its state's name, its session
// store's key ranges or its session store's project.
var runTables = []struct {
	table, key, delete string
}{
	{"team_events", "id", "delete from team_events x where x.run = any($1)"},
	{"team_replies", "id", "delete from team_replies x where x.run = any($1)"},
	{"river_job", "id", "delete from river_job x where x.kind = 'flower_run' and (x.args->>'run')::bigint = any($1)"},
	{"runstate_files", "state", "delete from runstate_files x where x.run = any($1)"},
	{"runstate_runs", "state", "delete from runstate_runs x where x.run = any($1)"},
	{"session_entries", "range", "delete from session_entries x using unnest($1::text[], $2::text[]) k(lo, hi) where x.store_key >= k.lo and x.store_key < k.hi"},
	{"session_meta", "range", "delete from session_meta x using unnest($1::text[], $2::text[]) k(lo, hi) where x.store_key >= k.lo and x.store_key < k.hi"},
	{"session_summaries", "project", "delete from session_summaries x where x.project_key = any($1)"},
	{"team_runs", "id", "delete from team_runs x where x.id = any($1)"},
}

// prune removes the rows of runs ids that are (still, under the lock)
// ended, in one transaction.
func (t *Team) prune(ctx context.Context, ids []int64) (PruneResult, error) {
	var res PruneResult
	if len(ids) == 0 {
		return res, nil
	}
	err := pgx.BeginFunc(ctx, t.pool, func(tx pgx.Tx) error {
		res = PruneResult{}
		rows, err := tx.Query(ctx, "select r.id"+runsFrom+" where r.id = any($1) and "+endedRuns+" order by r.id for update of r", ids)
		if err != nil {
			return err
		}
		if res.Runs, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		if len(res.Runs) == 0 {
			return nil
		}
		var states, los, his, projects []string
		for _, id := range res.Runs {
			// As the run's process names them (layout.go, database.go).
			state := StateName(id)
			project := "run:" + state
			states = append(states, state)
			projects = append(projects, project)
			// A project's keys are "project/session[/sub]": the range
			// [project+"/", project+"0") holds exactly them ('0' follows '/').
			los, his = append(los, project+"/"), append(his, project+"0")
		}
		for _, rt := range runTables {
			var exists bool
			if err := tx.QueryRow(ctx, "select to_regclass($1) is not null", rt.table).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				continue // the run state or the session store never opened here
			}
			var p PrunedTable
			p.Table = rt.table
			q := "with d as (" + rt.delete + " returning pg_column_size(x.*) as size) select count(*), coalesce(sum(size), 0)::bigint from d"
			args := map[string][]any{"id": {res.Runs}, "state": {states}, "range": {los, his}, "project": {projects}}[rt.key]
			if err := tx.QueryRow(ctx, q, args...).Scan(&p.Rows, &p.Bytes); err != nil {
				return fmt.Errorf("pruning %s: %w", rt.table, err)
			}
			res.Tables = append(res.Tables, p)
		}
		return nil
	})
	if err != nil {
		return PruneResult{}, fmt.Errorf("the database at %s: %w", t.url, err)
	}
	return res, nil
}
