package team

import (
	"strings"
	"testing"
)

// A worker's trace exporter settings stay the worker's: the collector's
// token in the headers, and the endpoint that takes writes, never reach a
// run's flower process, whose environment the model's Bash can read.
func TestARunInheritsNoTraceExporterSetting(t *testing.T) {
	t.Parallel()
	base := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=https://collector.example:4318",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer s3cret",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS=x-token=s3cret",
		"OTEL_SERVICE_NAME=kept",
	}
	env := childEnv(base, map[string]string{"HOME": "/run/home"})
	for _, kv := range env {
		if strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_") {
			t.Errorf("the run's environment holds %s", kv)
		}
	}
	if !strings.Contains(strings.Join(env, "\n"), "OTEL_SERVICE_NAME=kept") {
		t.Errorf("the run's environment lost OTEL_SERVICE_NAME: %q", env)
	}
}
