package main

// The orchestration benchmark: a whole starter flow (clarify, goal, two
// rounds with their judges, the bequest) on the real CLI against the demo's
// scripted model, and how much of its wall time is flower's own work.
//
// flower runs in a child process of its own (this binary, re-executed), so
// that its CPU time and memory are its own: the fake Messages API stays in
// this process, and the CLI processes are the child's children, counted
// apart.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/demo"
)

func init() {
	register(benchmark{
		name:  "orchestration",
		about: "a full starter flow through the fake model: flower's own share of the wall time and its memory (BENCH_REPS; BENCH_CPUPROFILE=FILE profiles flower's process into FILE.<pid>)",
		run: func(ctx context.Context) error {
			root, err := moduleRoot()
			if err != nil {
				return err
			}
			cli, err := claudeCLI(root)
			if err != nil {
				return err
			}
			reps, err := envCount("BENCH_REPS", 5)
			if err != nil {
				return err
			}
			return runOrch(ctx, orchConfig{out: os.Stdout, reps: reps, cli: cli, runTimeout: 5 * time.Minute})
		},
	})
	if os.Getenv(orchChildVar) != "" {
		// This process is the flower of one repetition (see orchChild).
		os.Exit(orchChild())
	}
}

// orchChildVar, set to the child's configuration (JSON), makes this
// binary run one starter flow and print its figures instead of benchmarks.
const orchChildVar = "FLOWER_BENCH_ORCHESTRATION_CHILD"

// orchLang is the demo's language.
const orchLang = "en"

type orchConfig struct {
	out        io.Writer
	reps       int
	cli        string
	runTimeout time.Duration
	// wrap, when set, wraps the fake API's handler (tests make it fail).
	wrap func(claudetest.Handler) claudetest.Handler
}

// orchChildConfig is what the parent tells the child.
type orchChildConfig struct {
	URL, CLI, Workspace, RunDir, Home string
}

// orchFigures is what the child measured of itself, and reports on its
// stdout as one JSON line.
type orchFigures struct {
	Wall           time.Duration
	User, Sys      time.Duration // this process
	ChildUser      time.Duration // the CLI processes, user + system
	ChildSys       time.Duration
	MaxRSS         int64 // bytes
	HeapPeak       int64 // bytes of live heap objects, sampled
	TotalAlloc     uint64
	Steps          int
	Failed, Reason string
}

func runOrch(ctx context.Context, cfg orchConfig) error {
	out := cfg.out
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("this benchmark re-runs itself as flower's process: %w", err)
	}
	fmt.Fprintf(out, "the demo's starter flow (%s), %d repetitions; flower in a process of its own, the fake API in this one\n", orchLang, cfg.reps)
	var figs []orchFigures
	var fakeCPU []time.Duration
	for rep := range cfg.reps {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, fake, err := orchOnce(ctx, cfg, self)
		if err != nil {
			return fmt.Errorf("repetition %d: %w", rep+1, err)
		}
		figs = append(figs, f)
		fakeCPU = append(fakeCPU, fake)
	}
	orchReport(out, figs, fakeCPU)
	return nil
}

