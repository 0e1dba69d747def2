package claudetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// RunSessionStoreConformance checks that a claude.SessionStore keeps the
// contract the driver relies on, one subtest per rule. newStore is called
// once per subtest and must return a store ready for use (register its
// cleanup with t.Cleanup); the subtests also use keys of their own, so a
// store shared between them works too.
//
// Required behaviour, checked for every store:
//   - Load returns what Append stored, deep-equal as decoded JSON (key order
//     and whitespace may change; numbers keep their exact value, big
//     integers included), or nil and no error for a key never written;
//   - an entry whose uuid is already stored for the key, or appears earlier
//     in the same batch, is skipped and the first version kept; entries
//     without a uuid are never deduplicated; uuids are scoped to a key;
//   - appending nothing (nil or an empty slice) changes nothing;
//   - order is kept across many appends, and concurrent appends lose
//     nothing;
//   - subkeys are separate transcripts from their main key;
//   - a cancelled context makes Append and Load fail, storing nothing.
//
// Optional capabilities are checked when the store implements them, and
// logged as not implemented otherwise:
//   - SessionLister lists only the project's main keys, each once, with a
//     positive mtime that strictly increases with every append that stores
//     something;
//   - SubkeyLister lists exactly the subpaths written under a session, in
//     any order (the suite compares them as sets);
//   - SessionDeleter: deleting a main key deletes its subkeys and summary
//     and nothing else (not even a session whose id extends it); deleting a
//     subkey deletes only it; deleting a key never written is no error;
//   - SessionSummaryLister: each main key's summary is
//     claude.FoldSessionSummary over its stored entries, its mtime equals the
//     SessionLister mtime after the same append, and subkeys have none.
func RunSessionStoreConformance(t *testing.T, newStore func(t *testing.T) claude.SessionStore) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s claude.SessionStore)
	}{
		{"AppendLoadDeepEqual", confAppendLoadDeepEqual},
		{"LoadNeverWritten", confLoadNeverWritten},
		{"UUIDIdempotent", confUUIDIdempotent},
		{"AppendNothing", confAppendNothing},
		{"OrderAcrossAppends", confOrderAcrossAppends},
		{"ConcurrentAppends", confConcurrentAppends},
		{"SubkeysIsolated", confSubkeysIsolated},
		{"CancelledContext", confCancelledContext},
		{"ListSessionsMainKeysOfProject", confListSessions},
		{"MtimeStrictlyIncreases", confMtimeIncreases},
		{"ListSubkeys", confListSubkeys},
		{"DeleteMainCascades", confDeleteMain},
		{"DeleteSubkeyOnly", confDeleteSubkey},
		{"SummariesFoldOnListClock", confSummaries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore returned nil")
			}
			tt.run(t, s)
		})
	}
}

var confProjects atomic.Int64

// freshProject returns a project key no other subtest uses.
func freshProject(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, t.Name())
	return fmt.Sprintf("-conf-%s-%d", name, confProjects.Add(1))
}

func confEntry(uuid string, i int) json.RawMessage {
	if uuid == "" {
		return json.RawMessage(fmt.Sprintf(`{"type":"progress","i":%d}`, i))
	}
	return json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":%q,"i":%d,"message":{"role":"user","content":"entry %d"}}`, uuid, i, i))
}

func confAppend(t *testing.T, s claude.SessionStore, key claude.SessionKey, entries ...json.RawMessage) {
	t.Helper()
	if err := s.Append(t.Context(), key, entries); err != nil {
		t.Fatalf("Append(%+v, %d entries): %v", key, len(entries), err)
	}
}

func confLoad(t *testing.T, s claude.SessionStore, key claude.SessionKey) []json.RawMessage {
	t.Helper()
	got, err := s.Load(t.Context(), key)
	if err != nil {
		t.Fatalf("Load(%+v): %v", key, err)
	}
	return got
}

