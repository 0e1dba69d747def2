package runstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// errCut is what a client sees when the connection breaks during a call.
var errCut = errors.New("fault: connection reset by peer")

// faultBackend is memBackend with faults a real database shows: a write
// refused (nothing committed) and a commit whose reply was lost
// (committed, yet the client got an error).
type faultBackend struct {
	*memBackend
	fmu sync.Mutex
	// refuse fails this many coming writes without committing (-1: all).
	refuse int
	// loseReply commits this many coming writes and then fails them.
	loseReply int
	writes    int // Write calls, failed or not
}

func newFault() *faultBackend { return &faultBackend{memBackend: newMem()} }

func (b *faultBackend) Acquire(ctx context.Context, run string, me Holder, ttl time.Duration) (Lease, error) {
	l, err := b.memBackend.Acquire(ctx, run, me, ttl)
	if err != nil {
		return nil, err
	}
	return &faultLease{memLease: l.(*memLease), fb: b}, nil
}

func (b *faultBackend) set(refuse, loseReply int) {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	b.refuse, b.loseReply = refuse, loseReply
}

func (b *faultBackend) stored(run string, root Root, rel string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.files[run][fileKey{root, rel}]
	return string(f.Data), ok
}

type faultLease struct {
	*memLease
	fb *faultBackend
}

func (l *faultLease) Write(ctx context.Context, changes []Change) error {
	l.fb.fmu.Lock()
	l.fb.writes++
	refuse := l.fb.refuse != 0
	if l.fb.refuse > 0 {
		l.fb.refuse--
	}
	lose := !refuse && l.fb.loseReply > 0
	if lose {
		l.fb.loseReply--
	}
	l.fb.fmu.Unlock()
	if refuse {
		return errCut
	}
	if err := l.memLease.Write(ctx, changes); err != nil {
		return err
	}
	if lose {
		return errCut
	}
	return nil
}

