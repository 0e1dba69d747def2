package flower

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A crashed run leaves a resume directory with credentials in the temporary
// folder; the next runtime removes it.
func TestNewSweepsStaleResumeDirectories(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stale := filepath.Join(tmp, "claude-resume-42")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(stale, ".credentials.json")
	if err := os.WriteFile(creds, []byte(`{"claudeAiOauth":{"accessToken":"x"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(creds, old, old)
	os.Chtimes(stale, old, old)
	rt, err := New(t.TempDir(), WithRunDir(t.TempDir()), WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale resume directory is still there: %v", err)
	}
}
