// Package postgres is flower's session store in a PostgreSQL database that a
// team's machines share (github.com/jackc/pgx/v5): the same contract as
// store/sqlite, so a run started on one machine resumes its sessions on
// another. Its errors wrap the store package's, and every message shows the
// database URL with its password masked (Redact).
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/pgmigrate"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/internal/rows"
)

// migrations are the session store's schema versions, applied in file name
// order on open; a released file never changes, a new version is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// component is how the session store's tables are known to pgmigrate.
func component() (pgmigrate.Component, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return pgmigrate.Component{}, err
	}
	c := pgmigrate.Component{Name: "sessions", TablePrefix: "session_"}
	for _, n := range names { // fs.Glob returns them sorted
		b, err := migrations.ReadFile(n)
		if err != nil {
			return pgmigrate.Component{}, err
		}
		c.Migrations = append(c.Migrations, string(b))
	}
	return c, nil
}

// lockTimeout bounds how long a statement waits for a lock another
// connection holds (a session's append lock, the clock row) when the URL
// sets no lock_timeout of its own: as long as store/sqlite's busy timeout.
const lockTimeout = 30 * time.Second

// connectTimeout bounds Open's first connection when the URL sets no
// connect_timeout, so an unreachable host fails instead of hanging.
const connectTimeout = 15 * time.Second

// sessionLockClass is the first key of the advisory lock an Append or
// Delete holds on its session (the second is the hash of the session's main
// row key): two-key advisory locks live apart from pgmigrate's one-key lock.
// One lock for the main transcript and its subagents' means a Delete of a
// session cannot interleave with an Append to one of its subkeys, as
// SQLite's single writer guarantees.
const sessionLockClass = 0x73657373 // "sess"

// queueSessionLock queues the statement that takes the session's lock for
// the rest of the transaction.
func queueSessionLock(b *pgx.Batch, key claude.SessionKey) {
	b.Queue(`select pg_advisory_xact_lock($1, hashtext($2))`, sessionLockClass, key.ProjectKey+"/"+key.SessionID)
}

// Store is a claude.SessionStore in a PostgreSQL database, shared by every
// flower process, on any machine, that opens the same URL. It implements
// every optional capability of claude.SessionStore plus store.ProjectLister,
// store.SessionChecker and store.LastContextReader.
//
// Append stores entries as compact JSON bytes and skips an entry whose
// "uuid" string is already stored for its key or appears earlier in the
// batch (entries without one are never deduplicated). Each Append is one
// transaction: all of the batch or nothing; appends to one session (its
// main transcript and its subagents') take turns under an advisory lock. An
// Append that stores something stamps its key with the next tick of the
// database's strictly increasing millisecond clock, max(now, last+1), read
// and moved inside the transaction, and for a main key folds the new
// entries into the session's summary (claude.FoldSessionSummary) under the
// same mtime. A batch that stores nothing (empty, or all replays) changes
// nothing.
//
// A Store is safe for concurrent use.
type Store struct {
	// Now is the clock mtimes come from; nil means the database server's
	// clock, which every machine sharing the database agrees on. Set it
	// before the first call; tests use it for deterministic mtimes.
	Now func() time.Time

	url    string // redacted: what messages show
	user   string // whom the server authenticates
	secret string // the password, never shown
	pool   *pgxpool.Pool
}

var (
	_ claude.SessionStore         = (*Store)(nil)
	_ claude.SessionLister        = (*Store)(nil)
	_ claude.SessionSummaryLister = (*Store)(nil)
	_ claude.SessionDeleter       = (*Store)(nil)
	_ claude.SubkeyLister         = (*Store)(nil)
	_ claude.IdempotentStore      = (*Store)(nil)
	_ store.ProjectLister         = (*Store)(nil)
	_ store.SessionChecker        = (*Store)(nil)
	_ store.LastContextReader     = (*Store)(nil)
)

