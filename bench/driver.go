package main

// The driver benchmark: what a Go program pays to hook every tool call
// through flower's driver, against the official TypeScript Agent SDK and
// against the bare CLI with no hooks at all, on the same scripted session
// of trivial echo calls through the same real CLI binary.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
)

func init() {
	register(benchmark{
		name:  "driver",
		about: "hooked echo calls: flower's driver vs the TypeScript Agent SDK vs the bare CLI (BENCH_CALLS, BENCH_REPS, BENCH_VARIANTS: names to run, BENCH_GLANCE_TRACE: a file for the coordinator's glance times)",
		run: func(ctx context.Context) error {
			cfg, err := driverDefaults()
			if err != nil {
				return err
			}
			return runDriver(ctx, cfg)
		},
	})
}

// The TypeScript Agent SDK the driver is compared with, pinned.
const (
	drvSDKPackage = "@anthropic-ai/claude-agent-sdk"
	drvSDKVersion = "0.3.332"
)

// driverConfig is one driver benchmark run.
type driverConfig struct {
	out   io.Writer
	calls int // tool calls per session
	reps  int // repetitions of every variant
	root  string
	cli   string
	// npm installs the TypeScript SDK ("npm" on PATH when empty); sdkDir
	// is where (git-ignored).
	npm    string
	sdkDir string
	// runTimeout bounds one session, so a fake that stops answering
	// stops its variant instead of hanging the benchmark.
	runTimeout time.Duration
	// wrap, when set, wraps the fake API's handler (tests make it fail
	// mid-run).
	wrap func(claudetest.Handler) claudetest.Handler
}

func driverDefaults() (driverConfig, error) {
	root, err := moduleRoot()
	if err != nil {
		return driverConfig{}, err
	}
	cli, err := claudeCLI(root)
	if err != nil {
		return driverConfig{}, err
	}
	calls, err := envCount("BENCH_CALLS", 200)
	if err != nil {
		return driverConfig{}, err
	}
	reps, err := envCount("BENCH_REPS", 7)
	if err != nil {
		return driverConfig{}, err
	}
	return driverConfig{out: os.Stdout, calls: calls, reps: reps, root: root, cli: cli,
		sdkDir: filepath.Join(root, "tools", "agent-sdk"), runTimeout: 5 * time.Minute}, nil
}

// Markers of the scripted sessions (see claudetest.Script).
const (
	drvEchoMarker   = "BENCHDRV-ECHO"
	drvCoordMarker  = "BENCHDRV-COORD"
	drvWorkerMarker = "BENCHDRV-WORKER"
	drvDone         = "done"
)

// drvScript is the fake model: calls echo tool calls, one a turn, on the
// main thread (echo marker) or in one dispatched worker (coordinator
// marker), then "done".
func drvScript(calls int) claudetest.Script {
	echoes := make([]claudetest.Responder, 0, calls+1)
	for i := range calls {
		// Each command differs, so flower's loop guard sees no loop.
		echoes = append(echoes, claudetest.NewReply(claudetest.ToolUse("", "Bash",
			map[string]any{"command": fmt.Sprintf("echo call-%d", i), "description": "print a word"})))
	}
	worker := append(append([]claudetest.Responder(nil), echoes...), claudetest.Say(
		"Conclusion: ran the echoes\nEvidence: every echo printed its word\nOutput: none\nUnverified / risks: none"))
	return claudetest.Script{
		drvEchoMarker: append(echoes, claudetest.Say(drvDone)),
		drvCoordMarker: {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{"description": "echoes",
				"subagent_type": "coder", "run_in_background": false, "prompt": drvWorkerMarker + ": run the echoes"})),
			claudetest.Say(drvDone),
		},
		drvWorkerMarker: worker,
	}
}

// drvTrack times one session from the fake API's side: when each request
// arrived.
type drvTrack struct {
	mu   sync.Mutex
	reqs []time.Time
}

func (t *drvTrack) note(at time.Time) {
	t.mu.Lock()
	t.reqs = append(t.reqs, at)
	t.mu.Unlock()
}

func (t *drvTrack) times() []time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]time.Time(nil), t.reqs...)
}

// drvRun is what one session measured.
type drvRun struct {
	wall time.Duration
	// start and end bound the session on this process's clock (for the
	// TS SDK, the node process's start and end).
	start, end time.Time
	reqs       []time.Time
	gaps       []time.Duration // PreToolUse to PostToolUse, per call
	guardTime  time.Duration   // inside flower's guard hooks
	guardCalls int
}

// drvSession is one session's surroundings.
type drvSession struct {
	cli, cwd, prompt string
	env              map[string]string
	calls            int
}

// drvVariant is one way of running the session.
type drvVariant struct {
	name  string
	about string
	// requests is how many API requests a session makes for calls calls.
	requests func(calls int) int
	hooked   bool
	guarded  bool
	run      func(ctx context.Context, s drvSession) (drvRun, error)
}

