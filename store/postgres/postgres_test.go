package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/internal/backendtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// openTest opens the store on a new empty database of the shared test
// cluster, closed when the test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	return openURL(t, pgtest.Database(t))
}

func openURL(t testing.TB, u string) *Store {
	t.Helper()
	s, err := Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// admin is a plain connection to the database at u, for what a test does
// behind the store's back.
func admin(t testing.TB, u string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func mustAppend(t testing.TB, s *Store, key claude.SessionKey, entries ...json.RawMessage) {
	t.Helper()
	if err := s.Append(context.Background(), key, entries); err != nil {
		t.Fatalf("Append(%+v): %v", key, err)
	}
}

func entry(uuid string) json.RawMessage {
	return json.RawMessage(`{"type":"user","uuid":"` + uuid + `","message":{"content":"hi"}}`)
}

// oneLine fails t unless err is a single line that shows no secret.
func oneLine(t *testing.T, err error, secret string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("the error is more than one line:\n%s", msg)
	}
	if secret != "" && strings.Contains(msg, secret) {
		t.Errorf("the error shows the password %q: %s", secret, msg)
	}
	t.Log(msg)
}

func TestPostgresConformance(t *testing.T) {
	claudetest.RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return openTest(t) })
}

func TestPostgresSharedStoreConformance(t *testing.T) {
	s := openTest(t) // one database for every subtest: keys must not leak between them
	claudetest.RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return s })
}

// TestPostgresBackend runs what every backend must pass, each case on a
// fresh database.
func TestPostgresBackend(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backendtest.Backend { return openTest(t) })
}

func TestPostgresClockAndReplays(t *testing.T) {
	u := pgtest.Database(t)
	s := openURL(t, u)
	frozen := time.UnixMilli(5_000)
	s.Now = func() time.Time { return frozen }
	ctx := t.Context()
	a := claude.SessionKey{ProjectKey: "p", SessionID: "a"}
	b := claude.SessionKey{ProjectKey: "p", SessionID: "b"}
	sub := claude.SessionKey{ProjectKey: "p", SessionID: "a", Subpath: "subagents/agent-1"}
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

	// Another store on the same database (another machine, say) with a
	// clock that lags still moves forward: the clock is the database's.
	other := openURL(t, u)
	other.Now = func() time.Time { return time.UnixMilli(10) }
	mustAppend(t, other, b, entry("2"))
	if got := mtimeOf(t, s, "p", "b"); got != 5004 {
		t.Fatalf("the second store stamped %d, want 5004", got)
	}
	// A clock ahead of the database wins.
	s.Now = func() time.Time { return time.UnixMilli(9_000) }
	mustAppend(t, s, a, entry("3"))
	if got := mtimeOf(t, s, "p", "a"); got != 9_000 {
		t.Fatalf("stamped %d, want the clock's 9000", got)
	}
	// Without Now the server's clock stamps: today, in Unix ms.
	s.Now = nil
	mustAppend(t, s, a, entry("4"))
	if got := mtimeOf(t, s, "p", "a"); time.Since(time.UnixMilli(got)).Abs() > time.Hour {
		t.Fatalf("stamped %d (%v) with the server's clock, want about now", got, time.UnixMilli(got))
	}
}

func mtimeOf(t *testing.T, s *Store, project, id string) int64 {
	t.Helper()
	infos, err := s.ListSessions(t.Context(), project)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.SessionID == id {
			return i.Mtime
		}
	}
	t.Fatalf("no session %s in %+v", id, infos)
	return 0
}