// Open connects to the database at url (postgres://user:password@host:port/
// database, or a keyword/value connection string) and brings the session
// store's tables to this flower's schema version, creating them in an empty
// database. Statements wait at most 30 s for a lock another process holds
// unless the URL sets lock_timeout.
//
// It fails, with one line naming the URL with its password masked, when the
// URL does not parse, the server cannot be reached or refuses the user or
// password, the database does not exist, a newer flower migrated the
// database (store.ErrNewerSchema), or the session tables were changed by
// hand (store.ErrCorrupt).
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	secret := PasswordOf(url)
	s := &Store{url: Redact(url), secret: secret}
	if strings.TrimSpace(url) == "" {
		return nil, errors.New("store: open: no database URL given; pass one like postgres://USER:PASSWORD@HOST:5432/DATABASE")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		reason := err
		if inner := errors.Unwrap(err); inner != nil {
			reason = inner
		}
		return nil, scrub(fmt.Errorf("store: open %s: the database URL does not parse; write it as postgres://USER:PASSWORD@HOST:5432/DATABASE: %w",
			s.url, reason), secret)
	}
	s.user = cfg.ConnConfig.User
	if _, set := cfg.ConnConfig.RuntimeParams["lock_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt(lockTimeout.Milliseconds(), 10)
	}
	if _, set := cfg.ConnConfig.RuntimeParams["synchronous_commit"]; o.durable {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	} else if !set {
		// A commit returns before the server flushes its WAL, as
		// store/sqlite's synchronous=NORMAL does: a crash of the server may
		// drop the last commits (the CLI's own JSONL is the other copy) but
		// never corrupts, and other connections see a commit at once.
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		cfg.ConnConfig.RuntimeParams["application_name"] = "flower"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	start := time.Now()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.fail(ctx, "open", start, err)
	}
	s.pool = pool
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, s.fail(ctx, "open", start, err)
	}
	c, err := component()
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open %s: read the schema: %w", s.url, err)
	}
	if err := pgmigrate.Apply(ctx, pool, c); err != nil {
		pool.Close()
		switch {
		case errors.Is(err, pgmigrate.ErrNewerSchema):
			return nil, scrub(fmt.Errorf("store: open %s: %w", s.url, also{err, store.ErrNewerSchema}), secret)
		case errors.Is(err, pgmigrate.ErrSchemaChanged):
			return nil, scrub(fmt.Errorf("store: open %s: %w", s.url, also{err, store.ErrCorrupt}), secret)
		}
		return nil, s.fail(ctx, "open", start, err)
	}
	return s, nil
}

// URL returns the database URL with its password masked.
func (s *Store) URL() string { return s.url }

