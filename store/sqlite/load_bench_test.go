package sqlite

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/transcripttest"
	"github.com/flowerrun/flower/store"
)

// BenchmarkResumeLoad compares, side by side in one run, what a resume
// costs: the pruning store's Load (SQLite rows, then expiry, trimming and
// pruning) against reading and decoding the same 10,000-entry session from
// its JSONL file, as the CLI would. It reports both times and their ratio.
func BenchmarkResumeLoad(b *testing.B) {
	entries := transcripttest.Generate(10_000, 7)
	dir := b.TempDir()
	db, err := Open(filepath.Join(dir, "sessions.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	key := claude.SessionKey{ProjectKey: "-bench", SessionID: transcripttest.SessionID(7)}
	if err := db.Append(ctx, key, entries); err != nil {
		b.Fatal(err)
	}
	jsonl := filepath.Join(dir, key.SessionID+".jsonl")
	var buf bytes.Buffer
	for _, e := range entries {
		buf.Write(e)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(jsonl, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	pruning, err := store.NewPruning(db, ws, store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{})
	if err != nil {
		b.Fatal(err)
	}
	// The first load writes the spill files; resumes after it find them.
	if _, err := pruning.Load(ctx, key); err != nil {
		b.Fatal(err)
	}
	var storeTime, fileTime time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		n, err := readJSONLFile(jsonl)
		fileTime += time.Since(start)
		if err != nil || n != len(entries) {
			b.Fatalf("jsonl: %d entries, %v", n, err)
		}
		start = time.Now()
		out, err := pruning.Load(ctx, key)
		storeTime += time.Since(start)
		if err != nil || len(out) < len(entries)/2 {
			b.Fatalf("store: %d entries, %v", len(out), err)
		}
	}
	b.ReportMetric(float64(fileTime.Milliseconds())/float64(b.N), "jsonl-ms/load")
	b.ReportMetric(float64(storeTime.Milliseconds())/float64(b.N), "store+trim-ms/load")
	b.ReportMetric(float64(storeTime)/float64(fileTime), "store/jsonl")
	b.ReportMetric(float64(pruning.LastReport().Cleared), "results-trimmed")
}

// readJSONLFile reads a transcript file and decodes every line.
func readJSONLFile(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return n, err
		}
		n++
	}
	return n, sc.Err()
}
