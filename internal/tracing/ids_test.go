package tracing

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A root span started with WithIDs takes the ids given (a team run's span,
// named beforehand by its attempts); any other span gets fresh random ids.
func TestARootSpanTakesTheIDsItWasGiven(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(idGenerator{}))
	defer tp.Shutdown(context.Background())
	tracer := tp.Tracer("test")
	want := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1},
	})
	ctx, span := tracer.Start(WithIDs(context.Background(), want), "run r1", trace.WithNewRoot())
	got := span.SpanContext()
	if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() {
		t.Errorf("the root span took %s/%s, not %s/%s", got.TraceID(), got.SpanID(), want.TraceID(), want.SpanID())
	}
	// Its child is the trace's, with an id of its own.
	_, child := tracer.Start(ctx, "attempt 1")
	if c := child.SpanContext(); c.TraceID() != want.TraceID() || c.SpanID() == want.SpanID() || !c.SpanID().IsValid() {
		t.Errorf("the child's ids %s/%s", c.TraceID(), c.SpanID())
	}
	_, a := tracer.Start(context.Background(), "other")
	_, b := tracer.Start(context.Background(), "other")
	if !a.SpanContext().IsValid() || a.SpanContext().TraceID() == b.SpanContext().TraceID() || a.SpanContext().TraceID() == want.TraceID() {
		t.Errorf("spans without given ids: %s and %s", a.SpanContext().TraceID(), b.SpanContext().TraceID())
	}
}
