package store

import "errors"

// Errors every backend (store/sqlite, store/postgres) wraps, for callers to
// branch on with errors.Is whatever database holds the transcripts.
var (
	// ErrInvalidKey: a session key the store refuses: an empty project key
	// or session id, one holding '/' or NUL, or a subpath that could leave
	// its session (absolute, with "..", "." or empty segments, a backslash
	// or NUL).
	ErrInvalidKey = errors.New("invalid session key")
	// ErrInvalidEntry: an appended entry is not a JSON object. The whole
	// batch is refused.
	ErrInvalidEntry = errors.New("invalid transcript entry")
	// ErrCorrupt: the database is damaged, not a database, or not the
	// schema this flower wrote (a table or column changed by hand).
	ErrCorrupt = errors.New("database is damaged or not flower's")
	// ErrLocked: another connection held a lock the store needed and the
	// store stopped waiting: the database gave up (its busy or lock
	// timeout), or the caller's context ended.
	ErrLocked = errors.New("database is locked")
	// ErrNewerSchema: the database was written by a newer flower.
	ErrNewerSchema = errors.New("database was written by a newer flower")
)
