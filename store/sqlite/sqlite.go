// Package sqlite is flower's default session store: a claude.SessionStore
// in one SQLite file (modernc.org/sqlite, no cgo) that several flower
// processes on one machine can share. Its errors wrap the store package's.
package sqlite

import (
	"context"
	"database/sql"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/internal/rows"
)

// schema creates the tables if they are missing; see the file for what each
// column holds.
//
//go:embed schema.sql
var schema string

// schemaVersion is stored in PRAGMA user_version. A database with a higher
// one was written by a newer flower and is refused rather than misread.
const schemaVersion = 1

// busyTimeout bounds how long a statement waits for another connection's
// write lock when its context has no earlier deadline.
const busyTimeout = 30 * time.Second

// Store is a claude.SessionStore in one SQLite file, flower's durable copy of
// every transcript the CLI mirrors. It implements every optional capability
// of claude.SessionStore plus ProjectLister, SessionChecker and
// LastContextReader.
//
// Append stores entries as compact JSON and skips an entry whose "uuid"
// string is already stored for its key or appears earlier in the batch
// (entries without one are never deduplicated). Each Append is one
// transaction: all of the batch or nothing. An Append that stores something
// stamps its key with the next tick of a strictly increasing millisecond
// clock, max(now, last+1), where last is the newest mtime in the database, so
// the clock stays monotonic across processes sharing the file; for a main
// key it also folds the new entries into the session's summary
// (claude.FoldSessionSummary) under the same mtime. A batch that stores
// nothing (empty, or all replays) changes nothing.
//
// Several goroutines and several processes may use one database at once:
// writers take the write lock in turn (BEGIN IMMEDIATE), readers never wait
// for them (WAL). A Store is safe for concurrent use.
type Store struct {
	// Now is the clock mtimes come from; nil means time.Now. Set it before
	// the first call; tests use it for deterministic mtimes.
	Now func() time.Time

	path  string
	db    *sql.DB
	stmts appendStmts
	write chan struct{} // one writer per process at a time; holds last
	last  int64         // the newest mtime this value wrote

	// afterAppend, when set, sees the mtime of every committed Append that
	// stored something, in commit order (tests check the clock with it).
	afterAppend func(key claude.SessionKey, mtime int64)
}

var (
	_ claude.SessionStore         = (*Store)(nil)
	_ claude.SessionLister        = (*Store)(nil)
	_ claude.SessionSummaryLister = (*Store)(nil)
	_ claude.SessionDeleter       = (*Store)(nil)
	_ claude.SubkeyLister         = (*Store)(nil)
	_ store.ProjectLister         = (*Store)(nil)
	_ store.SessionChecker        = (*Store)(nil)
	_ store.LastContextReader     = (*Store)(nil)
)

