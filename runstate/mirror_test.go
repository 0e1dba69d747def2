package runstate

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memBackend keeps runs in memory, with the lease rules of a real one.
type memBackend struct {
	mu    sync.Mutex
	files map[string]map[fileKey]File
	epoch map[string]int64
	held  map[string]Holder
}

func newMem() *memBackend {
	return &memBackend{files: map[string]map[fileKey]File{}, epoch: map[string]int64{}, held: map[string]Holder{}}
}

type memLease struct {
	b     *memBackend
	run   string
	epoch int64
	prev  Holder
}

func (b *memBackend) Acquire(_ context.Context, run string, me Holder, _ time.Duration) (Lease, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.held[run]
	b.epoch[run]++
	b.held[run] = me
	if b.files[run] == nil {
		b.files[run] = map[fileKey]File{}
	}
	return &memLease{b: b, run: run, epoch: b.epoch[run], prev: prev}, nil
}

func (l *memLease) Previous() Holder { return l.prev }

func (l *memLease) Files(_ context.Context, fn func(File) error) error {
	l.b.mu.Lock()
	var all []File
	for _, f := range l.b.files[l.run] {
		all = append(all, f)
	}
	l.b.mu.Unlock()
	for _, f := range all {
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func (l *memLease) Write(_ context.Context, changes []Change) error {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	if l.b.epoch[l.run] != l.epoch {
		return ErrLeaseLost
	}
	for _, c := range changes {
		// All or none, as a transaction: an append to a file of another
		// length than this process last wrote fails as pgrun's does.
		if f := l.b.files[l.run][fileKey{c.Root, c.Path}]; c.Append && int64(len(f.Data)) != c.Prefix {
			return fmt.Errorf("mem: %s/%s is not %d bytes long as this process last wrote it", c.Root, c.Path, c.Prefix)
		}
	}
	for _, c := range changes {
		k := fileKey{c.Root, c.Path}
		switch {
		case c.Deleted:
			delete(l.b.files[l.run], k)
		case c.Append:
			f := l.b.files[l.run][k]
			f.Data = append(append([]byte(nil), f.Data...), c.Data...)
			l.b.files[l.run][k] = f
		default:
			l.b.files[l.run][k] = File{Root: c.Root, Path: c.Path, Data: append([]byte(nil), c.Data...), Mode: c.Mode}
		}
	}
	return nil
}

func (l *memLease) Stored(context.Context) ([]Stored, error) {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	var out []Stored
	for k, f := range l.b.files[l.run] {
		out = append(out, Stored{Root: k.root, Path: k.path, Size: int64(len(f.Data)), Sum: sha256.Sum256(f.Data)})
	}
	return out, nil
}

func (l *memLease) Beat(context.Context) error    { return nil }
func (l *memLease) Release(context.Context) error { return nil }

func places(t *testing.T) Places {
	d := t.TempDir()
	return Places{RunDir: filepath.Join(d, "runs"), Workbench: filepath.Join(d, ".flower")}
}

func put(t *testing.T, p Places, root Root, rel, content string) {
	t.Helper()
	path := filepath.Join(p[root], rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p Places, root Root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p[root], rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A process killed after it wrote a file and before its sync: the next
// process in the same folders keeps the newer local file and writes it
// back; a process elsewhere gets the stored one.
func TestTheLocalFileOfTheSameFoldersIsNewerThanTheStoredOne(t *testing.T) {
	ctx := context.Background()
	b := newMem()
	here := places(t)
	put(t, here, RunDir, "manifest.json", "row 1")
	m, err := Open(ctx, b, "r", here, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, here, RunDir, "manifest.json", "rows 1 and 2") // then killed: no sync
	m.stopForTest()

	elsewhere := places(t)
	m2, err := Open(ctx, b, "r", elsewhere, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, elsewhere, RunDir, "manifest.json"); got != "row 1" {
		t.Fatalf("elsewhere: %q, want the stored copy", got)
	}
	m2.stopForTest()

	put(t, here, RunDir, "manifest.json", "rows 1 and 2")
	// The last holder was elsewhere: the stored copy wins here too.
	m3, err := Open(ctx, b, "r", here, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, here, RunDir, "manifest.json"); got != "row 1" {
		t.Fatalf("after a holder elsewhere: %q, want the stored copy", got)
	}
	put(t, here, RunDir, "manifest.json", "rows 1 and 3")
	m3.stopForTest()
	m4, err := Open(ctx, b, "r", here, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m4.Close(ctx)
	if got := read(t, here, RunDir, "manifest.json"); got != "rows 1 and 3" {
		t.Fatalf("same folders: %q, want the local file kept", got)
	}
	if err := m4.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := string(b.files["r"][fileKey{RunDir, "manifest.json"}].Data); got != "rows 1 and 3" {
		t.Fatalf("stored after the sync: %q", got)
	}
}

func TestChangesAreWrittenBackWithinSyncEveryWithoutBeingAsked(t *testing.T) {
	ctx := context.Background()
	b := newMem()
	p := places(t)
	m, err := Open(ctx, b, "r", p, Options{SyncEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	put(t, p, Workbench, "notes/brief.md", "# Brief")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		f, ok := b.files["r"][fileKey{Workbench, "notes/brief.md"}]
		b.mu.Unlock()
		if ok && string(f.Data) == "# Brief" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the brief was never written back")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
