package app

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
	"github.com/flowerrun/flower/internal/tracing/tracingtest"
)

// The collector and the span readers are tracingtest's, shared with the
// team's worker tests.
var (
	newOTLPReceiver = tracingtest.New
	spanInt         = tracingtest.Int
	spanFloat       = tracingtest.Float
	spanStr         = tracingtest.Str
)

// One run's spans reach the collector named by the standard variables, with
// its headers, as one tree: run → step → round → model request and tool
// call (a subagent's requests under the Agent call that started it), the
// rounds' cost the manifest's rows, the run's tokens and cost the ending's.
func TestARunsSpansReachTheCollectorAsOneTree(t *testing.T) {
	t.Parallel()
	rec := newOTLPReceiver(t)
	ws := gitStarterWorkspace(t)
	srv := claudetest.NewServer(t, demoHandler(ws, "en", nil, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBin, "-w", ws, "--lang", "en", "--timeout", "0", "--rounds", "2", demo.TextsFor("en").Ask)
	cmd.Env = binEnv(t, srv, "OTEL_EXPORTER_OTLP_ENDPOINT="+rec.URL, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer tok-otlp-123")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "traces:") {
		t.Errorf("a collector that took every span was warned about:\n%s", out)
	}
	spans, services, auth := rec.Got()
	if len(spans) == 0 {
		t.Fatalf("the collector got no span; flower said:\n%s", out)
	}
	for _, a := range auth {
		if a != "Bearer tok-otlp-123" {
			t.Errorf("an export came with Authorization %q, not OTEL_EXPORTER_OTLP_HEADERS's", a)
		}
	}
	for _, s := range services {
		if s != "flower" {
			t.Errorf("service.name %q", s)
		}
	}

	byID := map[string]*tracepb.Span{}
	var roots []*tracepb.Span
	trace := hex.EncodeToString(spans[0].TraceId)
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
		if hex.EncodeToString(s.TraceId) != trace {
			t.Errorf("span %q is in trace %x, not the run's %s", s.Name, s.TraceId, trace)
		}
		if len(s.ParentSpanId) == 0 {
			roots = append(roots, s)
		}
	}
	if len(roots) != 1 || roots[0].Name != "run flower" {
		var names []string
		for _, r := range roots {
			names = append(names, r.Name)
		}
		t.Fatalf("want one root, the run; roots %q", names)
	}
	run := roots[0]
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	kind := func(s *tracepb.Span) string {
		if s == nil {
			return "<missing>"
		}
		return strings.Fields(s.Name)[0]
	}
	// Each kind of span hangs where it belongs.
	wantParents := map[string][]string{"step": {"run"}, "round": {"step"}, "chat": {"round", "execute_tool"}, "execute_tool": {"round", "execute_tool"}}
	counts := map[string]int{}
	var chatIn, chatOut int64
	rounds := map[string]*tracepb.Span{}
	for _, s := range spans {
		k := kind(s)
		counts[k]++
		if s == run {
			continue
		}
		if want, ok := wantParents[k]; !ok || !strings.Contains(strings.Join(want, " "), kind(parent(s))) {
			t.Errorf("span %q hangs under %q", s.Name, kind(parent(s)))
		}
		if e, s := s.EndTimeUnixNano, s.StartTimeUnixNano; e < s {
			t.Errorf("a span ends before it starts")
		}
		switch k {
		case "chat":
			if spanStr(s, "gen_ai.operation.name") != "chat" || spanStr(s, "gen_ai.request.model") == "" || s.Name != "chat "+spanStr(s, "gen_ai.request.model") {
				t.Errorf("model request span %q: operation %q, model %q", s.Name, spanStr(s, "gen_ai.operation.name"), spanStr(s, "gen_ai.request.model"))
			}
			if spanInt(s, "gen_ai.usage.input_tokens") <= 0 {
				t.Errorf("model request span %q has no input tokens", s.Name)
			}
			chatIn += spanInt(s, "gen_ai.usage.input_tokens")
			chatOut += spanInt(s, "gen_ai.usage.output_tokens")
		case "execute_tool":
			if spanStr(s, "gen_ai.tool.name") == "" || spanStr(s, "gen_ai.tool.call.id") == "" {
				t.Errorf("tool span %q lacks its tool or call id", s.Name)
			}
			if spanStr(s, "gen_ai.tool.name") == "Agent" || spanStr(s, "gen_ai.tool.name") == "Task" {
				counts["agent"]++
			}
		case "round":
			rounds[spanStr(s, "flower.round")] = s
		}
	}
	for _, k := range []string{"step", "round", "chat", "execute_tool"} {
		if counts[k] == 0 {
			t.Errorf("no %s span among %v", k, counts)
		}
	}
	for _, s := range spans {
		if kind(s) == "chat" && kind(parent(s)) == "execute_tool" && spanStr(parent(s), "gen_ai.tool.name") != "Agent" && spanStr(parent(s), "gen_ai.tool.name") != "Task" {
			t.Errorf("a model request hangs under the tool call %q, which starts no subagent", parent(s).Name)
		}
	}

	// The rounds' cost is the manifest's, row by row.
	rows, err := flower.ReadManifest(filepath.Join(ws, "runs", "manifest.json"))
	if err != nil || len(rows) == 0 {
		t.Fatalf("manifest: %v, %d rows", err, len(rows))
	}
	total := 0.0
	for _, row := range rows {
		total += row.CostUSD
		r := rounds[row.Step]
		if r == nil {
			t.Errorf("no round span for the manifest's row %q (rounds %v)", row.Step, keys(rounds))
			continue
		}
		if got := spanFloat(r, "flower.cost_usd"); math.Abs(got-row.CostUSD) > 1e-9 {
			t.Errorf("round %q costs $%v in its span, $%v in the manifest", row.Step, got, row.CostUSD)
		}
	}
	if got := spanFloat(run, "flower.cost_usd"); math.Abs(got-total) > 1e-9 {
		t.Errorf("the run span costs $%v, the manifest $%v", got, total)
	}
	// The run's tokens are the ending's (its turns' results).
	data, err := os.ReadFile(filepath.Join(ws, "runs", "ending.json"))
	if err != nil {
		t.Fatal(err)
	}
	var end Ending
	if err := json.Unmarshal(data, &end); err != nil {
		t.Fatal(err)
	}
	if in, o := spanInt(run, "gen_ai.usage.input_tokens"), spanInt(run, "gen_ai.usage.output_tokens"); in != int64(end.TokensIn) || o != int64(end.TokensOut) || in == 0 {
		t.Errorf("the run span used %d in, %d out; the ending %d in, %d out", in, o, end.TokensIn, end.TokensOut)
	}
	if chatIn == 0 || chatOut == 0 {
		t.Errorf("the model requests used %d in, %d out", chatIn, chatOut)
	}
	if spanStr(run, "flower.outcome") != OutcomeAchieved {
		t.Errorf("the run span's outcome %q", spanStr(run, "flower.outcome"))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// silentCollector accepts connections and never answers one.
func silentCollector(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// A collector that refuses connections, or takes them and never answers,
// costs the run one line on the screen (in the person's language) and at
// most the exporter's bounded shutdown at the end: the run is achieved as
// it would have been.
func TestACollectorThatDoesNotAnswerCostsOneLine(t *testing.T) {
	for _, c := range []struct {
		name, lang, locale string
		cols               uint16
		endpoint           func(*testing.T) string
		warning, ended     string
	}{
		{"refused, English, 80 columns", "en", "en_US.UTF-8", 80, closedPort, "traces: the OTLP endpoint", "== How it ended"},
		{"silent, Chinese, 160 columns", "zh", "zh_CN.UTF-8", 160, silentCollector, "追踪:OTLP 端点", "== 结果"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := gitStarterWorkspace(t)
			srv := claudetest.NewServer(t, demoHandler(ws, c.lang, nil, nil))
			// Exports that would wait ten minutes: only the shutdown's
			// bound lets flower go.
			env := binEnv(t, srv, "LANG="+c.locale, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+c.endpoint(t)+"/v1/traces",
				"OTEL_EXPORTER_OTLP_TIMEOUT=600000", "OTEL_BSP_EXPORT_TIMEOUT=600000", "OTEL_BSP_SCHEDULE_DELAY=200")
			p := startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: c.cols}, "-w", ws, "--timeout", "0", "--rounds", "2", demo.TextsFor(flower.Lang(c.lang)).Ask)
			p.expect(t, c.ended)
			// The bound is seconds; a minute only tells a hang apart on a
			// loaded machine.
			if code := p.exitWithin(t, time.Minute); code != 0 {
				t.Errorf("exit %d:\n%s", code, p.screen())
			}
			if got := endingOutcome(t, ws); got != OutcomeAchieved {
				t.Errorf("outcome %q", got)
			}
			if n := strings.Count(p.screen(), c.warning); n != 1 {
				t.Errorf("%d warnings about the collector, want 1:\n%s", n, p.screen())
			}
		})
	}
}

// With no endpoint set, tracing starts nothing: no exporter (a collector on
// the default port gets nothing), and the run is the same.
func TestNoEndpointNoTraces(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:4318")
	if err != nil {
		t.Fatalf("the default OTLP port must be free in this test's network namespace: %v", err)
	}
	var calls int
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	ws := t.TempDir()
	api := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply { return claudetest.Say("42") })
	cmd := exec.Command(flowerBin, "-w", ws, "once", "what is the answer?")
	cmd.Env, cmd.Dir = binEnv(t, api, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer x"), t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 0 {
		t.Errorf("with no endpoint set, %d exports reached the default port", calls)
	}
}