func runDriver(ctx context.Context, cfg driverConfig) error {
	out := cfg.out
	var cur atomic.Pointer[drvTrack]
	script := drvScript(cfg.calls)
	var h claudetest.Handler = func(ctx context.Context, req *claudetest.Request) claudetest.Reply {
		if t := cur.Load(); t != nil {
			t.note(time.Now())
		}
		return script.Reply(req)
	}
	if cfg.wrap != nil {
		h = cfg.wrap(h)
	}
	srv, err := claudetest.Start(h)
	if err != nil {
		return fmt.Errorf("the fake Messages API: %w", err)
	}
	defer srv.Close()
	base, err := os.MkdirTemp("", "flower-bench-driver-")
	if err != nil {
		return fmt.Errorf("a folder for the sessions: %w", err)
	}
	defer os.RemoveAll(base)

	plain := func(n int) int { return n + 1 }
	variants := []drvVariant{
		{name: "bare", about: "the CLI alone, no hooks (the floor)", requests: plain, run: drvBare},
		{name: "flower", about: "flower's driver, PreToolUse+PostToolUse on every tool", requests: plain, hooked: true, run: drvFlower},
	}
	sdk, sdkErr := drvInstallSDK(ctx, cfg)
	if sdkErr != nil {
		fmt.Fprintf(out, "driver: ts-sdk: not run: %v\n", sdkErr)
	} else {
		script := filepath.Join(cfg.root, "bench", "ts", "driver.mjs")
		variants = append(variants, drvVariant{name: "ts-sdk", about: drvSDKPackage + "@" + drvSDKVersion + ", the same hooks",
			requests: plain, hooked: true, run: func(ctx context.Context, s drvSession) (drvRun, error) {
				return drvTS(ctx, s, script, sdk)
			}})
	}
	variants = append(variants,
		drvVariant{name: "flower+coordinator", about: "a coordinator's real options (wall, loop, workbench, spill, store), echo as glances",
			requests: plain, hooked: true, guarded: true, run: func(ctx context.Context, s drvSession) (drvRun, error) {
				return drvGuarded(ctx, s, false)
			}},
		drvVariant{name: "flower+worker", about: "the same coordinator dispatching one worker that makes the calls",
			requests: func(n int) int { return n + 3 }, hooked: true, guarded: true, run: func(ctx context.Context, s drvSession) (drvRun, error) {
				return drvGuarded(ctx, s, true)
			}},
	)
	if only := os.Getenv("BENCH_VARIANTS"); only != "" {
		names := strings.Split(only, ",")
		variants = slices.DeleteFunc(variants, func(v drvVariant) bool { return !slices.Contains(names, v.name) })
	}
	fmt.Fprintf(out, "%d echo calls a session, %d repetitions, variants interleaved; CLI %s\n", cfg.calls, cfg.reps, cfg.cli)

	runs := map[string][]drvRun{}
	stopped := map[string]error{}
	for rep := range cfg.reps {
		for _, v := range drvRotate(variants, rep) {
			if stopped[v.name] != nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := drvOnce(ctx, cfg, srv.URL, base, v, &cur)
			if err != nil {
				stopped[v.name] = err
				fmt.Fprintf(out, "driver: %s: stopped in repetition %d: %v\n", v.name, rep+1, err)
				continue
			}
			runs[v.name] = append(runs[v.name], r)
		}
	}
	drvReport(out, cfg, variants, runs)
	if len(stopped) > 0 {
		var names []string
		for _, v := range variants {
			if stopped[v.name] != nil {
				names = append(names, v.name)
			}
		}
		return fmt.Errorf("variants stopped: %s (see above)", strings.Join(names, ", "))
	}
	return nil
}

// drvOnce runs one session of variant v in fresh folders and checks that
// it did the scripted work.
func drvOnce(ctx context.Context, cfg driverConfig, url, base string, v drvVariant, cur *atomic.Pointer[drvTrack]) (drvRun, error) {
	dir, err := os.MkdirTemp(base, v.name+"-")
	if err != nil {
		return drvRun{}, err
	}
	defer os.RemoveAll(dir)
	home, tmp, cwd := filepath.Join(dir, "home"), filepath.Join(dir, "tmp"), filepath.Join(dir, "work")
	for _, d := range []string{home, tmp, cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return drvRun{}, err
		}
	}
	marker := drvEchoMarker
	if v.name == "flower+worker" {
		marker = drvCoordMarker
	}
	track := &drvTrack{}
	cur.Store(track)
	defer cur.Store(nil)
	runCtx, cancel := context.WithTimeout(ctx, cfg.runTimeout)
	defer cancel()
	r, err := v.run(runCtx, drvSession{cli: cfg.cli, cwd: cwd, env: claudetest.EnvAt(url, home, tmp),
		prompt: marker + ": make the scripted calls", calls: cfg.calls})
	if err != nil && ctx.Err() != nil {
		return drvRun{}, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if err != nil && runCtx.Err() != nil {
		return drvRun{}, fmt.Errorf("no end within %s (the fake API or the CLI stopped answering): %w", cfg.runTimeout, err)
	}
	if err != nil {
		return drvRun{}, err
	}
	r.reqs = track.times()
	if want := v.requests(cfg.calls); len(r.reqs) != want {
		return drvRun{}, fmt.Errorf("the fake API saw %d requests, the script makes %d: the session did not run as scripted", len(r.reqs), want)
	}
	if v.hooked && len(r.gaps) != cfg.calls {
		return drvRun{}, fmt.Errorf("%d PreToolUse→PostToolUse pairs for %d calls: hooks were missed", len(r.gaps), cfg.calls)
	}
	return r, nil
}
