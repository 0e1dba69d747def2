// Package tracing turns a run's events into OpenTelemetry spans (run → step
// → round → model request and tool call) and exports them over OTLP/HTTP
// when the standard variables name an endpoint; with none set it is off and
// free: no exporter, no goroutine, a no-op tracer.
//
// The spans are made from the event stream (Recorder), not from calls
// sprinkled through the library: the library keeps emitting events only,
// and the same Recorder can serve the flower command (its event sink) and a
// team's worker (the run's events.jsonl it follows, whose lines carry the
// round's label and each model request's id and tokens).
//
// Who exports: the process that holds the operator's settings. The
// exporter's variables (OTEL_EXPORTER_OTLP_*, whose headers carry a
// collector's token and whose endpoint takes writes) never reach a run's
// processes: the CLI does not inherit them (flower's withoutDatabase), and
// a team's worker does not pass them to the run's `flower go` (teamOnlyEnv),
// so a team run's process exports nothing; its spans are for the worker to
// make from the events it follows, under its attempt's span.
//
// The exporter is OTLP over HTTP/protobuf only; a failed batch is dropped
// (no retry), the first failure is said once through Options.Warn, and
// Shutdown is bounded by ShutdownTimeout.
package tracing

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ShutdownTimeout bounds the last export when flower exits: an endpoint
// that does not answer delays the exit by this much at most.
const ShutdownTimeout = 3 * time.Second

// The variables that turn tracing on: the OTLP endpoint, for every signal
// or for traces only (the SDK reads them, and the headers, timeout and
// certificates that go with them).
const (
	EndpointEnv       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	TracesEndpointEnv = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Options configure Start.
type Options struct {
	// Service is the resource's service.name (default "flower").
	Service string
	// Version is the resource's service.version, when known.
	Version string
	// Warn is told, once, that the endpoint did not take spans; the spans
	// of that batch are dropped and nothing else changes. nil says nothing.
	Warn func(endpoint string, err error)
	// Getenv reads the environment (default os.Getenv); a test sets it.
	Getenv func(string) string
}

// Provider is the process's tracing: on when an endpoint is set, else a
// no-op whose Tracer records nothing.
type Provider struct {
	tp     *sdktrace.TracerProvider // nil when off
	tracer trace.Tracer
}

// Enabled reports whether the standard variables set an OTLP endpoint for
// traces (and the SDK is not disabled, and the traces exporter is not
// "none").
func Enabled(getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return strings.TrimSpace(getenv(EndpointEnv)) != "" || strings.TrimSpace(getenv(TracesEndpointEnv)) != ""
}

// Start makes the process's Provider. Off (no variable set) it starts
// nothing and never fails. On, it builds the OTLP/HTTP exporter from the
// standard variables behind a batch processor; a bad setting is an error
// that names it.
func Start(ctx context.Context, o Options) (*Provider, error) {
	if !Enabled(o.Getenv) {
		return &Provider{tracer: noop.NewTracerProvider().Tracer("flower")}, nil
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	endpoint := endpointShown(getenv)
	exp, err := otlptracehttp.New(ctx,
		// A batch that fails is dropped at once: the next one tries
		// again. Retrying would hold the run's last spans, and so its
		// exit, for as long as an endpoint stays dead.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		return nil, errors.New("traces: " + err.Error() + " (check " + EndpointEnv + " and " + TracesEndpointEnv + ")")
	}
	w := &warnOnce{SpanExporter: exp, endpoint: endpoint, warn: o.Warn}
	// The SDK's own errors (a full queue, a bad attribute) go the same one
	// way, not to stderr once per span.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(w.say))
	service := o.Service
	if service == "" {
		service = "flower"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", service)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(w),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
		sdktrace.WithIDGenerator(idGenerator{}),
	)
	return &Provider{tp: tp, tracer: tp.Tracer("github.com/flowerrun/flower")}, nil
}

// Enabled reports whether p exports.
func (p *Provider) Enabled() bool { return p != nil && p.tp != nil }

// Tracer is p's tracer (a no-op one when p is off).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return noop.NewTracerProvider().Tracer("flower")
	}
	return p.tracer
}

// Shutdown exports what is left and stops, within ShutdownTimeout
// whatever the endpoint does. Nothing to do when p is off.
func (p *Provider) Shutdown(ctx context.Context) {
	if !p.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := p.tp.Shutdown(ctx); err != nil {
		otel.Handle(err)
	}
}

// warnOnce is the exporter that says its first failure and swallows every
// failure: a dead endpoint costs the run one line, not one per batch.
type warnOnce struct {
	sdktrace.SpanExporter
	endpoint string
	warn     func(string, error)
	once     sync.Once
}

func (w *warnOnce) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := w.SpanExporter.ExportSpans(ctx, spans); err != nil {
		w.say(err)
	}
	return nil
}

func (w *warnOnce) say(err error) {
	w.once.Do(func() {
		if w.warn != nil {
			w.warn(w.endpoint, err)
		}
	})
}

// endpointShown is the endpoint as a warning may show it: scheme and host
// only, so a token in its user part or query never reaches a screen or log.
func endpointShown(getenv func(string) string) string {
	raw := strings.TrimSpace(getenv(TracesEndpointEnv))
	if raw == "" {
		raw = strings.TrimSpace(getenv(EndpointEnv))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(" + EndpointEnv + ")"
	}
	return u.Scheme + "://" + u.Host
}

// fixedIDsKey holds, in a context, the ids a root span started with it
// takes (WithIDs).
type fixedIDsKey struct{}

// WithIDs makes the next root span started with ctx (trace.WithNewRoot, or
// no parent) take sc's trace and span ids: a span whose ids others computed
// beforehand, such as a team run's span, which its attempts (started
// earlier, by any worker) already name as their parent.
func WithIDs(ctx context.Context, sc trace.SpanContext) context.Context {
	return context.WithValue(ctx, fixedIDsKey{}, sc)
}

// idGenerator is the SDK's random ids, except for a root span whose context
// carries ids (WithIDs).
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(fixedIDsKey{}).(trace.SpanContext); ok && sc.TraceID().IsValid() && sc.SpanID().IsValid() {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, idGenerator{}.NewSpanID(ctx, tid)
}

func (idGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}
