package pgrun

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/runstate"
)

// lossyBackend is the PostgreSQL backend whose next write commits and then
// reports the connection cut: a reply lost on the way back.
type lossyBackend struct {
	*Backend
	loseNext atomic.Bool
}

var errReplyLost = errors.New("lossy: the connection broke before the reply")

func (b *lossyBackend) Acquire(ctx context.Context, run string, me runstate.Holder, ttl time.Duration) (runstate.Lease, error) {
	l, err := b.Backend.Acquire(ctx, run, me, ttl)
	if err != nil {
		return nil, err
	}
	return lossyLease{Lease: l, b: b}, nil
}

type lossyLease struct {
	runstate.Lease
	b *lossyBackend
}

func (l lossyLease) Write(ctx context.Context, changes []runstate.Change) error {
	if err := l.Lease.Write(ctx, changes); err != nil {
		return err
	}
	if l.b.loseNext.CompareAndSwap(true, false) {
		return errReplyLost
	}
	return nil
}

// A commit whose reply was lost is settled from what PostgreSQL holds
// (its lengths and sha256 hashes match the local files'): the next
// appends go on, nothing is doubled.
func TestAWriteBackWhoseReplyWasLostIsSettledFromTheDatabase(t *testing.T) {
	ctx := context.Background()
	b := &lossyBackend{Backend: backend(t, pgtest.Database(t))}
	a := machine(t)
	write(t, a, runstate.RunDir, "events.jsonl", "{\"n\":1}\n")
	m := open(t, b, "lossy", a, runstate.Options{SyncEvery: time.Hour})
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, runstate.RunDir, "events.jsonl", "{\"n\":2}\n")
	b.loseNext.Store(true)
	if err := m.Sync(ctx); !errors.Is(err, errReplyLost) {
		t.Fatalf("the sync whose reply was lost: %v", err)
	}
	appendTo(t, a, runstate.RunDir, "events.jsonl", "{\"n\":3}\n")
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("the sync after the lost reply: %v", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"
	var data []byte
	if err := b.pool.QueryRow(ctx, "select data from runstate_files where run = 'lossy' and path = 'events.jsonl'").Scan(&data); err != nil {
		t.Fatal(err)
	}
	if string(data) != want {
		t.Fatalf("stored %q, want %q", data, want)
	}
	l, err := b.Backend.Acquire(ctx, "lossy", runstate.Holder{Host: "check"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := l.Stored(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].Size != int64(len(want)) || stored[0].Sum != sha256.Sum256([]byte(want)) || !strings.HasSuffix(stored[0].Path, "events.jsonl") {
		t.Fatalf("Stored says %+v", stored)
	}
}
