// Package backendtest holds the tests every database backend of the
// session store (store/sqlite, store/postgres) must pass beyond
// claudetest's conformance suite: flower's own capabilities (projects,
// sessions, last context), key and entry validation, and exact bytes.
package backendtest

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/store"
)

// Backend is what a database backend of the session store implements.
type Backend interface {
	claude.SessionStore
	claude.SessionLister
	claude.SessionSummaryLister
	claude.SessionDeleter
	claude.SubkeyLister
	claude.IdempotentStore
	store.ProjectLister
	store.SessionChecker
	store.LastContextReader
}

// Run runs claudetest's conformance suite and every case of this package on
// backends from open, a fresh empty one per subtest (open registers its
// cleanup).
func Run(t *testing.T, open func(t *testing.T) Backend) {
	t.Run("Conformance", func(t *testing.T) {
		claudetest.RunSessionStoreConformance(t, func(t *testing.T) claude.SessionStore { return open(t) })
	})
	for _, c := range []struct {
		name string
		run  func(*testing.T, Backend)
	}{
		{"LoadReturnsTheAppendedBytes", loadReturnsGeneratedTranscriptIntact},
		{"RejectsEntriesThatAreNotObjects", rejectsEntriesThatAreNotObjects},
		{"RejectsUnsafeKeys", rejectsUnsafeKeys},
		{"LastContext", lastContext},
		{"HasSessionAndProjects", hasSessionAndProjects},
		{"DeclaresIdempotentAppends", declaresIdempotentAppends},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

func mustAppend(t testing.TB, s Backend, key claude.SessionKey, entries ...json.RawMessage) {
	t.Helper()
	if err := s.Append(context.Background(), key, entries); err != nil {
		t.Fatalf("Append(%+v): %v", key, err)
	}
}

func decodeAll(t testing.TB, entries []json.RawMessage) []any {
	t.Helper()
	out := make([]any, len(entries))
	for i, e := range entries {
		dec := json.NewDecoder(bytes.NewReader(e))
		dec.UseNumber()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	return out
}

// The mirror retries a timed-out append only for a store that says it is
// safe.
func declaresIdempotentAppends(t *testing.T, s Backend) {
	if !s.IdempotentAppend() {
		t.Fatal("the store does not declare idempotent appends")
	}
}