// Close closes the pool's connections; calls after Close fail.
func (s *Store) Close() error {
	s.pool.Close()
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
// It fails, storing nothing of the batch, when ctx is done, when another
// process kept the session's lock or the clock past the lock timeout
// (store.ErrLocked), when key is invalid (store.ErrInvalidKey), when an entry
// is not a JSON object (store.ErrInvalidEntry), or when the database fails
// (a connection cut, the server gone). Retrying the same batch then stores
// each entry with a uuid exactly once.
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
	op := "append " + sk
	start := time.Now()
	// The transaction spans two round trips on one connection, its BEGIN
	// in the first and its COMMIT in the second: a one-entry append costs
	// two round trips, not four.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.fail(ctx, op, start, err)
	}
	// The pool closes a connection released inside a transaction, and the
	// server then rolls the transaction back.
	defer conn.Release()
	committed := false
	defer func() {
		if !committed {
			rollback(ctx, conn)
		}
	}()

	// The first round trip: the session's lock, where the key's entries
	// go on, which of the batch's uuids it holds, and the summary the new
	// entries fold into.
	var uids []string
	for _, r := range batch {
		if r.UUID != "" {
			uids = append(uids, r.UUID)
		}
	}
	var (
		next    int64
		stored  []string
		summary []byte
	)
	read := &pgx.Batch{}
	read.Queue(`begin`)
	queueSessionLock(read, key)
	read.Queue(`select next_seq from session_meta where store_key = $1`, sk).QueryRow(func(r pgx.Row) error {
		if err := r.Scan(&next); !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return nil
	})
	read.Queue(`select uid from session_entries where store_key = $1 and uid = any($2)`, sk, uids).Query(func(r pgx.Rows) error {
		var err error
		stored, err = pgx.CollectRows(r, pgx.RowTo[string])
		return err
	})
	if key.Subpath == "" {
		read.Queue(`select data from session_summaries where project_key = $1 and session_id = $2`, key.ProjectKey, key.SessionID).QueryRow(func(r pgx.Row) error {
			if err := r.Scan(&summary); !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		})
	}
	if err := conn.SendBatch(ctx, read).Close(); err != nil {
		if ctx.Err() != nil { // the wait here is for the session's lock
			return scrub(fmt.Errorf("store: %s on %s: %w: the context ended after %v of waiting for the session's append lock, which another connection or process (a second flower on this run?) holds: %w",
				op, s.url, store.ErrLocked, since(start), ctx.Err()), s.secret)
		}
		return s.fail(ctx, op, start, err)
	}

	seen := make(map[string]bool, len(stored)+len(batch))
	for _, u := range stored {
		seen[u] = true
	}
	var (
		seqs     []int64
		uidCol   []*string
		payloads [][]byte
		added    []json.RawMessage
	)
	for _, r := range batch {
		if r.UUID != "" {
			if seen[r.UUID] {
				continue
			}
			seen[r.UUID] = true
		}
		seqs = append(seqs, next)
		next++
		if r.UUID != "" {
			uidCol = append(uidCol, &r.UUID)
		} else {
			uidCol = append(uidCol, nil)
		}
		payloads = append(payloads, r.Payload)
		added = append(added, r.Payload)
	}
	if len(added) == 0 {
		return nil // all replays: the key's mtime and summary stay as they were
	}

	// The second round trip writes the rows, ticks the clock (taking its row
	// lock last, so appends to other keys wait for each other only this
	// long) and stamps the key and its summary.
	var now *int64
	if s.Now != nil {
		ms := s.Now().UnixMilli()
		now = &ms
	}
	write := &pgx.Batch{}
	write.Queue(`insert into session_entries (store_key, seq, uid, payload)
		select $1, seq, uid, payload from unnest($2::bigint[], $3::text[], $4::bytea[]) as t(seq, uid, payload)`,
		sk, seqs, uidCol, payloads)
	write.Queue(`with tick as (
			update session_clock set mtime = greatest(mtime + 1, coalesce($2::bigint, (extract(epoch from clock_timestamp()) * 1000)::bigint))
			returning mtime)
		insert into session_meta (store_key, mtime, next_seq) select $1, mtime, $3 from tick
		on conflict (store_key) do update set mtime = excluded.mtime, next_seq = excluded.next_seq`,
		sk, now, next)
	if key.Subpath == "" { // subagent transcripts do not change the session's summary
		data := claude.FoldSessionSummary(summary, key, added)
		write.Queue(`insert into session_summaries (project_key, session_id, mtime, data)
			select $1, $2, mtime, $3 from session_meta where store_key = $4
			on conflict (project_key, session_id) do update set mtime = excluded.mtime, data = excluded.data`,
			key.ProjectKey, key.SessionID, data, sk)
	}
	write.Queue(`commit`)
	if err := conn.SendBatch(ctx, write).Close(); err != nil {
		return s.fail(ctx, op, start, err)
	}
	committed = true
	return nil
}

