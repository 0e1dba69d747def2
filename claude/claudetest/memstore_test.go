package claudetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"go.uber.org/goleak"
)

func TestMemoryStoreConformance(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return NewMemoryStore() })
}

func TestMemoryStoreZeroValueAndSharedStoreConformance(t *testing.T) {
	var shared MemoryStore // one zero-value store for every subtest
	RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return &shared })
}

func TestMemoryStoreClockStepsPastAFrozenNow(t *testing.T) {
	frozen := time.UnixMilli(1_000_000)
	s := &MemoryStore{Now: func() time.Time { return frozen }}
	ctx := t.Context()
	a := claude.SessionKey{ProjectKey: "p", SessionID: "a"}
	b := claude.SessionKey{ProjectKey: "p", SessionID: "b"}
	for _, k := range []claude.SessionKey{a, b, a} {
		if err := s.Append(ctx, k, []json.RawMessage{json.RawMessage(`{"type":"x"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// A replayed batch stores nothing and leaves the clock alone.
	for range 2 {
		if err := s.Append(ctx, b, []json.RawMessage{json.RawMessage(`{"type":"x","uuid":"u"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := s.ListSessions(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	want := []claude.SessionInfo{{SessionID: "b", Mtime: 1_000_003}, {SessionID: "a", Mtime: 1_000_002}}
	if len(infos) != 2 || infos[0] != want[0] || infos[1] != want[1] {
		t.Fatalf("ListSessions = %+v, want %+v (newest first, +1 ms per storing append)", infos, want)
	}
	sums, err := s.ListSessionSummaries(ctx, "p")
	if err != nil || len(sums) != 2 || sums[0].Mtime != 1_000_003 || sums[1].Mtime != 1_000_002 {
		t.Fatalf("ListSessionSummaries = %+v, %v", sums, err)
	}
}

func TestMemoryStoreRejectsBadInput(t *testing.T) {
	s := NewMemoryStore()
	ctx := t.Context()
	good := []json.RawMessage{json.RawMessage(`{"type":"x"}`)}
	for _, k := range []claude.SessionKey{
		{ProjectKey: "", SessionID: "s"},
		{ProjectKey: "p", SessionID: ""},
		{ProjectKey: "p/q", SessionID: "s"},
		{ProjectKey: "p", SessionID: "s/t"},
		{ProjectKey: "p", SessionID: "s", Subpath: "/abs"},
		{ProjectKey: "p", SessionID: "s", Subpath: "subagents/../../x"},
		{ProjectKey: "p", SessionID: "s", Subpath: "subagents//x"},
		{ProjectKey: "p", SessionID: "s", Subpath: "a\x00b"},
		{ProjectKey: "p", SessionID: "s", Subpath: `subagents\agent`},
	} {
		if err := s.Append(ctx, k, good); err == nil {
			t.Errorf("Append accepted the key %+v", k)
		}
	}
	key := claude.SessionKey{ProjectKey: "p", SessionID: "s"}
	for _, bad := range []string{`[1]`, `"s"`, `{"a":`, ``, `null`} {
		err := s.Append(ctx, key, []json.RawMessage{json.RawMessage(`{"type":"ok"}`), json.RawMessage(bad)})
		if err == nil || !strings.Contains(err.Error(), "entry 1 is not a JSON object") {
			t.Errorf("Append of %q: %v", bad, err)
		}
	}
	if got, _ := s.Load(ctx, key); got != nil {
		t.Fatalf("a rejected batch stored %d entries", len(got))
	}
}
