package transcripttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// EntryID names a transcript entry for comparing a CLI's JSONL with a
// store: its uuid, or "type:<type>" for an entry without one (a title, the
// CLI's own state). A line that is not JSON fails the test.
func EntryID(t testing.TB, raw []byte) string {
	t.Helper()
	var e struct {
		UUID string `json:"uuid"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Errorf("a transcript line is not JSON (%v): %.200s", err, raw)
		return "bad"
	}
	if e.UUID != "" {
		return e.UUID
	}
	return "type:" + e.Type
}

// FileIDs are the EntryIDs of a JSONL transcript the CLI wrote, in order,
// without its api-request* lines: the CLI keeps those for itself (raw
// request shapes) and never mirrors them.
func FileIDs(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if id := EntryID(t, sc.Bytes()); !strings.HasPrefix(id, "type:api-request") {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(fmt.Errorf("read %s: %w", path, err))
	}
	return ids
}
