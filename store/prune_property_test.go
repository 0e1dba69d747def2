package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
)

// fxGenTranscript writes a random but realistic transcript: prompts, tool
// turns with parallel calls, results of every kind (short, bulky, images,
// interrupted, denied, missing), API errors, meta and compact-summary
// entries, branches off earlier entries, and a few entries that are not
// JSON objects at all.
func fxGenTranscript(rng *rand.Rand) []json.RawMessage {
	var f fxTranscript
	n := 0
	id := func(prefix string) string { n++; return fmt.Sprintf("%s%d", prefix, n) }
	branchNext := false
	branch := func(m map[string]any) {
		if branchNext && len(f.entries) > 1 {
			m["parentUuid"] = f.entries[rng.IntN(len(f.entries)-1)]["uuid"]
		}
		branchNext = false
	}
	commands := []string{"git status", "ls -la", "make build", "go test ./...", "rm -rf out", "cat go.mod | head -n 3"}
	for range 3 + rng.IntN(30) {
		switch rng.IntN(12) {
		case 0, 1:
			branch(f.prompt(id("u"), "do it"))
		case 2:
			branch(f.apiError(id("e")))
		case 3:
			m := f.prompt(id("m"), "summary of earlier work")
			if rng.IntN(2) == 0 {
				m["isMeta"] = true
			} else {
				m["isCompactSummary"] = true
			}
			branch(m)
		case 4:
			branchNext = true
		default:
			if rng.IntN(3) == 0 {
				branch(f.text(id("t"), "thinking out loud"))
			}
			var tools []string
			for range 1 + rng.IntN(3) {
				tid := id("toolu_")
				tools = append(tools, tid)
				var m map[string]any
				switch rng.IntN(4) {
				case 0:
					m = f.read(id("a"), tid, "/work/ws/file.go")
				case 1:
					m = f.assistant(id("a"),
						map[string]any{"type": "text", "text": "running"},
						fxToolUseBlock(tid, "Bash", map[string]any{"command": commands[rng.IntN(len(commands))]}))
				default:
					m = f.bash(id("a"), tid, commands[rng.IntN(len(commands))])
				}
				branch(m)
			}
			if rng.IntN(6) == 0 {
				f.apiError(id("e"))
			}
			for _, tid := range tools {
				switch rng.IntN(10) {
				case 0: // missing: the run was cut off
				case 1:
					f.result(id("r"), tid, "[Request interrupted by user for tool use]", true)
				case 2, 3:
					f.denial(id("d"), tid)
				case 4:
					f.result(id("r"), tid, layerBigText("bulk", 200+rng.IntN(300)), false)
				case 5:
					f.result(id("r"), tid, []any{
						map[string]any{"type": "text", "text": layerBigText("shot", 250)},
						map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "AAAA"}},
					}, false)
				default:
					f.result(id("r"), tid, "ok", rng.IntN(5) == 0)
				}
			}
		}
	}
	rows := f.rows(layerFakeTB{})
	for range rng.IntN(3) {
		at := rng.IntN(len(rows) + 1)
		bad := json.RawMessage(fmt.Sprintf(`{"broken": %d`, at))
		rows = append(rows[:at], append([]json.RawMessage{bad}, rows[at:]...)...)
	}
	return rows
}

// layerFakeTB lets the generator use the fixture builders outside a test.
type layerFakeTB struct{ testing.TB }

