package store

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
)

// A run continued from another checkout names another project (its
// workspace's path): OneProject files both under the run's own.
func TestOneProjectFilesEveryCheckoutsSessionsUnderTheRunsProject(t *testing.T) {
	ctx := context.Background()
	base := claudetest.NewMemoryStore()
	s := OneProject{Base: base, Project: "run-key"}
	a := claude.SessionKey{ProjectKey: "-machine-a-checkout", SessionID: "s1"}
	b := claude.SessionKey{ProjectKey: "-machine-b-checkout", SessionID: "s1"}
	if err := s.Append(ctx, a, []json.RawMessage{json.RawMessage(`{"uuid":"u1","n":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, b, []json.RawMessage{json.RawMessage(`{"uuid":"u2","n":2}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, b)
	if err != nil || len(got) != 2 {
		t.Fatalf("machine B loads %d entries (%v), want A's and its own", len(got), err)
	}
	if raw, _ := base.Load(ctx, a); raw != nil {
		t.Fatalf("the checkout's own project holds %d entries", len(raw))
	}
	list, err := s.ListSessions(ctx, b.ProjectKey)
	if err != nil || len(list) != 1 || list[0].SessionID != "s1" {
		t.Fatalf("ListSessions: %v %v", list, err)
	}
	if ok, err := s.HasSession(ctx, "-anywhere", "s1"); !ok || err != nil {
		t.Fatalf("HasSession: %v %v", ok, err)
	}
	if p, _ := s.Projects(ctx); !slices.Equal(p, []string{"run-key"}) {
		t.Fatalf("Projects: %v", p)
	}
	if err := s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(ctx, b); got != nil {
		t.Fatalf("after Delete: %d entries", len(got))
	}
}
