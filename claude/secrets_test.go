package claude

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const testKey = "sk-ant-api03-secret-test-value-1234"

func TestSecretsMaskTheExactValuesInPlace(t *testing.T) {
	s := secretsOf([]string{"ANTHROPIC_API_KEY=" + testKey, "ANTHROPIC_AUTH_TOKEN=short", "PATH=/bin", "OTHER=" + testKey + "x"})
	if len(s.values) != 1 {
		t.Fatalf("values %q, want the key only (a short token is a placeholder, OTHER is no credential)", s.values)
	}
	line := []byte(`{"stdout":"` + testKey + " and " + testKey + `x"}`)
	n := len(line)
	if !s.mask(line) || len(line) != n || bytes.Contains(line, []byte(testKey)) {
		t.Fatalf("masked %q", line)
	}
	if !bytes.Contains(line, []byte(`[masked]***`)) || !bytes.HasSuffix(line, []byte(`*x"}`)) {
		t.Errorf("the mask is not the value's length or took a neighbour: %q", line)
	}
	clean := []byte("nothing here")
	if s.mask(clean) || string(clean) != "nothing here" {
		t.Errorf("a line without the key changed: %q", clean)
	}
	if got := s.Mask([]byte(testKey)); string(got) == testKey {
		t.Errorf("Mask kept the key")
	}
	var none *secrets
	if none.mask(line) || string(none.Mask([]byte("x"))) != "x" {
		t.Errorf("nil secrets changed something")
	}
}

// maskFiles changes only the key's bytes of a recent file, on the same
// inode, so a CLI appending to it loses nothing; it never follows a link
// and leaves files older than the session alone.
func TestSecretsMaskFilesInPlace(t *testing.T) {
	s := secretsOf([]string{"ANTHROPIC_API_KEY=" + testKey})
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	os.WriteFile(outside, []byte(testKey), 0o600)
	os.Symlink(outside, filepath.Join(dir, "link.jsonl"))
	old := filepath.Join(dir, "old.jsonl")
	os.WriteFile(old, []byte(testKey), 0o600)
	past := time.Now().Add(-time.Hour)
	os.Chtimes(old, past, past)
	sub := filepath.Join(dir, "sess", "tool-results")
	os.MkdirAll(sub, 0o700)
	p := filepath.Join(sub, "out.txt")
	content := strings.Repeat("line "+testKey+"\n", 1000)
	os.WriteFile(p, []byte(content), 0o600)
	before, _ := os.Stat(p)

	s.maskFiles(dir, time.Now().Add(-time.Minute))

	after, _ := os.Stat(p)
	data, _ := os.ReadFile(p)
	if strings.Contains(string(data), testKey) || len(data) != len(content) {
		t.Errorf("the file still holds the key or changed length (%d, was %d)", len(data), len(content))
	}
	if before.Sys().(*syscall.Stat_t).Ino != after.Sys().(*syscall.Stat_t).Ino {
		t.Error("the file was replaced, not masked in place")
	}
	if b, _ := os.ReadFile(outside); string(b) != testKey {
		t.Errorf("a link was followed: %q", b)
	}
	if b, _ := os.ReadFile(old); string(b) != testKey {
		t.Errorf("a file older than the session was rewritten: %q", b)
	}
}