// wantEntries fails unless got and want hold the same entries as decoded JSON.
func wantEntries(t *testing.T, what string, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, err := decodeCanonical(got[i])
		if err != nil {
			t.Fatalf("%s: entry %d does not decode: %v\n%s", what, i, err, got[i])
		}
		w, err := decodeCanonical(want[i])
		if err != nil {
			t.Fatalf("%s: the test's entry %d does not decode: %v", what, i, err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: entry %d differs:\n got %.300s\nwant %.300s", what, i, got[i], want[i])
		}
	}
}

// decodeCanonical decodes one JSON value with every number turned into the
// exact rational it denotes, so 1e2 and 100 compare equal and
// 12345678901234567890 keeps every digit.
func decodeCanonical(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return canonicalNumbers(v), nil
}

func canonicalNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = canonicalNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = canonicalNumbers(x)
		}
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(v)); ok {
			return "number:" + r.RatString()
		}
	}
	return v
}

func confAppendLoadDeepEqual(t *testing.T, s claude.SessionStore) {
	key := claude.SessionKey{ProjectKey: freshProject(t), SessionID: "a1b2c3d4-0000-4000-8000-000000000001"}
	entries := []json.RawMessage{
		json.RawMessage(`{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,` +
			`"message":{"role":"user","content":[{"type":"text","text":"héllo 世界 🌸 \"quoted\" back\\slash \u0000 nul \u2028 sep"}]},` +
			`"big":12345678901234567890,"negbig":-98765432109876543210987,"float":1.5e300,"tiny":1e-320,"dec":0.1,"zero":0,` +
			`"t":true,"f":false,"n":null,"empty":"","esc":"\u00e9\ud83c\udf38",` +
			`"nested":{"a":{"b":{"c":[1,[2,[3,{}]],[],{"d":null}]}}}}`),
		json.RawMessage("{\n  \"type\" : \"assistant\",\n\t\"uuid\": \"u2\",\r\n  \"message\": {\"usage\": {\"input_tokens\": 12345678901234567890}} }"),
		json.RawMessage(`{"type":"summary","summary":"` + strings.Repeat("长文本 long text ", 20000) + `"}`),
		json.RawMessage(`{}`),
	}
	confAppend(t, s, key, entries...)
	wantEntries(t, "Load", confLoad(t, s, key), entries)

	// The big integer survives exactly, not as a float64.
	var e struct {
		Big json.Number `json:"big"`
	}
	got := confLoad(t, s, key)
	dec := json.NewDecoder(strings.NewReader(string(got[0])))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil || e.Big.String() != "12345678901234567890" {
		t.Fatalf("big integer came back as %q (%v), want 12345678901234567890", e.Big, err)
	}
}

func confLoadNeverWritten(t *testing.T, s claude.SessionStore) {
	project := freshProject(t)
	key := claude.SessionKey{ProjectKey: project, SessionID: "never-written"}
	got, err := s.Load(t.Context(), key)
	if err != nil || got != nil {
		t.Fatalf("Load of a key never written = %d entries (nil: %v), %v; want nil, nil", len(got), got == nil, err)
	}
	written := claude.SessionKey{ProjectKey: project, SessionID: "written"}
	confAppend(t, s, written, confEntry("x", 0))
	sub := written
	sub.Subpath = "subagents/agent-never"
	if got, err := s.Load(t.Context(), sub); err != nil || got != nil {
		t.Fatalf("Load of an unwritten subkey of a written session = %d entries, %v; want nil, nil", len(got), err)
	}
}

