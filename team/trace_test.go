package team_test

import (
	"encoding/hex"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/flowerrun/flower/internal/tracing/tracingtest"
	"github.com/flowerrun/flower/team"
)

// A team run's spans come from its worker, whose environment names the
// collector: one trace for the run, its attempt under the run's span (the
// trace every attempt of the run shares), the run's steps, rounds, model
// requests and tool calls under the attempt as a single machine's run makes
// them, the run's cost the team's; and the run's own processes still hold
// no exporter setting (the collector's token stays the worker's).
func TestAWorkerExportsItsRunsSpansAsOneTrace(t *testing.T) {
	t.Parallel()
	rec := tracingtest.New(t)
	w := newWorld(t)
	tm := w.open()
	// The run's Bash counts the exporter's variables in every process of
	// its own (the CLI, flower go, itself) into its work.
	w.model.attack = "{ env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'; } | grep -c '^OTEL_EXPORTER_OTLP_' > otlp-vars.txt; echo attacked"
	id := w.submit("task-1 attack")
	w.workerWith("machine-a", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rec.URL, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer tok-otlp-team"})
	r := runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}

	// The attempt's span ends when the attempt does; the batch follows
	// within the exporter's schedule.
	var spans []*tracepb.Span
	var auth []string
	deadline := time.Now().Add(time.Minute)
	for {
		spans, _, auth = rec.Got()
		if spanNamed(spans, "attempt 1") != nil && spanNamed(spans, "run "+r.Name()) != nil && spanNamed(spans, "run flower") != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, a := range auth {
		if a != "Bearer tok-otlp-team" {
			t.Errorf("an export came with Authorization %q, not the worker's OTEL_EXPORTER_OTLP_HEADERS", a)
		}
	}
	want := r.TraceContext()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		if got := hex.EncodeToString(s.TraceId); got != want.TraceID().String() {
			t.Errorf("span %q is in trace %s, not the run's %s", s.Name, got, want.TraceID())
		}
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	attempt := spanNamed(spans, "attempt 1")
	if attempt == nil {
		t.Fatalf("no attempt span among %d spans: %v", len(spans), spanNames(spans))
	}
	top := spanNamed(spans, "run "+r.Name())
	if top == nil || hex.EncodeToString(top.SpanId) != want.SpanID().String() || len(top.ParentSpanId) != 0 {
		t.Fatalf("no root span of the run with the ids its attempts name (%s): %v", want.SpanID(), spanNames(spans))
	}
	if parent(attempt) != top {
		t.Errorf("the attempt's parent is %x, not the run's span %s", attempt.ParentSpanId, want.SpanID())
	}
	if tracingtest.Str(top, "flower.outcome") != team.Achieved {
		t.Errorf("the run's span says outcome %q", tracingtest.Str(top, "flower.outcome"))
	}
	if tracingtest.Str(attempt, "flower.worker") != "machine-a" || tracingtest.Str(attempt, "flower.run.name") != r.Name() || tracingtest.Int(attempt, "flower.attempt") != 1 {
		t.Errorf("the attempt span's worker %q, run %q, attempt %d", tracingtest.Str(attempt, "flower.worker"),
			tracingtest.Str(attempt, "flower.run.name"), tracingtest.Int(attempt, "flower.attempt"))
	}
	// The run's process's spans, as a single machine's run makes them.
	run := spanNamed(spans, "run flower")
	if run == nil || parent(run) != attempt {
		t.Fatalf("the run's events span is not under the attempt: %v", spanNames(spans))
	}
	kinds := map[string]int{}
	var roundsCost float64
	for _, s := range spans {
		kind, _, _ := strings.Cut(s.Name, " ")
		kinds[kind]++
		p := parent(s)
		if s == top || s == attempt || s == run {
			continue
		}
		if p == nil {
			t.Errorf("span %q has no parent among the exported spans", s.Name)
			continue
		}
		pkind, _, _ := strings.Cut(p.Name, " ")
		ok := map[string][]string{"step": {"run"}, "round": {"step"}, "chat": {"round", "execute_tool"}, "execute_tool": {"round", "execute_tool"}}[kind]
		if !slices.Contains(ok, pkind) {
			t.Errorf("span %q is under %q", s.Name, p.Name)
		}
		if kind == "round" {
			roundsCost += tracingtest.Float(s, "flower.cost_usd")
		}
	}
	for _, k := range []string{"step", "round", "chat", "execute_tool"} {
		if kinds[k] == 0 {
			t.Errorf("no %s span among %v", k, spanNames(spans))
		}
	}
	if r.Cost <= 0 {
		t.Fatalf("the team recorded no cost for %s", r.Name())
	}
	if got := tracingtest.Float(run, "flower.cost_usd"); math.Abs(got-r.Cost) > 1e-9 {
		t.Errorf("the run span's cost $%v, the team's $%v", got, r.Cost)
	}
	if math.Abs(roundsCost-r.Cost) > 1e-9 {
		t.Errorf("the rounds' spans cost $%v together, the team's run $%v", roundsCost, r.Cost)
	}
	if tracingtest.Int(run, "gen_ai.usage.input_tokens") <= 0 || tracingtest.Int(run, "gen_ai.usage.output_tokens") <= 0 {
		t.Errorf("the run span's tokens: %d in, %d out", tracingtest.Int(run, "gen_ai.usage.input_tokens"), tracingtest.Int(run, "gen_ai.usage.output_tokens"))
	}
	if tracingtest.Str(run, "flower.outcome") != team.Achieved || tracingtest.Str(attempt, "flower.outcome") != team.Achieved {
		t.Errorf("outcomes: run span %q, attempt span %q", tracingtest.Str(run, "flower.outcome"), tracingtest.Str(attempt, "flower.outcome"))
	}

	// What the run's Bash counted went with its work to its branch.
	if got := strings.TrimSpace(branchFile(t, w.remote, r.Branch, "otlp-vars.txt")); got != "0" {
		t.Errorf("the run's processes hold %q OTEL_EXPORTER_OTLP_* variables (want 0)", got)
	}
}

func spanNamed(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func spanNames(spans []*tracepb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// A run's trace is computed from its row: the same for every attempt (any
// worker reads the same id and submit time), another for a run of the same
// id in another team's database (created at another time).
func TestARunsTraceIsTheSameForEveryAttempt(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 4, 12, 0, 0, 123456000, time.UTC)
	a := team.Run{ID: 7, Created: at}.TraceContext()
	if b := (team.Run{ID: 7, Created: at.In(time.FixedZone("x", 3600))}).TraceContext(); !a.Equal(b) || !a.IsValid() {
		t.Errorf("two reads of one run: %s/%s and %s/%s", a.TraceID(), a.SpanID(), b.TraceID(), b.SpanID())
	}
	for _, other := range []team.Run{{ID: 8, Created: at}, {ID: 7, Created: at.Add(time.Microsecond)}} {
		if c := other.TraceContext(); c.TraceID() == a.TraceID() {
			t.Errorf("run %d created %s shares run 7's trace %s", other.ID, other.Created, a.TraceID())
		}
	}
}
