package team

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/tracing"
)

// A team run's spans are the worker's to make: the run's own `flower go`
// gets no OTEL_EXPORTER_OTLP_* (its headers may hold a collector's token,
// teamOnlyEnv), so the worker that holds the settings follows the run's
// events (attempt.follow) into a tracing.Recorder under the attempt's span.

// startTracing starts the worker's exporter when its environment names an
// OTLP endpoint; the returned func shuts it down (bounded by
// tracing.ShutdownTimeout). Off, it starts nothing. A setting the exporter
// refuses is said once and leaves tracing off: traces never stop a worker.
func (w *Worker) startTracing(ctx context.Context) func() {
	getenv := envLookup(w.o.Env)
	if !tracing.Enabled(getenv) {
		return func() {}
	}
	p, err := tracing.Start(ctx, tracing.Options{Service: "flower-worker", Version: w.o.Version, Getenv: getenv,
		Warn: func(endpoint string, err error) {
			w.log.Warn("flower worker: the trace collector did not take spans; they are dropped", "endpoint", endpoint, "err", err)
		}})
	if err != nil {
		w.log.Warn("flower worker: traces are off", "err", err)
		return func() {}
	}
	w.tracing = p
	return func() { p.Shutdown(ctx) }
}

// envLookup reads env (KEY=value lines) as os.Getenv reads the process's.
func envLookup(env []string) func(string) string {
	return func(k string) string {
		v := ""
		for _, kv := range env {
			if name, val, ok := strings.Cut(kv, "="); ok && name == k {
				v = val // the last one wins, as exec does
			}
		}
		return v
	}
}

// TraceContext is the run's span as every attempt's parent: the same
// trace whichever worker works the run and however often. It is computed,
// not stored: from the run's id and its creation time as the database
// stamped it at submit, which together name one run of one team's database
// (ids alone repeat across databases); no column, no migration, and any
// worker (or a dashboard) derives it from the row it reads anyway.
//
// A dashboard links a run to its trace with it (TraceContext's TraceID).
func (r Run) TraceContext() trace.SpanContext {
	sum := sha256.Sum256([]byte("flower team run\x00" + strconv.FormatInt(r.ID, 10) + "\x00" + r.Created.UTC().Format(time.RFC3339Nano)))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	if binary.BigEndian.Uint64(sid[:]) == 0 {
		sid[7] = 1 // an all-zero id is invalid
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// attemptTrace is one attempt's spans: "attempt N" under the run's span,
// and the run's events under it as a single machine's run makes them.
type attemptTrace struct {
	span trace.Span
	rec  *tracing.Recorder
}

// startTrace starts the attempt's span when the worker exports; nil (and
// every call on it free) when it does not.
func (a *attempt) startTrace(ctx context.Context) {
	if !a.w.tracing.Enabled() {
		return
	}
	tracer := a.w.tracing.Tracer()
	parent := trace.ContextWithRemoteSpanContext(context.WithoutCancel(ctx), a.run.TraceContext())
	actx, span := tracer.Start(parent, fmt.Sprintf("attempt %d", a.job.Attempt), trace.WithAttributes(
		attribute.String("flower.worker", a.w.o.Name),
		attribute.String("flower.run.name", a.name()),
		attribute.Int64("flower.run.id", a.run.ID),
		attribute.Int("flower.attempt", a.job.Attempt)))
	// "run flower": the run's process's spans, as a single machine's.
	a.trace = &attemptTrace{span: span, rec: tracing.NewRecorder(actx, tracer, "flower",
		attribute.String("flower.run.name", a.name()), attribute.Int64("flower.run.id", a.run.ID))}
}

// traceEvent records one of the run's events (label: events.jsonl's step
// field, the round's label).
func (a *attempt) traceEvent(label string, e event.Event) {
	if a.trace != nil {
		a.trace.rec.Event(label, e)
	}
}

// endTrace ends the attempt's spans with how the attempt ended.
func (a *attempt) endTrace(err error) {
	if a.trace == nil {
		return
	}
	outcome := a.outcomeOf(err)
	failed := outcome != Achieved && outcome != Queued
	a.trace.rec.End(outcome, failed)
	a.trace.span.SetAttributes(attribute.String(tracing.AttrOutcome, outcome))
	a.trace.span.End()
	if outcome == Achieved || outcome == Stopped || outcome == Cancelled || outcome == Failed {
		// The run is over: its own span, from its submit to now, with
		// the ids its attempts named as their parent.
		ctx := tracing.WithIDs(context.Background(), a.run.TraceContext())
		_, span := a.w.tracing.Tracer().Start(ctx, "run "+a.name(), trace.WithNewRoot(), trace.WithTimestamp(a.run.Created),
			trace.WithAttributes(attribute.String("flower.run.name", a.name()), attribute.Int64("flower.run.id", a.run.ID),
				attribute.String(tracing.AttrOutcome, outcome), attribute.Int("flower.attempts", a.job.Attempt)))
		if outcome != Achieved {
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
	}
}
