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

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/transcripttest"
)

var updateGolden = flag.Bool("update-load-golden", false, "rewrite testdata/load_golden.txt from the current Load")

// TestLoadGolden pins Load's output, byte for byte, on varied generated
// sessions under several policies: the digests in testdata/load_golden.txt
// were computed by the load path before it was reworked for speed, so any
// change to what Load returns (an entry, a byte, a report count) fails here.
// Regenerate with -update-load-golden only for a change meant to alter the
// output.
//
// The cases run here over an in-memory base; the database backends run them
// over their own stores (CheckLoadGolden) against the same digests.
func TestLoadGolden(t *testing.T) {
	got := loadGoldenDigests(t, func(t testing.TB, rows []json.RawMessage) claude.SessionStore { return fxStore(t, rows) })
	if n := checkLoadGolden(t, got); n != len(got) {
		t.Fatalf("%d of %d cases compared; the memory base holds every case", n, len(got))
	}
}

// checkLoadGolden compares the digests got with the golden file, or
// rewrites the file under -update-load-golden. A case got marks skipped is
// not compared; it returns how many were.
func checkLoadGolden(t *testing.T, got []string) (compared int) {
	t.Helper()
	path := filepath.Join("testdata", "load_golden.txt")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return len(got)
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
		if strings.HasSuffix(got[i], skippedCase) {
			continue
		}
		compared++
		if got[i] != want[i] {
			t.Errorf("output changed:\n got %s\nwant %s", got[i], want[i])
		}
	}
	return compared
}

// skippedCase ends the line of a case whose rows the base could not hold.
const skippedCase = " skipped: the base cannot hold its rows"

// loadGoldenDigests loads each case and returns one line per case: its name
// and the sha256 of the returned entries (one per line) and the report.
// base returns a store holding rows, and only them, under fxKey, or nil
// when it cannot hold them as given (a database refuses a row that is not
// a JSON object and keeps one entry per uuid): the case is then skipped.
func loadGoldenDigests(t *testing.T, base func(t testing.TB, rows []json.RawMessage) claude.SessionStore) []string {
	t.Helper()
	// Each case has a workspace of its own: the generated sessions reuse
	// tool_use ids, and the ages of expired results are recorded by id in
	// the workspace, so one case's record would change another's notes.
	var lines []string
	digest := func(name string, s interface {
		LastReport() Report
	}, out []json.RawMessage) {
		if out == nil {
			lines = append(lines, name+skippedCase)
			return
		}
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
		if seed%2 == 1 {
			rows = goldenPerturb(rng, rows)
		}
		trim := TrimPolicy{KeepRecent: rng.IntN(4), MinChars: 200}
		eph := EphemeralPolicy{KeepRecent: -1 + rng.IntN(3), MaxChars: 100}
		prune := PrunePolicy{KeepDenials: []int{-1, 0, 2}[rng.IntN(3)]}
		ws := t.TempDir()
		if base(t, rows) == nil {
			for _, layer := range []string{"pruning", "trimming", "keep-all"} {
				digest(fmt.Sprintf("fx-%d-%s", seed, layer), nil, nil)
			}
			continue
		}

		p := mustPruning(t, base(t, rows), ws, trim, prune, eph)
		p.log = slog.New(slog.DiscardHandler)
		digest(fmt.Sprintf("fx-%d-pruning", seed), p, layerLoad(t, p, fxKey))

		tr := mustTrimming(t, base(t, rows), ws, trim, eph)
		tr.log = slog.New(slog.DiscardHandler)
		digest(fmt.Sprintf("fx-%d-trimming", seed), tr, layerLoad(t, tr, fxKey))

		keepAll := PrunePolicy{KeepAPIErrors: true, KeepInterrupts: true, KeepOrphans: true, KeepAllDenials: true}
		k := mustPruning(t, base(t, rows), ws, TrimPolicy{Disabled: true}, keepAll, EphemeralPolicy{Disabled: true})
		k.log = slog.New(slog.DiscardHandler)
		digest(fmt.Sprintf("fx-%d-keep-all", seed), k, layerLoad(t, k, fxKey))
	}
	for _, seed := range []int64{3, 7} {
		rows := transcripttest.Generate(3000, seed)
		if base(t, rows) == nil {
			digest(fmt.Sprintf("generated-%d-defaults", seed), nil, nil)
			continue
		}
		p := mustPruning(t, base(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
		digest(fmt.Sprintf("generated-%d-defaults", seed), p, layerLoad(t, p, fxKey))
	}
	return lines
}

// goldenPerturb changes a share of the rows in the ways a hand-written or
// foreign transcript might differ from the CLI's: a marker alone, a field
// of another type, a key in another case, a key given twice, a block of
// another type, string content. Rows that are not objects stay as they are.
func goldenPerturb(rng *rand.Rand, rows []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(rows))
	var uuids []any // of the rows before, for pointers to any of them
	for i, r := range rows {
		out[i] = r
		var m map[string]any
		if json.Unmarshal(r, &m) != nil {
			continue
		}
		if u, ok := m["uuid"]; ok {
			uuids = append(uuids, u)
		}
		if rng.IntN(3) != 0 {
			continue
		}
		msg, _ := m["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		switch rng.IntN(15) {
		case 0:
			delete(m, "isApiErrorMessage")
		case 1:
			if msg != nil {
				msg["model"] = "<synthetic>"
			}
		case 2:
			m["isApiErrorMessage"] = true
			if msg != nil {
				msg["model"] = "claude-real"
			}
		case 3:
			m["isMeta"] = "yes"
		case 4:
			m["type"] = 7
		case 5:
			m["UUID"], m["Type"] = "upper", "assistant"
		case 6:
			if msg != nil {
				msg["content"] = "[Request interrupted by user]"
			}
		case 7:
			if len(blocks) > 0 {
				if b, ok := blocks[0].(map[string]any); ok {
					b["type"] = "Tool_result"
				}
			}
		case 8:
			if len(blocks) > 0 {
				if b, ok := blocks[0].(map[string]any); ok {
					b["tool_use_id"], b["id"] = 42, 43
				}
			}
		case 9:
			m["toolDenialKind"] = "permission-rule"
		case 10:
			m[[]string{"isMeta", "isCompactSummary"}[rng.IntN(2)]] = true
		case 11:
			if len(blocks) > 0 {
				if b, ok := blocks[0].(map[string]any); ok {
					b["text"] = "[Request interrupted by user]"
				}
			}
		case 12, 13:
			// A branch: its parent may be an entry that prune drops.
			if len(uuids) > 1 {
				m["parentUuid"] = uuids[rng.IntN(len(uuids)-1)]
			}
		}
		data, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		if rng.IntN(4) == 0 {
			// The same key twice: the decoded map keeps the last one.
			data = append([]byte(`{"uuid":"first-of-two","type":"user",`), data[1:]...)
		}
		out[i] = data
	}
	return out
}
