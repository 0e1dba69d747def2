package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// layerMemStore is a minimal in-memory claude.SessionStore for the layer
// tests. Load hands out its own slices (no copies), so a layer that wrote
// into what it loaded would change the "stored" rows and fail the tests.
type layerMemStore struct {
	mu      sync.Mutex
	rows    map[claude.SessionKey][]json.RawMessage
	loadErr error
}

func newLayerMemStore() *layerMemStore {
	return &layerMemStore{rows: map[claude.SessionKey][]json.RawMessage{}}
}

func (m *layerMemStore) Append(_ context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range entries {
		m.rows[key] = append(m.rows[key], bytes.Clone(e))
	}
	return nil
}

func (m *layerMemStore) Load(_ context.Context, key claude.SessionKey) ([]json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loadErr != nil {
		return nil, m.loadErr
	}
	return m.rows[key], nil
}

var fxKey = claude.SessionKey{ProjectKey: "-work-ws", SessionID: "8382f1d0-5b0e-4b55-9d3f-3f1c2a7d0e11"}

// fxTranscript builds a transcript in the shape the real CLI writes
// (docs/real-cli.md §5): each entry's parentUuid is the previous entry's
// uuid unless set otherwise.
type fxTranscript struct {
	entries []map[string]any
	msgN    int
}

func (f *fxTranscript) lastUUID() any {
	for i := len(f.entries) - 1; i >= 0; i-- {
		if u, ok := f.entries[i]["uuid"]; ok {
			return u
		}
	}
	return nil
}

func (f *fxTranscript) envelope(typ, uuid string) map[string]any {
	return map[string]any{
		"parentUuid":  f.lastUUID(),
		"isSidechain": false,
		"type":        typ,
		"uuid":        uuid,
		"timestamp":   "2026-11-29T23:57:39.546Z",
		"userType":    "external",
		"cwd":         "/work/ws",
		"sessionId":   fxKey.SessionID,
		"version":     "2.1.332",
		"gitBranch":   "HEAD",
	}
}

func (f *fxTranscript) add(m map[string]any) map[string]any {
	f.entries = append(f.entries, m)
	return m
}

func (f *fxTranscript) prompt(uuid, text string) map[string]any {
	m := f.envelope("user", uuid)
	m["promptId"] = "p-" + uuid
	m["message"] = map[string]any{"role": "user", "content": text}
	return f.add(m)
}

func (f *fxTranscript) assistant(uuid string, blocks ...any) map[string]any {
	f.msgN++
	m := f.envelope("assistant", uuid)
	m["requestId"] = fmt.Sprintf("req_fake_%d", f.msgN)
	m["message"] = map[string]any{
		"id": fmt.Sprintf("msg_fake_%04d", f.msgN), "type": "message", "role": "assistant",
		"model": "claude-opus-5-5", "content": blocks, "stop_reason": "tool_use",
		"usage": map[string]any{"input_tokens": json.Number("12"), "cache_read_input_tokens": json.Number("18446744073709551615")},
	}
	return f.add(m)
}

func (f *fxTranscript) text(uuid, text string) map[string]any {
	return f.assistant(uuid, map[string]any{"type": "text", "text": text})
}

