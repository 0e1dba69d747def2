// Package pgrun keeps runs' state in PostgreSQL (pgx): a runstate.Backend
// whose lease is a row with an epoch and a heartbeat, and whose files are
// rows written only in transactions that first lock that row and find the
// epoch still theirs.
package pgrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flowerrun/flower/internal/pgmigrate"
	"github.com/flowerrun/flower/runstate"
)

// Schema is the run state's tables, one migration per entry.
var Schema = pgmigrate.Component{Name: "runstate", TablePrefix: "runstate_", Migrations: []string{`
create table runstate_runs (
	run text primary key,
	epoch bigint not null default 0,
	holder_host text not null default '',
	holder_pid integer not null default 0,
	holder_where text not null default '',
	acquired_at timestamptz,
	beat_at timestamptz,
	ttl interval not null default '30 seconds',
	released boolean not null default true,
	created_at timestamptz not null default now()
);
create table runstate_files (
	run text not null references runstate_runs (run) on delete cascade,
	root text not null,
	path text not null,
	data bytea not null,
	mode integer not null,
	updated_at timestamptz not null default now(),
	primary key (run, root, path)
);`}}

// Backend is the PostgreSQL backend on one pool.
type Backend struct {
	pool      *pgxpool.Pool
	authority Authority
}

// Authority says, inside a transaction, whether this process holds the
// run by a lease kept elsewhere (a team's job attempt): nil, or an error
// wrapping runstate.ErrLeaseLost when it does not. It may lock what it
// reads until the transaction ends.
type Authority func(ctx context.Context, tx pgx.Tx) error

// Under is b with the run's lease derived from authority: Acquire takes
// the run whenever authority says this process holds it, whatever the
// last holder's heartbeat says (nobody waits on a lease that nobody
// confirms), and every write checks authority in its transaction as well
// as the lease's epoch. One thing, one owner: the run-state lease only
// follows.
func (b *Backend) Under(authority Authority) *Backend {
	return &Backend{pool: b.pool, authority: authority}
}

// New uses pool, bringing the run-state tables up to date.
func New(ctx context.Context, pool *pgxpool.Pool) (*Backend, error) {
	if err := pgmigrate.Apply(ctx, pool, Schema); err != nil {
		return nil, err
	}
	return &Backend{pool: pool}, nil
}

// Acquire implements runstate.Backend.
func (b *Backend) Acquire(ctx context.Context, run string, me runstate.Holder, ttl time.Duration) (runstate.Lease, error) {
	if run == "" {
		return nil, errors.New("pgrun: a run needs a name")
	}
	var epoch int64
	var h runstate.Holder
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "insert into runstate_runs (run) values ($1) on conflict do nothing", run); err != nil {
			return err
		}
		var released, live bool
		var since, beat *time.Time
		var ttlSecs float64
		err := tx.QueryRow(ctx, `select epoch, holder_host, holder_pid, holder_where, acquired_at, beat_at,
				extract(epoch from ttl)::float8, released, coalesce(beat_at + ttl > now(), false)
			from runstate_runs where run = $1 for update`, run).
			Scan(&epoch, &h.Host, &h.PID, &h.Where, &since, &beat, &ttlSecs, &released, &live)
		if err != nil {
			return err
		}
		if since != nil {
			h.Since = *since
		}
		if beat != nil {
			h.Beat, h.TTL = *beat, time.Duration(ttlSecs*float64(time.Second))
		}
		if b.authority != nil {
			if err := b.authority(ctx, tx); err != nil {
				return err
			}
		} else if !released && live {
			return &runstate.BusyError{Run: run, Holder: h}
		}
		epoch++
		_, err = tx.Exec(ctx, `update runstate_runs set epoch = $2, holder_host = $3, holder_pid = $4, holder_where = $6,
			acquired_at = now(), beat_at = now(), ttl = make_interval(secs => $5), released = false where run = $1`,
			run, epoch, me.Host, me.PID, ttl.Seconds(), me.Where)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &lease{pool: b.pool, run: run, epoch: epoch, previous: h, authority: b.authority}, nil
}

type lease struct {
	pool      *pgxpool.Pool
	run       string
	epoch     int64
	previous  runstate.Holder
	authority Authority
}

