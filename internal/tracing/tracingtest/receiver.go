// Package tracingtest is an OTLP/HTTP trace collector for tests: it decodes
// what an exporter sends (ExportTraceServiceRequest over protobuf, gzipped
// or not) and keeps the spans, so a test checks the spans a process really
// exported, not what a library call returned.
package tracingtest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver is an OTLP/HTTP trace collector on 127.0.0.1: it keeps each
// request's spans, resource service names and Authorization header.
type Receiver struct {
	// URL is what OTEL_EXPORTER_OTLP_ENDPOINT names (the exporter adds
	// /v1/traces).
	URL string

	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	auth    []string
}

// New starts a Receiver, closed when t ends.
func New(t testing.TB) *Receiver {
	t.Helper()
	o := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

func (o *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
		http.Error(w, "not the traces path", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	data, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(data, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.auth = append(o.auth, r.Header.Get("Authorization"))
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.service = append(o.service, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Got is what the receiver took so far: the spans, each request's
// resources' service names, and each request's Authorization header.
func (o *Receiver) Got() (spans []*tracepb.Span, services, auth []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]*tracepb.Span(nil), o.spans...), append([]string(nil), o.service...), append([]string(nil), o.auth...)
}

// Attr is s's attribute key, nil when s has none.
func Attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value
		}
	}
	return nil
}

// Int, Float and Str are s's attribute key as that type (zero when absent).
func Int(s *tracepb.Span, key string) int64 { return Attr(s, key).GetIntValue() }

func Float(s *tracepb.Span, key string) float64 { return Attr(s, key).GetDoubleValue() }

func Str(s *tracepb.Span, key string) string { return Attr(s, key).GetStringValue() }