// Open opens the database at path, creating it and its parent directories
// when missing, and creates the tables it lacks. It may wait up to 30 s for
// another process that holds the database's lock. A new file is readable by
// this user only (0600), and so are the -wal and -shm files SQLite keeps
// beside it: a transcript holds every tool's output. New parent directories
// are 0700.
//
// It fails when the directory cannot be created, when the file is not an
// SQLite database (the error wraps store.ErrCorrupt and says to move the file
// aside), when a newer flower wrote it (store.ErrNewerSchema), when another
// process kept it locked too long (store.ErrLocked), or when the file cannot be
// opened or written.
func Open(path string) (*Store, error) {
	start := time.Now()
	if path == "" {
		return nil, errors.New("store: open: no path given; pass the database file, e.g. runs/sessions.db")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: open %s: create its directory: %w", abs, err)
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("store: open %s: it is a directory; pass the database file inside it, e.g. %s", abs, filepath.Join(abs, "sessions.db"))
	}
	if err := createPrivate(abs); err != nil {
		return nil, fmt.Errorf("store: open %s: %w; check that its directory is writable by this user", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", abs, err)
	}
	// Connections are cheap to keep and costly to open (each runs the
	// pragmas); a few readers run beside the one writer.
	n := max(4, runtime.GOMAXPROCS(0))
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	s := &Store{path: abs, db: db, write: make(chan struct{}, 1)}
	if err := s.init(context.Background(), start); err != nil {
		db.Close()
		return nil, err
	}
	if err := s.prepare(context.Background(), start); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// createPrivate creates an empty file at path, readable by this user only,
// unless something is there already. An empty file is an empty database,
// and SQLite gives the -wal and -shm files it creates the mode of the
// database file, so all three stay private.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // an existing database keeps the mode its owner gave it
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// dsn is the modernc.org/sqlite data source name for the file at abs. The
// pragmas run on every new connection. The journal mode is not among them:
// it is a property of the file, set once by init (see setWAL).
func dsn(abs string) string {
	q := url.Values{}
	// Two flower processes may write one database: wait for the other's
	// transaction rather than fail at once (the caller's context can end
	// the wait sooner).
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyTimeout.Milliseconds(), 10)+")")
	// NORMAL is durable enough in WAL mode and fast: commits skip fsync; a
	// power loss may drop the last commits but never corrupts the file, and
	// the CLI's own JSONL is the other copy.
	q.Add("_pragma", "synchronous(NORMAL)")
	// Every transaction takes the write lock when it begins, so writers
	// queue instead of failing to upgrade a read lock halfway.
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return u.String() + "?" + q.Encode()
}

func (s *Store) init(ctx context.Context, start time.Time) error {
	op := "open " + s.path
	if err := s.setWAL(ctx, op, start); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(ctx, op, start, err)
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return s.fail(ctx, op, start, err)
	}
	if version > schemaVersion {
		return fmt.Errorf("store: %s: %w (schema version %d, this flower knows %d); upgrade flower or use another run directory", op, store.ErrNewerSchema, version, schemaVersion)
	}
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return s.fail(ctx, op, start, err)
	}
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(schemaVersion)); err != nil {
		return s.fail(ctx, op, start, err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, op, start, err)
	}
	return nil
}

// setWAL puts the database in WAL mode, in which readers (a listing, a
// resume in another process) never wait for the writer, nor the writer for
// them. The mode is stored in the file, so it is set once and every later
// connection, of any process, finds it.
//
// Switching a rollback-journal file (a new one) to WAL upgrades a read lock
// to an exclusive one; when another process does the same at that moment,
// SQLite answers BUSY at once, without its busy handler, to avoid a
// deadlock. So a BUSY is retried here, backing off, until the busy timeout
// from start or the context ends.
func (s *Store) setWAL(ctx context.Context, op string, start time.Time) error {
	deadline := start.Add(busyTimeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		var mode string
		err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				// SQLite keeps the old mode where WAL cannot work (a file
				// system without shared memory): slower, still correct.
				slog.Warn("store: the database stays out of WAL mode; readers will wait for writers", "path", s.path, "journal_mode", mode)
			}
			return nil
		}
		if !isBusy(err) || time.Now().Add(pause).After(deadline) {
			return s.fail(ctx, op, start, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return s.lockWaitErr(ctx, op, start)
		}
	}
}

