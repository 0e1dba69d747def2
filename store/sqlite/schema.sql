-- The session store's schema (spec supplement §3.1). Every statement is
-- idempotent: Open runs this file on every start.

-- entries holds every stored transcript entry. store_key is
-- "project_key/session_id" for a main transcript and
-- "project_key/session_id/subpath" for a subagent's; seq is the append
-- order within a key; uid is the entry's "uuid" (NULL when it has none);
-- payload is the entry as compact JSON text.
CREATE TABLE IF NOT EXISTS entries (
	store_key TEXT    NOT NULL,
	seq       INTEGER NOT NULL,
	uid       TEXT,
	payload   TEXT    NOT NULL,
	PRIMARY KEY (store_key, seq)
);

-- A uuid is stored once per key: Append inserts with ON CONFLICT DO NOTHING
-- against this index, which is how replays are skipped.
CREATE UNIQUE INDEX IF NOT EXISTS entries_uid ON entries (store_key, uid) WHERE uid IS NOT NULL;

-- meta has one row per written key: its last write time (Unix ms, on the
-- store's strictly increasing clock) and the seq its next entry gets.
CREATE TABLE IF NOT EXISTS meta (
	store_key TEXT    PRIMARY KEY,
	mtime     INTEGER NOT NULL,
	next_seq  INTEGER NOT NULL
);

-- The clock reads max(mtime) inside every write transaction.
CREATE INDEX IF NOT EXISTS meta_mtime ON meta (mtime);

-- summaries holds one claude.FoldSessionSummary object per main transcript,
-- stamped with the same mtime as its meta row.
CREATE TABLE IF NOT EXISTS summaries (
	project_key TEXT    NOT NULL,
	session_id  TEXT    NOT NULL,
	mtime       INTEGER NOT NULL,
	data        TEXT    NOT NULL,
	PRIMARY KEY (project_key, session_id)
);
