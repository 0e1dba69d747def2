package claude

import (
	"context"
	"encoding/json"
)

// SessionKey names one transcript in a SessionStore: the main transcript of a
// session (Subpath empty) or one of its subagent transcripts (Subpath like
// "subagents/agent-<id>", always '/'-joined and without ".jsonl").
type SessionKey struct {
	ProjectKey string `json:"project_key"`
	SessionID  string `json:"session_id"`
	Subpath    string `json:"subpath,omitempty"`
}

// SessionStore keeps transcript entries outside the CLI's own files. The
// driver appends every entry the CLI mirrors (--session-mirror) and loads a
// session back before a resume. Entries are opaque JSON objects; most carry a
// "uuid" that a store must treat as an idempotency key.
//
// Append and Load are required. The optional capabilities are found by
// interface assertion: SessionLister, SessionSummaryLister, SessionDeleter
// and SubkeyLister.
type SessionStore interface {
	// Append persists entries for key, in call order. Entries whose uuid is
	// already stored for key are skipped. Appending nothing is a no-op.
	Append(ctx context.Context, key SessionKey, entries []json.RawMessage) error
	// Load returns the entries stored for key in append order, deep-equal to
	// what was appended, or nil (and no error) when key was never written.
	Load(ctx context.Context, key SessionKey) ([]json.RawMessage, error)
}

// SessionInfo is one main transcript of a project, as ListSessions sees it.
type SessionInfo struct {
	SessionID string `json:"session_id"`
	// Mtime is the storage write time in Unix milliseconds, on the store's
	// own clock (not the entries' timestamps).
	Mtime int64 `json:"mtime"`
}

// SessionSummary is the fast listing form a store maintains inside Append.
type SessionSummary struct {
	SessionID string `json:"session_id"`
	// Mtime is on the same clock as SessionInfo.Mtime.
	Mtime int64           `json:"mtime"`
	Data  json.RawMessage `json:"data"`
}

// SessionLister lists a project's main transcripts (never subpath keys).
// Continue-most-recent with a store needs it.
type SessionLister interface {
	ListSessions(ctx context.Context, projectKey string) ([]SessionInfo, error)
}

// SessionSummaryLister lists the summaries a store folded in Append.
type SessionSummaryLister interface {
	ListSessionSummaries(ctx context.Context, projectKey string) ([]SessionSummary, error)
}

// SessionDeleter deletes a transcript; deleting a main key (no Subpath)
// deletes all its subkeys too.
type SessionDeleter interface {
	Delete(ctx context.Context, key SessionKey) error
}

// SubkeyLister lists the subpaths stored under a session, used on resume to
// restore subagent transcripts.
type SubkeyLister interface {
	ListSubkeys(ctx context.Context, projectKey, sessionID string) ([]string, error)
}