func (l *lease) Previous() runstate.Holder { return l.previous }

// fenced runs fn in a transaction that holds the run's row and found the
// epoch still this lease's.
func (l *lease) fenced(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var epoch int64
		var released bool
		err := tx.QueryRow(ctx, "select epoch, released from runstate_runs where run = $1 for update", l.run).Scan(&epoch, &released)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (epoch != l.epoch || released)) {
			return fmt.Errorf("%w: run %s", runstate.ErrLeaseLost, l.run)
		}
		if err != nil {
			return err
		}
		if l.authority != nil {
			if err := l.authority(ctx, tx); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

func (l *lease) Beat(ctx context.Context) error {
	return l.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "update runstate_runs set beat_at = now() where run = $1", l.run)
		return err
	})
}

func (l *lease) Release(ctx context.Context) error {
	err := l.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "update runstate_runs set released = true where run = $1", l.run)
		return err
	})
	if errors.Is(err, runstate.ErrLeaseLost) {
		return nil // someone else holds it: nothing of ours to give up
	}
	return err
}

func (l *lease) Write(ctx context.Context, changes []runstate.Change) error {
	return l.fenced(ctx, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		for _, c := range changes {
			switch {
			case c.Deleted:
				batch.Queue("delete from runstate_files where run = $1 and root = $2 and path = $3", l.run, string(c.Root), c.Path)
			case c.Append:
				batch.Queue(`update runstate_files set data = data || $5, updated_at = now()
					where run = $1 and root = $2 and path = $3 and length(data) = $4`,
					l.run, string(c.Root), c.Path, c.Prefix, c.Data).Exec(func(ct pgconn.CommandTag) error {
					if ct.RowsAffected() != 1 {
						return fmt.Errorf("pgrun: %s/%s is not %d bytes long as this process last wrote it", c.Root, c.Path, c.Prefix)
					}
					return nil
				})
			default:
				batch.Queue(`insert into runstate_files (run, root, path, data, mode) values ($1, $2, $3, $4, $5)
					on conflict (run, root, path) do update set data = excluded.data, mode = excluded.mode, updated_at = now()`,
					l.run, string(c.Root), c.Path, c.Data, int32(c.Mode.Perm()))
			}
		}
		return tx.SendBatch(ctx, batch).Close()
	})
}

// Stored implements runstate.Lease: the database hashes, so only sizes
// and hashes cross the network.
func (l *lease) Stored(ctx context.Context) ([]runstate.Stored, error) {
	rows, err := l.pool.Query(ctx, "select root, path, length(data), sha256(data) from runstate_files where run = $1", l.run)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []runstate.Stored
	for rows.Next() {
		var s runstate.Stored
		var root string
		var sum []byte
		if err := rows.Scan(&root, &s.Path, &s.Size, &sum); err != nil {
			return nil, err
		}
		if len(sum) != len(s.Sum) {
			return nil, fmt.Errorf("pgrun: the database's sha256 of %s/%s has %d bytes", root, s.Path, len(sum))
		}
		s.Root = runstate.Root(root)
		copy(s.Sum[:], sum)
		out = append(out, s)
	}
	return out, rows.Err()
}

func (l *lease) Files(ctx context.Context, fn func(runstate.File) error) error {
	return files(ctx, l.pool, l.run, fn)
}

// Files calls fn for every stored file of run, without taking it: what a
// reader (a report, a dashboard) sees of a run another process holds.
func (b *Backend) Files(ctx context.Context, run string, fn func(runstate.File) error) error {
	return files(ctx, b.pool, run, fn)
}

func files(ctx context.Context, pool *pgxpool.Pool, run string, fn func(runstate.File) error) error {
	rows, err := pool.Query(ctx, "select root, path, data, mode from runstate_files where run = $1 order by root, path", run)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var f runstate.File
		var root string
		var mode int32
		if err := rows.Scan(&root, &f.Path, &f.Data, &mode); err != nil {
			return err
		}
		f.Root, f.Mode = runstate.Root(root), fs.FileMode(mode).Perm()
		if err := fn(f); err != nil {
			return err
		}
	}
	return rows.Err()
}
