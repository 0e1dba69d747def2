package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/internal/backendtest"
)

// openTest opens a fresh database in a temporary directory, closed when the
// test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func mustAppend(t testing.TB, s *Store, key claude.SessionKey, entries ...json.RawMessage) {
	t.Helper()
	if err := s.Append(context.Background(), key, entries); err != nil {
		t.Fatalf("Append(%+v): %v", key, err)
	}
}

func decodeAll(t testing.TB, entries []json.RawMessage) []any {
	t.Helper()
	out := make([]any, len(entries))
	for i, e := range entries {
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.UseNumber()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	return out
}

// noLeaks fails t if goroutines it started outlive it. It checks after the
// test's other cleanups, which close its stores, and ignores goroutines
// other tests left running.
func noLeaks(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}

func TestSQLiteConformance(t *testing.T) {
	noLeaks(t)
	claudetest.RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return openTest(t) })
}

func TestSQLiteSharedStoreConformance(t *testing.T) {
	s := openTest(t) // one database for every subtest: keys must not leak between them
	claudetest.RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return s })
}

// TestSQLiteBackend runs what every backend must pass (the conformance
// suite included), each case on a fresh database file.
func TestSQLiteBackend(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.Backend { return openTest(t) })
}

func TestSQLiteClockAndReplays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	frozen := time.UnixMilli(5_000)
	s.Now = func() time.Time { return frozen }
	ctx := t.Context()
	a := claude.SessionKey{ProjectKey: "p", SessionID: "a"}
	b := claude.SessionKey{ProjectKey: "p", SessionID: "b"}
	sub := claude.SessionKey{ProjectKey: "p", SessionID: "a", Subpath: "subagents/agent-1"}
	entry := func(uuid string) json.RawMessage {
		return json.RawMessage(`{"type":"user","uuid":"` + uuid + `","message":{"content":"hi"}}`)
	}
	mustAppend(t, s, a, entry("1"))             // 5000
	mustAppend(t, s, b, entry("1"))             // 5001
	mustAppend(t, s, sub, entry("1"))           // 5002: subkeys tick the same clock
	mustAppend(t, s, a, entry("2"))             // 5003
	mustAppend(t, s, a, entry("1"))             // replay: nothing changes
	mustAppend(t, s, b, entry("1"), entry("1")) // replay twice over
	infos, err := s.ListSessions(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := []claude.SessionInfo{{SessionID: "a", Mtime: 5003}, {SessionID: "b", Mtime: 5001}}
	if !slices.Equal(infos, want) {
		t.Fatalf("ListSessions = %+v, want %+v", infos, want)
	}
	sums, err := s.ListSessionSummaries(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].SessionID != "a" || sums[0].Mtime != 5003 || sums[1].Mtime != 5001 {
		t.Fatalf("ListSessionSummaries = %+v", sums)
	}
	if d, err := claude.ParseSessionSummary(sums[0].Data); err != nil || d.Entries != 2 || d.FirstPrompt != "hi" {
		t.Fatalf("summary of a = %s (%v), want 2 entries: replays and subkeys are not folded", sums[0].Data, err)
	}

	// Another store on the same file (another process, say) with a clock
	// that lags still moves forward: the clock reads the database.
	other, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Now = func() time.Time { return time.UnixMilli(10) }
	var seen int64
	other.afterAppend = func(_ claude.SessionKey, m int64) { seen = m }
	mustAppend(t, other, b, entry("2"))
	if seen != 5004 {
		t.Fatalf("the second store stamped %d, want 5004", seen)
	}
	// A clock ahead of the database wins.
	s.Now = func() time.Time { return time.UnixMilli(9_000) }
	s.afterAppend = func(_ claude.SessionKey, m int64) { seen = m }
	mustAppend(t, s, a, entry("3"))
	if seen != 9_000 {
		t.Fatalf("stamped %d, want the clock's 9000", seen)
	}
}

