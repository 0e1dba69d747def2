package claudetest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/claude"
)

// MemoryStore is an in-memory claude.SessionStore with every optional
// capability (SessionLister, SessionSummaryLister, SessionDeleter,
// SubkeyLister) and the semantics of flower's SQLite store: entries are
// stored as compact JSON; an entry whose "uuid" string is already stored for
// the key, or appears earlier in the same batch, is skipped, and entries
// without one are never deduplicated; every Append that stores something
// stamps the key with a strictly increasing millisecond mtime, and for a main
// key folds the new entries into its summary with claude.FoldSessionSummary
// under that same mtime. A batch that stores nothing changes nothing.
//
// The zero value is ready to use. It is safe for concurrent use. Contents
// live as long as the value; nothing is written anywhere.
type MemoryStore struct {
	// Now is the clock mtimes come from; nil means time.Now. Set it before
	// the first call: tests use a fixed clock to see the +1 ms steps.
	Now func() time.Time

	mu        sync.Mutex
	last      int64 // the last mtime handed out
	keys      map[claude.SessionKey]*memTranscript
	summaries map[memSession]claude.SessionSummary
}

type memTranscript struct {
	entries []json.RawMessage
	uids    map[string]struct{}
	mtime   int64
}

type memSession struct{ projectKey, sessionID string }

var (
	_ claude.SessionStore         = (*MemoryStore)(nil)
	_ claude.SessionLister        = (*MemoryStore)(nil)
	_ claude.SessionSummaryLister = (*MemoryStore)(nil)
	_ claude.SessionDeleter       = (*MemoryStore)(nil)
	_ claude.SubkeyLister         = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore; the zero value works as well.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Append stores entries for key in order, skipping uuids already stored. It
// fails, storing nothing of the batch, when ctx is done, when key is not
// valid (empty or '/'-holding project key or session id; a subpath that is
// absolute, has empty, "." or ".." segments, a backslash or NUL) or when an
// entry is not a JSON object.
func (m *MemoryStore) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: append: %w", err)
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	batch := make([]json.RawMessage, len(entries))
	uids := make([]string, len(entries))
	for i, e := range entries {
		var buf bytes.Buffer
		if err := json.Compact(&buf, e); err != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
			return fmt.Errorf("memstore: append %s: entry %d is not a JSON object; nothing of this batch was stored", keyString(key), i)
		}
		batch[i] = buf.Bytes()
		var id struct {
			UUID json.RawMessage `json:"uuid"`
		}
		if json.Unmarshal(batch[i], &id) == nil && len(id.UUID) > 0 && id.UUID[0] == '"' {
			_ = json.Unmarshal(id.UUID, &uids[i])
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = map[claude.SessionKey]*memTranscript{}
		m.summaries = map[memSession]claude.SessionSummary{}
	}
	tr := m.keys[key]
	if tr == nil {
		tr = &memTranscript{uids: map[string]struct{}{}}
	}
	var added []json.RawMessage
	for i, e := range batch {
		if uid := uids[i]; uid != "" {
			if _, dup := tr.uids[uid]; dup {
				continue
			}
			tr.uids[uid] = struct{}{}
		}
		added = append(added, e)
	}
	if len(added) == 0 {
		return nil
	}
	m.keys[key] = tr
	tr.entries = append(tr.entries, added...)
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	tr.mtime = max(now().UnixMilli(), m.last+1)
	m.last = tr.mtime
	if key.Subpath == "" {
		s := memSession{key.ProjectKey, key.SessionID}
		prev := m.summaries[s].Data
		m.summaries[s] = claude.SessionSummary{
			SessionID: key.SessionID,
			Mtime:     tr.mtime,
			Data:      claude.FoldSessionSummary(prev, key, added),
		}
	}
	return nil
}

// Load returns copies of the entries stored for key in append order, or nil
// when key was never written. It fails when ctx is done or key is not valid.
func (m *MemoryStore) Load(ctx context.Context, key claude.SessionKey) ([]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: load: %w", err)
	}
	if err := checkKey(key); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tr := m.keys[key]
	if tr == nil {
		return nil, nil
	}
	out := make([]json.RawMessage, len(tr.entries))
	for i, e := range tr.entries {
		out[i] = slices.Clone(e)
	}
	return out, nil
}

