package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/transcripttest"
)

// benchPool is how many distinct generated entries the append benchmark
// cycles through; each pass over the pool writes to a new session, so no
// append is a replay.
const benchPool = 10_000

// BenchmarkAppend measures Append of realistic transcript entries (about
// 1.2 KB each, see transcripttest) in batches of 1 (the mirror's eager mode)
// and of 100, reporting entries/s.
func BenchmarkAppend(b *testing.B) {
	pool := transcripttest.Generate(benchPool, 1)
	var poolBytes int
	for _, e := range pool {
		poolBytes += len(e)
	}
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s := openTest(b)
			ctx := context.Background()
			b.SetBytes(int64(poolBytes / benchPool * batch))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				first := i * batch
				key := claude.SessionKey{ProjectKey: "-bench", SessionID: fmt.Sprintf("s%d", first/benchPool)}
				start := first % benchPool
				if err := s.Append(ctx, key, pool[start:start+batch]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// loadFixture returns a store holding one generated n-entry session,
// appended in the mirror's batches of 500, and its key.
func loadFixture(tb testing.TB, n int) (*Store, claude.SessionKey, []json.RawMessage) {
	tb.Helper()
	s := openTest(tb)
	entries := transcripttest.Generate(n, 2)
	key := claude.SessionKey{ProjectKey: "-home-dev-shop", SessionID: transcripttest.SessionID(2)}
	for i := 0; i < len(entries); i += 500 {
		if err := s.Append(context.Background(), key, entries[i:min(i+500, len(entries))]); err != nil {
			tb.Fatal(err)
		}
	}
	return s, key, entries
}

// BenchmarkLoad10k measures Load of a 10,000-entry session (about 12 MB),
// what a resume reads before trimming.
func BenchmarkLoad10k(b *testing.B) {
	s, key, entries := loadFixture(b, 10_000)
	var total int
	for _, e := range entries {
		total += len(e)
	}
	ctx := context.Background()
	b.SetBytes(int64(total))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := s.Load(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != len(entries) {
			b.Fatalf("loaded %d entries, want %d", len(got), len(entries))
		}
	}
}
