package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/store/readback"
)

// econSmall is a small version of the benchmarks through the real CLI: 10
// calls (3 cats, 3 test logs, 3 glances, a Write), the process ended after
// 5, workers of 5 calls.
func econSmall(t *testing.T) econConfig {
	t.Helper()
	return econConfig{Calls: 10, Split: 5, PerWorker: 5, Reps: 1, Timeout: 3 * time.Minute,
		CLI: claudetest.CLIPath(t), Dir: t.TempDir(), Out: &bytes.Buffer{}}
}

// checkReadBack fails t unless every output sent as a pointer was read
// back whole from its file, and some were.
func checkReadBack(t *testing.T, name string, f econFigures, wantPointed bool) {
	t.Helper()
	for _, r := range f.Check.Results {
		if r.Status != readback.Inline && r.Status != readback.Recoverable {
			t.Errorf("%s: %s is %s: %s", name, r.ToolUseID, r.Status, r.Why)
		}
	}
	if f.Check.Percent() != 100 || (wantPointed && f.Pointed == 0) {
		t.Errorf("%s: read-back %s, %d bytes pointed to", name, f.Check, f.Pointed)
	}
}

// checkPrice checks a run's priced totals on both timelines: the parts and
// the zones add up to the total, the cache made it cheaper than no cache,
// and the price is more than the output alone.
func checkPrice(t *testing.T, name string, f econFigures) {
	t.Helper()
	for _, tl := range []string{timelineOwn, timelineSlow} {
		p, ok := f.Price[tl]
		if !ok || p.Total <= 0 {
			t.Errorf("%s, %s: no price", name, tl)
			continue
		}
		var parts, zones float64
		for _, n := range p.Parts {
			parts += n
		}
		for _, n := range p.Zones {
			zones += n
		}
		if math.Abs(parts-p.Total) > 1e-6*p.Total || math.Abs(zones-p.Total) > 1e-6*p.Total {
			t.Errorf("%s, %s: parts add up to %.3f, zones to %.3f, the total is %.3f", name, tl, parts, zones, p.Total)
		}
		if p.Total >= p.NoCache {
			t.Errorf("%s, %s: priced %.0f with the cache, %.0f without: the cache should make it cheaper", name, tl, p.Total, p.NoCache)
		}
		if p.Zones["output"] >= p.Total || p.Zones[fakeapi.Read.String()] <= 0 {
			t.Errorf("%s, %s: zones %v: want cache reads and more than output", name, tl, p.Zones)
		}
	}
}

// checkDump fails t unless dir holds f's measured requests: one JSON body
// a file, as many as f counted, adding up to its bytes.
func checkDump(t *testing.T, dir string, f econFigures) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) != f.Requests {
		t.Fatalf("%s: %d dumped requests (%v), want %d", dir, len(files), err, f.Requests)
	}
	var total int64
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var req struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
			t.Errorf("%s is not a request body (%v)", name, err)
		}
		total += int64(len(body))
	}
	if total != f.Bytes {
		t.Errorf("%s: the dumped bodies are %d bytes, the measured requests %d", dir, total, f.Bytes)
	}
}

func TestEconomyDumpToAFileSaysSo(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "taken")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := econDump(file, "plain", []*claudetest.Request{{Body: []byte("{}")}})
	if err == nil || !strings.Contains(err.Error(), "BENCH_DUMP") {
		t.Errorf("dumping under a file: %v, want an error naming BENCH_DUMP", err)
	}
}

func TestEconomySmallRunsEveryVariantAndEverySpilledByteReadsBack(t *testing.T) {
	t.Parallel()
	cfg := econSmall(t)
	cfg.Dump = filepath.Join(t.TempDir(), "dump")
	res, err := econBench(context.Background(), cfg, econSessionVariants, econPrint)
	out := cfg.Out.(*bytes.Buffer).String()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	plain, defaults, run := res[0][0], res[1][0], res[2][0]
	// BENCH_DUMP: every measured request, whole, one file each.
	for i, f := range []econFigures{plain, defaults, run} {
		checkDump(t, filepath.Join(cfg.Dump, econSessionVariants[i].name), f)
	}
	for i, f := range []econFigures{plain, defaults, run} {
		name := econSessionVariants[i].name
		// One request per call and one for each process's closing text.
		if f.Requests != cfg.Calls+2 || f.MainRequests != f.Requests {
			t.Errorf("%s: %d requests (%d main), want %d", name, f.Requests, f.MainRequests, cfg.Calls+2)
		}
		if len(f.Check.Results)+f.Expired != 9 { // the Bash calls
			t.Errorf("%s: %d outputs checked and %d expired, want 9 in all", name, len(f.Check.Results), f.Expired)
		}
		var parts int64
		for _, n := range f.Parts {
			parts += n
		}
		if parts != f.Bytes {
			t.Errorf("%s: the parts add up to %d bytes, the requests to %d", name, parts, f.Bytes)
		}
		checkPrice(t, name, f)
	}
	// Six simulated minutes before the 10th request expire plain's cache:
	// that request writes its whole context again.
	if own, slow := plain.Price[timelineOwn].Total, plain.Price[timelineSlow].Total; slow <= own {
		t.Errorf("plain costs %.0f on the slow timeline, %.0f on its own: an expired cache should cost more", slow, own)
	}
	// The CLI cuts the two cats over 30,000 characters itself; flower's
	// spill takes every big output.
	checkReadBack(t, "plain", plain, true)
	checkReadBack(t, "flower-defaults", defaults, true)
	checkReadBack(t, "flower-run", run, true)
	if run.Pointed <= plain.Pointed {
		t.Errorf("flower-run pointed to %d bytes, plain (the CLI's own cuts) %d: the spill guard did not work", run.Pointed, plain.Pointed)
	}
	if plain.Bytes <= run.Bytes || plain.Largest <= run.Largest {
		t.Errorf("plain sent %d bytes (largest %d), flower-run %d (largest %d): want plain more", plain.Bytes, plain.Largest, run.Bytes, run.Largest)
	}
	if !strings.Contains(out, "plain ÷ variant") || !strings.Contains(out, partSpill) || !strings.Contains(out, "price, "+timelineSlow) {
		t.Errorf("the printed figures lack the ratio or the parts:\n%s", out)
	}
	// Each resume's first request is reported: flower's Runtime resumes a
	// second time, in a process that only answers and counts in no other
	// figure, and reads the history the second process sent.
	for i, want := range []int{1, 2, 2} {
		f := res[i][0]
		if len(f.Resumes) != want {
			t.Errorf("%s: %d resumes reported, want %d", econSessionVariants[i].name, len(f.Resumes), want)
		}
	}
	if rs := run.Resumes; len(rs) == 2 && rs[1].CacheReadInputTokens <= rs[0].CacheReadInputTokens {
		t.Errorf("flower-run's second resume read %d tokens from the cache, the first %d: want more, the history grew", rs[1].CacheReadInputTokens, rs[0].CacheReadInputTokens)
	}
	if !strings.Contains(out, "The first request of each resumed process") {
		t.Errorf("the printed figures lack the resumes:\n%s", out)
	}
}