// isBusy reports whether err is SQLite's BUSY or LOCKED.
func isBusy(err error) bool {
	var se *sqlitedrv.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. Calls after Close fail. It returns the error of
// closing the connections, if any.
func (s *Store) Close() error {
	for _, st := range s.stmts.all() {
		if *st != nil {
			(*st).Close() // closing the database reports what matters
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// appendStmts are Append's statements, prepared once: SQLite spends about
// a quarter of a one-entry Append parsing SQL otherwise.
type appendStmts struct {
	nextSeq, insert, newest, putMeta, summary, putSummary *sql.Stmt
}

func (st *appendStmts) all() []**sql.Stmt {
	return []**sql.Stmt{&st.nextSeq, &st.insert, &st.newest, &st.putMeta, &st.summary, &st.putSummary}
}

func (s *Store) prepare(ctx context.Context, start time.Time) error {
	queries := map[**sql.Stmt]string{
		&s.stmts.nextSeq: `SELECT next_seq FROM meta WHERE store_key = ?`,
		// A uuid already stored for the key (or earlier in the batch) hits
		// the partial unique index and the row is skipped.
		&s.stmts.insert: `INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?)
			ON CONFLICT (store_key, uid) WHERE uid IS NOT NULL DO NOTHING`,
		&s.stmts.newest: `SELECT COALESCE(MAX(mtime), 0) FROM meta`,
		&s.stmts.putMeta: `INSERT INTO meta (store_key, mtime, next_seq) VALUES (?, ?, ?)
			ON CONFLICT (store_key) DO UPDATE SET mtime = excluded.mtime, next_seq = excluded.next_seq`,
		&s.stmts.summary: `SELECT data FROM summaries WHERE project_key = ? AND session_id = ?`,
		&s.stmts.putSummary: `INSERT INTO summaries (project_key, session_id, mtime, data) VALUES (?, ?, ?, ?)
			ON CONFLICT (project_key, session_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data`,
	}
	for _, dst := range s.stmts.all() {
		st, err := s.db.PrepareContext(ctx, queries[dst])
		if err != nil {
			return s.fail(ctx, "open "+s.path, start, err)
		}
		*dst = st
	}
	return nil
}

// IdempotentAppend tells the driver's mirror that a timed-out Append may be
// sent again: a failed Append stored nothing (one transaction), and an
// entry whose uuid is stored is skipped.
func (s *Store) IdempotentAppend() bool { return true }

// Append stores entries for key in one transaction, skipping those whose
// uuid is already stored for key or earlier in the batch. Appending nothing
// does nothing.
//
// It fails, storing nothing of the batch, when ctx is done (while waiting for
// another writer the error wraps store.ErrLocked and the context's error), when key
// is invalid (store.ErrInvalidKey), when an entry is not a JSON object
// (store.ErrInvalidEntry), or when the database fails.
func (s *Store) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: append: %w", err)
	}
	sk, err := rows.Key(key)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	batch, err := rows.Prepare(sk, entries)
	if err != nil {
		return err
	}
	var mtime int64
	return s.writeTx(ctx, "append "+sk, func(tx *sql.Tx) error {
		var next int64
		switch err := tx.StmtContext(ctx, s.stmts.nextSeq).QueryRowContext(ctx, sk).Scan(&next); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		}
		insert := tx.StmtContext(ctx, s.stmts.insert)
		var added []json.RawMessage
		for _, r := range batch {
			res, err := insert.ExecContext(ctx, sk, next, nullable(r.UUID), string(r.Payload)) // TEXT, as the schema says
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				next++
				added = append(added, r.Payload)
			}
		}
		if len(added) == 0 {
			return nil // all replays: the key's mtime and summary stay as they were
		}
		// The clock reads the newest mtime inside the write transaction, so
		// it stays monotonic across processes sharing the file.
		var newest int64
		if err := tx.StmtContext(ctx, s.stmts.newest).QueryRowContext(ctx).Scan(&newest); err != nil {
			return err
		}
		mtime = max(s.now().UnixMilli(), newest+1, s.last+1)
		if _, err := tx.StmtContext(ctx, s.stmts.putMeta).ExecContext(ctx, sk, mtime, next); err != nil {
			return err
		}
		if key.Subpath != "" {
			return nil // subagent transcripts do not change the session's summary
		}
		var prev []byte
		switch err := tx.StmtContext(ctx, s.stmts.summary).QueryRowContext(ctx, key.ProjectKey, key.SessionID).Scan(&prev); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		}
		data := claude.FoldSessionSummary(prev, key, added)
		_, err := tx.StmtContext(ctx, s.stmts.putSummary).ExecContext(ctx, key.ProjectKey, key.SessionID, mtime, string(data))
		return err
	}, func() {
		if mtime != 0 {
			s.last = mtime
			if s.afterAppend != nil {
				s.afterAppend(key, mtime)
			}
		}
	})
}