// logTo is a logger whose warnings land in buf.
func logTo(buf *lockedBuf) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func appendFile(t *testing.T, p Places, root Root, rel, content string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(p[root], rel), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

func wantStored(t *testing.T, b *faultBackend, root Root, rel, want string) {
	t.Helper()
	got, ok := b.stored("r", root, rel)
	if !ok || got != want {
		t.Fatalf("stored %s/%s = %q (present %v), want %q", root, rel, got, ok, want)
	}
}

// A commit whose reply was lost (the database committed, the client saw
// the connection break) is settled by reading what the database holds:
// the writes after it go on, an appended log is neither refused nor
// doubled.
func TestACommitWhoseReplyWasLostDoesNotStopLaterWriteBacks(t *testing.T) {
	ctx := context.Background()
	b := newFault()
	p := places(t)
	put(t, p, RunDir, "events.jsonl", "one\n")
	put(t, p, Workbench, "notes/brief.md", "# Brief")
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	appendFile(t, p, RunDir, "events.jsonl", "two\n")
	put(t, p, Workbench, "notes/brief.md", "# Brief, v2")
	b.set(0, 1)
	if err := m.Sync(ctx); !errors.Is(err, errCut) {
		t.Fatalf("the sync whose reply was lost: %v, want %v", err, errCut)
	}
	appendFile(t, p, RunDir, "events.jsonl", "three\n")
	for i := range 2 { // and once more with nothing new
		if err := m.Sync(ctx); err != nil {
			t.Fatalf("sync %d after the lost reply: %v", i+1, err)
		}
	}
	wantStored(t, b, RunDir, "events.jsonl", "one\ntwo\nthree\n")
	wantStored(t, b, Workbench, "notes/brief.md", "# Brief, v2")
	// A write refused outright (nothing committed) is written again.
	appendFile(t, p, RunDir, "events.jsonl", "four\n")
	b.set(1, 0)
	if err := m.Sync(ctx); !errors.Is(err, errCut) {
		t.Fatalf("the refused sync: %v", err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantStored(t, b, RunDir, "events.jsonl", "one\ntwo\nthree\nfour\n")
}

// A file that grows past MaxFile keeps its stored version (it is not
// deleted from the database), and the log says once that the newer one
// stays only on this machine.
func TestAFileGrownPastTheLimitKeepsItsStoredVersionAndSaysSoOnce(t *testing.T) {
	ctx := context.Background()
	b := newFault()
	p := places(t)
	put(t, p, Workbench, "spill/out.log", "small")
	var logs lockedBuf
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour, Log: logTo(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Sparse: past the limit without writing 64 MiB.
	if err := os.Truncate(filepath.Join(p[Workbench], "spill", "out.log"), MaxFile+1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wantStored(t, b, Workbench, "spill/out.log", "small")
	if n := strings.Count(logs.String(), "spill/out.log"); n != 1 {
		t.Fatalf("the log names the file %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "only on this machine") {
		t.Fatalf("the warning does not say where the newer version is:\n%s", logs.String())
	}
}

// After a restart in the same folders, a local file that differs from
// the stored one but has its size (a swapped session id in the lineage)
// is written back.
func TestANewerLocalFileOfTheSameSizeIsWrittenBackAfterARestart(t *testing.T) {
	ctx := context.Background()
	b := newFault()
	here := places(t)
	put(t, here, RunDir, "lineage.json", `{"work":"session-aaaa"}`)
	m, err := Open(ctx, b, "r", here, Options{SyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, here, RunDir, "lineage.json", `{"work":"session-bbbb"}`) // then killed: no sync
	m.stopForTest()
	m2, err := Open(ctx, b, "r", here, Options{SyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantStored(t, b, RunDir, "lineage.json", `{"work":"session-bbbb"}`)
	if err := m2.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// A file rewritten with its size and its old modification time (a tool
// that restores times, a clock too coarse to tell two writes apart) is
// written back all the same: whether the write came soon after the look
// (inside the racy window) or long after it (the change time moved).
func TestAFileRewrittenWithItsSizeAndTimeIsWrittenBack(t *testing.T) {
	for _, longAfter := range []bool{false, true} {
		t.Run(map[bool]string{false: "soon", true: "long after"}[longAfter], func(t *testing.T) {
			ctx := context.Background()
			b := newFault()
			p := places(t)
			put(t, p, Workbench, "notes/goal.md", "check A")
			file := filepath.Join(p[Workbench], "notes", "goal.md")
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(file, old, old); err != nil {
				t.Fatal(err)
			}
			if longAfter {
				shortRacyWindow(t, 20*time.Millisecond)
				time.Sleep(60 * time.Millisecond) // the change time leaves the window
			}
			m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close(ctx)
			if err := m.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			m.syncMu.Lock()
			vouched := m.known[fileKey{Workbench, "notes/goal.md"}].local != statID{}
			m.syncMu.Unlock()
			if vouched != longAfter {
				t.Fatalf("the file's identity is trusted: %v, want %v", vouched, longAfter)
			}
			put(t, p, Workbench, "notes/goal.md", "check B")
			if err := os.Chtimes(file, old, old); err != nil {
				t.Fatal(err)
			}
			if err := m.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			wantStored(t, b, Workbench, "notes/goal.md", "check B")
		})
	}
}

// Whatever a file's identity vouches for, the last write-back compares by
// content: a stale record (here planted) cannot keep the run's final
// state from the backend.
func TestTheLastWriteBackComparesEveryFileByContent(t *testing.T) {
	ctx := context.Background()
	b := newFault()
	p := places(t)
	put(t, p, RunDir, "manifest.json", "row 1")
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, p, RunDir, "manifest.json", "row 2")
	st, err := os.Lstat(filepath.Join(p[RunDir], "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	k := fileKey{RunDir, "manifest.json"}
	m.syncMu.Lock()
	s := m.known[k]
	s.local = statOf(st) // as if "row 2" had been looked at and found stored
	m.known[k] = s
	m.syncMu.Unlock()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	wantStored(t, b, RunDir, "manifest.json", "row 1") // the planted record spared the read
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	wantStored(t, b, RunDir, "manifest.json", "row 2")
}

// The last write-back outlives a database that refuses a few attempts.
func TestCloseRetriesTheLastWriteBack(t *testing.T) {
	ctx := context.Background()
	b := newFault()
	p := places(t)
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	put(t, p, RunDir, "ending.json", `{"outcome":"achieved"}`)
	b.set(2, 0)
	if err := m.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	wantStored(t, b, RunDir, "ending.json", `{"outcome":"achieved"}`)
}

// A backend that refuses the last write-back for longer than CloseWait
// makes Close fail, naming the files that stay only on this machine.
func TestCloseFailsNamingWhatDidNotReachTheBackend(t *testing.T) {
	ctx := context.Background()
	b := newFault()
	p := places(t)
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour, CloseWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	put(t, p, RunDir, "ending.json", `{"outcome":"achieved"}`)
	b.set(-1, 0)
	err = m.Close(ctx)
	var nw *NotWrittenError
	if !errors.As(err, &nw) {
		t.Fatalf("close: %v, want a *NotWrittenError", err)
	}
	if want := filepath.Join(p[RunDir], "ending.json"); len(nw.Files) != 1 || nw.Files[0] != want {
		t.Fatalf("the error names %q, want [%s]", nw.Files, want)
	}
	if !errors.Is(err, errCut) || !strings.Contains(err.Error(), "ending.json") {
		t.Fatalf("the error does not carry its cause and the file: %v", err)
	}
	b.fmu.Lock()
	writes := b.writes
	b.fmu.Unlock()
	if writes < 2 {
		t.Fatalf("%d attempt(s) at the last write-back, want it retried", writes)
	}
	if _, ok := b.stored("r", RunDir, "ending.json"); ok {
		t.Fatal("a refused write was stored")
	}
}

// The run's processes write the folders the worker mirrors (issue 41, 6):
// one swaps a folder of its own with a link to the worker's private
// folder in a tight loop (renameat2's exchange) while the mirror syncs.
// The red team had the worker's own file stored as the run's within
// 0.2 s; no stored file may ever hold it.
func TestAFolderSwappedForALinkNeverGetsTheWorkersFileStored(t *testing.T) {
	ctx := context.Background()
	b := newMem()
	p := places(t)
	private := t.TempDir()
	if err := os.WriteFile(filepath.Join(private, "notes.md"), []byte("the worker's own secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	put(t, p, Workbench, "notes/notes.md", "the run's notes")
	sub, link := filepath.Join(p[Workbench], "notes"), filepath.Join(p[Workbench], "elsewhere")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: time.Hour, Log: logTo(&lockedBuf{})})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			if unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	syncs := 0
	for time.Now().Before(deadline) {
		_ = m.Sync(ctx)
		syncs++
		// Rewritten each time, so that each sync reads it again.
		_ = os.WriteFile(filepath.Join(sub, "notes.md"), []byte(fmt.Sprintf("the run's notes %d", syncs)), 0o600)
		b.mu.Lock()
		for _, f := range b.files["r"] {
			if strings.Contains(string(f.Data), "secret") {
				b.mu.Unlock()
				stop.Store(true)
				<-done
				t.Fatalf("after %d syncs and %d swaps the worker's private file is stored as the run's %s", syncs, swaps.Load(), f.Path)
			}
		}
		b.mu.Unlock()
	}
	stop.Store(true)
	<-done
	if swaps.Load() < 100 || syncs < 10 {
		t.Fatalf("the race was not run: %d swaps, %d syncs", swaps.Load(), syncs)
	}
}
