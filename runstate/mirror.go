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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/beneath"
)

// Defaults of Options.
const (
	DefaultTTL       = 30 * time.Second
	DefaultSyncEvery = time.Second
	// MaxFile is the largest file kept: a run's own files are documents
	// and logs; a file this large in the workbench is an artifact that
	// belongs in git or elsewhere. It stays only on this machine (a
	// version stored while it was smaller stays stored), with a warning.
	MaxFile = 64 << 20
	// DefaultCloseWait bounds Close's retries of the last write-back.
	DefaultCloseWait = 30 * time.Second
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
	// CloseWait bounds how long Close retries the last write-back of a
	// backend that fails it (default DefaultCloseWait; the caller's
	// context may end it sooner).
	CloseWait time.Duration
	// Log receives what the mirror has to say (default slog.Default()).
	Log *slog.Logger
}

// Mirror is a held run's local working copy kept in step with a backend.
// It is safe for use by several goroutines.
type Mirror struct {
	run       string
	places    Places
	lease     Lease
	ttl       time.Duration
	every     time.Duration
	closeWait time.Duration
	log       *slog.Logger

	syncMu sync.Mutex // one Sync at a time; guards the fields up to mu
	// known is what the backend holds, as far as this process knows.
	known map[fileKey]seen
	// unsettled says the last Write failed without saying whether it
	// was committed (a reply lost with the connection): known may be
	// behind the backend, and the next Sync reads what it holds first.
	// attempted is what known would have become.
	unsettled bool
	attempted map[fileKey]seen
	// unwritten names the local files of the last failed write-back.
	unwritten []string
	// tooLarge holds the files past MaxFile already warned about.
	tooLarge map[fileKey]bool

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

// seen is a file as the backend holds it (its size and content hash),
// and the local file's identity when its content was last found to be
// that: zero when it may not be trusted, and the file is read and hashed
// at the next scan.
type seen struct {
	size  int64
	sum   [sha256.Size]byte
	local statID
}

// statID is what one lstat says of a local file (see statOf).
type statID struct {
	size         int64
	mtime, ctime int64 // Unix nanoseconds
	ino, dev     uint64
}

// racyWindow is how recent a file's times may be for its identity to be
// trusted: a file written within it of the look may be written again
// with the same times by a coarse clock (the kernel's timestamps lag the
// wall clock by a tick; some filesystems keep seconds, FAT two).
var racyWindow = 3 * time.Second

// trusted is id if a later write is sure to change it, else zero: its
// times are older than the racy window at the moment (before the lstat)
// the look began.
func trusted(id statID, lookedAt time.Time) statID {
	limit := lookedAt.Add(-racyWindow).UnixNano()
	if id.mtime >= limit || id.ctime >= limit {
		return statID{}
	}
	return id
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
	if o.CloseWait <= 0 {
		o.CloseWait = DefaultCloseWait
	}
	m := &Mirror{run: run, places: places, lease: lease, ttl: o.TTL, every: o.SyncEvery, closeWait: o.CloseWait, log: o.Log,
		known: map[fileKey]seen{}, tooLarge: map[fileKey]bool{}, validUntil: start.Add(o.TTL),
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
			m.beat(context.Background())
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

func (m *Mirror) beat(ctx context.Context) {
	if !m.mayBeat() {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, m.ttl/3)
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
func (m *Mirror) Sync(ctx context.Context) error { return m.sync(ctx, false) }

// sync is Sync; full reads and hashes every local file, whatever its
// identity says (see scan).
func (m *Mirror) sync(ctx context.Context, full bool) error {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if err := m.check(); err != nil {
		return err
	}
	if m.unsettled {
		if err := m.settle(ctx); err != nil {
			return err
		}
	}
	changes, next, err := m.scan(full)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		m.known, m.unwritten = next, nil
		return nil
	}
	if err := m.lease.Write(ctx, changes); err != nil {
		if errors.Is(err, ErrLeaseLost) {
			m.markLost(err)
			return err
		}
		// Committed or not, nobody knows: a reply lost with the
		// connection looks like a refusal. The next sync asks.
		m.unsettled, m.attempted = true, next
		m.unwritten = m.localPaths(changes)
		return err
	}
	m.known, m.unwritten = next, nil
	return nil
}

// localPaths are where changes' files are on this machine.
func (m *Mirror) localPaths(changes []Change) []string {
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		out = append(out, filepath.Join(m.places[c.Root], filepath.FromSlash(c.Path)))
	}
	return out
}

// settle makes known what the backend holds, after a Write whose outcome
// is unknown: it lists the stored files' sizes and hashes (not their
// data). A local identity is kept where the content it vouched for is
// the stored one.
func (m *Mirror) settle(ctx context.Context) error {
	stored, err := m.lease.Stored(ctx)
	if err != nil {
		return fmt.Errorf("runstate: after a write-back that may or may not have been stored, what the backend holds could not be read: %w", err)
	}
	known := make(map[fileKey]seen, len(stored))
	for _, f := range stored {
		if m.places[f.Root] == "" || !safeRel(f.Path) {
			continue // never laid out here (see restore): not this process's to write
		}
		k := fileKey{f.Root, f.Path}
		s := seen{size: f.Size, sum: f.Sum}
		if a, ok := m.attempted[k]; ok && a.sum == f.Sum {
			s.local = a.local
		} else if o, ok := m.known[k]; ok && o.sum == f.Sum {
			s.local = o.local
		}
		known[k] = s
	}
	m.known, m.unsettled, m.attempted = known, false, nil
	return nil
}

// NotWrittenError says the last write-back did not reach the backend.
// Its files are still in this machine's folders: the next Open of the run
// in the same folders keeps them and writes them back.
type NotWrittenError struct {
	Run string
	// Files are the local paths of the files not written back (changed,
	// added or deleted); empty when the files were not even looked at.
	Files []string
	Err   error
}

func (e *NotWrittenError) Error() string {
	if len(e.Files) == 0 {
		return fmt.Sprintf("runstate: the last changes of run %s did not reach the backend (%v); they are only on this machine", e.Run, e.Err)
	}
	return fmt.Sprintf("runstate: the last changes of run %s did not reach the backend (%v); %d file(s) are only on this machine: %s",
		e.Run, e.Err, len(e.Files), strings.Join(e.Files, ", "))
}

func (e *NotWrittenError) Unwrap() error { return e.Err }

// Close writes back what changed, stops the heartbeat and releases the
// run. After the run was lost it only stops. The last write-back is
// retried, with a growing pause, until it succeeds, the run is lost, ctx
// ends or Options.CloseWait has passed; then it fails with a
// *NotWrittenError (or ErrLeaseLost): the caller must say so, the run's
// last files are only here.
func (m *Mirror) Close(ctx context.Context) error {
	var err error
	m.close.Do(func() {
		close(m.quit)
		<-m.done
		select {
		case <-m.lost:
			return
		default:
		}
		err = m.lastSync(ctx)
		if rerr := m.lease.Release(context.WithoutCancel(ctx)); err == nil {
			err = rerr
		}
	})
	return err
}

// lastSync is Close's write-back: a full comparison by content (once, at
// the end, every file is read: whatever a file's identity said, what
// differs from the backend is written), retried within the bound.
func (m *Mirror) lastSync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.closeWait)
	defer cancel()
	pause := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if err := m.check(); err != nil && !errors.Is(err, ErrLeaseLost) {
			// The heartbeat has stopped: confirm the hold once more (a
			// database back after a blip), or learn it was lost.
			m.beat(ctx)
		}
		actx, acancel := context.WithTimeout(ctx, m.ttl)
		err := m.sync(actx, attempt == 1)
		acancel()
		if err == nil || errors.Is(err, ErrLeaseLost) {
			return err
		}
		select {
		case <-ctx.Done():
			m.syncMu.Lock()
			files := slices.Clone(m.unwritten)
			if len(files) == 0 {
				// No write was tried (the hold was not confirmed, or
				// the backend not read): name what a write would hold.
				if changes, _, serr := m.scan(false); serr == nil {
					files = m.localPaths(changes)
				}
			}
			m.syncMu.Unlock()
			m.log.Error("runstate: the run's last files did not reach the database; they are still on this machine", "run", m.run, "attempts", attempt, "files", files, "err", err)
			return &NotWrittenError{Run: m.run, Files: files, Err: err}
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
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
		lookedAt := time.Now()
		local, lerr := os.ReadFile(dst)
		same := lerr == nil && bytes.Equal(local, f.Data)
		switch {
		case same:
		case lerr == nil && len(local) > len(f.Data) && bytes.HasPrefix(local, f.Data):
			// Newer here: the next sync appends the rest.
		case lerr == nil && samePlace:
			// Newer here: the next sync writes it back.
		default:
			same = true
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
		s := seen{size: int64(len(f.Data)), sum: sum}
		if same {
			// The local file is the stored one: its identity may spare
			// the next scan a read. A local file kept because it is
			// newer gets none, so the next scan hashes it and writes it
			// back if it differs, whatever its size and times.
			st, err := os.Lstat(dst)
			if err != nil {
				return fmt.Errorf("runstate: restore %s: %w", dst, err)
			}
			if st.Size() == s.size {
				s.local = trusted(statOf(st), lookedAt)
			}
		}
		m.known[fileKey{f.Root, f.Path}] = s
		return nil
	})
}