func TestSQLiteReopenKeepsEverything(t *testing.T) {
	// Parents are created, and characters a URI would misread are kept.
	path := filepath.Join(t.TempDir(), "deep", "we?ird #dir %20 ü", "sessions.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, json.RawMessage(`{"type":"user","uuid":"u"}`))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(t.Context(), key); err == nil {
		t.Fatal("Load after Close succeeded")
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Load(t.Context(), key)
	if err != nil || len(got) != 1 {
		t.Fatalf("after reopening: %d entries, %v", len(got), err)
	}
	mustAppend(t, s, key, json.RawMessage(`{"type":"user","uuid":"u"}`)) // still deduplicated
	if got, _ := s.Load(t.Context(), key); len(got) != 1 {
		t.Fatalf("a replay after reopening was stored again: %d entries", len(got))
	}
}

func TestSQLiteCorruptFileErrorsClearly(t *testing.T) {
	for _, tt := range []struct {
		name    string
		content []byte
	}{
		{"text", bytes.Repeat([]byte("this is not a database, just some junk bytes\n"), 200)},
		{"short", []byte("junk")},
		{"damaged header", append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 8192)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sessions.db")
			if err := os.WriteFile(path, tt.content, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err == nil {
				// Then the first use must say so.
				defer s.Close()
				err = s.Append(t.Context(), claude.SessionKey{ProjectKey: "p", SessionID: "s"}, []json.RawMessage{json.RawMessage(`{}`)})
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("got %v, want store.ErrCorrupt", err)
			}
			for _, want := range []string{path, "move", "aside", "fresh one"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			t.Log(err)
		})
	}
}

func TestSQLiteOpenRefusesBadPaths(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Open(a directory) = %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "sessions.db")); err == nil {
		t.Error("Open under a regular file succeeded")
	}
}

func TestSQLiteRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("Open of a newer database: %v, want store.ErrNewerSchema", err)
	}
}

func TestSQLiteLockedDatabaseTimesOutWithTheContext(t *testing.T) {
	noLeaks(t)
	s := openTest(t)
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, json.RawMessage(`{"type":"user","uuid":"before"}`))

	// Another connection (as if another process) takes the write lock and
	// keeps it.
	other, err := sql.Open("sqlite", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "INSERT INTO meta (store_key, mtime, next_seq) VALUES ('q/x', 1, 0)"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Append(ctx, key, []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"during"}`)})
	elapsed := time.Since(start)
	if !errors.Is(err, store.ErrLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append under another writer's lock: %v; want store.ErrLocked and context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "write lock") || !strings.Contains(err.Error(), s.path) {
		t.Errorf("the error does not say what waited for what: %v", err)
	}
	if elapsed > 5*time.Second {
		t.Errorf("Append gave up after %v; the context allowed 300ms", elapsed)
	}
	t.Log(err)

	// A second Append queued behind the first gives up too.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel2()
	if err := s.Delete(ctx2, key); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Delete under the lock: %v", err)
	}

	// Readers do not wait for the writer.
	got, err := s.Load(t.Context(), key)
	if err != nil || len(got) != 1 {
		t.Fatalf("Load during another's write: %d entries, %v", len(got), err)
	}

	if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, key, json.RawMessage(`{"type":"user","uuid":"after"}`))
	if got, _ := s.Load(t.Context(), key); len(got) != 2 {
		t.Fatalf("after the lock: %d entries, want 2 (the timed-out batch is not stored)", len(got))
	}
}

// A transcript holds every tool's output: the database and the files SQLite
// keeps beside it are this user's only, in a directory of this user's only.
// They were 0644 in a 0755 directory.
func TestSQLiteFilesArePrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	path := filepath.Join(dir, "sessions.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustAppend(t, s, claude.SessionKey{ProjectKey: "p", SessionID: "s"}, json.RawMessage(`{"type":"user","uuid":"u"}`))
	wantMode(t, dir, fs.ModeDir|0o700)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		wantMode(t, p, 0o600)
	}

	// An existing database keeps the mode its owner gave it.
	shared := filepath.Join(t.TempDir(), "shared.db")
	if err := os.WriteFile(shared, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	s2, err := Open(shared)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	wantMode(t, shared, 0o640)
}

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode() & (fs.ModeDir | fs.ModePerm); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// SQLite may answer BUSY long before its busy timeout (where waiting could
// deadlock); the error said the lock was held "for over 30s" all the same.
// It says how long the store actually waited.
func TestSQLiteBusyErrorSaysWhatWasMeasured(t *testing.T) {
	s := openTest(t)
	holder, err := sql.Open("sqlite", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	conn, err := holder.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	// A connection without a busy timeout gets a real BUSY at once.
	impatient, err := sql.Open("sqlite", s.path)
	if err != nil {
		t.Fatal(err)
	}
	defer impatient.Close()
	_, busy := impatient.ExecContext(t.Context(), "BEGIN IMMEDIATE; COMMIT")
	if !isBusy(busy) {
		t.Fatalf("the second writer got %v, want SQLITE_BUSY", busy)
	}
	err = s.fail(t.Context(), "append p/s", time.Now().Add(-7*time.Millisecond), busy)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("fail(BUSY) = %v, want store.ErrLocked", err)
	}
	msg := err.Error()
	if strings.Contains(msg, busyTimeout.String()) || !strings.Contains(msg, "after 7ms") {
		t.Errorf("the error claims what was not measured or omits what was: %s", msg)
	}
	t.Log(msg)
}
