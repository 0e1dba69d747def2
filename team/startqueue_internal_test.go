package team

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// River's notifier gives up a LISTEN that takes over 5 s with a plain
// error ("timed out waiting for interrupt operation"): on a machine paused
// while its worker started, the worker exited with it (ci28), its runs
// back in the queue and the machine idle for good. It is time, not a
// fault: the start is tried again. The database refusing a statement is
// not mended by time and is returned at once; a ctx that ends is no error.
func TestTheQueueStartIsTriedAgainUnlessTheDatabaseRefused(t *testing.T) {
	stalled := errors.New("timed out waiting for interrupt operation")
	tries, failures := 0, 0
	err := retryStart(context.Background(), func() error {
		if tries++; tries <= 2 {
			return stalled
		}
		return nil
	}, func(err error, wait time.Duration) {
		if failures++; !errors.Is(err, stalled) || wait != time.Duration(failures)*time.Second {
			t.Errorf("failure %d told %v, wait %s", failures, err, wait)
		}
	})
	if err != nil || tries != 3 || failures != 2 {
		t.Errorf("a stalled LISTEN: %v after %d tries, %d failures told; want a start on the third", err, tries, failures)
	}

	refused := &pgconn.PgError{Code: "42P01", Message: `relation "river_job" does not exist`}
	tries = 0
	err = retryStart(context.Background(), func() error { tries++; return refused }, func(error, time.Duration) {})
	if !errors.Is(err, refused) || tries != 1 {
		t.Errorf("the database's refusal: %v after %d tries, want it at once", err, tries)
	}

	ctx, cancel := context.WithCancel(context.Background())
	tries = 0
	err = retryStart(ctx, func() error { tries++; return stalled }, func(error, time.Duration) { cancel() })
	if err != nil || tries != 1 {
		t.Errorf("stopped while it waits: %v after %d tries, want nil after one", err, tries)
	}
}

// A change of fetching that failed is tried again: the queue off while
// the worker is whole (an Add that failed), or on while it is broken (a
// Remove that failed), is out of step; nothing is while a change runs.
func TestAFetchingChangeThatFailedIsTriedAgain(t *testing.T) {
	w := &Worker{}
	if w.fetchingOutOfStep() {
		t.Error("a whole worker fetching is out of step")
	}
	w.health.paused = true
	if !w.fetchingOutOfStep() {
		t.Error("a whole worker whose queue stayed off (an Add that failed) is in step: it never fetched again")
	}
	w.health.broken = &envProblem{what: "its disk is full"}
	if w.fetchingOutOfStep() {
		t.Error("a broken worker not fetching is out of step")
	}
	w.health.paused = false
	if !w.fetchingOutOfStep() {
		t.Error("a broken worker still fetching (a Remove that failed) is in step")
	}
	w.health.fetchMu.Lock()
	if w.fetchingOutOfStep() {
		t.Error("out of step while a change is under way")
	}
	w.health.fetchMu.Unlock()
}