// within joins a stored slash path under base, refusing one that would
// leave it, and any symbolic link on the way: a path from the database is
// a stranger's.
func within(base, rel string) (string, error) {
	if !safeRel(rel) {
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

// safeRel says a stored slash path stays inside its root.
func safeRel(rel string) bool {
	clean := path.Clean("/" + rel)[1:]
	return rel != "" && clean == rel && !strings.HasPrefix(rel, "../") && !strings.ContainsRune(rel, 0) && !strings.Contains(rel, "\\")
}

// scan compares the local files with what the backend holds, by content:
// a file is read and hashed, and written back when its hash is not the
// stored one. Reading every file every second would cost too much, so a
// file whose identity (size, modification and change times, inode; see
// statOf) is the one recorded when its content was last found equal to
// the stored one is taken as unchanged without a read. That is safe only
// because the identity is recorded only when its times were older than
// the racy window when the look began (trusted): any later write, and any
// tool that puts an old modification time back, moves the change time.
// full (the last write-back) reads every file all the same, so that the
// run's final state is compared by content alone.
func (m *Mirror) scan(full bool) ([]Change, map[fileKey]seen, error) {
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
		// The run writes its folders while they are read: each file is
		// read beneath its root (os.Root), so a folder the run swaps for
		// a link between the walk and the read never leads the reader
		// out of the run's own files (the worker's private ones).
		dir, err := os.OpenRoot(base)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("runstate: read %s: %w", base, err)
		}
		err = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
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
			lookedAt := time.Now()
			st, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			old, had := m.known[k]
			if st.Size() > MaxFile {
				// Not written back, and not deleted either: the version
				// stored while it was smaller stays.
				if had {
					next[k] = old
				}
				if !m.tooLarge[k] {
					m.tooLarge[k] = true
					if had {
						m.log.Warn("runstate: a file of the run grew too large to keep with it: its stored version stays, and the newer one stays only on this machine", "path", p, "size", st.Size(), "limit", MaxFile)
					} else {
						m.log.Warn("runstate: a file too large to keep with the run stays only on this machine", "path", p, "size", st.Size(), "limit", MaxFile)
					}
				}
				return nil
			}
			delete(m.tooLarge, k) // small again: a later growth is said again
			id := statOf(st)
			if had && !full && old.local != (statID{}) && old.local == id {
				next[k] = old
				return nil
			}
			data, err := beneath.ReadFile(dir, rel, MaxFile)
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				// Swapped for a link out, a FIFO, or grown past the
				// limit since the look: what it was stays stored.
				if had {
					next[k] = old
				}
				m.log.Warn("runstate: a file of the run was not read: it is not the regular file beneath the run's folder it was a moment before", "path", p, "err", err)
				return nil
			}
			s := seen{size: int64(len(data)), sum: sha256.Sum256(data)}
			if int64(len(data)) == st.Size() {
				// A write between the lstat and the read shows in the
				// size, or leaves times inside the racy window.
				s.local = trusted(id, lookedAt)
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
		dir.Close()
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
