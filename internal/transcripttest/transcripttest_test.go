package transcripttest

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestGenerateIsARealisticChain(t *testing.T) {
	const n = 10000
	entries := Generate(n, 7)
	if len(entries) != n {
		t.Fatalf("Generate(%d) gave %d entries", n, len(entries))
	}
	again := Generate(n, 7)
	for i := range entries {
		if !bytes.Equal(entries[i], again[i]) {
			t.Fatalf("entry %d differs between two runs with the same seed", i)
		}
	}
	if other := Generate(1, 8); bytes.Equal(other[0], entries[0]) {
		t.Fatal("seeds 7 and 8 gave the same first entry")
	}
	session := SessionID(7)
	var (
		total, big, withUsage, gitStatus int
		prev                             string
		seen                             = map[string]bool{}
		kinds                            = map[string]int{}
	)
	for i, raw := range entries {
		total += len(raw)
		var e struct {
			Type        string  `json:"type"`
			UUID        string  `json:"uuid"`
			ParentUUID  *string `json:"parentUuid"`
			SessionID   string  `json:"sessionId"`
			Timestamp   string  `json:"timestamp"`
			IsSidechain *bool   `json:"isSidechain"`
			Message     struct {
				Content json.RawMessage `json:"content"`
				Usage   *struct {
					CacheRead int `json:"cache_read_input_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if e.UUID == "" || seen[e.UUID] || e.Timestamp == "" || e.SessionID != session || e.IsSidechain == nil || *e.IsSidechain {
			t.Fatalf("entry %d lacks a fresh uuid, a timestamp, the session id or isSidechain false: %s", i, raw)
		}
		seen[e.UUID] = true
		if (i == 0) != (e.ParentUUID == nil) || (i > 0 && *e.ParentUUID != prev) {
			t.Fatalf("entry %d does not chain to the previous one", i)
		}
		prev = e.UUID
		kinds[e.Type]++
		if e.Message.Usage != nil {
			withUsage++
		}
		var blocks []struct {
			Type    string `json:"type"`
			Name    string `json:"name"`
			Content string `json:"content"`
		}
		if json.Unmarshal(e.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					kinds[b.Name]++
				}
				if b.Type == "tool_result" && len(b.Content) > 2000 {
					big++
				}
				if b.Type == "tool_result" && bytes.HasPrefix([]byte(b.Content), []byte("On branch")) {
					gitStatus++
				}
			}
		}
	}
	if withUsage != kinds["assistant"] {
		t.Errorf("%d of %d assistant entries carry usage", withUsage, kinds["assistant"])
	}
	for _, k := range []string{"user", "assistant", "Bash", "Read", "Grep"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in %v", k, kinds)
		}
	}
	if big < n/40 || gitStatus < n/100 {
		t.Errorf("%d results over 2000 chars and %d git status outputs in %d entries: too few", big, gitStatus, n)
	}
	if mean := total / n; mean < 700 || mean > 2000 {
		t.Errorf("entries average %d bytes, want about 1 KB", mean)
	}
	t.Logf("%d entries, %d bytes (mean %d), %d results > 2000 chars, %d git status, kinds %v", n, total, total/n, big, gitStatus, kinds)
}

func TestGenerateNothing(t *testing.T) {
	if got := Generate(0, 1); got != nil {
		t.Fatalf("Generate(0) = %d entries", len(got))
	}
}
