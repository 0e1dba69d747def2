package backendtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/transcripttest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/internal/rows"
)

func loadReturnsGeneratedTranscriptIntact(t *testing.T, s Backend) {
	key := claude.SessionKey{ProjectKey: "-home-dev-shop", SessionID: transcripttest.SessionID(3)}
	entries := transcripttest.Generate(3000, 3)
	entries = append(entries, json.RawMessage(`{"type":"x","uuid":"big","n":12345678901234567890,"f":1.0000000000000000001,"s":"世界 🌸"}`),
		json.RawMessage("{\"uuid\":\"bin\", \"z\":1, \"a\":\"\xff\xfe not UTF-8\"}"))
	for i := 0; i < len(entries); i += 500 { // the mirror's flush size
		mustAppend(t, s, key, entries[i:min(i+500, len(entries))]...)
	}
	got, err := s.Load(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("loaded %d entries, appended %d", len(got), len(entries))
	}
	if !reflect.DeepEqual(decodeAll(t, got), decodeAll(t, entries)) {
		t.Fatal("loaded entries differ from the appended ones")
	}
	if last := string(got[len(got)-2]); !strings.Contains(last, "12345678901234567890") || !strings.Contains(last, "1.0000000000000000001") {
		t.Fatalf("numbers lost precision: %s", last)
	}
	// Byte for byte: the compact form of what was appended, keys in their
	// order, a string that is not UTF-8 kept as it was.
	for i, e := range entries {
		var want bytes.Buffer
		if err := json.Compact(&want, e); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[i], want.Bytes()) {
			t.Fatalf("entry %d came back as\n%s\nwant\n%s", i, got[i], want.Bytes())
		}
	}
}

func rejectsEntriesThatAreNotObjects(t *testing.T, s Backend) {
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	mustAppend(t, s, key, json.RawMessage(`{"type":"user","uuid":"first"}`))
	before, _ := s.ListSessions(t.Context(), "p")
	for _, bad := range []string{`[1,2]`, `"text"`, `42`, `null`, ``, `not json`, `{"a":`, `{"a":1} {"b":2}`} {
		err := s.Append(t.Context(), key, []json.RawMessage{
			json.RawMessage(`{"type":"user","uuid":"ok-1"}`),
			json.RawMessage(bad),
			json.RawMessage(`{"type":"user","uuid":"ok-2"}`),
		})
		if !errors.Is(err, store.ErrInvalidEntry) || !strings.Contains(err.Error(), "entry 1") || !strings.Contains(err.Error(), "nothing of this batch was stored") {
			t.Errorf("Append with entry %q: %v; want store.ErrInvalidEntry naming entry 1", bad, err)
		}
	}
	got, err := s.Load(t.Context(), key)
	if err != nil || len(got) != 1 {
		t.Fatalf("after rejected batches: %d entries, %v; want only the first", len(got), err)
	}
	if after, _ := s.ListSessions(t.Context(), "p"); !slices.Equal(before, after) {
		t.Fatalf("a rejected batch moved the mtime: %+v then %+v", before, after)
	}
}

func rejectsUnsafeKeys(t *testing.T, s Backend) {
	ctx := t.Context()
	entry := []json.RawMessage{json.RawMessage(`{"type":"x"}`)}
	bad := []claude.SessionKey{
		{ProjectKey: "", SessionID: "s"},
		{ProjectKey: "p", SessionID: ""},
		{ProjectKey: "a/b", SessionID: "s"},
		{ProjectKey: "p", SessionID: "../s"},
		{ProjectKey: "p\x00", SessionID: "s"},
		{ProjectKey: "p", SessionID: "s", Subpath: "/etc/passwd"},
		{ProjectKey: "p", SessionID: "s", Subpath: "subagents/../../../x"},
		{ProjectKey: "p", SessionID: "s", Subpath: ".."},
		{ProjectKey: "p", SessionID: "s", Subpath: "subagents/"},
		{ProjectKey: "p", SessionID: "s", Subpath: "subagents//agent"},
		{ProjectKey: "p", SessionID: "s", Subpath: "./agent"},
		{ProjectKey: "p", SessionID: "s", Subpath: "agent\x00x"},
		{ProjectKey: "p", SessionID: "s", Subpath: `..\..\x`},
	}
	for _, k := range bad {
		if err := s.Append(ctx, k, entry); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Append(%q): %v, want store.ErrInvalidKey", k, err)
		}
		if _, err := s.Load(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Load(%q): %v, want store.ErrInvalidKey", k, err)
		}
		if err := s.Delete(ctx, k); !errors.Is(err, store.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v, want store.ErrInvalidKey", k, err)
		}
	}
	if _, err := s.ListSessions(ctx, "a/b"); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("ListSessions(a/b): %v", err)
	}
	if _, err := s.ListSessionSummaries(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("ListSessionSummaries(\"\"): %v", err)
	}
	if _, err := s.ListSubkeys(ctx, "p", "s/x"); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("ListSubkeys(p, s/x): %v", err)
	}
	if _, err := s.HasSession(ctx, "", "s"); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("HasSession: %v", err)
	}
	if _, err := s.LastContext(ctx, "p", ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("LastContext: %v", err)
	}
	if got, _ := s.Projects(ctx); got != nil {
		t.Fatalf("rejected keys left projects behind: %v", got)
	}
	// Odd but safe names are fine.
	ok := claude.SessionKey{ProjectKey: "-home-u-my repo-%_?#", SessionID: "a.b_c", Subpath: "subagents/workflows/run 1/agent-x.y"}
	mustAppend(t, s, ok, entry...)
	if subs, err := s.ListSubkeys(ctx, ok.ProjectKey, ok.SessionID); err != nil || !slices.Equal(subs, []string{ok.Subpath}) {
		t.Fatalf("ListSubkeys = %v, %v", subs, err)
	}
}

