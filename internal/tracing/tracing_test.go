package tracing

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/event"
)

// With no endpoint set, tracing is a no-op that starts nothing: the whole
// life of a run's recorder leaves no goroutine behind.
func TestNoEndpointStartsNothing(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer x"}
	getenv := func(k string) string { return env[k] }
	if Enabled(getenv) {
		t.Fatal("headers alone turned tracing on")
	}
	p, err := Start(context.Background(), Options{Getenv: getenv})
	if err != nil || p.Enabled() {
		t.Fatalf("Start without an endpoint: enabled %v, err %v", p.Enabled(), err)
	}
	r := NewRecorder(context.Background(), p.Tracer(), "flower")
	r.Event("", event.New(event.Step, "work", nil))
	r.End("done", false)
	p.Shutdown(context.Background())
	for _, off := range []map[string]string{
		{EndpointEnv: "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{TracesEndpointEnv: "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
	} {
		if Enabled(func(k string) string { return off[k] }) {
			t.Errorf("%v turned tracing on", off)
		}
	}
}
