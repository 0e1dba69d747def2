package app

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/internal/tracing"
)

// runTrace is a run's tracing: spans of its steps, rounds, model requests
// and tool calls exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or
// ..._TRACES_ENDPOINT) is set; nil, and free, when it is not.
type runTrace struct {
	p   *tracing.Provider
	rec *tracing.Recorder
}

// startTracing starts the run's span when the standard variables ask for
// traces. A setting the exporter refuses turns tracing off with one line:
// traces are never a reason for a run not to run.
func startTracing(ctx context.Context, ui *UI, rt *flower.Runtime) *runTrace {
	if !tracing.Enabled(nil) {
		return nil
	}
	p, err := tracing.Start(ctx, tracing.Options{Warn: func(endpoint string, err error) {
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("traceDropped"), endpoint, err))
	}})
	if err != nil {
		ui.Screen.Line(screen.Yellow, fmt.Sprintf(ui.T("traceOff"), err))
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("flower.run.id", rt.RunID())}
	if name := strings.TrimSpace(os.Getenv(flower.RunNameEnv)); name != "" {
		attrs = append(attrs, attribute.String("flower.run.name", name))
	}
	return &runTrace{p: p, rec: tracing.NewRecorder(ctx, p.Tracer(), "flower", attrs...)}
}

// Event records one of the run's events.
func (t *runTrace) Event(e event.Event) {
	if t != nil {
		t.rec.Event("", e)
	}
}

// End ends the run's span with its outcome and exports what is left.
func (t *runTrace) End(ctx context.Context, end Ending) {
	if t == nil {
		return
	}
	failed := !flower.Outcome{State: end.Outcome}.Achieved() && end.Outcome != OutcomeDone
	t.rec.End(end.Outcome, failed)
	t.p.Shutdown(ctx)
}