func (layerFakeTB) Helper()           {}
func (layerFakeTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func TestPruneProperties(t *testing.T) {
	seeds := uint64(150)
	if testing.Short() {
		seeds = 40
	}
	ws := t.TempDir() // spill files are content-addressed: one workspace serves every seed
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		rows := fxGenTranscript(rng)
		snapshot := make([]json.RawMessage, len(rows))
		for i, r := range rows {
			snapshot[i] = bytes.Clone(r)
		}
		prune := PrunePolicy{KeepDenials: []int{-1, 0, 2}[rng.IntN(3)]}
		s := mustPruning(t, fxStore(t, rows), ws, TrimPolicy{KeepRecent: rng.IntN(4), MinChars: 200}, prune, EphemeralPolicy{KeepRecent: -1 + rng.IntN(3), MaxChars: 100})
		s.log = slog.New(slog.DiscardHandler)
		out := layerLoad(t, s, fxKey)
		if err := checkTranscriptInvariants(rows, out); err != nil {
			var dump bytes.Buffer
			for _, r := range rows {
				dump.Write(r)
				dump.WriteByte('\n')
			}
			t.Fatalf("seed %d: %v\ninput:\n%s", seed, err, dump.String())
		}
		for i := range rows {
			if !bytes.Equal(rows[i], snapshot[i]) {
				t.Fatalf("seed %d: input row %d changed", seed, i)
			}
		}
	}
}

// checkTranscriptInvariants checks a loaded transcript against its rows:
// every tool_use that survived has exactly one tool_result after it; a
// tool_result only goes with its denied tool_use; every parentUuid points to
// a surviving entry (or is null); no entry is duplicated; bad rows pass
// through; protected entries keep their content.
func checkTranscriptInvariants(in, out []json.RawMessage) error {
	var inObjs, outObjs []map[string]any
	badIn, badOut := map[string]int{}, map[string]int{}
	for _, r := range in {
		if obj, err := decodeEntryObject(r); err != nil {
			badIn[string(r)]++
		} else {
			inObjs = append(inObjs, obj)
		}
	}
	for _, r := range out {
		if obj, err := decodeEntryObject(r); err != nil {
			badOut[string(r)]++
		} else {
			outObjs = append(outObjs, obj)
		}
	}
	if !reflect.DeepEqual(badIn, badOut) {
		return fmt.Errorf("bad rows changed: %v -> %v", badIn, badOut)
	}
	seen := map[string]bool{}
	for _, e := range outObjs {
		u, _ := e["uuid"].(string)
		if seen[u] {
			return fmt.Errorf("entry %s appears twice", u)
		}
		seen[u] = true
	}
	for _, e := range outObjs {
		switch p := e["parentUuid"].(type) {
		case nil:
		case string:
			if !seen[p] {
				return fmt.Errorf("%v.parentUuid = %s, which did not survive", e["uuid"], p)
			}
		default:
			return fmt.Errorf("%v.parentUuid = %v", e["uuid"], p)
		}
	}
	ids := func(e map[string]any, typ, field string) []string {
		var l []string
		for _, b := range layerBlocks(e) {
			if b["type"] == typ {
				s, _ := b[field].(string)
				l = append(l, s)
			}
		}
		return l
	}
	outUses := map[string]bool{}
	outResults := map[string]bool{}
	for i, e := range outObjs {
		for _, r := range ids(e, "tool_result", "tool_use_id") {
			outResults[r] = true
		}
		if e["type"] != "assistant" {
			continue
		}
		for _, u := range ids(e, "tool_use", "id") {
			outUses[u] = true
			count := 0
			for _, later := range outObjs[i+1:] {
				for _, r := range ids(later, "tool_result", "tool_use_id") {
					if r == u {
						count++
					}
				}
			}
			if count != 1 {
				return fmt.Errorf("tool_use %s in %v has %d tool_results after it", u, e["uuid"], count)
			}
		}
	}
	for _, e := range inObjs {
		for _, r := range ids(e, "tool_result", "tool_use_id") {
			if outResults[r] {
				continue
			}
			if outUses[r] || e["toolDenialKind"] != "permission-rule" {
				return fmt.Errorf("tool_result %s of %v was removed without its denied tool_use", r, e["uuid"])
			}
		}
		if e["isMeta"] == true || e["isCompactSummary"] == true {
			var got map[string]any
			for _, o := range outObjs {
				if o["uuid"] == e["uuid"] {
					got = o
				}
			}
			if got == nil || !reflect.DeepEqual(got["message"], e["message"]) {
				return fmt.Errorf("protected entry %v changed or vanished", e["uuid"])
			}
		}
	}
	return nil
}