func lastContext(t *testing.T, s Backend) {
	ctx := t.Context()
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	usage := func(in, read, create int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"type":"assistant","message":{"role":"assistant","usage":{"input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d,"output_tokens":99}}}`, in, read, create))
	}
	plain := json.RawMessage(`{"type":"user","message":{"role":"user","content":"hi"}}`)

	if n, err := s.LastContext(ctx, "p", "s"); err != nil || n != 0 {
		t.Fatalf("LastContext of nothing = %d, %v", n, err)
	}
	mustAppend(t, s, key, usage(1, 2, 3), usage(10, 1000, 5), plain, usage(0, 0, 0), plain,
		json.RawMessage(`{"type":"assistant","message":"not an object"}`),
		json.RawMessage(`{"type":"assistant","message":{"usage":{"input_tokens":"many"}}}`))
	if n, err := s.LastContext(ctx, "p", "s"); err != nil || n != 1015 {
		t.Fatalf("LastContext = %d, %v; want 1015 (newest non-zero usage)", n, err)
	}
	// A subagent's usage is not the session's.
	mustAppend(t, s, claude.SessionKey{ProjectKey: "p", SessionID: "s", Subpath: "subagents/agent-a"}, usage(1, 99999, 1))
	if n, _ := s.LastContext(ctx, "p", "s"); n != 1015 {
		t.Fatalf("LastContext = %d after a subagent append, want 1015", n)
	}
	mustAppend(t, s, key, usage(5, 2000, 0))
	if n, _ := s.LastContext(ctx, "p", "s"); n != 2005 {
		t.Fatalf("LastContext = %d, want 2005", n)
	}
	// Usage older than the last 60 entries is not looked at.
	var many []json.RawMessage
	for range 60 {
		many = append(many, plain)
	}
	mustAppend(t, s, key, many...)
	if n, _ := s.LastContext(ctx, "p", "s"); n != 0 {
		t.Fatalf("LastContext = %d with usage 61 entries back, want 0", n)
	}

	// A generated session: the newest assistant entry's context.
	gen := transcripttest.Generate(500, 9)
	genKey := claude.SessionKey{ProjectKey: "p", SessionID: "gen"}
	mustAppend(t, s, genKey, gen...)
	want := 0
	for i := len(gen) - 1; i >= 0 && want == 0; i-- {
		want = rows.UsageContext(gen[i])
	}
	if n, _ := s.LastContext(ctx, "p", "gen"); n != want || n < 9000 {
		t.Fatalf("LastContext of a generated session = %d, want %d", n, want)
	}
}

func hasSessionAndProjects(t *testing.T, s Backend) {
	ctx := t.Context()
	if got, err := s.Projects(ctx); err != nil || got != nil {
		t.Fatalf("Projects of an empty store = %v, %v", got, err)
	}
	e := json.RawMessage(`{"type":"x"}`)
	mustAppend(t, s, claude.SessionKey{ProjectKey: "-p1", SessionID: "s1"}, e)
	mustAppend(t, s, claude.SessionKey{ProjectKey: "-p1", SessionID: "s2"}, e)
	mustAppend(t, s, claude.SessionKey{ProjectKey: "-p2", SessionID: "s1", Subpath: "subagents/agent-a"}, e)
	mustAppend(t, s, claude.SessionKey{ProjectKey: "-p0", SessionID: "s9"}, e)
	mustAppend(t, s, claude.SessionKey{ProjectKey: "-p1-x", SessionID: "s1"}, e)
	got, err := s.Projects(ctx)
	if want := []string{"-p0", "-p1", "-p1-x", "-p2"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("Projects = %v, %v; want %v", got, err, want)
	}
	for _, c := range []struct {
		pk, sid string
		want    bool
	}{
		{"-p1", "s1", true},
		{"-p1", "s2", true},
		{"-p2", "s1", false}, // only a subagent transcript
		{"-p1", "s3", false},
		{"-p3", "s1", false},
	} {
		if has, err := s.HasSession(ctx, c.pk, c.sid); err != nil || has != c.want {
			t.Errorf("HasSession(%s, %s) = %v, %v; want %v", c.pk, c.sid, has, err, c.want)
		}
	}
	if err := s.Delete(ctx, claude.SessionKey{ProjectKey: "-p2", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Projects(ctx)
	if want := []string{"-p0", "-p1", "-p1-x"}; !slices.Equal(got, want) {
		t.Fatalf("Projects after deleting -p2's only session = %v, want %v", got, want)
	}
}