// Two stores on one database (two flower processes, maybe on two
// machines) appending to the same sessions at once: nothing is lost or
// doubled, each key keeps its order, and no two appends share an mtime.
func TestPostgresTwoStoresAppendAtOnce(t *testing.T) {
	u := pgtest.Database(t)
	stores := []*Store{openURL(t, u), openURL(t, u)}
	keys := []claude.SessionKey{{ProjectKey: "p", SessionID: "a"}, {ProjectKey: "p", SessionID: "b"}}
	const perWriter = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(keys))
	for w, s := range stores {
		for _, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perWriter {
					// Every write twice: once alone, once replayed in a batch.
					e := json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"w%d-%d","i":%d}`, w, i, i))
					if err := s.Append(t.Context(), k, []json.RawMessage{e}); err != nil {
						errs <- err
						return
					}
					if err := s.Append(t.Context(), k, []json.RawMessage{e, json.RawMessage(`{"type":"x"}`)}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, k := range keys {
		got, err := stores[0].Load(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		next := map[string]int{}
		for _, e := range got {
			var v struct {
				UUID string `json:"uuid"`
				I    int    `json:"i"`
			}
			if err := json.Unmarshal(e, &v); err != nil {
				t.Fatal(err)
			}
			if v.UUID == "" {
				continue
			}
			w := v.UUID[:2]
			if v.I != next[w] {
				t.Fatalf("%s: writer %s's entry %d where %d was due: order or uniqueness lost", k.SessionID, w, v.I, next[w])
			}
			next[w]++
		}
		if next["w0"] != perWriter || next["w1"] != perWriter || len(got) != 4*perWriter {
			t.Fatalf("%s: %d entries (%v), want %d", k.SessionID, len(got), next, 4*perWriter)
		}
	}
}

func TestRedactMasksEveryPasswordAndKeepsTheRest(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://flower:s3cret@db.example:5432/runs?sslmode=require", "postgres://flower:xxxxx@db.example:5432/runs?sslmode=require"},
		{"postgresql://flower:p%40ss%2Fw@db/runs", "postgresql://flower:xxxxx@db/runs"},
		{"postgres://flower@db/runs?password=s3cret&sslmode=disable", "postgres://flower@db/runs?password=xxxxx&sslmode=disable"},
		{"postgres://db/runs", "postgres://db/runs"},
		{"postgres://flower:s3cret@db:notaport/runs", "postgres://flower:xxxxx@db:notaport/runs"},
		{"postgres://flower:s3:cr@et@db:bad/runs", "postgres://flower:xxxxx@db:bad/runs"},
		{"host=db user=flower password=s3cret dbname=runs", "host=db user=flower password=xxxxx dbname=runs"},
		{"host=db password='s3 cret' dbname=runs", "host=db password=xxxxx dbname=runs"},
		{"host=db PASSWORD = s3cret", "host=db PASSWORD = xxxxx"},
		{"", ""},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
		if p := PasswordOf(c.in); p != "" && strings.Contains(Redact(c.in), p) {
			t.Errorf("Redact(%q) shows its password %q", c.in, p)
		}
	}
}

func TestOpenRefusesAURLThatDoesNotParse(t *testing.T) {
	for _, raw := range []string{
		"postgres://flower:s3cret-pw@db.example:notaport/runs",
		"postgres://flower:s3cret-pw@db.example/runs?sslmode=sometimes",
		"host=db password=s3cret-pw port=many",
		"mysql://flower:s3cret-pw@db/runs",
	} {
		s, err := Open(t.Context(), raw)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%s) succeeded", Redact(raw))
		}
		oneLine(t, err, "s3cret-pw")
		if !strings.Contains(err.Error(), "does not parse") || !strings.Contains(err.Error(), "postgres://USER:PASSWORD@HOST:5432/DATABASE") {
			t.Errorf("the error does not say the URL is wrong and how to write it: %v", err)
		}
	}
	if _, err := Open(t.Context(), " "); err == nil || !strings.Contains(err.Error(), "no database URL") {
		t.Errorf("Open of a blank URL: %v", err)
	}
}

func TestOpenRefusesAWrongPassword(t *testing.T) {
	good, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	bad := *good
	bad.User = url.UserPassword(good.User.Username(), "not-the-password")
	start := time.Now()
	s, err := Open(t.Context(), bad.String())
	if err == nil {
		s.Close()
		t.Fatal("Open with a wrong password succeeded")
	}
	oneLine(t, err, "not-the-password")
	if !strings.Contains(err.Error(), "refused the password") || !strings.Contains(err.Error(), "xxxxx") {
		t.Errorf("the error does not say the password was refused, naming the masked URL: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("refusing took %v", time.Since(start))
	}
	// Nothing was created: the database is as createdb left it.
	var tables int
	if err := admin(t, good.String()).QueryRow(t.Context(), `select count(*) from pg_tables where schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the refused open left %d tables (%v)", tables, err)
	}
}

