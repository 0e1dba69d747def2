package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
)

// econSmall is a small version of the benchmarks: 10 calls, the process
// ended after 5, workers of 5 calls.
func econSmall(t *testing.T) econConfig {
	t.Helper()
	return econConfig{Calls: 10, Split: 5, PerWorker: 5, Reps: 1, Timeout: 3 * time.Minute,
		CLI: claudetest.CLIPath(t), Dir: t.TempDir(), Out: &bytes.Buffer{}}
}

func TestEconomySmall(t *testing.T) {
	cfg := econSmall(t)
	if err := econBench(context.Background(), cfg, econSessionVariants, econPrint); err != nil {
		t.Fatal(err)
	}
	t.Log(cfg.Out.(*bytes.Buffer).String())
}

func TestCoordinatorSmall(t *testing.T) {
	cfg := econSmall(t)
	if err := econBench(context.Background(), cfg, econCoordinatorVariants, econPrintCoordinator); err != nil {
		t.Fatal(err)
	}
	t.Log(cfg.Out.(*bytes.Buffer).String())
}
