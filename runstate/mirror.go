package runstate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// Defaults of Options.
const (
	DefaultTTL       = 30 * time.Second
	DefaultSyncEvery = time.Second
	// MaxFile is the largest file kept: a run's own files are documents
	// and logs; a file this large in the workbench is an artifact that
	// belongs in git or elsewhere, and is skipped with a warning.
	MaxFile = 64 << 20
)

// Options tune a Mirror; the zero value is the defaults.
type Options struct {
	// TTL is how long the lease lasts without a heartbeat: how soon
	// another machine may take over a run whose process died. Beats are
	// sent every TTL/3.
	TTL time.Duration
	// SyncEvery is how often the folders are looked at for changes to
	// write back: at most this much of the run's files is lost with a
	// killed process (the step's end and Close write back at once).
	SyncEvery time.Duration
	// Log receives what the mirror has to say (default slog.Default()).
	Log *slog.Logger
}

// Mirror is a held run's local working copy kept in step with a backend.
// It is safe for use by several goroutines.
type Mirror struct {
	run    string
	places Places
	lease  Lease
	ttl    time.Duration
	every  time.Duration
	log    *slog.Logger

	syncMu sync.Mutex // one Sync at a time; guards known
	known  map[fileKey]seen

	mu         sync.Mutex
	validUntil time.Time // monotonic: the lease as this process knows it
	lostErr    error
	// away says the last beat could not reach the backend, at attemptAt:
	// while beats keep trying, the run goes on here (nobody can take it
	// over through a backend nobody reaches, and whatever this process
	// writes there is fenced anyway).
	away      bool
	attemptAt time.Time

	lost  chan struct{}
	kick  chan struct{}
	quit  chan struct{}
	done  chan struct{}
	close sync.Once
}

type fileKey struct {
	root Root
	path string
}

// seen is a file as the backend holds it, and the local stat that matched.
type seen struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

// Open takes run for this process on b, lays out locally what b holds,
// and starts the heartbeat. Close it to write back and release.
//
// A stored file replaces a local one that differs, unless the run's last
// holder worked in these same folders on this host: then the local file
// is the newer (written after that holder's last sync, before it died)
// and the first Sync writes it back. A local log that extends the stored
// one is kept either way.
func Open(ctx context.Context, b Backend, run string, places Places, o Options) (*Mirror, error) {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = DefaultSyncEvery
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	me := Holder{Host: hostname(), PID: os.Getpid(), Since: time.Now(), Where: where(places)}
	start := time.Now()
	lease, err := b.Acquire(ctx, run, me, o.TTL)
	if err != nil {
		return nil, err
	}
	m := &Mirror{run: run, places: places, lease: lease, ttl: o.TTL, every: o.SyncEvery, log: o.Log,
		known: map[fileKey]seen{}, validUntil: start.Add(o.TTL),
		lost: make(chan struct{}), kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	if err := m.restore(ctx, lease.Previous().Where == me.Where); err != nil {
		_ = lease.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	go m.loop()
	return m, nil
}

// Run is the run's key in the backend.
func (m *Mirror) Run() string { return m.run }

// Lost is closed when the run was taken over by another process: stop.
func (m *Mirror) Lost() <-chan struct{} { return m.lost }

// Valid reports whether this process may still write the run: its lease
// was not lost, and either it was confirmed within the TTL or the backend
// is away and the heartbeat is still trying to reach it. A process resumed
// after a pause longer than the TTL (SIGSTOP, a suspended laptop) finds it
// false before its first beat, and must write nothing, locally or
// remotely, until that beat says whether the run is still its own.
func (m *Mirror) Valid() bool { return m.check() == nil }

// Check is Valid's reason: nil, ErrLeaseLost, or why the hold is not
// confirmed.
func (m *Mirror) Check() error { return m.check() }

func (m *Mirror) check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	switch {
	case m.lostErr != nil:
		return m.lostErr
	case now.Before(m.validUntil):
		return nil
	case m.away && now.Sub(m.attemptAt) < 2*m.ttl/3:
		return nil
	}
	return fmt.Errorf("runstate: the hold on run %s was not confirmed for %s (this process was paused, or stopped beating): nothing written until it is", m.run, m.ttl)
}

func (m *Mirror) markLost(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lostErr == nil {
		m.lostErr = err
		close(m.lost)
	}
}

// Kick asks for a sync now rather than at the next SyncEvery: after a
// write worth keeping. Cheap to call often.
func (m *Mirror) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// loop beats every TTL/3, and every SyncEvery writes back what changed
// (a walk of the folders that reads only the files whose size or time
// changed), or sooner when kicked.
func (m *Mirror) loop() {
	defer close(m.done)
	beat := time.NewTicker(m.ttl / 3)
	defer beat.Stop()
	tick := time.NewTicker(m.every)
	defer tick.Stop()
	failing := false // said once until a sync succeeds
	for {
		select {
		case <-m.quit:
			return
		case <-beat.C:
			m.beat()
			continue
		case <-tick.C:
		case <-m.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.ttl)
		err := m.Sync(ctx)
		cancel()
		switch {
		case err == nil:
			if failing {
				m.log.Info("runstate: the run's files are written back again", "run", m.run)
			}
			failing = false
		case !failing && !errors.Is(err, ErrLeaseLost):
			m.log.Warn("runstate: the run's files were not written back; retrying", "run", m.run, "err", err)
			failing = true
		}
	}
}

func (m *Mirror) beat() {
	if !m.mayBeat() {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), m.ttl/3)
	defer cancel()
	err := m.lease.Beat(ctx)
	m.mu.Lock()
	wasAway := m.away
	m.away, m.attemptAt = err != nil && !errors.Is(err, ErrLeaseLost), start
	if err == nil {
		m.validUntil = start.Add(m.ttl)
	}
	m.mu.Unlock()
	switch {
	case err == nil && wasAway:
		m.log.Info("runstate: the run's database answers again", "run", m.run)
	case err == nil:
	case errors.Is(err, ErrLeaseLost):
		m.log.Error("runstate: another process took the run over; this one writes nothing more", "run", m.run)
		m.markLost(err)
	case !wasAway:
		m.log.Warn("runstate: the run's database does not answer; the run goes on here and its files wait", "run", m.run, "err", err)
	}
}