func TestOpenNamesADatabaseThatDoesNotExist(t *testing.T) {
	u, err := url.Parse(pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	u.Path = "/no_such_db"
	_, err = Open(t.Context(), u.String())
	oneLine(t, err, pw)
	if !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "no_such_db") {
		t.Errorf("the error does not name the missing database: %v", err)
	}
}

func TestOpenRefusesANewerSchema(t *testing.T) {
	u := pgtest.Database(t)
	s := openURL(t, u)
	mustAppend(t, s, claude.SessionKey{ProjectKey: "p", SessionID: "s"}, entry("1"))
	s.Close()
	db := admin(t, u)
	if _, err := db.Exec(t.Context(), `update flower_schema set version = 99 where component = 'sessions'`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), u)
	if !errors.Is(err, store.ErrNewerSchema) {
		t.Fatalf("Open of a newer database: %v, want store.ErrNewerSchema", err)
	}
	pw, _ := mustParse(t, u).User.Password()
	oneLine(t, err, pw)
	if !strings.Contains(err.Error(), "upgrade flower") {
		t.Errorf("the error does not say what to do: %v", err)
	}
	var version int
	if err := db.QueryRow(t.Context(), `select version from flower_schema where component = 'sessions'`).Scan(&version); err != nil || version != 99 {
		t.Fatalf("the refusing open changed the recorded version to %d (%v)", version, err)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestOpenRefusesASchemaChangedByHand(t *testing.T) {
	for _, change := range []string{
		`alter table session_entries drop column uid`,
		`drop table session_summaries`,
		`alter table session_meta alter column next_seq type integer`,
	} {
		t.Run(strings.Fields(change)[0]+"_"+strings.Fields(change)[2], func(t *testing.T) {
			u := pgtest.Database(t)
			s := openURL(t, u)
			mustAppend(t, s, claude.SessionKey{ProjectKey: "p", SessionID: "s"}, entry("1"))
			s.Close()
			if _, err := admin(t, u).Exec(t.Context(), change); err != nil {
				t.Fatal(err)
			}
			_, err := Open(t.Context(), u)
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Open after %q: %v, want store.ErrCorrupt", change, err)
			}
			pw, _ := mustParse(t, u).User.Password()
			oneLine(t, err, pw)
			if !strings.Contains(err.Error(), "changed") || !strings.Contains(err.Error(), "new database") {
				t.Errorf("the error does not say the tables were changed and what to do: %v", err)
			}
		})
	}
}

// A table dropped while a store is open: the next call says so instead of
// a bare driver error.
func TestPostgresTableDroppedUnderAnOpenStore(t *testing.T) {
	u := pgtest.Database(t)
	s := openURL(t, u)
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, entry("1"))
	if _, err := admin(t, u).Exec(t.Context(), `drop table session_entries`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Load(t.Context(), key)
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Load after the table was dropped: %v, want store.ErrCorrupt", err)
	}
	pw, _ := mustParse(t, u).User.Password()
	oneLine(t, err, pw)
}

// waitForBlocked returns the pid of the backend running query text like
// pattern once it waits for a lock; the test fails after a minute.
func waitForBlocked(t *testing.T, db *pgx.Conn, pattern string) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var pid int
		err := db.QueryRow(t.Context(), `select pid from pg_stat_activity
			where wait_event_type = 'Lock' and query like $1 and pid <> pg_backend_pid() limit 1`, pattern).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no backend blocked on %q within a minute", pattern)
	return 0
}

