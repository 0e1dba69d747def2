package main

import (
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
)

// TestQueueTiny runs the queue benchmark small (2 runs, no takeover) on
// the real CLI and PostgreSQL: every variant works every run, and the
// report has every figure. No timing is checked.
func TestQueueTiny(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	var out strings.Builder
	cfg := queueConfig{out: &out, runs: 2, rescue: 30 * time.Second, cli: claudetest.CLIPath(t), pg: srv, timeout: 10 * time.Minute} // a hang guard: side by side with the suite, 2 runs took over 3 min
	ctx := testCtx(t)
	if err := runQueue(ctx, cfg); err != nil {
		t.Fatalf("runQueue: %v\n%s", err, out.String())
	}
	got := out.String()
	t.Logf("\n%s", got)
	for _, want := range []string{"2 runs of a scripted two-step flow",
		"one after another, one process at a time", "the queue, 1 worker ", "the queue, 2 workers",
		"the queue's overhead (the difference)", "the overhead as % of the run's wall",
		"goal (the queue's overhead < 1% of a run's wall time)", "takeover: not measured", "machine load"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
}

// TestQueueReportArithmetic checks the report's sums on made-up figures:
// runs per minute, the ratios, the overhead and its share, the goals.
func TestQueueReportArithmetic(t *testing.T) {
	t.Parallel()
	run := func(wall, child, process time.Duration) queueRun {
		return queueRun{wall: wall, child: child, process: process}
	}
	seq := queueVariant{name: "one after another", window: time.Minute,
		runs: []queueRun{run(6*time.Second, 5*time.Second, 5500*time.Millisecond), run(6*time.Second, 5*time.Second, 5500*time.Millisecond)}}
	one := queueVariant{name: "the queue, 1 worker", window: 30 * time.Second,
		runs: []queueRun{run(10*time.Second, 9900*time.Millisecond, 0), run(10*time.Second, 9900*time.Millisecond, 0)}}
	for i := range one.runs {
		one.runs[i].before, one.runs[i].after = 60*time.Millisecond, 40*time.Millisecond
	}
	tk := &queueTakeover{rescue: 30 * time.Second, request: 61 * time.Second, rescued: 55 * time.Second, confirmed: 3 * time.Second}
	var out strings.Builder
	queueThroughputReport(&out, seq, []queueVariant{one})
	queueTakeoverReport(&out, *tk)
	got := out.String()
	for row, want := range map[string]string{
		"one after another": "60s 2.00 1.00×",
		// 2 runs in 30 s: 4 a minute, twice the sequential rate.
		"the queue, 1 worker": "30s   4.00  2.00×",
		// 10 s − 9.9 s.
		"  the queue's overhead (the difference)": "100ms [100ms … 100ms]",
		"  the overhead as % of the run's wall":   "1.00% [1.00% … 1.00%]",
		"  of it before the flow":                 "60ms [60ms … 60ms]",
		"  of it after the flow":                  "40ms [40ms … 40ms]",
		// 5.5 s − 5 s.
		"a flower process's own start + exit": "500ms [500ms … 500ms]",
		// (100 ms − 500 ms) / 10 s.
		"  the overhead less that (the queue's alone)": "-4.00% [-4.00% … -4.00%]",
		"the kill → the first API request":             "61s",
		// 6 s − 5.5 s.
		"for comparison: a git clone": "500ms [500ms … 500ms]",
	} {
		line := queueRow(got, row)
		if !strings.Contains(strings.Join(strings.Fields(line), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("row %q = %q, want it to hold %q\n%s", row, line, want, got)
		}
	}
	for _, want := range []string{
		"goal (the queue's overhead < 1% of a run's wall time): median 1.00%, less the process's own start and exit -4.00%: missed",
		"goal (takeover within 2× the rescue interval, 60s): 61s: missed",
		"River's rescuer looks every 30s",
		"100ms is under 1% of a run longer than 10s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	tk.request = 59 * time.Second
	out.Reset()
	queueTakeoverReport(&out, *tk)
	if want := "goal (takeover within 2× the rescue interval, 60s): 59s: met"; !strings.Contains(out.String(), want) {
		t.Errorf("missing %q in:\n%s", want, out.String())
	}
}

func TestABenchmarksFlagsFollowItsName(t *testing.T) {
	t.Parallel()
	chosen, err := chooseBenchmarks([]string{"queue", "-runs", "3", "-rescue", "10s", "-takeover=false", "store"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		*queueFlags.runs, *queueFlags.rescue, *queueFlags.takeover = 10, 30*time.Second, true
	}()
	if strings.Join(chosen, " ") != "queue store" || *queueFlags.runs != 3 || *queueFlags.rescue != 10*time.Second || *queueFlags.takeover {
		t.Errorf("chose %v with -runs %d -rescue %s -takeover %v", chosen, *queueFlags.runs, *queueFlags.rescue, *queueFlags.takeover)
	}
	if _, err := chooseBenchmarks([]string{"queue", "-runs", "x"}); err == nil || !strings.Contains(err.Error(), "queue") {
		t.Errorf("a bad flag: %v", err)
	}
	if _, err := chooseBenchmarks([]string{"nosuch"}); err == nil || !strings.Contains(err.Error(), `no benchmark "nosuch"`) {
		t.Errorf("an unknown name: %v", err)
	}
}

// queueRow is the line of out that starts with name, spaces around both
// aside; "" when none does.
func queueRow(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), strings.TrimSpace(name)) {
			return l
		}
	}
	return ""
}