func (m *Mirror) mayBeat() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lostErr == nil
}

// Sync writes back every change of the local files since the last sync,
// all or nothing. It writes nothing and fails with ErrLeaseLost (or a
// lapsed-lease error) when this process may no longer write the run.
func (m *Mirror) Sync(ctx context.Context) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	changes, next, err := m.scan()
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		m.known = next
		return nil
	}
	if err := m.lease.Write(ctx, changes); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			m.markLost(err)
		}
		return err
	}
	m.known = next
	return nil
}

// Close writes back what changed, stops the heartbeat and releases the
// run. After the run was lost it only stops.
func (m *Mirror) Close(ctx context.Context) error {
	var err error
	m.close.Do(func() {
		close(m.quit)
		<-m.done
		if m.check() != nil {
			select {
			case <-m.lost:
				return
			default:
			}
		}
		err = m.Sync(ctx)
		if rerr := m.lease.Release(ctx); err == nil {
			err = rerr
		}
	})
	return err
}

// Abandon stops the heartbeat and releases the run without writing back
// what changed since the last Sync: for a holder that knows by another
// authority (a team's job attempt) that it must write no more.
func (m *Mirror) Abandon(ctx context.Context) error {
	var err error
	m.close.Do(func() {
		close(m.quit)
		<-m.done
		if m.check() == nil {
			err = m.lease.Release(ctx)
		}
	})
	return err
}

// where names this host's working copy: the host and the folders.
func where(places Places) string {
	var b strings.Builder
	b.WriteString(hostname())
	for _, r := range []Root{RunDir, Human, Workbench, CLIFiles} {
		b.WriteString("\n" + string(r) + "=" + places[r])
	}
	return b.String()
}