// writeTx runs fn in a write transaction: one writer of this process at a
// time, and BEGIN IMMEDIATE against the others. committed runs after a
// successful commit, still holding the writer slot.
func (s *Store) writeTx(ctx context.Context, op string, fn func(*sql.Tx) error, committed func()) error {
	start := time.Now()
	select {
	case s.write <- struct{}{}:
	case <-ctx.Done():
		return s.lockWaitErr(ctx, op, start)
	}
	defer func() { <-s.write }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		if ctx.Err() != nil {
			return s.lockWaitErr(ctx, op, start)
		}
		return s.fail(ctx, op, start, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback() // the error that matters is fn's
		return s.fail(ctx, op, start, err)
	}
	if err := tx.Commit(); err != nil {
		return s.fail(ctx, op, start, err)
	}
	if committed != nil {
		committed()
	}
	return nil
}

func (s *Store) lockWaitErr(ctx context.Context, op string, start time.Time) error {
	return fmt.Errorf("store: %s: %w: the context ended after %v of waiting for the write lock on %s, which another connection or process (a second flower on the same run directory?) holds: %w",
		op, store.ErrLocked, since(start), s.path, ctx.Err())
}

// since is the time from start, rounded for a message.
func since(start time.Time) time.Duration {
	return time.Since(start).Round(time.Millisecond)
}

// fail turns a database error of the operation op, begun at start, into one
// that says what to do.
func (s *Store) fail(ctx context.Context, op string, start time.Time, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("store: %s: %w", op, err)
		}
		return fmt.Errorf("store: %s: %w (%v)", op, ctxErr, err)
	}
	var se *sqlitedrv.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return fmt.Errorf("store: %s: %w — move %s aside and rerun; flower will create a fresh one (%w)", op, store.ErrCorrupt, s.path, err)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		// Only what was measured: SQLite may give up long before its busy
		// timeout (to avoid a deadlock), so the timeout says nothing of how
		// long the lock was held.
		return fmt.Errorf("store: %s: %w: SQLite found %s locked by another connection or process and gave up after %v; stop the other flower on this run directory or retry (%w)", op, store.ErrLocked, s.path, since(start), err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("store: %s: the disk holding %s is full; free some space and retry (%w)", op, s.path, err)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
		return fmt.Errorf("store: %s: cannot open or write %s; check that it and its directory are writable by this user (%w)", op, s.path, err)
	case sqlite3.SQLITE_IOERR:
		return fmt.Errorf("store: %s: I/O error on %s; check the disk and retry (%w)", op, s.path, err)
	}
	return fmt.Errorf("store: %s: %w", op, err)
}

// Load returns the entries stored for key in append order, each the compact
// JSON of what was appended, or nil (and no error) when key was never
// written. It fails when ctx is done, key is invalid (store.ErrInvalidKey) or the
// database fails.
func (s *Store) Load(ctx context.Context, key claude.SessionKey) ([]json.RawMessage, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	sk, err := rows.Key(key)
	if err != nil {
		return nil, err
	}
	cur, err := s.db.QueryContext(ctx, `SELECT payload FROM entries WHERE store_key = ? ORDER BY seq`, sk)
	if err != nil {
		return nil, s.fail(ctx, "load "+sk, start, err)
	}
	defer cur.Close()
	var out []json.RawMessage
	// Payloads share a few growing allocations instead of one each.
	var arena []byte
	chunk := 8 << 10
	for cur.Next() {
		var p sql.RawBytes
		if err := cur.Scan(&p); err != nil {
			return nil, s.fail(ctx, "load "+sk, start, err)
		}
		if cap(arena)-len(arena) < len(p) {
			chunk = min(2*chunk, 1<<20)
			arena = make([]byte, 0, max(len(p), chunk))
		}
		start := len(arena)
		arena = append(arena, p...)
		out = append(out, json.RawMessage(arena[start:len(arena):len(arena)]))
	}
	if err := cur.Err(); err != nil {
		return nil, s.fail(ctx, "load "+sk, start, err)
	}
	return out, nil
}

