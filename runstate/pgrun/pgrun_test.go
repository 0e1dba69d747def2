package pgrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/runstate"
)

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(holder())
	}
	os.Exit(pgtest.Run(m))
}

func backend(t *testing.T, url string) *Backend {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b, err := New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// machine is one machine's folders for a run.
func machine(t *testing.T) runstate.Places {
	t.Helper()
	d := t.TempDir()
	return runstate.Places{
		runstate.RunDir:    filepath.Join(d, "checkout", "runs"),
		runstate.Workbench: filepath.Join(d, "checkout", ".flower"),
		runstate.Human:     filepath.Join(d, "home", "state", "run"),
		runstate.CLIFiles:  filepath.Join(d, "home", ".claude", "projects", "-checkout"),
	}
}

func write(t *testing.T, p runstate.Places, root runstate.Root, rel, content string) {
	t.Helper()
	path := filepath.Join(p[root], filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, p runstate.Places, root runstate.Root, rel, content string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(p[root], filepath.FromSlash(rel)), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// tree is every file under the places, by root and slash path.
func tree(t *testing.T, p runstate.Places) map[string]string {
	t.Helper()
	out := map[string]string{}
	for root, base := range p {
		filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(base, path)
			b, _ := os.ReadFile(path)
			out[string(root)+":"+filepath.ToSlash(rel)] = string(b)
			return nil
		})
	}
	return out
}

func open(t *testing.T, b runstate.Backend, run string, p runstate.Places, o runstate.Options) *runstate.Mirror {
	t.Helper()
	m, err := runstate.Open(context.Background(), b, run, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestARunsFilesReachAnotherMachineUnderItsOwnFolders(t *testing.T) {
	ctx := context.Background()
	b := backend(t, pgtest.Database(t))
	a := machine(t)
	write(t, a, runstate.RunDir, "lineage.json", `{"steps":{"work":"s1"}}`)
	write(t, a, runstate.RunDir, "events.jsonl", "{\"n\":1}\n")
	write(t, a, runstate.RunDir, "sessions.db", "sqlite bytes: not run state")
	write(t, a, runstate.RunDir, "lineage.json.lock", "")
	write(t, a, runstate.Workbench, "notes/brief.md", "# Brief\nbuild X\n")
	write(t, a, runstate.Workbench, "spill/abc.txt", strings.Repeat("0123456789", 1000))
	write(t, a, runstate.Human, "words/0001.json", `{"kind":"mail","text":"also Y"}`)
	write(t, a, runstate.CLIFiles, "sess/tool-results/t1.txt", "whole output")
	write(t, a, runstate.CLIFiles, "sess.jsonl", "the transcript: the store keeps it")
	ma := open(t, b, "r1", a, runstate.Options{})
	if err := ma.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, runstate.RunDir, "events.jsonl", "{\"n\":2}\n")
	write(t, a, runstate.Workbench, "notes/goal.md", "# Goal\n")
	if err := os.Remove(filepath.Join(a[runstate.Workbench], "spill", "abc.txt")); err != nil {
		t.Fatal(err)
	}
	if err := ma.Close(ctx); err != nil {
		t.Fatal(err)
	}

	bm := machine(t)
	mb := open(t, b, "r1", bm, runstate.Options{})
	defer mb.Close(ctx)
	got := tree(t, bm)
	want := tree(t, a)
	delete(want, "run:sessions.db")
	delete(want, "run:lineage.json.lock")
	delete(want, "cli:sess.jsonl")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("machine B has\n%v\nwant\n%v", got, want)
	}
}

func TestAnAppendedLogIsWrittenBackAsItsNewBytesOnly(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	b := backend(t, url)
	a := machine(t)
	write(t, a, runstate.RunDir, "events.jsonl", strings.Repeat("x", 100_000)+"\n")
	m := open(t, b, "r2", a, runstate.Options{})
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	appendTo(t, a, runstate.RunDir, "events.jsonl", "tail\n")
	// A stored copy that is not the prefix this process wrote is not
	// appended to blindly: the append checks the stored length.
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var data []byte
	if err := b.pool.QueryRow(ctx, "select data from runstate_files where run = 'r2' and path = 'events.jsonl'").Scan(&data); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("x\ntail\n")) || len(data) != 100_006 {
		t.Fatalf("stored %d bytes ending %q", len(data), data[max(0, len(data)-10):])
	}
	m.Close(ctx)
}