// A connection cut in the middle of an Append's transaction, after its rows
// were inserted and before it commits: the Append fails with a line that
// says so, nothing of the batch is stored, and a retry of the same batch
// stores every entry exactly once.
func TestPostgresAppendCutMidTransactionStoresNothingAndARetryStoresOnce(t *testing.T) {
	u := pgtest.Database(t)
	s := openURL(t, u)
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, entry("before"))
	var batch []json.RawMessage
	for i := range 2000 {
		batch = append(batch, json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"u%d","i":%d}`, i, i)))
	}
	batch = append(batch, json.RawMessage(`{"type":"x","note":"no uuid"}`))

	// Another connection holds the clock row, so the Append inserts its
	// rows and then waits, mid-transaction, for the clock.
	holder := admin(t, u)
	tx, err := holder.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `select mtime from session_clock for update`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Append(context.Background(), key, batch) }()
	pid := waitForBlocked(t, admin(t, u), "%session_clock%")
	if _, err := admin(t, u).Exec(t.Context(), `select pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	var appendErr error
	select {
	case appendErr = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Append did not return within a minute of its connection being cut")
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	pw, _ := mustParse(t, u).User.Password()
	oneLine(t, appendErr, pw)
	if !strings.Contains(appendErr.Error(), "retry") {
		t.Errorf("the error does not say to retry: %v", appendErr)
	}
	got, err := s.Load(t.Context(), key)
	if err != nil || len(got) != 1 {
		t.Fatalf("after the cut: %d entries (%v), want only the one before: a half-written batch", len(got), err)
	}
	before := mtimeOf(t, s, "p", "s")

	mustAppend(t, s, key, batch...) // the retry
	mustAppend(t, s, key, batch...) // and a replay of it: uuids are skipped
	got, err = s.Load(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + len(batch) + 1; len(got) != want { // the entry without uuid is stored twice, by contract
		t.Fatalf("after the retry and a replay: %d entries, want %d", len(got), want)
	}
	for i, e := range batch[:2000] {
		if string(got[1+i]) != string(e) {
			t.Fatalf("entry %d = %s, want %s", 1+i, got[1+i], e)
		}
	}
	if after := mtimeOf(t, s, "p", "s"); after <= before {
		t.Fatalf("mtime %d after the retry, not after %d", after, before)
	}
}

// Another process holding a session's append lock: an Append waits, then
// fails with store.ErrLocked at the lock timeout (set in the URL here) or
// when its context ends, storing nothing; readers never wait.
func TestPostgresLockedSessionTimesOut(t *testing.T) {
	u := pgtest.Database(t)
	s := openURL(t, u)
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, entry("before"))
	holder := admin(t, u)
	tx, err := holder.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), `select pg_advisory_xact_lock($1, hashtext($2))`, sessionLockClass, "p/s"); err != nil {
		t.Fatal(err)
	}

	// The lock timeout of the URL.
	short := mustParse(t, u)
	q := short.Query()
	q.Set("lock_timeout", "300")
	short.RawQuery = q.Encode()
	impatient := openURL(t, short.String())
	start := time.Now()
	err = impatient.Append(t.Context(), key, []json.RawMessage{entry("during")})
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Append under another's lock: %v; want store.ErrLocked", err)
	}
	pw, _ := short.User.Password()
	oneLine(t, err, pw)
	if !strings.Contains(err.Error(), "lock_timeout") {
		t.Errorf("the error does not say which timeout ended the wait: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("gave up after %v with a 300 ms lock timeout", d)
	}
	// A subagent's transcript of the session waits for the same lock, so a
	// Delete of the session never interleaves with it.
	sub := claude.SessionKey{ProjectKey: "p", SessionID: "s", Subpath: "subagents/agent-1"}
	if err := impatient.Append(t.Context(), sub, []json.RawMessage{entry("during")}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Append to a subkey under the session's lock: %v; want store.ErrLocked", err)
	}
	if err := impatient.Delete(t.Context(), key); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Delete under the session's lock: %v; want store.ErrLocked", err)
	}
	// Another session is not held up.
	mustAppend(t, impatient, claude.SessionKey{ProjectKey: "p", SessionID: "other"}, entry("free"))

	// The caller's context.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err = s.Append(ctx, key, []json.RawMessage{entry("during")})
	if !errors.Is(err, store.ErrLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append with a context ending under the lock: %v; want store.ErrLocked and context.DeadlineExceeded", err)
	}
	oneLine(t, err, pw)

	// Readers do not wait.
	if got, err := s.Load(t.Context(), key); err != nil || len(got) != 1 {
		t.Fatalf("Load under the lock: %d entries, %v", len(got), err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, key, entry("after"))
	if got, _ := s.Load(t.Context(), key); len(got) != 2 {
		t.Fatalf("after the lock: %d entries, want 2 (the refused batches are not stored)", len(got))
	}
}