// restore lays out the stored files; samePlace keeps local files that
// differ (see Open).
func (m *Mirror) restore(ctx context.Context, samePlace bool) error {
	return m.lease.Files(ctx, func(f File) error {
		base := m.places[f.Root]
		if base == "" {
			return nil
		}
		dst, err := within(base, f.Path)
		if err != nil {
			m.log.Warn("runstate: a stored file was not restored", "root", f.Root, "path", f.Path, "err", err)
			return nil
		}
		sum := sha256.Sum256(f.Data)
		local, lerr := os.ReadFile(dst)
		switch {
		case lerr == nil && bytes.Equal(local, f.Data):
		case lerr == nil && len(local) > len(f.Data) && bytes.HasPrefix(local, f.Data):
			// Newer here: the next sync appends the rest.
		case lerr == nil && samePlace:
			// Newer here: the next sync writes it back.
		default:
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				return fmt.Errorf("runstate: restore %s: %w", dst, err)
			}
			mode := f.Mode.Perm()
			if mode == 0 {
				mode = mode0600
			}
			if err := atomicfile.Write(dst, f.Data, mode); err != nil {
				return fmt.Errorf("runstate: restore %s: %w", dst, err)
			}
		}
		st, err := os.Lstat(dst)
		if err != nil {
			return fmt.Errorf("runstate: restore %s: %w", dst, err)
		}
		s := seen{size: int64(len(f.Data)), sum: sum}
		if st.Size() == s.size {
			s.mtime = st.ModTime()
		}
		m.known[fileKey{f.Root, f.Path}] = s
		return nil
	})
}

// within joins a stored slash path under base, refusing one that would
// leave it, and any symbolic link on the way: a path from the database is
// a stranger's.
func within(base, rel string) (string, error) {
	clean := path.Clean("/" + rel)[1:]
	if rel == "" || clean != rel || strings.HasPrefix(rel, "../") || strings.ContainsRune(rel, 0) || strings.Contains(rel, "\\") {
		return "", fmt.Errorf("unsafe path %q", rel)
	}
	dst := filepath.Join(base, filepath.FromSlash(rel))
	for p := filepath.Dir(dst); len(p) > len(base); p = filepath.Dir(p) {
		if st, err := os.Lstat(p); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%s is a symbolic link", p)
		}
	}
	if st, err := os.Lstat(dst); err == nil && !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", dst)
	}
	return dst, nil
}

// scan compares the local files with what the backend holds.
func (m *Mirror) scan() ([]Change, map[fileKey]seen, error) {
	next := make(map[fileKey]seen, len(m.known))
	var changes []Change
	other := map[string]bool{}
	for _, p := range m.places {
		if p != "" {
			other[filepath.Clean(p)] = true
		}
	}
	for root, base := range m.places {
		if base == "" {
			continue
		}
		base = filepath.Clean(base)
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				if p != base && other[p] {
					return filepath.SkipDir // another root's folder inside this one
				}
				return nil
			}
			if !d.Type().IsRegular() || skipped(root, d.Name()) {
				return nil
			}
			rel, err := filepath.Rel(base, p)
			if err != nil {
				return err
			}
			k := fileKey{root, filepath.ToSlash(rel)}
			st, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if st.Size() > MaxFile {
				m.log.Warn("runstate: a file too large to keep with the run was skipped", "path", p, "size", st.Size())
				return nil
			}
			old, had := m.known[k]
			if had && old.size == st.Size() && old.mtime.Equal(st.ModTime()) {
				next[k] = old
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			s := seen{size: int64(len(data)), sum: sha256.Sum256(data)}
			if int64(len(data)) == st.Size() {
				s.mtime = st.ModTime()
			}
			next[k] = s
			switch {
			case had && old.sum == s.sum:
			case had && old.size > 0 && s.size > old.size && sha256.Sum256(data[:old.size]) == old.sum:
				changes = append(changes, Change{Root: root, Path: k.path, Data: data[old.size:], Mode: st.Mode().Perm(), Append: true, Prefix: old.size})
			default:
				changes = append(changes, Change{Root: root, Path: k.path, Data: data, Mode: st.Mode().Perm()})
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("runstate: read %s: %w", base, err)
		}
	}
	for k := range m.known {
		if _, ok := next[k]; !ok && m.places[k.root] != "" {
			changes = append(changes, Change{Root: k.root, Path: k.path, Deleted: true})
		}
	}
	return changes, next, nil
}

// skipped says a file is not run state: locks and half-written temporary
// files everywhere, the SQLite store (the backend has its own), and the
// CLI's transcripts (the session store has them).
func skipped(root Root, name string) bool {
	switch {
	case strings.HasSuffix(name, ".lock"), strings.HasSuffix(name, ".tmp") && strings.HasPrefix(name, "."):
		return true
	case root == RunDir && strings.HasPrefix(name, "sessions.db"):
		return true
	case root == CLIFiles && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".meta.json")):
		return true
	}
	return false
}