func confUUIDIdempotent(t *testing.T, s claude.SessionStore) {
	project := freshProject(t)
	key := claude.SessionKey{ProjectKey: project, SessionID: "s"}
	confAppend(t, s, key, confEntry("a", 1), confEntry("b", 2))
	// A replay of b (with other content: the first version stays), then c.
	confAppend(t, s, key, confEntry("b", 99), confEntry("c", 3))
	// A whole replayed batch.
	confAppend(t, s, key, confEntry("a", 1), confEntry("b", 2))
	// The same uuid twice within one batch.
	confAppend(t, s, key, confEntry("d", 4), confEntry("d", 98), confEntry("e", 5))
	// Entries without a uuid are never deduplicated, even when identical.
	confAppend(t, s, key, confEntry("", 6), confEntry("", 6))
	confAppend(t, s, key, confEntry("", 6))
	want := []json.RawMessage{
		confEntry("a", 1), confEntry("b", 2), confEntry("c", 3), confEntry("d", 4), confEntry("e", 5),
		confEntry("", 6), confEntry("", 6), confEntry("", 6),
	}
	wantEntries(t, "after replays", confLoad(t, s, key), want)

	// A uuid belongs to its key: the same uuids under a subkey and under
	// another session are stored there too.
	sub := key
	sub.Subpath = "subagents/agent-1"
	other := claude.SessionKey{ProjectKey: project, SessionID: "s-fork"}
	for _, k := range []claude.SessionKey{sub, other} {
		confAppend(t, s, k, confEntry("a", 1), confEntry("b", 2))
		wantEntries(t, fmt.Sprintf("%+v", k), confLoad(t, s, k), []json.RawMessage{confEntry("a", 1), confEntry("b", 2)})
	}
	wantEntries(t, "main after the others", confLoad(t, s, key), want)
}

func confAppendNothing(t *testing.T, s claude.SessionStore) {
	project := freshProject(t)
	lister, _ := s.(claude.SessionLister)
	list := func() []claude.SessionInfo {
		if lister == nil {
			return nil
		}
		got, err := lister.ListSessions(t.Context(), project)
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		slices.SortFunc(got, func(a, b claude.SessionInfo) int { return strings.Compare(a.SessionID, b.SessionID) })
		return got
	}

	fresh := claude.SessionKey{ProjectKey: project, SessionID: "empty"}
	for _, nothing := range [][]json.RawMessage{nil, {}} {
		if err := s.Append(t.Context(), fresh, nothing); err != nil {
			t.Fatalf("Append(%#v): %v", nothing, err)
		}
	}
	if got := confLoad(t, s, fresh); got != nil {
		t.Fatalf("after appending nothing, Load = %d entries, want nil", len(got))
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("after appending nothing, ListSessions = %+v, want none", got)
	}

	written := claude.SessionKey{ProjectKey: project, SessionID: "written"}
	confAppend(t, s, written, confEntry("x", 1))
	before := list()
	confAppend(t, s, written)
	confAppend(t, s, written, []json.RawMessage{}...)
	wantEntries(t, "after appending nothing to a written key", confLoad(t, s, written), []json.RawMessage{confEntry("x", 1)})
	if after := list(); !reflect.DeepEqual(before, after) {
		t.Fatalf("appending nothing changed ListSessions from %+v to %+v", before, after)
	}
}

func confOrderAcrossAppends(t *testing.T, s claude.SessionStore) {
	key := claude.SessionKey{ProjectKey: freshProject(t), SessionID: "s"}
	var want []json.RawMessage
	i := 0
	for batch := 0; i < 300; batch++ {
		var entries []json.RawMessage
		for j := 0; j < 1+batch%9 && i < 300; j++ {
			uuid := ""
			if i%5 != 0 {
				uuid = fmt.Sprintf("u-%03d", i)
			}
			entries = append(entries, confEntry(uuid, i))
			i++
		}
		confAppend(t, s, key, entries...)
		want = append(want, entries...)
	}
	wantEntries(t, "Load", confLoad(t, s, key), want)
}

