package judge

import (
	"context"
	"time"

	"github.com/flowerrun/flower/doc"
)

// Measurement is flower's own run of one command item. (Placeholder until
// measure.go lands.)
type Measurement struct {
	Item        Item
	Exit        int
	TimedOut    bool
	Environment string
	Head, Tail  string
	Bytes       int64
	Duration    time.Duration
	Sandbox     string
	Err         string
}

// MeasureOptions bound Measure. (Placeholder until measure.go lands.)
type MeasureOptions struct {
	Timeout     time.Duration
	Network     bool
	OutputBytes int
	Env         []string
}

// Measure is a placeholder until measure.go lands.
func Measure(ctx context.Context, workspace string, items []Item, o MeasureOptions) []Measurement {
	return nil
}

// RenderMeasurements is a placeholder until measure.go lands.
func RenderMeasurements(ms []Measurement, lang doc.Lang) string { return "" }
