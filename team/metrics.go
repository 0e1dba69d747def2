package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/gitwork"
)

// A worker's metrics are its own: a registry of the worker's (never
// Prometheus's global one, which a program built on app.Main may fill with
// its own), counted by the worker as it follows its runs' events and
// transcripts, and the team's runs by state, read from the database when
// scraped. Each worker serves what it saw; Prometheus sums the workers.

// metrics are one worker's counters.
type metrics struct {
	reg *prometheus.Registry

	attempts     *prometheus.CounterVec
	takeovers    prometheus.Counter
	queueWait    prometheus.Histogram
	stepSeconds  *prometheus.HistogramVec
	roundSeconds *prometheus.HistogramVec
	requests     *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	cost         prometheus.Counter
	toolCalls    *prometheus.CounterVec
	refused      *prometheus.CounterVec
	dbErrors     prometheus.Counter
	gitErrors    prometheus.Counter
}

// Token kinds, the values of flower_tokens_total's kind label.
const (
	tokensInput      = "input"
	tokensOutput     = "output"
	tokensCacheRead  = "cache_read"
	tokensCacheWrite = "cache_write"
)

// minutes are the buckets of durations from seconds to hours: a queue
// wait, a step, a judged round.
var minutes = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

func newMetrics(t *Team) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flower_attempts_total",
			Help: "Attempts this worker made at runs, by how each ended: achieved, stopped, failed, cancelled, queued (released or to be retried), lost (taken over by another worker)."},
			[]string{"outcome"}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "flower_takeovers_total",
			Help: "Runs of silent workers this worker gave back to the queue for another attempt."}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "flower_queue_wait_seconds",
			Help: "How long a run's job waited in the queue before this worker took it.", Buckets: minutes}),
		stepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flower_step_seconds",
			Help: "How long the steps this worker saw end took, by step.", Buckets: minutes}, []string{"step"}),
		roundSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flower_round_seconds",
			Help: "How long the judged rounds this worker saw end took (work and judgement), by step.", Buckets: minutes}, []string{"step"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flower_model_requests_total",
			Help: "Requests to the model in the transcripts of the runs this worker worked, by model."}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flower_tokens_total",
			Help: "Tokens of those requests, by kind (input, output, cache_read, cache_write) and model."}, []string{"kind", "model"}),
		cost: prometheus.NewCounter(prometheus.CounterOpts{Name: "flower_cost_usd_total",
			Help: "What the runs this worker worked spent while it worked them, in US dollars (the runs' own records: their manifests, their transcripts)."}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flower_tool_calls_total",
			Help: "Tool calls the runs made, by tool (subagents' included)."}, []string{"tool"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flower_tool_calls_refused_total",
			Help: "Tool calls of the main thread that a role's wall refused, by tool (Bash: glances refused)."}, []string{"tool"}),
		dbErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "flower_database_errors_total",
			Help: "Database operations of this worker that failed (a takeover's fence is not counted)."}),
		gitErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "flower_git_errors_total",
			Help: "Git operations of this worker that failed: clones, fetches, commits, pushes."}),
	}
	m.reg.MustRegister(m.attempts, m.takeovers, m.queueWait, m.stepSeconds, m.roundSeconds, m.requests, m.tokens,
		m.cost, m.toolCalls, m.refused, m.dbErrors, m.gitErrors,
		&runsByState{t: t, m: m, desc: prometheus.NewDesc("flower_runs", "The team's runs by state, from the database when scraped.", []string{"state"}, nil)},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every outcome and kind is there from the start: a rate of a series
	// that appears at its first event misses that event.
	for _, o := range []string{Achieved, Stopped, Failed, Cancelled, Queued, "lost"} {
		m.attempts.WithLabelValues(o)
	}
	m.refused.WithLabelValues("Bash") // the glances refused
	return m
}

// runsByState is flower_runs, counted in the database at each scrape.
type runsByState struct {
	t    *Team
	m    *metrics
	desc *prometheus.Desc
}

func (c *runsByState) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *runsByState) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts := map[string]float64{}
	rows, err := c.t.pool.Query(ctx, "select state, count(*) from team_runs group by state")
	if err == nil {
		for rows.Next() {
			var s string
			var n int64
			if err = rows.Scan(&s, &n); err != nil {
				break
			}
			counts[s] = float64(n)
		}
		rows.Close()
		err = errors.Join(err, rows.Err())
	}
	if err != nil {
		c.m.dbError()
		ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("counting the runs by state: %w", err))
		return
	}
	for _, s := range States {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, counts[s], s)
	}
}

func (m *metrics) dbError() {
	if m != nil {
		m.dbErrors.Inc()
	}
}

// dbFailed counts err as a database error unless it is none, a takeover
// (errLost: the fence did its work) or the worker's own stop.
func (m *metrics) dbFailed(err error) {
	if m != nil && err != nil && !errors.Is(err, errLost) && !errors.Is(err, context.Canceled) {
		m.dbErrors.Inc()
	}
}