func confConcurrentAppends(t *testing.T, s claude.SessionStore) {
	project := freshProject(t)
	shared := claude.SessionKey{ProjectKey: project, SessionID: "shared"}
	const writers, batches, size = 6, 15, 3
	errs := make(chan error, 2*writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		own := claude.SessionKey{ProjectKey: project, SessionID: fmt.Sprintf("own-%d", w)}
		for _, key := range []claude.SessionKey{shared, own} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := 0; b < batches; b++ {
					var entries []json.RawMessage
					for j := 0; j < size; j++ {
						n := b*size + j
						entries = append(entries, json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"w%d-%s-%d","w":%d,"n":%d}`, w, key.SessionID, n, w, n)))
					}
					if err := s.Append(t.Context(), key, entries); err != nil {
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
		t.Fatalf("concurrent Append: %v", err)
	}
	check := func(key claude.SessionKey, want int) {
		got := confLoad(t, s, key)
		if len(got) != want {
			t.Fatalf("%s: %d entries, want %d", key.SessionID, len(got), want)
		}
		next := map[int]int{} // writer -> next n expected
		for _, raw := range got {
			var e struct{ W, N int }
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("%s: %v", key.SessionID, err)
			}
			if e.N != next[e.W] {
				t.Fatalf("%s: writer %d's entry %d came where %d was due", key.SessionID, e.W, e.N, next[e.W])
			}
			next[e.W]++
		}
	}
	check(shared, writers*batches*size)
	for w := 0; w < writers; w++ {
		check(claude.SessionKey{ProjectKey: project, SessionID: fmt.Sprintf("own-%d", w)}, batches*size)
	}
}

func confSubkeysIsolated(t *testing.T, s claude.SessionStore) {
	project := freshProject(t)
	main := claude.SessionKey{ProjectKey: project, SessionID: "s"}
	a := claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: "subagents/agent-a"}
	b := claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: "subagents/workflows/run-1/agent-b"}
	confAppend(t, s, a, confEntry("same", 1), confEntry("", 2))
	confAppend(t, s, main, confEntry("same", 10))
	confAppend(t, s, b, confEntry("same", 20))
	confAppend(t, s, a, confEntry("a3", 3))
	wantEntries(t, "main", confLoad(t, s, main), []json.RawMessage{confEntry("same", 10)})
	wantEntries(t, "subkey a", confLoad(t, s, a), []json.RawMessage{confEntry("same", 1), confEntry("", 2), confEntry("a3", 3)})
	wantEntries(t, "subkey b", confLoad(t, s, b), []json.RawMessage{confEntry("same", 20)})
}

func confCancelledContext(t *testing.T, s claude.SessionStore) {
	key := claude.SessionKey{ProjectKey: freshProject(t), SessionID: "s"}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Append(ctx, key, []json.RawMessage{confEntry("x", 1)}); err == nil {
		t.Fatal("Append with a cancelled context succeeded")
	}
	if got := confLoad(t, s, key); got != nil {
		t.Fatalf("Append with a cancelled context stored %d entries", len(got))
	}
	confAppend(t, s, key, confEntry("y", 2))
	if _, err := s.Load(ctx, key); err == nil {
		t.Fatal("Load with a cancelled context succeeded")
	}
}

func confListSessions(t *testing.T, s claude.SessionStore) {
	lister, ok := s.(claude.SessionLister)
	if !ok {
		t.Log("store does not implement claude.SessionLister; nothing to check")
		return
	}
	project, other := freshProject(t), freshProject(t)
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s1"}, confEntry("1", 1))
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s1", Subpath: "subagents/agent-x"}, confEntry("2", 2))
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s2"}, confEntry("3", 3))
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s1"}, confEntry("4", 4))
	// A session with only a subagent transcript has no main key to list.
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "only-sub", Subpath: "subagents/agent-y"}, confEntry("5", 5))
	confAppend(t, s, claude.SessionKey{ProjectKey: other, SessionID: "elsewhere"}, confEntry("6", 6))

	got, err := lister.ListSessions(t.Context(), project)
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	var ids []string
	for _, info := range got {
		ids = append(ids, info.SessionID)
		if info.Mtime <= 0 {
			t.Errorf("session %s has mtime %d, want a positive Unix ms time", info.SessionID, info.Mtime)
		}
	}
	slices.Sort(ids)
	if want := []string{"s1", "s2"}; !slices.Equal(ids, want) {
		t.Fatalf("ListSessions(%s) = %v, want %v (main keys of that project, each once)", project, ids, want)
	}
	if got, err := lister.ListSessions(t.Context(), freshProject(t)); err != nil || len(got) != 0 {
		t.Fatalf("ListSessions of an unused project = %+v, %v; want none", got, err)
	}
}

func confMtimeIncreases(t *testing.T, s claude.SessionStore) {
	lister, ok := s.(claude.SessionLister)
	if !ok {
		t.Log("store does not implement claude.SessionLister; nothing to check")
		return
	}
	project := freshProject(t)
	mtimeOf := func(id string) int64 {
		t.Helper()
		infos, err := lister.ListSessions(t.Context(), project)
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		for _, info := range infos {
			if info.SessionID == id {
				return info.Mtime
			}
		}
		t.Fatalf("ListSessions lacks %s: %+v", id, infos)
		return 0
	}
	// Appends come faster than a millisecond apart, alternating between two
	// sessions: the store's clock must still move forward every time.
	var last int64
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("s%d", i%2)
		confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: id}, confEntry(fmt.Sprint(i), i))
		m := mtimeOf(id)
		if m <= last {
			t.Fatalf("append %d: mtime %d, not after the previous append's %d", i, m, last)
		}
		last = m
	}
}

func confListSubkeys(t *testing.T, s claude.SessionStore) {
	lister, ok := s.(claude.SubkeyLister)
	if !ok {
		t.Log("store does not implement claude.SubkeyLister; nothing to check")
		return
	}
	project := freshProject(t)
	subs := []string{"subagents/agent-b", "subagents/agent-a", "subagents/workflows/run-1/agent-c"}
	for i, sub := range subs {
		confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: sub}, confEntry("x", i))
	}
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s"}, confEntry("main", 0))
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "s-2", Subpath: "subagents/agent-z"}, confEntry("z", 0))
	confAppend(t, s, claude.SessionKey{ProjectKey: project, SessionID: "plain"}, confEntry("p", 0))

	got, err := lister.ListSubkeys(t.Context(), project, "s")
	if err != nil {
		t.Fatalf("ListSubkeys: %v", err)
	}
	got = slices.Clone(got)
	slices.Sort(got)
	want := slices.Clone(subs)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("ListSubkeys(s) = %v, want %v in any order", got, want)
	}
	for _, id := range []string{"plain", "never-written"} {
		if got, err := lister.ListSubkeys(t.Context(), project, id); err != nil || len(got) != 0 {
			t.Fatalf("ListSubkeys(%s) = %v, %v; want none", id, got, err)
		}
	}
}

func confDeleteMain(t *testing.T, s claude.SessionStore) {
	deleter, ok := s.(claude.SessionDeleter)
	if !ok {
		t.Log("store does not implement claude.SessionDeleter; nothing to check")
		return
	}
	project := freshProject(t)
	main := claude.SessionKey{ProjectKey: project, SessionID: "sess"}
	subA := claude.SessionKey{ProjectKey: project, SessionID: "sess", Subpath: "subagents/agent-a"}
	subB := claude.SessionKey{ProjectKey: project, SessionID: "sess", Subpath: "subagents/workflows/w/agent-b"}
	// Sessions whose ids extend "sess" or sort next to it must survive.
	keep := []claude.SessionKey{
		{ProjectKey: project, SessionID: "sess2"},
		{ProjectKey: project, SessionID: "sess-b"},
		{ProjectKey: project, SessionID: "sess.x"},
		{ProjectKey: project, SessionID: "sess2", Subpath: "subagents/agent-a"},
		{ProjectKey: project + "x", SessionID: "sess"},
	}
	for i, k := range append([]claude.SessionKey{main, subA, subB}, keep...) {
		confAppend(t, s, k, confEntry("e", i))
	}
	if err := deleter.Delete(t.Context(), main); err != nil {
		t.Fatalf("Delete(main): %v", err)
	}
	for _, k := range []claude.SessionKey{main, subA, subB} {
		if got := confLoad(t, s, k); got != nil {
			t.Fatalf("after deleting the main key, %+v still has %d entries", k, len(got))
		}
	}
	for _, k := range keep {
		if got := confLoad(t, s, k); len(got) != 1 {
			t.Fatalf("deleting %s also touched %+v (%d entries left, want 1)", main.SessionID, k, len(got))
		}
	}
	if lister, ok := s.(claude.SessionLister); ok {
		infos, err := lister.ListSessions(t.Context(), project)
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		for _, info := range infos {
			if info.SessionID == "sess" {
				t.Fatal("ListSessions still lists the deleted session")
			}
		}
	}
	if lister, ok := s.(claude.SubkeyLister); ok {
		if subs, err := lister.ListSubkeys(t.Context(), project, "sess"); err != nil || len(subs) != 0 {
			t.Fatalf("ListSubkeys after delete = %v, %v; want none", subs, err)
		}
	}
	if lister, ok := s.(claude.SessionSummaryLister); ok {
		sums, err := lister.ListSessionSummaries(t.Context(), project)
		if err != nil {
			t.Fatalf("ListSessionSummaries: %v", err)
		}
		for _, sum := range sums {
			if sum.SessionID == "sess" {
				t.Fatal("ListSessionSummaries still lists the deleted session")
			}
		}
	}
	// Deleting again, or deleting what was never written, is no error.
	for _, k := range []claude.SessionKey{main, {ProjectKey: freshProject(t), SessionID: "never"}, {ProjectKey: project, SessionID: "never", Subpath: "subagents/agent-q"}} {
		if err := deleter.Delete(t.Context(), k); err != nil {
			t.Fatalf("Delete(%+v) of nothing: %v", k, err)
		}
	}
	// The key can be written afresh.
	confAppend(t, s, main, confEntry("e", 0))
	wantEntries(t, "rewritten after delete", confLoad(t, s, main), []json.RawMessage{confEntry("e", 0)})
}

func confDeleteSubkey(t *testing.T, s claude.SessionStore) {
	deleter, ok := s.(claude.SessionDeleter)
	if !ok {
		t.Log("store does not implement claude.SessionDeleter; nothing to check")
		return
	}
	project := freshProject(t)
	main := claude.SessionKey{ProjectKey: project, SessionID: "s"}
	subA := claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: "subagents/agent-a"}
	subAB := claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: "subagents/agent-a/nested"}
	subB := claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: "subagents/agent-b"}
	for i, k := range []claude.SessionKey{main, subA, subAB, subB} {
		confAppend(t, s, k, confEntry("e", i))
	}
	if err := deleter.Delete(t.Context(), subA); err != nil {
		t.Fatalf("Delete(subkey): %v", err)
	}
	if got := confLoad(t, s, subA); got != nil {
		t.Fatalf("deleted subkey still has %d entries", len(got))
	}
	for _, k := range []claude.SessionKey{main, subAB, subB} {
		if got := confLoad(t, s, k); len(got) != 1 {
			t.Fatalf("deleting a subkey touched %+v (%d entries, want 1)", k, len(got))
		}
	}
	if lister, ok := s.(claude.SubkeyLister); ok {
		subs, err := lister.ListSubkeys(t.Context(), project, "s")
		if err != nil {
			t.Fatalf("ListSubkeys: %v", err)
		}
		slices.Sort(subs)
		if want := []string{subAB.Subpath, subB.Subpath}; !slices.Equal(subs, want) {
			t.Fatalf("ListSubkeys after deleting %s = %v, want %v", subA.Subpath, subs, want)
		}
	}
}

func confSummaries(t *testing.T, s claude.SessionStore) {
	sums, ok := s.(claude.SessionSummaryLister)
	if !ok {
		t.Log("store does not implement claude.SessionSummaryLister; nothing to check")
		return
	}
	lister, _ := s.(claude.SessionLister)
	project := freshProject(t)
	key := claude.SessionKey{ProjectKey: project, SessionID: "s"}
	sub := claude.SessionKey{ProjectKey: project, SessionID: "s", Subpath: "subagents/agent-a"}

	summaryOf := func(id string) (claude.SessionSummary, bool) {
		t.Helper()
		all, err := sums.ListSessionSummaries(t.Context(), project)
		if err != nil {
			t.Fatalf("ListSessionSummaries: %v", err)
		}
		var found []claude.SessionSummary
		for _, sum := range all {
			if sum.SessionID == id {
				found = append(found, sum)
			}
		}
		if len(found) > 1 {
			t.Fatalf("ListSessionSummaries lists %s %d times", id, len(found))
		}
		if len(found) == 0 {
			return claude.SessionSummary{}, false
		}
		return found[0], true
	}
	listMtime := func(id string) int64 {
		t.Helper()
		infos, err := lister.ListSessions(t.Context(), project)
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		for _, info := range infos {
			if info.SessionID == id {
				return info.Mtime
			}
		}
		t.Fatalf("ListSessions lacks %s", id)
		return 0
	}
	check := func(step string) claude.SessionSummary {
		t.Helper()
		sum, ok := summaryOf(key.SessionID)
		if !ok {
			t.Fatalf("%s: no summary for %s", step, key.SessionID)
		}
		want := claude.FoldSessionSummary(nil, key, confLoad(t, s, key))
		wantEntries(t, step+": summary data", []json.RawMessage{sum.Data}, []json.RawMessage{want})
		if lister != nil {
			if m := listMtime(key.SessionID); sum.Mtime != m {
				t.Fatalf("%s: summary mtime %d, ListSessions mtime %d: they must be the same clock and write", step, sum.Mtime, m)
			}
		}
		return sum
	}

	// A subagent transcript alone makes no summary.
	confAppend(t, s, sub, json.RawMessage(`{"type":"user","uuid":"s1","message":{"content":"subagent prompt"}}`))
	if sum, ok := summaryOf(key.SessionID); ok {
		t.Fatalf("a subkey append made a summary: %+v", sum)
	}
	confAppend(t, s, key,
		json.RawMessage(`{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","message":{"content":"first prompt"}}`),
		json.RawMessage(`{"type":"assistant","uuid":"a1","message":{"content":[{"type":"text","text":"ok"}]}}`))
	first := check("first append")
	confAppend(t, s, key, json.RawMessage(`{"type":"custom-title","customTitle":"titled","sessionId":"s"}`))
	second := check("second append")
	if second.Mtime <= first.Mtime {
		t.Fatalf("summary mtime did not increase: %d then %d", first.Mtime, second.Mtime)
	}
	// Replays do not count twice; subkey appends do not touch the summary.
	confAppend(t, s, key, json.RawMessage(`{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w","message":{"content":"first prompt"}}`))
	check("replay")
	confAppend(t, s, sub, json.RawMessage(`{"type":"custom-title","customTitle":"from a subagent"}`))
	check("subkey append") // the data must still fold the main transcript alone
	d, err := claude.ParseSessionSummary(second.Data)
	if err != nil || d.FirstPrompt != "first prompt" || d.CustomTitle != "titled" || d.Entries != 3 {
		t.Fatalf("summary data %s (%v): want first_prompt, custom_title and 3 entries", second.Data, err)
	}
}
