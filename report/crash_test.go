package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"

	"github.com/flowerrun/flower/store/sqlite"
)

// TestReportOfARunThatDiedWithItsStoreOpen: a killed run leaves
// sessions.db-wal (and -shm) behind, holding transcripts the database file
// lacks; the report reads them.
func TestReportOfARunThatDiedWithItsStoreOpen(t *testing.T) {
	f := newFixture(t)
	dead := filepath.Join(t.TempDir(), "runs")
	if err := os.CopyFS(dead, os.DirFS(f.runDir)); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dead, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, _ := json.Marshal(map[string]any{"type": "assistant", "uuid": "late", "timestamp": f.t0.Add(190 * time.Second).UTC().Format(time.RFC3339Nano),
		"message": map[string]any{"id": "msg_late", "model": "claude-opus", "usage": map[string]any{"input_tokens": 1, "cache_read_input_tokens": 30000}}})
	if err := st.Append(context.Background(), claude.SessionKey{ProjectKey: project, SessionID: "s-work-2"}, []json.RawMessage{b}); err != nil {
		t.Fatal(err)
	}
	// A copy taken while the store is open is what a kill leaves.
	crashed := filepath.Join(t.TempDir(), "runs")
	if err := os.CopyFS(crashed, os.DirFS(dead)); err != nil {
		t.Fatal(err)
	}
	for _, withShm := range []bool{true, false} {
		if !withShm {
			os.Remove(filepath.Join(crashed, "sessions.db-shm"))
		}
		if _, err := os.Stat(filepath.Join(crashed, "sessions.db-wal")); err != nil {
			t.Fatalf("no -wal in the crashed copy: %v", err)
		}
		r := gather(t, crashed)
		if len(r.Problems) != 0 || len(r.Context) != 7 {
			t.Errorf("shm %v: problems %q, %d turns", withShm, r.Problems, len(r.Context))
		}
	}
}