// ListSessions returns the main transcripts of projectKey (never subkeys),
// newest mtime first, or nil when it has none. It fails when ctx is done,
// projectKey is invalid (store.ErrInvalidKey) or the database fails.
func (s *Store) ListSessions(ctx context.Context, projectKey string) ([]claude.SessionInfo, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	if err := rows.CheckSegment("project key", projectKey); err != nil {
		return nil, err
	}
	op := "list sessions of " + projectKey
	lo, hi := rows.Range(projectKey)
	cur, err := s.db.QueryContext(ctx, `SELECT store_key, mtime FROM meta WHERE store_key >= ? AND store_key < ?
		ORDER BY mtime DESC, store_key`, lo, hi)
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	defer cur.Close()
	var out []claude.SessionInfo
	for cur.Next() {
		var sk string
		var mtime int64
		if err := cur.Scan(&sk, &mtime); err != nil {
			return nil, s.fail(ctx, op, start, err)
		}
		if id := sk[len(lo):]; !strings.Contains(id, "/") {
			out = append(out, claude.SessionInfo{SessionID: id, Mtime: mtime})
		}
	}
	if err := cur.Err(); err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	return out, nil
}

// ListSessionSummaries returns the summaries of projectKey's sessions,
// newest mtime first, or nil when it has none. Each Data is what
// claude.FoldSessionSummary returned, and each Mtime equals the session's
// ListSessions mtime. It fails when ctx is done, projectKey is invalid
// (store.ErrInvalidKey) or the database fails.
func (s *Store) ListSessionSummaries(ctx context.Context, projectKey string) ([]claude.SessionSummary, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: list summaries: %w", err)
	}
	if err := rows.CheckSegment("project key", projectKey); err != nil {
		return nil, err
	}
	op := "list summaries of " + projectKey
	cur, err := s.db.QueryContext(ctx, `SELECT session_id, mtime, data FROM summaries WHERE project_key = ?
		ORDER BY mtime DESC, session_id`, projectKey)
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	defer cur.Close()
	var out []claude.SessionSummary
	for cur.Next() {
		var sum claude.SessionSummary
		var data []byte
		if err := cur.Scan(&sum.SessionID, &sum.Mtime, &data); err != nil {
			return nil, s.fail(ctx, op, start, err)
		}
		sum.Data = data
		out = append(out, sum)
	}
	if err := cur.Err(); err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	return out, nil
}