func TestCoordinatorSmallKeepsTheMainThreadLight(t *testing.T) {
	t.Parallel()
	cfg := econSmall(t)
	res, err := econBench(context.Background(), cfg, econCoordinatorVariants, econPrintCoordinator)
	out := cfg.Out.(*bytes.Buffer).String()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	plain, lead := res[0][0], res[1][0]
	// Two workers, one per process: each process dispatches one and closes.
	if lead.MainRequests != 4 || lead.Requests-lead.MainRequests != cfg.Calls+2 {
		t.Errorf("coordinator: %d main requests and %d subagent requests, want 4 and %d", lead.MainRequests, lead.Requests-lead.MainRequests, cfg.Calls+2)
	}
	if lead.Parts[partAgent] == 0 || lead.Parts[partInline]+lead.Parts[partSpill] != 0 {
		t.Errorf("the coordinator's thread should hold the workers' reports and no tool output: %v", lead.Parts)
	}
	checkReadBack(t, "flower-coordinator", lead, true)
	checkPrice(t, "plain", plain)
	checkPrice(t, "flower-coordinator", lead)
	if p := lead.Price[timelineOwn]; p.Main <= 0 || p.Main >= p.Total {
		t.Errorf("coordinator: the main thread's price %.0f of %.0f: want a part of it", p.Main, p.Total)
	}
	if plain.Bytes <= lead.MainBytes || plain.Bytes <= lead.Bytes {
		t.Errorf("plain sent %d bytes, the coordinator %d on its thread and %d in all: want plain more", plain.Bytes, lead.MainBytes, lead.Bytes)
	}
	if !strings.Contains(out, "plain ÷ main") {
		t.Errorf("the printed figures lack the ratio:\n%s", out)
	}
}

// TestEconomyStopsAVariantWhoseFakeFails: a fake API that answers 500
// from its 4th request on stops every variant with one line naming where,
// and the benchmark reports the failure instead of figures.
func TestEconomyStopsAVariantWhoseFakeFails(t *testing.T) {
	t.Parallel()
	cfg := econSmall(t)
	cfg.failAt, cfg.fault = 4, claudetest.ServerError()
	_, err := econBench(context.Background(), cfg, econSessionVariants, econPrint)
	out := cfg.Out.(*bytes.Buffer).String()
	if err == nil {
		t.Fatalf("no error from a failing fake:\n%s", out)
	}
	for _, v := range econSessionVariants {
		if strings.Count(out, v.name+": stopped: ") != 1 {
			t.Errorf("want one line saying %s stopped:\n%s", v.name, out)
		}
	}
	if !strings.Contains(err.Error(), "first process stopped after 4 requests") || strings.Contains(out, "plain ÷ variant") {
		t.Errorf("the error should say where the run stopped, and no figures be printed: %v\n%s", err, out)
	}
}

// TestEconomyStopsAVariantWhoseFakeHangs: a fake that never answers ends
// the variant at its timeout with a line saying so, never a hang.
func TestEconomyStopsAVariantWhoseFakeHangs(t *testing.T) {
	t.Parallel()
	cfg := econSmall(t)
	cfg.failAt, cfg.fault, cfg.Timeout = 3, &claudetest.Fault{Delay: time.Hour}, 10*time.Second
	_, err := econBench(context.Background(), cfg, econSessionVariants[:1], econPrint)
	out := cfg.Out.(*bytes.Buffer).String()
	if err == nil || !strings.Contains(out, "plain: stopped: ") || !strings.Contains(err.Error(), "ran longer than 10s") {
		t.Fatalf("want the variant stopped at its timeout, got %v:\n%s", err, out)
	}
}
