package main

import (
	"bytes"
	"context"
	"github.com/flowerrun/flower/internal/testenv"
	"strings"
	"testing"
)

// TestGlanceSmallMeasuresEveryVariant runs the glance benchmark with two
// repetitions: every glance runs in every variant and the table is
// printed; no time is a condition.
func TestGlanceSmallMeasuresEveryVariant(t *testing.T) {
	t.Parallel()
	testenv.Sandbox(t)
	var out bytes.Buffer
	figs, err := glanceBench(context.Background(), glanceConfig{Reps: 2, Dir: t.TempDir(), Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(figs) != len(glanceCommands) {
		t.Fatalf("%d glances measured, want %d", len(figs), len(glanceCommands))
	}
	for _, f := range figs {
		for i, ts := range f.Times {
			if len(ts) != 2 {
				t.Errorf("%s, variant %d: %d times, want 2", f.Glance, i, len(ts))
			}
		}
	}
	for _, want := range append([]string{"sandbox cost", "+ jail"}, glanceCommands...) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("\n%s", out.String())
}
