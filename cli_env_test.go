package flower

import (
	"slices"
	"strings"
	"testing"
)

// Nothing flower passes to the CLI carries the database: not its URL
// under flower's name or another, not libpq's settings, while the rest of
// the environment passes as it was.
func TestTheCLIInheritsNoDatabaseCredential(t *testing.T) {
	t.Setenv(DatabaseEnv, "postgres://flower:s3cret@db.example:5432/team")
	t.Setenv("PGPASSWORD", "s3cret")
	t.Setenv("PGPASSFILE", "/home/op/.pgpass")
	t.Setenv("MY_APP_DB", "host=db user=flower PASSWORD=s3cret")
	t.Setenv("BACKUP_URL", "see postgresql://backup:s3cret@db.example/team?sslmode=require")
	t.Setenv("DOCS_URL", "postgres://db.example/team")
	t.Setenv("FLOWER_KEEP_ME", "yes")
	o, err := BuildOptions(AgentSpec{Name: "coder", Instructions: "x"}, BuildConfig{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range o.BaseEnv {
		if strings.Contains(kv, "s3cret") || strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, DatabaseEnv+"=") {
			t.Errorf("the CLI's environment holds %s", kv)
		}
	}
	for _, want := range []string{"FLOWER_KEEP_ME=yes", "DOCS_URL=postgres://db.example/team"} {
		if !slices.Contains(o.BaseEnv, want) {
			t.Errorf("the CLI's environment lost %s", want)
		}
	}
}

// The trace exporter's settings are flower's: their headers carry the
// collector's token and their endpoint takes writes, so neither reaches
// the CLI or a tool the model runs.
func TestTheCLIInheritsNoTraceExporterSetting(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector.example:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cret")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-token=s3cret")
	t.Setenv("OTEL_SERVICE_NAME", "kept")
	o, err := BuildOptions(AgentSpec{Name: "coder", Instructions: "x"}, BuildConfig{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range o.BaseEnv {
		if strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_") {
			t.Errorf("the CLI's environment holds %s", kv)
		}
	}
	if !slices.Contains(o.BaseEnv, "OTEL_SERVICE_NAME=kept") {
		t.Error("the CLI's environment lost OTEL_SERVICE_NAME")
	}
}
