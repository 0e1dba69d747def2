package team_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/team"
)

// get fetches url within a minute: its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// scrape reads a worker's metrics with Prometheus's own text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, "http://"+addr+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d:\n%s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v\n%s", err, body)
	}
	return families
}

// sum adds the values of a family's series whose labels include want.
func sum(families map[string]*dto.MetricFamily, name string, want ...string) float64 {
	total := 0.0
	f := families[name]
	if f == nil {
		return math.NaN()
	}
series:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				found = found || (l.GetName() == want[i] && l.GetValue() == want[i+1])
			}
			if !found {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

// freeAddr is a loopback address nothing listens on (just now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// One worker serves what it counted of a finished run, and its counts
// agree with the run's own records: its manifest (cost), its report from
// the database (tokens by kind, model requests, tool calls); its health
// turns 503 with the reason when its --dir is unusable; its json log is
// one JSON object a line, each naming the worker, the run's lines naming
// the run, attempt and step, River's among them, none showing the
// database's password or the model's key; and an address in use keeps a
// worker from starting.
func TestAWorkersMetricsHealthAndLogsAgreeWithAFinishedRun(t *testing.T) {
	t.Parallel()
	// A cluster of the test's own: it is stopped and started again.
	srv := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := pricedWorldOn(t, db, varied())
	tm := w.open()
	password, _ := dbPassword(t, w.db)

	// An address in use: said, and the worker does not start.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	out, err := w.flower("worker", "--db-file", w.dbFile, "--dir", t.TempDir(), "--name", "busy", "--lang", "en", "--metrics", busy.Addr().String())
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "--metrics "+busy.Addr().String()+" is in use") || !strings.Contains(out, "this worker did not start") {
		t.Errorf("a worker on a metrics address in use: exit %d, want 1 and the address named:\n%s", code, out)
	}
	var n int
	if err := tm.Pool().QueryRow(context.Background(), "select count(*) from team_workers where name = 'busy'").Scan(&n); err != nil || n != 0 {
		t.Errorf("the refused worker registered (%d rows, %v)", n, err)
	}

	// A build judged once (the judge finds it done): a round to time.
	w.model.judge = func(r *claudetest.Request) (claudetest.Reply, bool) {
		if !r.HasText("Judge this round") {
			return claudetest.Reply{}, false
		}
		return claudetest.StructuredOutput(map[string]any{
			"items":      []map[string]string{{"id": "c1", "status": "passed", "evidence": "cat task-1.txt: task-1", "reason": "written"}},
			"conclusion": "achieved", "reason": "the task file is written"}), true
	}
	addr := freeAddr(t)
	m := w.worker("machine-a", "--metrics", addr, "--log-format", "json")
	id := w.submit("task-1 judged")
	r := waitRun(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}

	// What the run's own records say: its manifest's cost, its report's
	// tokens, requests and tool calls (both from the database).
	dir := t.TempDir()
	if err := tm.LayOut(context.Background(), id, filepath.Join(dir, "runs"), filepath.Join(dir, ".flower")); err != nil {
		t.Fatal(err)
	}
	rows, err := flower.ReadManifest(filepath.Join(dir, "runs", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	cost := 0.0
	for _, row := range rows {
		cost += row.CostUSD
	}
	data, err := w.flower("report", "--db-file", w.dbFile, "--json", r.Name())
	if err != nil {
		t.Fatalf("flower report --json: %v\n%s", err, data)
	}
	var rep struct {
		Tokens struct {
			Input         int `json:"input"`
			Output        int `json:"output"`
			CacheRead     int `json:"cache_read"`
			CacheCreation int `json:"cache_creation"`
		} `json:"tokens"`
		Threads struct {
			Main      struct{ Turns int } `json:"main"`
			Subagents struct{ Turns int } `json:"subagents"`
		} `json:"threads"`
		Tools   []toolCount       `json:"tools"`
		Denials []json.RawMessage `json:"denials"`
	}
	if err := json.Unmarshal([]byte(data[strings.Index(data, "{"):]), &rep); err != nil {
		t.Fatalf("the report's data: %v\n%s", err, data)
	}

	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := 0
	for _, e := range evs {
		if e.Kind == event.Verdict {
			verdicts++
		}
	}

	got := scrape(t, addr)
	for _, c := range []struct {
		what      string
		got, want float64
	}{
		{"flower_cost_usd_total against the manifest", sum(got, "flower_cost_usd_total"), cost},
		{"flower_cost_usd_total against the run's row", sum(got, "flower_cost_usd_total"), r.Cost},
		{"input tokens", sum(got, "flower_tokens_total", "kind", "input"), float64(rep.Tokens.Input)},
		{"output tokens", sum(got, "flower_tokens_total", "kind", "output"), float64(rep.Tokens.Output)},
		{"cache read tokens", sum(got, "flower_tokens_total", "kind", "cache_read"), float64(rep.Tokens.CacheRead)},
		{"cache write tokens", sum(got, "flower_tokens_total", "kind", "cache_write"), float64(rep.Tokens.CacheCreation)},
		{"model requests", sum(got, "flower_model_requests_total"), float64(rep.Threads.Main.Turns + rep.Threads.Subagents.Turns)},
		{"tool calls", sum(got, "flower_tool_calls_total"), float64(toolCalls(rep.Tools))},
		{"refused calls", sum(got, "flower_tool_calls_refused_total"), float64(len(rep.Denials))},
		{"achieved attempts", sum(got, "flower_attempts_total", "outcome", "achieved"), 1},
		{"all attempts", sum(got, "flower_attempts_total"), 1},
		{"runs achieved in the database", sum(got, "flower_runs", "state", "achieved"), 1},
		{"runs queued in the database", sum(got, "flower_runs", "state", "queued"), 0},
		{"queue waits", sum(got, "flower_queue_wait_seconds"), 1},
		{"steps (plan, build)", sum(got, "flower_step_seconds"), 2},
		{"judged rounds", sum(got, "flower_round_seconds", "step", "build"), float64(verdicts)},
		{"database errors", sum(got, "flower_database_errors_total"), 0},
		{"git errors", sum(got, "flower_git_errors_total"), 0},
	} {
		if math.IsNaN(c.got) || math.Abs(c.got-c.want) > 1e-9*math.Max(1, c.want) {
			t.Errorf("%s: the metric says %v, the run's records %v", c.what, c.got, c.want)
		}
	}
	if sum(got, "flower_tokens_total", "kind", "cache_read") == 0 || sum(got, "flower_model_requests_total") == 0 || cost == 0 || verdicts == 0 {
		t.Errorf("a judged run that asked the model shows no requests, tokens, cost or verdict (%d): %v", verdicts, got["flower_tokens_total"])
	}
	t.Logf("metrics of %s: $%.6f, %v requests, %v tool calls", r.Name(), cost, sum(got, "flower_model_requests_total"), sum(got, "flower_tool_calls_total"))

	// A run cancelled while it works: River says so (its own line, at
	// warning), through the worker's handler.
	w.model.sleep = "sleep 5" // a stopping worker lets the call in flight finish
	slow := w.submit("task-2 slow")
	w.waitMarker(markerName, 3*time.Minute)
	if out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", team.RunName(slow)); err != nil {
		t.Fatalf("flower cancel: %v\n%s", err, out)
	}
	waitRun(t, tm, slow, 3*time.Minute, "cancelled", func(r team.Run) bool { return team.Ended(r.State) })
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(m.out.String(), `"component":"river"`) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}

	// Health: whole, then its --dir unusable (a file where the folder was:
	// root too is refused), then whole again.
	if code, body := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of a whole worker: %d %s", code, body)
	}
	aside := m.dir + ".aside"
	if err := os.Rename(m.dir, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.dir, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, "http://"+addr+"/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "--dir "+m.dir+" cannot be made") || !strings.Contains(body, "give --dir a folder") {
		t.Errorf("/healthz with an unusable --dir: %d, want 503 with the reason and the fix:\n%s", code, body)
	}
	t.Logf("/healthz with an unusable --dir: %d %s", code, body)
	if err := os.Remove(m.dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, m.dir); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz once the --dir is back: %d %s", code, body)
	}

	// The database stopped: 503 with the reason; the worker's own
	// counters are still served, the runs' count (the database's) is
	// not; once it is back, 200 again.
	before := scrape(t, addr)
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	code, body = get(t, "http://"+addr+"/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "the database cannot be reached") || strings.Contains(body, password) {
		t.Errorf("/healthz with the database stopped: %d, want 503 with the reason, no password:\n%s", code, body)
	}
	t.Logf("/healthz with the database stopped: %d %s", code, body)
	if down := scrape(t, addr); sum(down, "flower_tokens_total") != sum(before, "flower_tokens_total") || down["flower_runs"] != nil {
		t.Errorf("/metrics with the database stopped: tokens %v (were %v), runs by state %v (want none)",
			sum(down, "flower_tokens_total"), sum(before, "flower_tokens_total"), down["flower_runs"])
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		code, body := get(t, "http://"+addr+"/healthz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz a minute after the database came back: %d %s", code, body)
		}
	}
	if after := scrape(t, addr); sum(after, "flower_database_errors_total") < 1 || sum(after, "flower_runs", "state", "achieved") != 1 {
		t.Errorf("after the outage: %v database errors (want some), %v runs achieved (want 1)",
			sum(after, "flower_database_errors_total"), sum(after, "flower_runs", "state", "achieved"))
	}

	// The json log: every line a record.
	lines := strings.Split(strings.TrimSpace(m.out.String()), "\n")
	var runLines, riverLines int
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a log line that is not one JSON object (%v): %s", err, line)
			continue
		}
		if rec["worker"] != "machine-a" {
			t.Errorf("a log line that does not name the worker: %s", line)
		}
		if rec["run"] == r.Name() && rec["attempt"] == 1.0 && rec["step"] != nil {
			runLines++
		}
		if rec["component"] == "river" {
			riverLines++
		}
		for _, secret := range []string{password, "sk-fake"} {
			if strings.Contains(line, secret) {
				t.Errorf("a log line shows a secret (%s…): %s", secret[:3], line)
			}
		}
	}
	if runLines == 0 || riverLines == 0 {
		t.Errorf("the log has %d lines of %s with its attempt and step, %d of River's; want some of each:\n%s", runLines, r.Name(), riverLines, m.out)
	}
	t.Logf("%d log lines, %d of %s's, %d of River's", len(lines), runLines, r.Name(), riverLines)
}

// toolCount is a tool's calls in a report's data.
type toolCount struct {
	Tool      string `json:"tool"`
	Main      int    `json:"main"`
	Subagents int    `json:"subagents"`
}

// toolCalls is the report's count of calls, main threads and subagents.
func toolCalls(tools []toolCount) int {
	n := 0
	for _, c := range tools {
		n += c.Main + c.Subagents
	}
	return n
}
