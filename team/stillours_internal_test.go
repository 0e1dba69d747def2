package team

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flowerrun/flower/internal/pgtest"
)

// A worker asks the database whether a run is still its own at a step's
// end, before it saves and before it starts the run's process. A restart of
// PostgreSQL there failed the question, and the failure was taken for "no":
// the worker dropped the run, another took it and did its step again
// (TestPostgreSQLRestartedWhileTwoRunsWorkBothContinue, ci11). The question
// is asked again until the database answers, within the rescue interval.
func TestTheQuestionWhetherARunIsOursWaitsOutADatabaseRestart(t *testing.T) {
	t.Parallel()
	s := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	url, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ask := func(ctx context.Context) (bool, error) {
		var yes bool
		err := pool.QueryRow(ctx, `select true`).Scan(&yes)
		return yes, err
	}
	if !askUntil(ctx, time.Minute, ask, nil) {
		t.Fatal("the running database did not answer yes")
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	back := make(chan error, 1)
	go func() {
		time.Sleep(2 * time.Second)
		back <- s.Start(ctx)
	}()
	var told []error
	start := time.Now()
	yes := askUntil(ctx, time.Minute, ask, func(err error) { told = append(told, err) })
	if err := <-back; err != nil {
		t.Fatal(err)
	}
	if !yes {
		t.Fatalf("a database restarted within the interval was taken for a no after %v", time.Since(start).Round(time.Millisecond))
	}
	if len(told) != 1 {
		t.Errorf("the wait was told %d times, want once: %v", len(told), told)
	}
	t.Logf("answered after %v", time.Since(start).Round(time.Millisecond))

	// A database away for longer than the interval is a no: River may have
	// given the run away by then.
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if askUntil(ctx, 2*time.Second, ask, nil) {
		t.Error("a database away past the interval was taken for a yes")
	}
	// And a no is a no at once.
	calls := 0
	no := func(context.Context) (bool, error) { calls++; return false, nil }
	if askUntil(ctx, time.Minute, no, nil) || calls != 1 {
		t.Errorf("a no: %d calls", calls)
	}
	// A cancelled caller stops waiting.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	down := func(context.Context) (bool, error) { return false, errors.New("down") }
	if askUntil(cctx, time.Minute, down, nil) {
		t.Error("a cancelled caller got a yes")
	}
}
