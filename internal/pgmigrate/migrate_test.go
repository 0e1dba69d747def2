package pgmigrate

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flowerrun/flower/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

func open(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

var v1 = Component{Name: "things", TablePrefix: "thing_", Migrations: []string{
	"create table thing_a (id bigint primary key, name text not null)",
}}

func TestMigrationsApplyOnceAndInOrder(t *testing.T) {
	ctx := context.Background()
	pool := open(t)
	for range 2 {
		if err := Apply(ctx, pool, v1); err != nil {
			t.Fatal(err)
		}
	}
	v2 := v1
	v2.Migrations = append(v2.Migrations[:1:1], "alter table thing_a add column size int", "insert into thing_a values (1, 'x', 2)")
	if err := Apply(ctx, pool, v2); err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, pool, v2); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, "select count(*) from thing_a").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the insert of migration 3 ran %d times (%v)", n, err)
	}
	other := Component{Name: "other", TablePrefix: "other_", Migrations: []string{"create table other_b (x int)"}}
	if err := Apply(ctx, pool, other); err != nil {
		t.Fatalf("a second component on the same database: %v", err)
	}
	// A binary that knows fewer migrations than the database has refuses it.
	err := Apply(ctx, pool, v1)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("an older binary: %v, want ErrNewerSchema", err)
	}
	t.Log(err)
}

func TestATableChangedByHandIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, change := range []string{
		"alter table thing_a drop column name",
		"alter table thing_a alter column name drop not null",
		"create index on thing_a (name)",
		"create table thing_extra (x int)",
	} {
		t.Run(change, func(t *testing.T) {
			pool := open(t)
			if err := Apply(ctx, pool, v1); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, change); err != nil {
				t.Fatal(err)
			}
			err := Apply(ctx, pool, v1)
			if !errors.Is(err, ErrSchemaChanged) {
				t.Fatalf("after %q: %v, want ErrSchemaChanged", change, err)
			}
		})
	}
}

func TestTwoOpenersAtOnceMigrateOnce(t *testing.T) {
	ctx := context.Background()
	pool := open(t)
	c := Component{Name: "race", TablePrefix: "race_", Migrations: []string{
		"create table race_a (x int)", "insert into race_a values (1)"}}
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- Apply(ctx, pool, c) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, "select count(*) from race_a").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows %d (%v), want 1", n, err)
	}
}
