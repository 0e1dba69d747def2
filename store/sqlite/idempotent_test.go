package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/store"
)

// The mirror retries a timed-out append only for a store that says it is
// safe; flower's store is, and so are the layers over it.
func TestSQLiteAndItsLayersDeclareIdempotentAppends(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p, err := store.NewPruning(db, t.TempDir(), store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]claude.SessionStore{"SQLite": db, "Pruning": p} {
		if is, ok := s.(claude.IdempotentStore); !ok || !is.IdempotentAppend() {
			t.Errorf("%s does not declare idempotent appends", name)
		}
	}
}