// ListSessions returns the project's main transcripts, newest mtime first,
// or nil when it has none. It fails when ctx is done or projectKey is not
// valid.
func (m *MemoryStore) ListSessions(ctx context.Context, projectKey string) ([]claude.SessionInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: list sessions: %w", err)
	}
	if err := checkSegment("project key", projectKey); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []claude.SessionInfo
	for k, tr := range m.keys {
		if k.ProjectKey == projectKey && k.Subpath == "" {
			out = append(out, claude.SessionInfo{SessionID: k.SessionID, Mtime: tr.mtime})
		}
	}
	slices.SortFunc(out, func(a, b claude.SessionInfo) int {
		return cmp.Or(cmp.Compare(b.Mtime, a.Mtime), strings.Compare(a.SessionID, b.SessionID))
	})
	return out, nil
}

// ListSessionSummaries returns the summaries of the project's sessions,
// newest mtime first, or nil when it has none. It fails when ctx is done or
// projectKey is not valid.
func (m *MemoryStore) ListSessionSummaries(ctx context.Context, projectKey string) ([]claude.SessionSummary, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: list summaries: %w", err)
	}
	if err := checkSegment("project key", projectKey); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []claude.SessionSummary
	for s, sum := range m.summaries {
		if s.projectKey == projectKey {
			sum.Data = slices.Clone(sum.Data)
			out = append(out, sum)
		}
	}
	slices.SortFunc(out, func(a, b claude.SessionSummary) int {
		return cmp.Or(cmp.Compare(b.Mtime, a.Mtime), strings.Compare(a.SessionID, b.SessionID))
	})
	return out, nil
}

// Delete removes key; for a main key also its subkeys and its summary.
// Deleting a key never written does nothing. It fails when ctx is done or key
// is not valid.
func (m *MemoryStore) Delete(ctx context.Context, key claude.SessionKey) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: delete: %w", err)
	}
	if err := checkKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if key.Subpath != "" {
		delete(m.keys, key)
		return nil
	}
	for k := range m.keys {
		if k.ProjectKey == key.ProjectKey && k.SessionID == key.SessionID {
			delete(m.keys, k)
		}
	}
	delete(m.summaries, memSession{key.ProjectKey, key.SessionID})
	return nil
}

// ListSubkeys returns the subpaths stored under the session, sorted, or nil
// when it has none. It fails when ctx is done or the project key or session
// id is not valid.
func (m *MemoryStore) ListSubkeys(ctx context.Context, projectKey, sessionID string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memstore: list subkeys: %w", err)
	}
	if err := checkKey(claude.SessionKey{ProjectKey: projectKey, SessionID: sessionID}); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.keys {
		if k.ProjectKey == projectKey && k.SessionID == sessionID && k.Subpath != "" {
			out = append(out, k.Subpath)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkKey applies the key rules of flower's SQLite store, so that a test
// against MemoryStore fails where the real store would.
func checkKey(key claude.SessionKey) error {
	if err := checkSegment("project key", key.ProjectKey); err != nil {
		return err
	}
	if err := checkSegment("session id", key.SessionID); err != nil {
		return err
	}
	if key.Subpath == "" {
		return nil
	}
	if strings.ContainsAny(key.Subpath, "\x00\\") || strings.HasPrefix(key.Subpath, "/") {
		return fmt.Errorf("memstore: invalid subpath %q: want a relative '/'-joined path such as subagents/agent-<id>, without NUL or backslashes", key.Subpath)
	}
	for _, seg := range strings.Split(key.Subpath, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("memstore: invalid subpath %q: empty, \".\" and \"..\" segments are not allowed", key.Subpath)
		}
	}
	return nil
}

func checkSegment(what, s string) error {
	if s == "" || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("memstore: invalid %s %q: it must be non-empty, without '/' or NUL", what, s)
	}
	return nil
}

func keyString(k claude.SessionKey) string {
	s := k.ProjectKey + "/" + k.SessionID
	if k.Subpath != "" {
		s += "/" + k.Subpath
	}
	return s
}
