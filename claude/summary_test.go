package claude

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func rawEntries(t *testing.T, entries ...string) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(entries))
	for i, e := range entries {
		if !json.Valid([]byte(e)) {
			t.Fatalf("entry %d is not JSON: %s", i, e)
		}
		out[i] = json.RawMessage(e)
	}
	return out
}

func foldAll(t *testing.T, entries ...string) SessionSummaryData {
	t.Helper()
	key := SessionKey{ProjectKey: "-p", SessionID: "s"}
	out := FoldSessionSummary(nil, key, rawEntries(t, entries...))
	d, err := ParseSessionSummary(out)
	if err != nil {
		t.Fatalf("ParseSessionSummary(%s): %v", out, err)
	}
	return d
}

func TestFoldSessionSummaryReadsASession(t *testing.T) {
	d := foldAll(t,
		`{"type":"user","uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/u/repo","gitBranch":"main","isSidechain":false,"message":{"role":"user","content":"<command-name>/model</command-name>"}}`,
		`{"type":"user","uuid":"u2","isMeta":true,"message":{"role":"user","content":"Caveat: meta text"}}`,
		`{"type":"user","uuid":"u3","message":{"role":"user","content":"<local-command-stdout>ok</local-command-stdout>"}}`,
		`{"type":"user","uuid":"u4","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued"}}`,
		`{"type":"user","uuid":"u5","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"not a prompt"}]}}`,
		`{"type":"user","uuid":"u6","timestamp":"2026-01-01T00:00:05Z","cwd":"/elsewhere","gitBranch":"feature","message":{"role":"user","content":[{"type":"text","text":"fix the\nfailing test"}]}}`,
		`{"type":"assistant","uuid":"a1","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}`,
		`{"type":"user","uuid":"u7","message":{"role":"user","content":"a later prompt"}}`,
		`{"type":"custom-title","customTitle":"first title","sessionId":"s"}`,
		`{"type":"custom-title","customTitle":"store work","sessionId":"s"}`,
		`{"type":"ai-title","aiTitle":"Fix store tests","sessionId":"s"}`,
		`{"type":"last-prompt","lastPrompt":"now run the benchmarks","sessionId":"s"}`,
		`{"type":"summary","summary":"Store tests fixed","leafUuid":"a1"}`,
		`{"type":"tag","tag":"wip","sessionId":"s"}`,
	)
	want := SessionSummaryData{
		FirstPrompt:     "fix the failing test",
		CommandFallback: "/model",
		CustomTitle:     "store work",
		AITitle:         "Fix store tests",
		LastPrompt:      "now run the benchmarks",
		SummaryHint:     "Store tests fixed",
		Tag:             "wip",
		CreatedAt:       1767225600000,
		GitBranch:       "feature",
		Cwd:             "/home/u/repo",
		Entries:         14,
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("summary:\n got %+v\nwant %+v", d, want)
	}
	if got := d.Title(); got != "store work" {
		t.Errorf("Title() = %q, want the custom title", got)
	}
}

