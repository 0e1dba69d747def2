package main

// Tiny runs of the driver, store and orchestration benchmarks, so that CI
// proves they work: they assert what the benchmarks do and print, never how
// fast anything is.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
)

func tinyDriver(t *testing.T, out *strings.Builder) driverConfig {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return driverConfig{out: out, calls: 5, reps: 1, root: root, cli: claudetest.CLIPath(t),
		npm: filepath.Join(t.TempDir(), "no-npm-here"), sdkDir: t.TempDir(), runTimeout: 8 * time.Minute} // hang guards: a loaded machine runs the CLI slowly
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// rowOf is the table row of out that starts with name, "" when none does.
func rowOf(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return l
		}
	}
	return ""
}

func TestDriverWithoutNpmSaysSoAndRunsTheRest(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := tinyDriver(t, &out)
	if err := runDriver(testCtx(t), cfg); err != nil {
		t.Fatalf("runDriver: %v\n%s", err, out.String())
	}
	got := out.String()
	var lines []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "ts-sdk: not run") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "no npm") {
		t.Errorf("want one line saying npm is missing, got %q in:\n%s", lines, got)
	}
	for _, v := range []string{"bare", "flower", "flower+coordinator", "flower+worker"} {
		if rowOf(got, v) == "" {
			t.Errorf("no row for %s in:\n%s", v, got)
		}
	}
	if rowOf(got, "ts-sdk") != "" || strings.Contains(got, "stopped") {
		t.Errorf("ts-sdk must be left out and nothing stopped:\n%s", got)
	}
	// Hooked variants report their gaps, the bare CLI has none; guarded
	// ones report the time inside the guards.
	if f := strings.Fields(rowOf(got, "flower")); len(f) < 10 || f[len(f)-3] == "-" || f[len(f)-1] != "-" {
		t.Errorf("flower's row lacks its Pre→Post gaps: %q", f)
	}
	if f := strings.Fields(rowOf(got, "flower+worker")); len(f) < 10 || f[len(f)-1] == "-" {
		t.Errorf("the worker's row lacks the time in the guards: %q", f)
	}
	for _, want := range []string{"goal (hooked flower never slower than the TS SDK): not measured", "price of the walls (flower+coordinator)", "price of the walls (flower+worker)"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestDriverNpmThatFailsIsOneLine(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := tinyDriver(t, &out)
	npm := filepath.Join(t.TempDir(), "npm")
	if err := os.WriteFile(npm, []byte("#!/bin/sh\necho 'npm error network request failed: ENOTFOUND' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.npm = npm
	cfg.reps = 0 // the setup step alone
	if err := runDriver(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if n := strings.Count(got, "ts-sdk: not run"); n != 1 || !strings.Contains(got, "failed (no network?)") || !strings.Contains(got, "ENOTFOUND") {
		t.Errorf("want one line with npm's own reason, got:\n%s", got)
	}
}

func TestDriverFakeFailingMidRunStopsEachVariant(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := tinyDriver(t, &out)
	cfg.reps = 2
	var n atomic.Int64
	cfg.wrap = func(h claudetest.Handler) claudetest.Handler {
		return func(ctx context.Context, req *claudetest.Request) claudetest.Reply {
			if n.Add(1)%3 == 0 {
				return claudetest.Reply{Fault: claudetest.PromptTooLong()}
			}
			return h(ctx, req)
		}
	}
	err := runDriver(testCtx(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "variants stopped") {
		t.Fatalf("runDriver = %v, want the stopped variants named", err)
	}
	got := out.String()
	for _, v := range []string{"bare", "flower", "flower+coordinator", "flower+worker"} {
		if c := strings.Count(got, "driver: "+v+": stopped in repetition 1: "); c != 1 {
			t.Errorf("%s: %d stop lines, want 1 (a stopped variant is not run again):\n%s", v, c, got)
		}
	}
}

func TestDriverFakeThatHangsStopsAtTheTimeout(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := tinyDriver(t, &out)
	cfg.runTimeout = 5 * time.Second
	var n atomic.Int64
	cfg.wrap = func(h claudetest.Handler) claudetest.Handler {
		return func(ctx context.Context, req *claudetest.Request) claudetest.Reply {
			if n.Add(1) > 2 {
				<-ctx.Done() // never answers again
				return claudetest.Say("gone")
			}
			return h(ctx, req)
		}
	}
	start := time.Now()
	err := runDriver(testCtx(t), cfg)
	if err == nil {
		t.Fatalf("runDriver succeeded against a fake that hangs:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "no end within 5s") {
		t.Errorf("want the timeout named:\n%s", out.String())
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("took %s to give up on 4 variants of 5 s each", d)
	}
}

func TestStoreTiny(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	if err := runStore(testCtx(t), storeConfig{out: &out, entries: 200, reps: 1}); err != nil {
		t.Fatalf("runStore: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"a 200-entry session",
		"SQLite: append, one entry a transaction", "SQLite: append, batches of 100", "SQLite: store Load + expire + trim + prune",
		"PostgreSQL: append, one entry a transaction", "PostgreSQL: append, batches of 100", "PostgreSQL: store Load + expire + trim + prune",
		"read + decode the JSONL file", "of it: resume preparation",
		"goal (SQLite load+trim ≤ 1.5× the JSONL read)", "goal (SQLite: ≥ 20,000 appends/s batched)",
		"goal (PostgreSQL: ≥ 20,000 appends/s batched)", "goal (PostgreSQL load+trim ≤ 1.5× SQLite's)"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

func TestOrchestrationTiny(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := orchConfig{out: &out, reps: 1, cli: claudetest.CLIPath(t), runTimeout: 8 * time.Minute}
	if err := runOrch(testCtx(t), cfg); err != nil {
		t.Fatalf("runOrch: %v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"starter flow wall time", "flower's CPU time (3 steps)", "share of the wall time",
		"flower's peak RSS", "goal (flower's own time < 5% of the wall time)"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(rowOf(got, "flower's")+got, "0.0 MB [0.0") {
		t.Errorf("a memory figure is zero:\n%s", got)
	}
}

func TestOrchestrationFakeThatFailsIsAClearError(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := orchConfig{out: &out, reps: 1, cli: claudetest.CLIPath(t), runTimeout: 8 * time.Minute,
		wrap: func(claudetest.Handler) claudetest.Handler {
			return func(context.Context, *claudetest.Request) claudetest.Reply {
				return claudetest.Reply{Fault: claudetest.PromptTooLong()}
			}
		}}
	err := runOrch(testCtx(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "repetition 1") {
		t.Fatalf("runOrch = %v, want the failed repetition named", err)
	}
}

func TestDrvFigures(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	if s := drvSpreadOf(ms(5, 1, 3)); s.med != 3*time.Millisecond || s.min != time.Millisecond || s.max != 5*time.Millisecond {
		t.Errorf("odd spread = %+v", s)
	}
	if s := drvSpreadOf(ms(4, 1, 2, 3)); s.med != 2500*time.Microsecond {
		t.Errorf("even median = %s, want 2.5ms", s.med)
	}
	if p := drvPercentile(ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50); p != 5*time.Millisecond {
		t.Errorf("p50 = %s", p)
	}
	if p := drvPercentile(ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99); p != 10*time.Millisecond {
		t.Errorf("p99 = %s", p)
	}
	if got := drvRotate([]int{1, 2, 3}, 4); len(got) != 3 || got[0] != 2 || got[2] != 1 {
		t.Errorf("rotate = %v", got)
	}
	if _, err := envCount("BENCH_TEST_UNSET_COUNT", 7); err != nil {
		t.Error(err)
	}
	t.Setenv("BENCH_TEST_COUNT", "-3")
	if _, err := envCount("BENCH_TEST_COUNT", 7); err == nil {
		t.Error("a negative count was taken")
	}
}

func TestOrchestrationFakeThatHangsStopsAtTheTimeout(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cfg := orchConfig{out: &out, reps: 1, cli: claudetest.CLIPath(t), runTimeout: 10 * time.Second,
		wrap: func(h claudetest.Handler) claudetest.Handler {
			var n atomic.Int64
			return func(ctx context.Context, req *claudetest.Request) claudetest.Reply {
				if n.Add(1) > 1 {
					<-ctx.Done() // never answers again
					return claudetest.Say("gone")
				}
				return h(ctx, req)
			}
		}}
	err := runOrch(testCtx(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "did not end within 10s") {
		t.Fatalf("runOrch = %v, want the timeout named", err)
	}
}