// The server gone: a call fails with a line naming the masked URL and
// saying what to do, and the store works again once the server is back.
func TestPostgresServerRestartFailsCleanlyAndRecovers(t *testing.T) {
	srv := pgtest.Start(t)
	u, err := srv.CreateDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := openURL(t, u)
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, entry("1"))
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = s.Append(ctx, key, []json.RawMessage{entry("2")})
	pw, _ := mustParse(t, u).User.Password()
	oneLine(t, err, pw)
	if !strings.Contains(err.Error(), "xxxxx") || !strings.Contains(err.Error(), "retry") {
		t.Errorf("the error does not name the masked URL or say to retry: %v", err)
	}
	if ctx.Err() != nil {
		t.Errorf("the call waited for its context to end instead of failing")
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, key, entry("2"))
	if got, err := s.Load(t.Context(), key); err != nil || len(got) != 2 {
		t.Fatalf("after the restart: %d entries, %v", len(got), err)
	}
}

// Debian's server has lz4: the payloads use it (see the migration).
func TestPostgresPayloadsUseLZ4(t *testing.T) {
	u := pgtest.Database(t)
	openURL(t, u)
	var method string
	err := admin(t, u).QueryRow(t.Context(), `select attcompression::text from pg_attribute
		where attrelid = 'session_entries'::regclass and attname = 'payload'`).Scan(&method)
	if err != nil || method != "l" {
		t.Fatalf("payload compression = %q (%v), want l (lz4)", method, err)
	}
}

func TestOpenNamesAServerThatCannotBeReached(t *testing.T) {
	dir := t.TempDir() // no server listens here
	raw := "postgres://flower:s3cret-pw@/runs?host=" + url.QueryEscape(dir) + "&connect_timeout=5"
	start := time.Now()
	_, err := Open(t.Context(), raw)
	oneLine(t, err, "s3cret-pw")
	if !strings.Contains(err.Error(), "cannot reach the PostgreSQL server") || !strings.Contains(err.Error(), dir) {
		t.Errorf("the error does not say the server was not reached at the URL: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("gave up after %v", d)
	}
}

// Close stops every goroutine the pool started.
func TestPostgresCloseLeavesNoGoroutine(t *testing.T) {
	u := pgtest.Database(t)
	before := goleak.IgnoreCurrent()
	s, err := Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, claude.SessionKey{ProjectKey: "p", SessionID: "s"}, entry("1"))
	if _, err := s.Load(t.Context(), claude.SessionKey{ProjectKey: "p", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	goleak.VerifyNone(t, before)
}

// A durable store (a team's worker: its machine may die with the CLI's
// own transcript files) keeps every entry whose append returned through a
// crash of the server (issue 44: the store committed with
// synchronous_commit off, and a crash left a hole in a transcript).
func TestADurableStoreKeepsEveryStoredEntryThroughAServerCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := pgtest.StartServer(ctx, pgtest.Options{Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Remove() })
	u, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, u, Durable())
	if err != nil {
		t.Fatal(err)
	}
	key := claude.SessionKey{ProjectKey: "p", SessionID: "a1b2c3d4-0000-4000-8000-00000000d0d0"}
	const n = 300
	for i := range n {
		e := json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"00000000-0000-4000-8000-%012d","message":{"content":"entry %d"}}`, i, i))
		if err := s.Append(ctx, key, []json.RawMessage{e}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if err := srv.Crash(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("%v\n%s", err, srv.Log())
	}
	s, err = Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Errorf("after the crash the transcript holds %d of the %d entries stored", len(got), n)
	}
}