func TestFoldSessionSummaryTitleFallsBack(t *testing.T) {
	tests := []struct {
		name string
		d    SessionSummaryData
		want string
	}{
		{"ai title", SessionSummaryData{AITitle: "a", LastPrompt: "l", FirstPrompt: "f"}, "a"},
		{"last prompt", SessionSummaryData{LastPrompt: "l", SummaryHint: "s", FirstPrompt: "f"}, "l"},
		{"summary", SessionSummaryData{SummaryHint: "s", FirstPrompt: "f"}, "s"},
		{"first prompt", SessionSummaryData{FirstPrompt: "f", CommandFallback: "/c"}, "f"},
		{"command", SessionSummaryData{CommandFallback: "/c"}, "/c"},
		{"nothing", SessionSummaryData{Entries: 3}, ""},
	}
	for _, tt := range tests {
		if got := tt.d.Title(); got != tt.want {
			t.Errorf("%s: Title() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestFoldSessionSummaryCutsLongPrompts(t *testing.T) {
	long := strings.Repeat("界", 150) + " " + strings.Repeat("x", 100)
	d := foldAll(t, `{"type":"user","message":{"content":"`+long+`"}}`)
	if n := len([]rune(d.FirstPrompt)); n > 200 {
		t.Fatalf("first_prompt has %d characters, want at most 200", n)
	}
	if !strings.HasSuffix(d.FirstPrompt, "…") || !strings.HasPrefix(d.FirstPrompt, strings.Repeat("界", 150)) {
		t.Fatalf("first_prompt = %q, want the head of the prompt ending in …", d.FirstPrompt)
	}
	exact := strings.Repeat("y", 200)
	if d := foldAll(t, `{"type":"user","message":{"content":"`+exact+`"}}`); d.FirstPrompt != exact {
		t.Fatalf("a 200-character prompt was changed to %q", d.FirstPrompt)
	}
}

func TestFoldSessionSummaryInBatchesEqualsAtOnce(t *testing.T) {
	entries := rawEntries(t,
		`{"type":"user","timestamp":"not a time","isSidechain":true,"message":{"content":"<command-name>/clear</command-name>"}}`,
		`{"type":"user","timestamp":"2026-02-03T04:05:06.789+02:00","message":{"content":[{"type":"text","text":"  "},{"type":"text","text":"hello"}]}}`,
		`{"type":"tag","tag":"keep"}`,
		`{"type":"custom-title","customTitle":"t"}`,
		`{"type":"tag","tag":""}`,
		`{"type":"ai-title","aiTitle":"ai"}`,
		`[1,2,3]`,
		`{"type":"last-prompt","lastPrompt":"lp","gitBranch":"b2"}`,
	)
	key := SessionKey{ProjectKey: "-p", SessionID: "s"}
	whole := FoldSessionSummary(nil, key, entries)
	for split := 0; split <= len(entries); split++ {
		for split2 := split; split2 <= len(entries); split2++ {
			got := FoldSessionSummary(nil, key, entries[:split])
			got = FoldSessionSummary(got, key, entries[split:split2])
			got = FoldSessionSummary(got, key, entries[split2:])
			if string(got) != string(whole) {
				t.Fatalf("folded at %d,%d:\n got %s\nwant %s", split, split2, got, whole)
			}
		}
	}
	d, err := ParseSessionSummary(whole)
	if err != nil {
		t.Fatal(err)
	}
	want := SessionSummaryData{
		FirstPrompt: "hello", CommandFallback: "/clear", CustomTitle: "t", AITitle: "ai",
		LastPrompt: "lp", CreatedAt: 1770084306789, GitBranch: "b2", IsSidechain: true, Entries: 8,
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("summary:\n got %+v\nwant %+v", d, want)
	}
}

func TestFoldSessionSummaryToleratesOddInput(t *testing.T) {
	key := SessionKey{ProjectKey: "-p", SessionID: "s"}
	// A corrupt previous summary starts over rather than failing.
	out := FoldSessionSummary(json.RawMessage(`{"entries":"many"`), key, rawEntries(t, `{"type":"user","message":{"content":"hi"}}`))
	d, err := ParseSessionSummary(out)
	if err != nil || d.FirstPrompt != "hi" || d.Entries != 1 {
		t.Fatalf("after a corrupt prev: %+v, %v", d, err)
	}
	// Wrongly typed fields are ignored one by one; the rest still count.
	out = FoldSessionSummary(nil, key, []json.RawMessage{
		json.RawMessage(`{"type":"user","isMeta":"yes","cwd":7,"customTitle":["x"],"gitBranch":"dev","message":"hello"}`),
		json.RawMessage(`not json`),
		nil,
	})
	d, err = ParseSessionSummary(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (SessionSummaryData{GitBranch: "dev", Entries: 3}); !reflect.DeepEqual(d, want) {
		t.Fatalf("summary:\n got %+v\nwant %+v", d, want)
	}
	// Nothing to fold still gives a well-formed object.
	if out := FoldSessionSummary(nil, key, nil); string(out) != `{"entries":0}` {
		t.Fatalf("empty fold = %s", out)
	}
	if _, err := ParseSessionSummary(json.RawMessage(`[1]`)); err == nil {
		t.Fatal("ParseSessionSummary accepted a list")
	}
}

func TestFoldSessionSummaryKeepsTagsReadable(t *testing.T) {
	out := FoldSessionSummary(nil, SessionKey{ProjectKey: "-p", SessionID: "s"},
		rawEntries(t, `{"type":"custom-title","customTitle":"a <b> & c"}`))
	if !strings.Contains(string(out), `"a <b> & c"`) {
		t.Fatalf("summary escapes HTML: %s", out)
	}
}