func TestASecondProcessIsToldTheRunIsBusyAndWhere(t *testing.T) {
	ctx := context.Background()
	b := backend(t, pgtest.Database(t))
	m := open(t, b, "r3", machine(t), runstate.Options{TTL: time.Minute})
	_, err := runstate.Open(ctx, b, "r3", machine(t), runstate.Options{})
	var busy *runstate.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, runstate.ErrBusy) {
		t.Fatalf("second Open: %v, want a BusyError", err)
	}
	host, _ := os.Hostname()
	if busy.Holder.Host != host || busy.Holder.PID != os.Getpid() || time.Since(busy.Holder.Since) > time.Minute {
		t.Fatalf("holder %+v, want this host and pid, just now", busy.Holder)
	}
	if !strings.Contains(err.Error(), host) {
		t.Fatalf("the message does not name the host: %v", err)
	}
	t.Log(err)
	// Released, the run is free at once: no wait for the lease to lapse.
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := open(t, b, "r3", machine(t), runstate.Options{})
	m2.Close(ctx)
}

func TestALeaseNotBeatenIsTakenOverAndItsHolderWritesNothing(t *testing.T) {
	ctx := context.Background()
	b := backend(t, pgtest.Database(t))
	ttl := time.Second
	old, err := b.Acquire(ctx, "r4", runstate.Holder{Host: "a", PID: 1}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Write(ctx, []runstate.Change{{Root: runstate.RunDir, Path: "lineage.json", Data: []byte("A")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "r4", runstate.Holder{Host: "b", PID: 2}, ttl); !errors.Is(err, runstate.ErrBusy) {
		t.Fatalf("within the ttl: %v, want busy", err)
	}
	time.Sleep(ttl + 200*time.Millisecond)
	if _, err := b.Acquire(ctx, "r4", runstate.Holder{Host: "b", PID: 2}, ttl); err != nil {
		t.Fatalf("after the ttl: %v", err)
	}
	for name, call := range map[string]func() error{
		"Write": func() error {
			return old.Write(ctx, []runstate.Change{{Root: runstate.RunDir, Path: "lineage.json", Data: []byte("A again")}})
		},
		"Beat": func() error { return old.Beat(ctx) },
	} {
		if err := call(); !errors.Is(err, runstate.ErrLeaseLost) {
			t.Fatalf("%s by the old holder: %v, want ErrLeaseLost", name, err)
		}
	}
	var data string
	if err := b.pool.QueryRow(ctx, "select convert_from(data, 'UTF8') from runstate_files where run = 'r4'").Scan(&data); err != nil || data != "A" {
		t.Fatalf("stored %q (%v), want the old holder's first write only", data, err)
	}
}

func TestAStoredPathThatWouldLeaveItsFolderIsNotRestored(t *testing.T) {
	ctx := context.Background()
	b := backend(t, pgtest.Database(t))
	l, err := b.Acquire(ctx, "r5", runstate.Holder{Host: "x", PID: 1}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	bad := []runstate.Change{
		{Root: runstate.Workbench, Path: "../escaped.txt", Data: []byte("no")},
		{Root: runstate.Workbench, Path: "/etc/abs.txt", Data: []byte("no")},
		{Root: runstate.Workbench, Path: "link/through.txt", Data: []byte("no")},
		{Root: runstate.Workbench, Path: "ok.txt", Data: []byte("yes")},
	}
	if err := l.Write(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	p := machine(t)
	outside := t.TempDir()
	if err := os.MkdirAll(p[runstate.Workbench], 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(p[runstate.Workbench], "link")); err != nil {
		t.Fatal(err)
	}
	m := open(t, b, "r5", p, runstate.Options{})
	defer m.Close(ctx)
	if b, err := os.ReadFile(filepath.Join(p[runstate.Workbench], "ok.txt")); err != nil || string(b) != "yes" {
		t.Fatalf("the good file: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(p[runstate.Workbench]), "escaped.txt"), filepath.Join(outside, "through.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s was written", p)
		}
	}
}

func TestSyncWaitsOutADatabaseRestartAndLosesNothing(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	url, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := backend(t, url)
	a := machine(t)
	write(t, a, runstate.RunDir, "manifest.json", "v1")
	m := open(t, b, "r6", a, runstate.Options{TTL: 5 * time.Second})
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, a, runstate.RunDir, "manifest.json", "v2")
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = m.Sync(short)
	cancel()
	if err == nil {
		t.Fatal("a sync with the database down succeeded")
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	bm := machine(t)
	mb := open(t, b, "r6", bm, runstate.Options{})
	defer mb.Close(ctx)
	if got, _ := os.ReadFile(filepath.Join(bm[runstate.RunDir], "manifest.json")); string(got) != "v2" {
		t.Fatalf("after the restart the stored manifest is %q, want v2", got)
	}
}

// The holder process: takes the run, then writes and syncs a file every
// 50 ms for as long as it may, and exits 3 the moment it may not, before
// writing anything.
const holderEnv = "PGRUN_TEST_HOLDER"

func holder() int {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("PGRUN_TEST_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	b, err := New(ctx, pool)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir := os.Getenv(holderEnv)
	m, err := runstate.Open(ctx, b, "r7", runstate.Places{runstate.RunDir: dir}, runstate.Options{TTL: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("holding")
	for i := 0; ; i++ {
		if !m.Valid() {
			fmt.Println("lapsed: stopping without a write")
			return 3
		}
		if err := os.WriteFile(filepath.Join(dir, "progress.txt"), []byte(fmt.Sprint(i)), 0o600); err != nil {
			return 1
		}
		if err := m.Sync(ctx); err != nil {
			fmt.Println("sync:", err)
			return 4
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAHolderPausedPastItsLeaseStopsWithoutAWriteWhenContinued(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Database(t)
	b := backend(t, url)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dir, "PGRUN_TEST_URL="+url)
	var out lockedBuffer // written by the process's copier, read here
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "holding") || countRows(t, b) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the holder never synced: %s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond) // past the 2 s lease
	mb := open(t, b, "r7", runstate.Places{runstate.RunDir: t.TempDir()}, runstate.Options{})
	stored := storedRows(t, b)
	local, _ := os.ReadFile(filepath.Join(dir, "progress.txt"))
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 3 {
			t.Fatalf("the continued holder: %v, want exit 3\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the continued holder did not stop\n%s", out.String())
	}
	done <- nil // for the cleanup
	if after := storedRows(t, b); after != stored {
		t.Fatalf("rows changed after the takeover:\n%s\nthen\n%s", stored, after)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "progress.txt")); !bytes.Equal(now, local) {
		t.Fatalf("the holder wrote its file after it was continued: %q then %q", local, now)
	}
	mb.Close(ctx)
	t.Log(strings.TrimSpace(out.String()))
}

func countRows(t *testing.T, b *Backend) int {
	var n int
	if err := b.pool.QueryRow(context.Background(), "select count(*) from runstate_files").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func storedRows(t *testing.T, b *Backend) string {
	var s string
	err := b.pool.QueryRow(context.Background(),
		"select coalesce(string_agg(root || '/' || path || '=' || encode(data, 'escape') || '@' || updated_at::text, ';' order by path), '') from runstate_files").Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestProcessesOpeningARunAtOnceGetOneWriter(t *testing.T) {
	ctx := context.Background()
	b := backend(t, pgtest.Database(t))
	const n = 8
	type result struct {
		lease runstate.Lease
		err   error
	}
	results := make(chan result, n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			l, err := b.Acquire(ctx, "race", runstate.Holder{Host: "h", PID: i + 1}, time.Minute)
			results <- result{l, err}
		}()
	}
	close(start)
	writers := 0
	for range n {
		r := <-results
		switch {
		case r.err == nil:
			writers++
		case !errors.Is(r.err, runstate.ErrBusy):
			t.Errorf("an opener failed otherwise: %v", r.err)
		}
	}
	if writers != 1 {
		t.Fatalf("%d writers, want exactly 1", writers)
	}
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