// Load returns the entries stored for key in append order, each the compact
// JSON of what was appended, or nil (and no error) when key was never
// written. It fails when ctx is done, key is invalid (store.ErrInvalidKey)
// or the database fails.
func (s *Store) Load(ctx context.Context, key claude.SessionKey) ([]json.RawMessage, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	sk, err := rows.Key(key)
	if err != nil {
		return nil, err
	}
	cur, err := s.pool.Query(ctx, `select payload from session_entries where store_key = $1 order by seq`, sk)
	if err != nil {
		return nil, s.fail(ctx, "load "+sk, start, err)
	}
	defer cur.Close()
	var out []json.RawMessage
	// Payloads share a few growing allocations instead of one each.
	var arena []byte
	chunk := 8 << 10
	for cur.Next() {
		p := cur.RawValues()[0] // bytea in binary: the stored bytes
		if cap(arena)-len(arena) < len(p) {
			chunk = min(2*chunk, 1<<20)
			arena = make([]byte, 0, max(len(p), chunk))
		}
		from := len(arena)
		arena = append(arena, p...)
		out = append(out, json.RawMessage(arena[from:len(arena):len(arena)]))
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
	cur, err := s.pool.Query(ctx, `select store_key, mtime from session_meta where store_key >= $1 and store_key < $2
		order by mtime desc, store_key`, lo, hi)
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	var out []claude.SessionInfo
	var sk string
	var mtime int64
	_, err = pgx.ForEachRow(cur, []any{&sk, &mtime}, func() error {
		if id := sk[len(lo):]; !strings.Contains(id, "/") {
			out = append(out, claude.SessionInfo{SessionID: id, Mtime: mtime})
		}
		return nil
	})
	if err != nil {
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
	cur, err := s.pool.Query(ctx, `select session_id, mtime, data from session_summaries where project_key = $1
		order by mtime desc, session_id`, projectKey)
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	var out []claude.SessionSummary
	var sum claude.SessionSummary
	var data []byte
	_, err = pgx.ForEachRow(cur, []any{&sum.SessionID, &sum.Mtime, &data}, func() error {
		sum.Data = json.RawMessage(append([]byte(nil), data...))
		out = append(out, sum)
		return nil
	})
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	return out, nil
}

// Delete removes key's entries. Deleting a main key also removes all its
// subkeys and its summary; deleting a subkey removes only it. Deleting a key
// never written does nothing. It fails when ctx is done, key is invalid
// (store.ErrInvalidKey) or the database fails.
func (s *Store) Delete(ctx context.Context, key claude.SessionKey) error {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: delete: %w", err)
	}
	sk, err := rows.Key(key)
	if err != nil {
		return err
	}
	op := "delete " + sk
	b := &pgx.Batch{}
	// An Append to the session (or a subkey of it) in flight finishes
	// first, so what it stored is deleted too.
	queueSessionLock(b, key)
	b.Queue(`delete from session_entries where store_key = $1`, sk)
	b.Queue(`delete from session_meta where store_key = $1`, sk)
	if key.Subpath == "" {
		lo, hi := rows.Range(sk)
		b.Queue(`delete from session_entries where store_key >= $1 and store_key < $2`, lo, hi)
		b.Queue(`delete from session_meta where store_key >= $1 and store_key < $2`, lo, hi)
		b.Queue(`delete from session_summaries where project_key = $1 and session_id = $2`, key.ProjectKey, key.SessionID)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return s.fail(ctx, op, start, err)
	}
	return nil
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
	cur, err := s.pool.Query(ctx, `select store_key from session_meta where store_key >= $1 and store_key < $2 order by store_key`, lo, hi)
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	keys, err := pgx.CollectRows(cur, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(ctx, op, start, err)
	}
	var out []string
	for _, k := range keys {
		out = append(out, k[len(lo):])
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
	cur, err := s.pool.Query(ctx, `select distinct split_part(store_key, '/', 1) collate "C" as project from session_meta order by project`)
	if err != nil {
		return nil, s.fail(ctx, "list projects", start, err)
	}
	out, err := pgx.CollectRows(cur, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(ctx, "list projects", start, err)
	}
	if len(out) == 0 {
		return nil, nil
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
	var has bool
	if err := s.pool.QueryRow(ctx, `select exists (select 1 from session_meta where store_key = $1)`, sk).Scan(&has); err != nil {
		return false, s.fail(ctx, "has session "+sk, start, err)
	}
	return has, nil
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
	cur, err := s.pool.Query(ctx, `select payload from session_entries where store_key = $1 order by seq desc limit $2`, sk, rows.LastContextScan)
	if err != nil {
		return 0, s.fail(ctx, op, start, err)
	}
	defer cur.Close()
	for cur.Next() {
		if n := rows.UsageContext(cur.RawValues()[0]); n > 0 {
			return n, nil
		}
	}
	if err := cur.Err(); err != nil {
		return 0, s.fail(ctx, op, start, err)
	}
	return 0, nil
}

// also is err, which says it all, wrapping sentinel as well for callers
// that branch on the store's errors.
type also struct{ err, sentinel error }

func (e also) Error() string   { return e.err.Error() }
func (e also) Unwrap() []error { return []error{e.err, e.sentinel} }

// rollback ends the transaction open on conn, if any. It runs after the
// caller's context may have ended, so it has a bound of its own; a
// connection that cannot say ROLLBACK stays inside its transaction, and the
// pool closes it on release.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() == 'I' {
		return // not in a transaction: nothing began, or it ended
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "rollback") // the error that matters is the caller's
}

// since is the time from start, rounded for a message.
func since(start time.Time) time.Duration {
	return time.Since(start).Round(time.Millisecond)
}

// fail turns an error of the operation op, begun at start, into one line
// that names the database (password masked), says what went wrong and what
// to do, and wraps the store error a caller branches on.
func (s *Store) fail(ctx context.Context, op string, start time.Time, err error) error {
	where := "store: " + op + " on " + s.url
	if op == "open" {
		where = "store: open " + s.url
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return scrub(fmt.Errorf("%s: %w after %v", where, err, since(start)), s.secret)
		}
		return scrub(fmt.Errorf("%s: %w after %v (%v)", where, ctxErr, since(start), err), s.secret)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "55P03": // lock_not_available: lock_timeout
			return scrub(fmt.Errorf("%s: %w: another connection (a second flower on this run?) held a lock this needs, and PostgreSQL gave up after %v (lock_timeout); stop the other flower or retry (%w)",
				where, store.ErrLocked, since(start), err), s.secret)
		case pe.Code == "57014": // query_canceled: statement_timeout
			return scrub(fmt.Errorf("%s: %w: the statement ran past the server's statement_timeout after %v, likely waiting for another connection's lock; retry, or raise statement_timeout (%w)",
				where, store.ErrLocked, since(start), err), s.secret)
		case pe.Code == "28P01" || pe.Code == "28000": // invalid_password, invalid_authorization_specification
			return scrub(fmt.Errorf("%s: the server refused the password of user %q, or the user (%s); check the user and password in the database URL: %w",
				where, s.user, pe.Code, err), s.secret)
		case pe.Code == "3D000": // invalid_catalog_name
			return scrub(fmt.Errorf("%s: the database does not exist; create it (createdb NAME) or fix the URL's database name: %w", where, err), s.secret)
		case pe.Code == "42P01" || pe.Code == "42703" || pe.Code == "42883": // undefined table, column, function
			return scrub(fmt.Errorf("%s: %w: a table or column of flower's session store is missing (changed by hand?); restore it, or give flower a new database: %w",
				where, store.ErrCorrupt, err), s.secret)
		case pe.Code == "53100": // disk_full
			return scrub(fmt.Errorf("%s: the database server's disk is full; free some space and retry: %w", where, err), s.secret)
		case strings.HasPrefix(pe.Code, "57P"): // admin_shutdown, crash_shutdown, cannot_connect_now
			return scrub(fmt.Errorf("%s: the server closed the connection (%s: restarting, shut down, or the connection was terminated); nothing of this operation was kept, retry when it is back: %w",
				where, pe.Code, err), s.secret)
		}
		return scrub(fmt.Errorf("%s: %w", where, err), s.secret)
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) {
		return scrub(fmt.Errorf("%s: cannot reach the PostgreSQL server; check that it runs and that the URL's host and port are right, then retry: %w", where, err), s.secret)
	}
	return scrub(fmt.Errorf("%s: %w", where, err), s.secret)
}

// Option changes how Open connects.
type Option func(*options)

type options struct{ durable bool }

// Durable makes every commit wait until the server has flushed it to its
// WAL (synchronous_commit on): for a store that holds the only copy of
// what it is given, as a team's worker does, whose machine may die with
// the CLI's own transcript files. Without it a crash of the server may
// drop the last commits.
func Durable() Option { return func(o *options) { o.durable = true } }
