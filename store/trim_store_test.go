package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/flowerrun/flower/claude"
)

func TestTrimConcurrentLoadsAreRaceFree(t *testing.T) {
	ws := t.TempDir()
	base := newLayerMemStore()
	keys := make([]claude.SessionKey, 6)
	for k := range keys {
		keys[k] = claude.SessionKey{ProjectKey: fxKey.ProjectKey, SessionID: fmt.Sprintf("s%d", k)}
		var f fxTranscript
		for i := range k + 1 { // key k has k+1 bulky results, shared texts across keys
			f.read(fmt.Sprintf("a%d", i), fmt.Sprintf("toolu_%d", i), "/work/ws/a.go")
			f.result(fmt.Sprintf("r%d", i), fmt.Sprintf("toolu_%d", i), layerBigText(fmt.Sprint(i), 3000), false)
		}
		f.bash("ax", "toolu_x", "make")
		if err := base.Append(context.Background(), keys[k], f.rows(t)); err != nil {
			t.Fatal(err)
		}
	}
	s := mustPruning(t, base, ws, TrimPolicy{KeepRecent: -1}, PrunePolicy{}, EphemeralPolicy{})
	var wg sync.WaitGroup
	errs := make(chan error, 48)
	for g := range 48 {
		wg.Go(func() {
			k := g % len(keys)
			out, err := s.Load(context.Background(), keys[k])
			if err != nil {
				errs <- err
				return
			}
			if want := 2*(k+1) + 2; len(out) != want {
				errs <- fmt.Errorf("key %d: %d entries, want %d", k, len(out), want)
			}
			_ = s.LastReport()
			_ = s.TrimReport()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r := s.LastReport()
	if r.Cleared < 1 || r.Cleared > len(keys) || r.OrphansHealed != 1 {
		t.Errorf("last report %+v is not the report of one load", r)
	}
}

// layerCapableStore has every optional capability, answering canned values.
type layerCapableStore struct {
	*layerMemStore
	calls []string
}

func (c *layerCapableStore) ListSessions(context.Context, string) ([]claude.SessionInfo, error) {
	c.calls = append(c.calls, "ListSessions")
	return []claude.SessionInfo{{SessionID: "s", Mtime: 7}}, nil
}

func (c *layerCapableStore) ListSessionSummaries(context.Context, string) ([]claude.SessionSummary, error) {
	c.calls = append(c.calls, "ListSessionSummaries")
	return []claude.SessionSummary{{SessionID: "s", Mtime: 7, Data: json.RawMessage(`{}`)}}, nil
}

func (c *layerCapableStore) Delete(context.Context, claude.SessionKey) error {
	c.calls = append(c.calls, "Delete")
	return nil
}

func (c *layerCapableStore) ListSubkeys(context.Context, string, string) ([]string, error) {
	c.calls = append(c.calls, "ListSubkeys")
	return []string{"subagents/agent-1"}, nil
}

func (c *layerCapableStore) Projects(context.Context) ([]string, error) {
	c.calls = append(c.calls, "Projects")
	return []string{"-p"}, nil
}

func (c *layerCapableStore) HasSession(context.Context, string, string) (bool, error) {
	c.calls = append(c.calls, "HasSession")
	return true, nil
}

func (c *layerCapableStore) LastContext(context.Context, string, string) (int, error) {
	c.calls = append(c.calls, "LastContext")
	return 42, nil
}

func TestTrimForwardsOptionalCapabilities(t *testing.T) {
	ctx := context.Background()
	c := &layerCapableStore{layerMemStore: newLayerMemStore()}
	s := mustPruning(t, c, t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	if l, err := s.ListSessions(ctx, "-p"); err != nil || len(l) != 1 {
		t.Errorf("ListSessions = %v, %v", l, err)
	}
	if l, err := s.ListSessionSummaries(ctx, "-p"); err != nil || len(l) != 1 {
		t.Errorf("ListSessionSummaries = %v, %v", l, err)
	}
	if err := s.Delete(ctx, fxKey); err != nil {
		t.Error(err)
	}
	if l, err := s.ListSubkeys(ctx, "-p", "s"); err != nil || len(l) != 1 {
		t.Errorf("ListSubkeys = %v, %v", l, err)
	}
	if l, err := s.Projects(ctx); err != nil || len(l) != 1 {
		t.Errorf("Projects = %v, %v", l, err)
	}
	if ok, err := s.HasSession(ctx, "-p", "s"); err != nil || !ok {
		t.Errorf("HasSession = %v, %v", ok, err)
	}
	if n, err := s.LastContext(ctx, "-p", "s"); err != nil || n != 42 {
		t.Errorf("LastContext = %v, %v", n, err)
	}
	want := []string{"ListSessions", "ListSessionSummaries", "Delete", "ListSubkeys", "Projects", "HasSession", "LastContext"}
	if !reflect.DeepEqual(c.calls, want) {
		t.Errorf("base calls = %v, want %v", c.calls, want)
	}
	if s.Base() != claude.SessionStore(c) {
		t.Error("Base() is not the decorated store")
	}
}

func TestTrimDegradesMissingCapabilitiesClearly(t *testing.T) {
	ctx := context.Background()
	var f fxTranscript
	f.prompt("u0", "hi")
	s := mustTrimming(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{}, EphemeralPolicy{})
	if _, err := s.ListSessions(ctx, "-p"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ListSessions err = %v, want ErrUnsupported", err)
	}
	if _, err := s.Projects(ctx); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Projects err = %v, want ErrUnsupported", err)
	}
	if _, err := s.LastContext(ctx, "-p", "s"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("LastContext err = %v, want ErrUnsupported", err)
	}
	if l, err := s.ListSessionSummaries(ctx, "-p"); l != nil || err != nil {
		t.Errorf("ListSessionSummaries = %v, %v; want none", l, err)
	}
	if l, err := s.ListSubkeys(ctx, "-p", "s"); l != nil || err != nil {
		t.Errorf("ListSubkeys = %v, %v; want none", l, err)
	}
	if err := s.Delete(ctx, fxKey); err != nil {
		t.Errorf("Delete = %v, want a no-op", err)
	}
	if ok, err := s.HasSession(ctx, fxKey.ProjectKey, fxKey.SessionID); !ok || err != nil {
		t.Errorf("HasSession(stored) = %v, %v", ok, err)
	}
	if ok, err := s.HasSession(ctx, fxKey.ProjectKey, "other"); ok || err != nil {
		t.Errorf("HasSession(unknown) = %v, %v", ok, err)
	}
}

func TestTrimAppendPassesThrough(t *testing.T) {
	base := newLayerMemStore()
	s := mustPruning(t, base, t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	var f fxTranscript
	f.apiError("e0")
	f.read("a0", "toolu_0", "/work/ws/a.go")
	rows := f.rows(t)
	if err := s.Append(context.Background(), fxKey, rows); err != nil {
		t.Fatal(err)
	}
	stored, _ := base.Load(context.Background(), fxKey)
	if !reflect.DeepEqual(stored, rows) {
		t.Errorf("Append changed what was stored")
	}
}