// orchOnce runs one starter flow in a child process and returns its
// figures and the CPU time this process (the fake API) spent meanwhile.
func orchOnce(ctx context.Context, cfg orchConfig, self string) (orchFigures, time.Duration, error) {
	dir, err := os.MkdirTemp("", "flower-bench-orch-")
	if err != nil {
		return orchFigures{}, 0, err
	}
	defer os.RemoveAll(dir)
	c := orchChildConfig{CLI: cfg.cli, Workspace: filepath.Join(dir, "ws"), RunDir: filepath.Join(dir, "run"), Home: filepath.Join(dir, "home")}
	for _, d := range []string{c.Workspace, c.RunDir, filepath.Join(c.Home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return orchFigures{}, 0, err
		}
	}
	h := demo.Script(orchLang, c.Workspace).Handler()
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	srv, err := claudetest.Start(h)
	if err != nil {
		return orchFigures{}, 0, fmt.Errorf("the fake Messages API: %w", err)
	}
	defer srv.Close()
	c.URL = srv.URL
	conf, err := json.Marshal(c)
	if err != nil {
		return orchFigures{}, 0, err
	}
	runCtx, cancel := context.WithTimeout(ctx, cfg.runTimeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, self)
	cmd.Env = append(os.Environ(), orchChildVar+"="+string(conf))
	drvOwnGroup(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before, err := drvSelfCPU()
	if err != nil {
		return orchFigures{}, 0, err
	}
	err = cmd.Run()
	after, _ := drvSelfCPU()
	switch {
	case ctx.Err() != nil:
		return orchFigures{}, 0, fmt.Errorf("interrupted: %w", ctx.Err())
	case runCtx.Err() != nil:
		return orchFigures{}, 0, fmt.Errorf("the starter flow did not end within %s (the fake API or the CLI stopped answering)", cfg.runTimeout)
	}
	var f orchFigures
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &f); jerr != nil {
		return orchFigures{}, 0, fmt.Errorf("flower's process printed no figures (%v; exit: %v): %s", jerr, err, drvTail(stderr.Bytes()))
	}
	if f.Failed != "" {
		return orchFigures{}, 0, fmt.Errorf("the starter flow failed at %s: %s", f.Failed, f.Reason)
	}
	if err != nil {
		return orchFigures{}, 0, fmt.Errorf("flower's process: %w: %s", err, drvTail(stderr.Bytes()))
	}
	return f, after - before, nil
}

// orchChild is the child: it runs the starter flow against the parent's
// fake API, answering the clarifier's question as the demo's human, and
// prints its figures. It returns the exit code.
func orchChild() int {
	var c orchChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(orchChildVar)), &c); err != nil {
		fmt.Fprintf(os.Stderr, "bench orchestration child: bad %s: %v\n", orchChildVar, err)
		return 2
	}
	if path := os.Getenv("BENCH_CPUPROFILE"); path != "" {
		// To find where flower's own time goes: one file per repetition,
		// PATH.<pid>, which go tool pprof takes together.
		pf, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err == nil {
			err = pprof.StartCPUProfile(pf)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench orchestration child: BENCH_CPUPROFILE=%s: %v\n", path, err)
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			pf.Close()
		}()
	}
	f, err := orchFlow(c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench orchestration child: %v\n", err)
		return 1
	}
	b, _ := json.Marshal(f)
	fmt.Println(string(b))
	return 0
}

func orchFlow(c orchChildConfig) (orchFigures, error) {
	stopHeap := orchWatchHeap()
	start := time.Now()
	texts := demo.TextsFor(orchLang)
	wf, err := flower.StarterFlow(texts.Ask, flower.StarterOptions{Workspace: c.Workspace, RunDir: c.RunDir, Lang: orchLang})
	if err != nil {
		return orchFigures{}, err
	}
	rt, err := flower.New(c.Workspace,
		flower.WithRunDir(c.RunDir),
		flower.WithWorkbench(wf.Workbench),
		flower.WithEnv(claudetest.EnvAt(c.URL, c.Home, filepath.Join(c.Home, "tmp"))),
		flower.WithSessionOptions(func(o *claude.Options) {
			o.CLIPath = c.CLI
			o.BaseEnv = claudetest.BaseEnv()
		}))
	if err != nil {
		return orchFigures{}, err
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	if ch, ok := wf.Channel.(*human.Channel); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				q, err := ch.NextAsk(ctx)
				if err != nil {
					return
				}
				ch.Answer(q.ID, texts.Answer)
			}
		}()
	}
	steps := 0
	res, err := wf.Run(ctx, rt, nil, func(flower.Step, flower.StepResult) { steps++ })
	cancel()
	wg.Wait()
	if err != nil {
		return orchFigures{}, err
	}
	wall := time.Since(start)
	f := orchFigures{Wall: wall, Steps: steps, HeapPeak: stopHeap()}
	if at, failed := res.FailedAt(); failed {
		r, _ := res.Result(at)
		f.Failed, f.Reason = at, fmt.Sprintf("%.300s", r.Text)
		return f, nil
	}
	if b, err := os.ReadFile(filepath.Join(c.Workspace, texts.File)); err != nil || strings.TrimSpace(string(b)) != texts.Answer {
		return f, fmt.Errorf("the coder's %s: %q, %v; the flow did not do the scripted work", texts.File, b, err)
	}
	if f.User, f.Sys, f.ChildUser, f.ChildSys, f.MaxRSS, err = drvRusage(); err != nil {
		return f, err
	}
	if hwm, ok := drvPeakRSS(); ok {
		// getrusage's figure keeps, across exec, the peak of the process
		// this one was forked from: the benchmark's, not flower's.
		f.MaxRSS = hwm
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.TotalAlloc = ms.TotalAlloc
	return f, nil
}

