// Package pgmigrate keeps the schemas flower's components own in one
// PostgreSQL database at the version the binary was built for. Each
// component (the session store, the run state, the queue) has its own
// numbered migrations and its own row in flower_schema, so components
// migrate independently and a database shared by a team can hold all of
// them.
//
// Open refuses a database that is newer than the binary (another machine
// runs a newer flower) and one whose tables were changed by hand since
// flower made them: both say what to do instead of failing later on a
// missing column.
package pgmigrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrNewerSchema is wrapped when the database was migrated by a newer
// flower than this one.
var ErrNewerSchema = errors.New("the database was created by a newer flower")

// ErrSchemaChanged is wrapped when a component's tables differ from what
// its migrations made.
var ErrSchemaChanged = errors.New("the database's tables were changed since flower made them")

// Component is one owner of tables: its migrations in order (the version
// is the count applied) and the prefix every table it makes starts with,
// which is how its tables are told from others'.
type Component struct {
	Name        string
	TablePrefix string
	Migrations  []string
}

// Conn is what Apply needs: a pool, a connection or a transaction.
type Conn interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// lockKey serialises migrations of every component: two processes opening
// a new database at once apply each migration once.
const lockKey = 0x666c6f77 // "flow"

// Apply brings c's tables to its newest version in one transaction, then
// checks them against the shape recorded when flower last migrated them.
func Apply(ctx context.Context, db Conn, c Component) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock($1)", lockKey); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `create table if not exists flower_schema (
		component text primary key,
		version integer not null,
		shape text not null)`); err != nil {
		return err
	}
	var version int
	var recorded string
	err = tx.QueryRow(ctx, "select version, shape from flower_schema where component = $1", c.Name).Scan(&version, &recorded)
	if errors.Is(err, pgx.ErrNoRows) {
		version, err = 0, nil
	}
	if err != nil {
		return err
	}
	if version > len(c.Migrations) {
		return fmt.Errorf("%w: its %s schema is version %d, this flower knows %d (upgrade flower on this machine)",
			ErrNewerSchema, c.Name, version, len(c.Migrations))
	}
	if version > 0 {
		now, err := shape(ctx, tx, c.TablePrefix)
		if err != nil {
			return err
		}
		if now != recorded {
			return fmt.Errorf("%w: the %s tables (%s*) no longer match version %d (restore them, or give flower a new database)",
				ErrSchemaChanged, c.Name, c.TablePrefix, version)
		}
	}
	if version == len(c.Migrations) {
		return tx.Commit(ctx)
	}
	for i := version; i < len(c.Migrations); i++ {
		if _, err := tx.Exec(ctx, c.Migrations[i]); err != nil {
			return fmt.Errorf("%s migration %d: %w", c.Name, i+1, err)
		}
	}
	now, err := shape(ctx, tx, c.TablePrefix)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `insert into flower_schema (component, version, shape) values ($1, $2, $3)
		on conflict (component) do update set version = excluded.version, shape = excluded.shape`,
		c.Name, len(c.Migrations), now); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// shape digests the columns, types and indexes of the tables whose names
// start with prefix, in the current schema.
func shape(ctx context.Context, tx pgx.Tx, prefix string) (string, error) {
	like := strings.NewReplacer(`\`, `\\`, "_", `\_`, "%", `\%`).Replace(prefix) + "%"
	rows, err := tx.Query(ctx, `
		select table_name || '.' || column_name || ':' || data_type || ':' || is_nullable
		from information_schema.columns
		where table_schema = current_schema() and table_name like $1
		union all
		select tablename || '#' || indexdef from pg_indexes
		where schemaname = current_schema() and tablename like $1
		order by 1`, like)
	if err != nil {
		return "", err
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:]), nil
}
