package team

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/runstate"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
)

// stateSyncEvery is how often a worker writes a running run's files and
// transcripts back to the database.
const stateSyncEvery = 3 * time.Second

// runState is a run's state in the team's database (its files and its
// transcripts), kept by the worker on the run's behalf. The run's process
// works on plain local files and never sees the database: a URL in its
// environment let one run's Bash answer another run's question, cancel
// runs and raise budgets. Whatever the run writes into its own folders
// reaches the database only as that run's files, and only while this
// worker holds the run.
type runState struct {
	db       *flower.Database
	pg       *postgres.Store
	sessions *sessionMirror
	// work is the run's work tree, checkpointed before each write-back
	// of its transcripts (nil: none).
	work *checkpoints

	mu     sync.Mutex // one write-back at a time
	closed bool
	// kick asks keep for a write-back now: a step ended, a tool call
	// started (another worker taking over must find the call to heal).
	kick chan struct{}
}

// soon asks for a write-back before the next tick.
func (s *runState) soon() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// openState takes the run in the database for this attempt and lays out
// what the database holds of it in the attempt's folders: the run
// directory, the human side, the workbench, the CLI's kept outputs and the
// transcripts (into the run directory's own session store, where the
// run's process finds them as on a single machine).
func (a *attempt) openState(ctx context.Context) (*runState, error) {
	w := a.w
	db, err := flower.OpenDatabase(ctx, w.url, flower.DatabaseOptions{
		Workspace: a.checkout, RunDir: a.runDir, HumanDir: a.humanDir(),
		Isolate: slices.Contains(w.o.Args, "--isolate"),
		Run:     StateName(a.run.ID), ConfigDir: filepath.Join(a.home, ".claude"),
		// The run's files are this attempt's to write exactly while the
		// job is (one owner): never a lease of their own to wait on.
		Lease:     w.o.Rescue,
		Authority: a.holdsState,
	})
	if err != nil {
		return nil, err
	}
	// The database's transcripts are the only copy once this machine is
	// gone: each write-back is flushed before it counts as stored.
	pg, err := postgres.Open(ctx, w.url, postgres.Durable())
	if err != nil {
		_ = db.Close(ctx)
		return nil, err
	}
	remote := store.OneProject{Base: pg, Project: "run:" + StateName(a.run.ID), Guard: func() error {
		if !db.Valid() {
			return fmt.Errorf("transcript not stored: %w", runstate.ErrLeaseLost)
		}
		return nil
	}}
	// The database's transcripts are the run's: a local store left by an
	// earlier attempt on this machine may hold lines that never reached
	// the database (written after its last write-back, before it lost the
	// run) where another attempt's lines now follow. The mirror matches
	// transcripts by length, so it starts from the database alone.
	local := filepath.Join(a.runDir, "sessions.db")
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(local + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = db.Close(ctx)
			pg.Close()
			return nil, fmt.Errorf("clearing %s's earlier session store: %w", a.name(), err)
		}
	}
	sm, err := openSessionMirror(local, a.checkout, remote)
	if err == nil {
		sm.usage = newUsageMeter(a.w.m)
		if err = sm.pull(ctx); err != nil {
			sm.Close()
		}
	}
	if err != nil {
		pg.Close()
		_ = db.Close(ctx)
		return nil, fmt.Errorf("laying out %s's transcripts: %w", a.name(), err)
	}
	return &runState{db: db, pg: pg, sessions: sm, work: a.cp, kick: make(chan struct{}, 1)}, nil
}

// sync writes back what changed since the last sync: transcripts first,
// then the run's files (whose lineage names those transcripts).
func (s *runState) sync(ctx context.Context) error {
	return s.syncWith(ctx, true)
}

// syncWith is sync; with checkpoint, the transcripts are read first and
// written only once the work tree as it is now is in a checkpoint
// (checkpoint.go): never ahead of the files they describe.
func (s *runState) syncWith(ctx context.Context, checkpoint bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	tails, err := s.sessions.unsent(ctx)
	if err != nil {
		return err
	}
	if checkpoint && s.work != nil {
		if err := s.work.save(ctx); err != nil {
			return fmt.Errorf("the work tree is not in a checkpoint, so the conversation that describes it waits: %w", err)
		}
	}
	if err := s.sessions.send(ctx, tails); err != nil {
		return err
	}
	return s.db.Sync(ctx, nil)
}

// keep syncs every stateSyncEvery and when kicked (soon) until ctx ends,
// each time only while
// ours says the run's job attempt is still this worker's; the returned
// function stops it and waits for a sync in flight.
func (s *runState) keep(ctx context.Context, ours func(context.Context) bool, warn func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(stateSyncEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.kick:
			}
			if !ours(ctx) {
				continue
			}
			if err := s.sync(ctx); err != nil && ctx.Err() == nil {
				warn(err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// close writes everything back (when write is set and the run is still
// this worker's) and releases the run; without write it writes nothing. Its error is the attempt's: a run
// whose last files did not reach the database has not ended well.
func (s *runState) close(ctx context.Context, write, checkpoint bool) error {
	var err error
	if write {
		err = s.syncWith(ctx, checkpoint)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return err
	}
	s.closed = true
	err = errors.Join(err, s.sessions.Close())
	s.pg.Close()
	if !write {
		// Lost, stopped early or failed: nothing more is written.
		_ = s.db.Abandon(ctx)
		return err
	}
	return errors.Join(err, s.db.Close(ctx))
}