// orchWatchHeap samples the live heap every 10 ms until the returned
// function is called, which returns the largest sample.
func orchWatchHeap() func() int64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(sample[0].Value.Uint64())
	}
	var mu sync.Mutex
	peak := read()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				v := read()
				mu.Lock()
				peak = max(peak, v)
				mu.Unlock()
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return max(peak, read())
	}
}

func orchReport(out io.Writer, figs []orchFigures, fakeCPU []time.Duration) {
	pick := func(get func(orchFigures) time.Duration) drvSpread {
		var ds []time.Duration
		for _, f := range figs {
			ds = append(ds, get(f))
		}
		return drvSpreadOf(ds)
	}
	wall := pick(func(f orchFigures) time.Duration { return f.Wall })
	own := pick(func(f orchFigures) time.Duration { return f.User + f.Sys })
	clis := pick(func(f orchFigures) time.Duration { return f.ChildUser + f.ChildSys })
	fake := drvSpreadOf(fakeCPU)
	var shares []float64
	var rss, heap, alloc []int64
	for _, f := range figs {
		shares = append(shares, float64(f.User+f.Sys)/float64(f.Wall))
		rss = append(rss, f.MaxRSS)
		heap = append(heap, f.HeapPeak)
		alloc = append(alloc, int64(f.TotalAlloc))
	}
	share := orchSpreadF(shares)
	mb := func(xs []int64) string {
		s := orchSpreadF(orchFloats(xs))
		return fmt.Sprintf("%.1f MB [%.1f … %.1f]", s[0]/1e6, s[1]/1e6, s[2]/1e6)
	}
	fmt.Fprint(out, drvTable([][]string{
		{"figure", "median [min … max]"},
		{"starter flow wall time", wall.String()},
		{fmt.Sprintf("flower's CPU time (%d steps)", figs[0].Steps), own.String()},
		{"  share of the wall time", fmt.Sprintf("%.2f%% [%.2f … %.2f]", share[0]*100, share[1]*100, share[2]*100)},
		{"the CLI processes' CPU time", clis.String()},
		{"the fake API's CPU time (this process)", fake.String()},
		{"flower's peak RSS", mb(rss)},
		{"flower's peak live Go heap", mb(heap)},
		{"flower's Go allocations, total", mb(alloc)},
	}))
	fmt.Fprintln(out, "  flower's CPU time: user + system of flower's own process (runtime, guards, hooks, store, MCP tools), the CLIs and the fake API apart")
	verdict := "met"
	if share[0] >= 0.05 {
		verdict = "missed"
	}
	fmt.Fprintf(out, "goal (flower's own time < 5%% of the wall time): %.2f%%: %s\n", share[0]*100, verdict)
}

// orchSpreadF is the median, minimum and maximum of xs.
func orchSpreadF(xs []float64) [3]float64 {
	if len(xs) == 0 {
		return [3]float64{}
	}
	ds := make([]time.Duration, len(xs))
	for i, x := range xs {
		// Through drvSpreadOf's median; the values are scaled to keep
		// their precision as whole numbers.
		ds[i] = time.Duration(x * 1e6)
	}
	s := drvSpreadOf(ds)
	return [3]float64{float64(s.med) / 1e6, float64(s.min) / 1e6, float64(s.max) / 1e6}
}

func orchFloats(xs []int64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