// Delete removes key's entries. Deleting a main key also removes all its
// subkeys and its summary; deleting a subkey removes only it. Deleting a key
// never written does nothing. It fails when ctx is done (see Append), key is
// invalid (store.ErrInvalidKey) or the database fails.
func (s *Store) Delete(ctx context.Context, key claude.SessionKey) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete: %w", err)
	}
	sk, err := rows.Key(key)
	if err != nil {
		return err
	}
	return s.writeTx(ctx, "delete "+sk, func(tx *sql.Tx) error {
		type stmt struct {
			query string
			args  []any
		}
		stmts := []stmt{
			{`DELETE FROM entries WHERE store_key = ?`, []any{sk}},
			{`DELETE FROM meta WHERE store_key = ?`, []any{sk}},
		}
		if key.Subpath == "" {
			lo, hi := rows.Range(sk)
			stmts = append(stmts,
				stmt{`DELETE FROM entries WHERE store_key >= ? AND store_key < ?`, []any{lo, hi}},
				stmt{`DELETE FROM meta WHERE store_key >= ? AND store_key < ?`, []any{lo, hi}},
				stmt{`DELETE FROM summaries WHERE project_key = ? AND session_id = ?`, []any{key.ProjectKey, key.SessionID}},
			)
		}
		for _, st := range stmts {
			if _, err := tx.ExecContext(ctx, st.query, st.args...); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}

// ListSubkeys returns the subpaths stored under the session, sorted
// bytewise, or nil when it has none. It fails when ctx is done, the project
// key or session id is invalid (store.ErrInvalidKey) or the database fails.
func (s *Store) ListSubkeys(ctx context.Context, projectKey, sessionID string) ([]string, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: list subkeys: %w", err)
	}
	sk, err := rows.Key(claude.SessionKey{ProjectKey: projectKey, SessionID: sessionID})
	if err != nil {
		return nil, err
	}
	op := "list subkeys of " + sk
	lo, hi := rows.Range(sk)
	cur, err := s.db.QueryContext(ctx, `SELECT store_key FROM meta WHERE store_key >= ? AND store_key < ? ORDER BY store_key`, lo, hi)
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	defer cur.Close()
	var out []string
	for cur.Next() {
		var k string
		if err := cur.Scan(&k); err != nil {
			return nil, s.fail(ctx, op, start, err)
		}
		out = append(out, k[len(lo):])
	}
	if err := cur.Err(); err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	return out, nil
}

// Projects returns the project keys that hold any transcript, sorted
// bytewise, or nil when the store is empty. It fails when ctx is done or the
// database fails.
func (s *Store) Projects(ctx context.Context) ([]string, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: list projects: %w", err)
	}
	cur, err := s.db.QueryContext(ctx, `SELECT DISTINCT substr(store_key, 1, instr(store_key, '/') - 1) AS project FROM meta ORDER BY project`)
	if err != nil {
		return nil, s.fail(ctx, "list projects", start, err)
	}
	defer cur.Close()
	var out []string
	for cur.Next() {
		var p string
		if err := cur.Scan(&p); err != nil {
			return nil, s.fail(ctx, "list projects", start, err)
		}
		out = append(out, p)
	}
	if err := cur.Err(); err != nil {
		return nil, s.fail(ctx, "list projects", start, err)
	}
	return out, nil
}

// HasSession reports whether the session's main transcript has been
// written, reading one meta row and no entry. It fails when ctx is done, the
// key is invalid (store.ErrInvalidKey) or the database fails.
func (s *Store) HasSession(ctx context.Context, projectKey, sessionID string) (bool, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("store: has session: %w", err)
	}
	sk, err := rows.Key(claude.SessionKey{ProjectKey: projectKey, SessionID: sessionID})
	if err != nil {
		return false, err
	}
	var one int
	switch err := s.db.QueryRowContext(ctx, `SELECT 1 FROM meta WHERE store_key = ?`, sk).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, s.fail(ctx, "has session "+sk, start, err)
	}
	return true, nil
}

// LastContext returns the context size of the session's newest turn that
// reported usage: going newest first through the last 60 entries of the main
// transcript, the first whose message.usage gives a non-zero input_tokens +
// cache_read_input_tokens + cache_creation_input_tokens. It returns 0 when
// none does or the session was never written. It fails when ctx is done, the
// key is invalid (store.ErrInvalidKey) or the database fails.
func (s *Store) LastContext(ctx context.Context, projectKey, sessionID string) (int, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("store: last context: %w", err)
	}
	sk, err := rows.Key(claude.SessionKey{ProjectKey: projectKey, SessionID: sessionID})
	if err != nil {
		return 0, err
	}
	op := "last context of " + sk
	cur, err := s.db.QueryContext(ctx, `SELECT payload FROM entries WHERE store_key = ? ORDER BY seq DESC LIMIT ?`, sk, rows.LastContextScan)
	if err != nil {
		return 0, s.fail(ctx, op, start, err)
	}
	defer cur.Close()
	for cur.Next() {
		var p sql.RawBytes
		if err := cur.Scan(&p); err != nil {
			return 0, s.fail(ctx, op, start, err)
		}
		if n := rows.UsageContext(p); n > 0 {
			return n, nil
		}
	}
	if err := cur.Err(); err != nil {
		return 0, s.fail(ctx, op, start, err)
	}
	return 0, nil
}

// nullable is uid as the entries table stores it: NULL for an entry without
// a uuid, which the partial unique index never deduplicates.
func nullable(uid string) sql.NullString {
	return sql.NullString{String: uid, Valid: uid != ""}
}