// gitFailed counts err as a git error unless it is none, the worker's
// own stop, or a refusal of what the run holds rather than a failure (a
// branch that is not the run's, a missing base, a secret in the work):
// the counter is for what an operator repairs (the remote, the network,
// the disk).
func (m *metrics) gitFailed(err error) {
	if m == nil || err == nil || errors.Is(err, errLost) || errors.Is(err, context.Canceled) ||
		errors.Is(err, gitwork.ErrForeignBranch) || errors.Is(err, gitwork.ErrNoBase) || errors.Is(err, gitwork.ErrSecret) {
		return
	}
	m.gitErrors.Inc()
}

// outcomeOf is flower_attempts_total's outcome of an attempt that
// returned err: lost when another worker took the run over, else the
// state it last gave the run (an attempt that ended on an error before
// giving one failed).
func (a *attempt) outcomeOf(err error) string {
	if errors.Is(err, errLost) {
		return "lost"
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch a.outcome {
	case Achieved, Stopped, Failed, Cancelled, Queued:
		return a.outcome
	}
	return Failed
}

// stepLabel is a step's name without a retry's or round's suffix.
func stepLabel(step string) string {
	if i := strings.IndexAny(step, "#·"); i > 0 {
		step = step[:i]
	}
	if step == "" {
		return "-"
	}
	return step
}

// usageMeter counts the model's requests of a run's transcripts that this
// attempt wrote back (each once, by its message id; a message's usage may
// be written again as it grows), and their tokens by kind. The
// transcripts an earlier attempt wrote are seen, not counted: that
// attempt's worker counted them.
type usageMeter struct {
	m    *metrics
	mu   sync.Mutex
	seen map[string]claude.Usage
}

func newUsageMeter(m *metrics) *usageMeter {
	return &usageMeter{m: m, seen: map[string]claude.Usage{}}
}

// add reads entries (transcript lines); count says they are this
// attempt's.
func (u *usageMeter) add(entries []json.RawMessage, count bool) {
	if u == nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, e := range entries {
		r, ok := claude.ReadTranscriptRequest(e)
		if !ok || r.Model == "<synthetic>" { // an API error the CLI wrote as an answer: no request was answered
			continue
		}
		old, seen := u.seen[r.MessageID]
		now := r.Usage.Usage
		// Never below what was counted: counters only grow.
		now.InputTokens = max(now.InputTokens, old.InputTokens)
		now.OutputTokens = max(now.OutputTokens, old.OutputTokens)
		now.CacheReadInputTokens = max(now.CacheReadInputTokens, old.CacheReadInputTokens)
		now.CacheCreationInputTokens = max(now.CacheCreationInputTokens, old.CacheCreationInputTokens)
		u.seen[r.MessageID] = now
		if !count || u.m == nil {
			continue
		}
		if !seen {
			u.m.requests.WithLabelValues(r.Model).Inc()
		}
		for kind, d := range map[string]int{
			tokensInput:      now.InputTokens - old.InputTokens,
			tokensOutput:     now.OutputTokens - old.OutputTokens,
			tokensCacheRead:  now.CacheReadInputTokens - old.CacheReadInputTokens,
			tokensCacheWrite: now.CacheCreationInputTokens - old.CacheCreationInputTokens,
		} {
			if d > 0 {
				u.m.tokens.WithLabelValues(kind, r.Model).Add(float64(d))
			}
		}
	}
}

// metricsServer serves a worker's /metrics and /healthz.
type metricsServer struct {
	srv  *http.Server
	done chan struct{}
}

// serveMetrics serves the worker's metrics and health on ln until stop.
func (w *Worker) serveMetrics(ln net.Listener) *metricsServer {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.m.reg, promhttp.HandlerOpts{
		ErrorLog:      slogPrinter{w.log},
		ErrorHandling: promhttp.ContinueOnError, // the runs' count unreadable: the worker's own counters still
	}))
	mux.HandleFunc("GET /healthz", w.healthz)
	s := &metricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			w.log.Error("flower worker: serving metrics stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s
}

func (s *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

// healthz answers 200 while the worker reaches the database and can write
// in its --dir, 503 with what is wrong otherwise: what a supervisor or a
// load balancer needs to tell a worker that can work from one that
// cannot.
func (w *Worker) healthz(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	var problems []string
	if err := w.t.pool.Ping(ctx); err != nil {
		w.m.dbError()
		problems = append(problems, w.say("dbDown", oneLineErr(err)))
	}
	if p := w.checkDir(); p != nil {
		problems = append(problems, p.what+": "+p.fix)
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if len(problems) > 0 {
		rw.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(rw, maskText(strings.Join(problems, "\n"), w.secretValues()))
		return
	}
	fmt.Fprintln(rw, "ok")
}

// oneLineErr is err's message on one line.
func oneLineErr(err error) string { return foldLines(err.Error()) }

// slogPrinter is promhttp's error log on the worker's log.
type slogPrinter struct{ l *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.l.Warn("flower worker: metrics: " + strings.TrimSpace(fmt.Sprintln(v...)))
}