func fxToolUseBlock(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func (f *fxTranscript) call(uuid, toolID, name string, input map[string]any) map[string]any {
	return f.assistant(uuid, fxToolUseBlock(toolID, name, input))
}

func (f *fxTranscript) bash(uuid, toolID, cmd string) map[string]any {
	return f.call(uuid, toolID, "Bash", map[string]any{"command": cmd, "description": "run it"})
}

func (f *fxTranscript) read(uuid, toolID, path string) map[string]any {
	return f.call(uuid, toolID, "Read", map[string]any{"file_path": path})
}

func fxResultBlock(toolID string, content any, isErr bool) map[string]any {
	return map[string]any{"tool_use_id": toolID, "type": "tool_result", "content": content, "is_error": isErr}
}

func (f *fxTranscript) result(uuid, toolID string, content any, isErr bool) map[string]any {
	m := f.envelope("user", uuid)
	m["message"] = map[string]any{"role": "user", "content": []any{fxResultBlock(toolID, content, isErr)}}
	m["toolUseResult"] = map[string]any{"stdout": "…", "stderr": "", "interrupted": false}
	if p, ok := m["parentUuid"].(string); ok {
		m["sourceToolAssistantUUID"] = p
	}
	return f.add(m)
}

// denial is a permission-rule denial of toolID, as the CLI records it.
func (f *fxTranscript) denial(uuid, toolID string) map[string]any {
	m := f.result(uuid, toolID, "Permission to use Bash with command rm -rf build has been denied by a permission rule.", true)
	m["toolDenialKind"] = "permission-rule"
	m["toolUseResult"] = "Error: Permission to use Bash with command rm -rf build has been denied."
	return m
}

func (f *fxTranscript) apiError(uuid string) map[string]any {
	m := f.envelope("assistant", uuid)
	m["isApiErrorMessage"] = true
	m["error"] = "server_error"
	m["message"] = map[string]any{
		"id": "msg_synth_" + uuid, "type": "message", "role": "assistant", "model": "<synthetic>",
		"content": []any{map[string]any{"type": "text", "text": "API Error: 529 Overloaded"}},
	}
	return f.add(m)
}

func (f *fxTranscript) rows(t testing.TB) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(f.entries))
	for i, e := range f.entries {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// fxStore stores rows under fxKey in a fresh layerMemStore.
func fxStore(t testing.TB, rows []json.RawMessage) *layerMemStore {
	t.Helper()
	m := newLayerMemStore()
	if err := m.Append(context.Background(), fxKey, rows); err != nil {
		t.Fatal(err)
	}
	return m
}

// layerDecode decodes loaded entries (numbers as json.Number).
func layerDecode(t testing.TB, rows []json.RawMessage) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		obj, err := decodeEntryObject(r)
		if err != nil {
			t.Fatalf("entry %d is not a JSON object: %v\n%s", i, err, r)
		}
		out[i] = obj
	}
	return out
}

func layerEntry(t testing.TB, es []map[string]any, uuid string) map[string]any {
	t.Helper()
	for _, e := range es {
		if e["uuid"] == uuid {
			return e
		}
	}
	t.Fatalf("no entry %s in the loaded transcript", uuid)
	return nil
}

func layerHas(es []map[string]any, uuid string) bool {
	for _, e := range es {
		if e["uuid"] == uuid {
			return true
		}
	}
	return false
}

func layerBlocks(e map[string]any) []map[string]any {
	msg, _ := e["message"].(map[string]any)
	l, _ := msg["content"].([]any)
	var out []map[string]any
	for _, x := range l {
		if b, ok := x.(map[string]any); ok {
			out = append(out, b)
		}
	}
	return out
}

// layerResult is the first tool_result block of the entry uuid.
func layerResult(t testing.TB, es []map[string]any, uuid string) map[string]any {
	t.Helper()
	for _, b := range layerBlocks(layerEntry(t, es, uuid)) {
		if b["type"] == "tool_result" {
			return b
		}
	}
	t.Fatalf("entry %s has no tool_result", uuid)
	return nil
}

func layerUUIDs(es []map[string]any) []string {
	var out []string
	for _, e := range es {
		u, _ := e["uuid"].(string)
		out = append(out, u)
	}
	return out
}

func mustTrimming(t testing.TB, base claude.SessionStore, ws string, trim TrimPolicy, eph EphemeralPolicy) *Trimming {
	t.Helper()
	s, err := NewTrimming(base, ws, trim, eph)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPruning(t testing.TB, base claude.SessionStore, ws string, trim TrimPolicy, prune PrunePolicy, eph EphemeralPolicy) *Pruning {
	t.Helper()
	s, err := NewPruning(base, ws, trim, prune, eph)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func layerLoad(t testing.TB, s claude.SessionStore, key claude.SessionKey) []json.RawMessage {
	t.Helper()
	out, err := s.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func layerBigText(label string, n int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "%s line %d: some output that is long enough\n", label, b.Len())
	}
	return b.String()[:n]
}

// wantMode fails t unless the file at path has the mode (type and
// permission bits) want.
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
