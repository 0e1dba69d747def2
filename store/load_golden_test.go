package store

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/internal/transcripttest"
)

var updateGolden = flag.Bool("update-load-golden", false, "rewrite testdata/load_golden.txt from the current Load")

// TestLoadGolden pins Load's output, byte for byte, on varied generated
// sessions under several policies: the digests in testdata/load_golden.txt
// were computed by the load path before it was reworked for speed, so any
// change to what Load returns (an entry, a byte, a report count) fails here.
// Regenerate with -update-load-golden only for a change meant to alter the
// output.
func TestLoadGolden(t *testing.T) {
	got := loadGoldenDigests(t)
	path := filepath.Join("testdata", "load_golden.txt")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the golden digests (regenerate with -update-load-golden): %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d cases, the golden file has %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("output changed:\n got %s\nwant %s", got[i], want[i])
		}
	}
}

// loadGoldenDigests loads each case and returns one line per case: its name
// and the sha256 of the returned entries (one per line) and the report.
func loadGoldenDigests(t *testing.T) []string {
	t.Helper()
	ws := t.TempDir() // spill files are content-addressed: one workspace serves every case
	var lines []string
	digest := func(name string, s interface {
		LastReport() Report
	}, out []json.RawMessage) {
		h := sha256.New()
		for _, e := range out {
			h.Write(e)
			h.Write([]byte{'\n'})
		}
		fmt.Fprintf(h, "%+v", s.LastReport())
		lines = append(lines, fmt.Sprintf("%s %d %x", name, len(out), h.Sum(nil)))
	}
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 0x901d))
		rows := fxGenTranscript(rng)
		trim := TrimPolicy{KeepRecent: rng.IntN(4), MinChars: 200}
		eph := EphemeralPolicy{KeepRecent: -1 + rng.IntN(3), MaxChars: 100}
		prune := PrunePolicy{KeepDenials: []int{-1, 0, 2}[rng.IntN(3)]}

		p := mustPruning(t, fxStore(t, rows), ws, trim, prune, eph)
		p.log = slog.New(slog.DiscardHandler)
		digest(fmt.Sprintf("fx-%d-pruning", seed), p, layerLoad(t, p, fxKey))

		tr := mustTrimming(t, fxStore(t, rows), ws, trim, eph)
		tr.log = slog.New(slog.DiscardHandler)
		digest(fmt.Sprintf("fx-%d-trimming", seed), tr, layerLoad(t, tr, fxKey))

		keepAll := PrunePolicy{KeepAPIErrors: true, KeepInterrupts: true, KeepOrphans: true, KeepAllDenials: true}
		k := mustPruning(t, fxStore(t, rows), ws, TrimPolicy{Disabled: true}, keepAll, EphemeralPolicy{Disabled: true})
		k.log = slog.New(slog.DiscardHandler)
		digest(fmt.Sprintf("fx-%d-keep-all", seed), k, layerLoad(t, k, fxKey))
	}
	for _, seed := range []int64{3, 7} {
		rows := transcripttest.Generate(3000, seed)
		p := mustPruning(t, fxStore(t, rows), ws, TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		digest(fmt.Sprintf("generated-%d-defaults", seed), p, layerLoad(t, p, fxKey))
	}
	return lines
}
