package main

// economy: one long scripted session through the real CLI, 200 tool calls
// one per turn, the process ended after call 100 and the session resumed in
// a new process, as the plain CLI, as flower's Runtime with its defaults and
// as flower configures a real run (workbench and spill, trimming, expiry and
// pruning on resume). It counts the bytes of every request the fake API
// gets, says which part of the requests they are, and follows every pointer
// the model was sent to check that the output behind it is whole.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/store"
)

func init() {
	register(benchmark{
		name:  "economy",
		about: "context economy of one long session: 200 tool calls, resumed after 100; plain CLI vs flower",
		run: func(ctx context.Context) error {
			cfg, err := econConfigFromEnv()
			if err != nil {
				return err
			}
			_, err = econBench(ctx, cfg, econSessionVariants, econPrint)
			return err
		},
	})
}

// econConfig sizes a run of the economy benchmarks.
type econConfig struct {
	// Calls is how many calls of the script run (200), Split after how
	// many the first process ends (100).
	Calls, Split int
	// PerWorker is how many calls each worker of the coordinator does (20).
	PerWorker int
	// Reps is how many interleaved repetitions of every variant run.
	Reps int
	// Timeout bounds one variant's run: a fake that stops answering ends
	// it with an error rather than a hang.
	Timeout time.Duration
	// CLI is the claude binary.
	CLI string
	// Dir holds the runs' workspaces and homes; "" means a temporary
	// folder, removed at the end.
	Dir string
	// Dump, when set (BENCH_DUMP), is a folder where each variant's
	// measured requests are written, one JSON body a file.
	Dump string
	Out  io.Writer
	// fault, when set, makes every variant's fake fail from request
	// failAt on (the bad-input case).
	failAt int
	fault  *claudetest.Fault
}

// econConfigFromEnv is the full-size configuration, with the repetitions
// from BENCH_REPS (default 3) and the CLI the other benchmarks drive.
func econConfigFromEnv() (econConfig, error) {
	root, err := moduleRoot()
	if err != nil {
		return econConfig{}, err
	}
	cli, err := claudeCLI(root)
	if err != nil {
		return econConfig{}, err
	}
	reps, err := envCount("BENCH_REPS", 3)
	if err != nil {
		return econConfig{}, err
	}
	return econConfig{Calls: 200, Split: 100, PerWorker: 20, Reps: reps, Timeout: 15 * time.Minute, CLI: cli,
		Dump: os.Getenv("BENCH_DUMP"), Out: os.Stdout}, nil
}

// econVariant is one way of doing the scripted work.
type econVariant struct {
	name  string
	about string
	run   func(ctx context.Context, r *econRun) error
}

var econSessionVariants = []econVariant{
	{"plain", "the CLI alone: claude.Query, no flower hook or store, the CLI's own resume", econPlain},
	{"flower-defaults", "flower's Runtime with its defaults: SQLite store, expiry and pruning on resume, no workbench, no trim",
		func(ctx context.Context, r *econRun) error { return econRuntime(ctx, r) }},
	{"flower-run", "flower as `flower go` configures a run: workbench with spill (4000), trim, expiry and pruning on resume",
		func(ctx context.Context, r *econRun) error {
			return econRuntime(ctx, r, flower.WithDefaultWorkbench(), flower.WithTrim(store.TrimPolicy{}))
		}},
}

// econRun is one variant's run: its own workspace, HOME, fake API and
// figures.
type econRun struct {
	cfg   econConfig
	calls []econCall
	ws    string
	home  string
	tmp   string
	run   string // flower's run directory
	srv   *claudetest.Server
	fake  *econFake
	env   map[string]string
	// resumeAgain has twoRuntimes resume the session once more, in a
	// third process that only answers: its first request shows what a
	// second resume writes to the prompt cache. measured is then how many
	// requests the figures count (the third process's are priced alone),
	// and resumes where each resumed process's requests begin.
	resumeAgain bool
	measured    int
	resumes     []int
}

// newEconRun prepares dir for one variant's run.
func newEconRun(ctx context.Context, cfg econConfig, calls []econCall, dir string) (*econRun, error) {
	r := &econRun{cfg: cfg, calls: calls, ws: filepath.Join(dir, "ws"), home: filepath.Join(dir, "home"),
		tmp: filepath.Join(dir, "tmp"), run: filepath.Join(dir, "run")}
	for _, d := range []string{r.ws, r.home, r.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := econWorkspace(ctx, r.ws, calls); err != nil {
		return nil, err
	}
	r.fake = newEconFake(r.ws, calls)
	r.fake.failAt, r.fake.fault = cfg.failAt, cfg.fault
	return r, nil
}

// serve starts the fake API answering by script.
func (r *econRun) serve(script claudetest.Script) error {
	srv, err := claudetest.Start(r.fake.handler(script))
	if err != nil {
		return err
	}
	// Usage as the prompt cache prices it, so the CLI's cost figures (and
	// flower's manifest) see caching as a bill does.
	srv.PriceWith(fakeapi.NewPromptCache(nil))
	r.srv = srv
	r.env = claudetest.EnvAt(srv.URL, r.home, r.tmp)
	// The CLI's own retries would hide a failing fake for minutes.
	r.env["CLAUDE_CODE_MAX_RETRIES"] = "0"
	return nil
}

func (r *econRun) close() {
	if r.srv != nil {
		r.srv.Close()
	}
}

// The prompts of the two processes; the markers choose the fake's script.
const (
	econPrompt1 = "ECON:part1 Work through the scripted calls."
	econPrompt2 = "ECON:part2 Go on with the scripted calls."
	econDone1   = "part 1 done"
	econDone2   = "all calls done"
	econPrompt3 = "ECON:part3 Say where the work stands."
	econDone3   = "the work is done"
)

func (r *econRun) sessionScript() claudetest.Script {
	split := min(r.cfg.Split, r.cfg.Calls)
	return claudetest.Script{
		"ECON:part1": r.fake.turns(0, split, econDone1),
		"ECON:part2": r.fake.turns(split, r.cfg.Calls, econDone2),
		"ECON:part3": {claudetest.Say(econDone3)},
	}
}

// econPlain runs the session with the CLI alone, as a user of the CLI
// would: its own system prompt, tools and transcript, resumed by id.
func econPlain(ctx context.Context, r *econRun) error {
	if err := r.serve(r.sessionScript()); err != nil {
		return err
	}
	// The same tools approved as flower's agent has: without them the CLI
	// asks approval for the test script, which -p cannot give.
	opts := claude.Options{CLIPath: r.cfg.CLI, Cwd: r.ws, BaseEnv: claudetest.BaseEnv(), Env: r.env,
		AllowedTools:   econSpec().AllowedTools,
		PermissionMode: claude.PermissionAcceptEdits, SystemPrompt: claude.PresetPrompt(""), MaxLineBytes: 64 << 20}
	sid, err := econQuery(ctx, econPrompt1, econDone1, opts)
	if err != nil {
		return r.failed("first process", err)
	}
	opts.Resume = sid
	r.resumes = append(r.resumes, r.srv.Count())
	if _, err := econQuery(ctx, econPrompt2, econDone2, opts); err != nil {
		return r.failed("resumed process", err)
	}
	return nil
}

// econQuery runs one CLI process for prompt and returns its session id;
// the result must be want, else the script did not run to its end.
func econQuery(ctx context.Context, prompt, want string, opts claude.Options) (string, error) {
	var res *claude.ResultMessage
	for m, err := range claude.Query(ctx, prompt, opts) {
		if err != nil {
			return "", err
		}
		if rm, ok := m.(*claude.ResultMessage); ok {
			res = rm
		}
	}
	switch {
	case res == nil:
		return "", errors.New("the CLI ended without a result")
	case res.IsError:
		return "", fmt.Errorf("the CLI ended with an error (%s): %s", res.TerminalReason, res.Result)
	case res.Result != want:
		return "", fmt.Errorf("the CLI's result is %q, want %q: the scripted work did not run to its end", res.Result, want)
	}
	return res.SessionID, nil
}

// econSpec is the one agent of the long session: it does the work itself.
func econSpec() flower.AgentSpec {
	return flower.AgentSpec{Name: "work", AllowedTools: []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep"},
		PermissionMode: claude.PermissionAcceptEdits}
}

// econRuntime runs the session through flower's Runtime with opts over
// the benchmark's own (run directory, English, the fake's environment, no
// retries: a failing fake must stop the variant). Each process is a new
// Runtime on the same run directory, as two runs of flower would be.
func econRuntime(ctx context.Context, r *econRun, opts ...flower.Option) error {
	if err := r.serve(r.sessionScript()); err != nil {
		return err
	}
	r.resumeAgain = true
	return r.twoRuntimes(ctx, econSpec(), econPrompt1, econDone1, econPrompt2, econDone2, opts)
}

// twoRuntimes runs spec for prompt1 on one Runtime, then resumes its
// session for prompt2 on a second one; each answer must end with its want.
// With r.resumeAgain a third Runtime resumes it for econPrompt3.
func (r *econRun) twoRuntimes(ctx context.Context, spec flower.AgentSpec, prompt1, want1, prompt2, want2 string, opts []flower.Option) error {
	base := []flower.Option{
		flower.WithRunDir(r.run), flower.WithLanguage(flower.English), flower.WithEnv(r.env),
		flower.WithResilience(flower.Resilience{Disabled: true}),
		flower.WithSessionOptions(func(o *claude.Options) {
			o.CLIPath, o.BaseEnv = r.cfg.CLI, claudetest.BaseEnv()
		}),
	}
	once := func(prompt, want string, ro flower.RunOptions) (string, error) {
		rt, err := flower.New(r.ws, append(base, opts...)...)
		if err != nil {
			return "", err
		}
		defer rt.Close()
		res, err := rt.Run(ctx, spec, prompt, ro)
		if err != nil {
			return "", err
		}
		if res.Text != want {
			return "", fmt.Errorf("the step's answer is %q, want %q: the scripted work did not run to its end", res.Text, want)
		}
		return res.SessionID, nil
	}
	sid, err := once(prompt1, want1, flower.RunOptions{})
	if err != nil {
		return r.failed("first process", err)
	}
	r.resumes = append(r.resumes, r.srv.Count())
	if _, err := once(prompt2, want2, flower.RunOptions{Resume: sid}); err != nil {
		return r.failed("resumed process", err)
	}
	if !r.resumeAgain {
		return nil
	}
	r.measured = r.srv.Count()
	r.resumes = append(r.resumes, r.measured)
	if _, err := once(econPrompt3, econDone3, flower.RunOptions{Resume: sid}); err != nil {
		return r.failed("second resumed process", err)
	}
	return nil
}

// failed says where the run stopped: which process, at which request.
func (r *econRun) failed(where string, err error) error {
	return fmt.Errorf("%s stopped after %d requests to the fake API: %w", where, r.srv.Count(), err)
}

// econBench runs every variant cfg.Reps times, interleaved, and prints
// their figures side by side with show. A variant that fails is said in
// one line and not run again; the others go on, and the error names the
// failed ones. It returns the figures of each variant, nil for one that
// failed.
func econBench(ctx context.Context, cfg econConfig, variants []econVariant,
	show func(io.Writer, []econVariant, [][]econFigures)) ([][]econFigures, error) {
	calls, err := econParse(econScriptText)
	if err != nil {
		return nil, err
	}
	if cfg.Calls > len(calls) {
		return nil, fmt.Errorf("the script has %d calls, %d asked for", len(calls), cfg.Calls)
	}
	calls = calls[:cfg.Calls]
	root := cfg.Dir
	if root == "" {
		if root, err = os.MkdirTemp("", "flower-bench-econ-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
	}
	fmt.Fprintf(cfg.Out, "%d tool calls, one per turn, the process ended after call %d and the session resumed; %d repetitions\n",
		cfg.Calls, cfg.Split, cfg.Reps)
	results := make([][]econFigures, len(variants))
	var failed []error
	for rep := 0; rep < cfg.Reps; rep++ {
		for vi, v := range variants {
			if rep > 0 && len(results[vi]) == 0 {
				continue // it failed: said once
			}
			// Same-length paths in every variant and repetition: the
			// workspace's path is in every request.
			dir := filepath.Join(root, fmt.Sprintf("v%dr%03d", vi, rep))
			f, err := econOne(ctx, cfg, calls, dir, v)
			if err != nil {
				fmt.Fprintf(cfg.Out, "%s: stopped: %v\n", v.name, err)
				failed = append(failed, fmt.Errorf("%s: %w", v.name, err))
				results[vi] = nil
				continue
			}
			results[vi] = append(results[vi], f)
		}
		if ctx.Err() != nil {
			break
		}
	}
	var ran []econVariant
	var figs [][]econFigures
	for vi, v := range variants {
		if len(results[vi]) > 0 {
			ran, figs = append(ran, v), append(figs, results[vi])
		}
	}
	if len(ran) > 0 && ran[0].name == variants[0].name {
		show(cfg.Out, ran, figs)
	}
	return results, errors.Join(failed...)
}

// econOne runs variant v once in dir and measures it.
func econOne(ctx context.Context, cfg econConfig, calls []econCall, dir string, v econVariant) (econFigures, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout,
		fmt.Errorf("the variant ran longer than %v: the fake API or the CLI stopped answering", cfg.Timeout))
	defer cancel()
	r, err := newEconRun(ctx, cfg, calls, dir)
	if err != nil {
		return econFigures{}, err
	}
	defer r.close()
	start := time.Now()
	if err := v.run(ctx, r); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		return econFigures{}, err
	}
	wall := time.Since(start)
	outputs, err := r.fake.noted(econAll(len(calls)))
	if err != nil {
		return econFigures{}, err
	}
	reqs := r.srv.Requests()
	var resumes []fakeapi.Usage
	for _, i := range r.resumes {
		if i < len(reqs) {
			resumes = append(resumes, reqs[i].Usage)
		}
	}
	if r.measured > 0 {
		reqs = reqs[:r.measured]
	}
	if err := econDump(cfg.Dump, v.name, reqs); err != nil {
		return econFigures{}, err
	}
	f := econMeasure(reqs, calls, outputs, r.ws, filepath.Join(r.home, ".claude"))
	f.Resumes = resumes
	f.Price = econPrices(reqs, calls, outputs)
	f.Wall = wall
	return f, nil
}

// econDump writes each request's body to dir/<variant>/<index>.json when
// dir is set (BENCH_DUMP), overwriting an earlier repetition's, so the
// bytes behind a figure can be read.
func econDump(dir, variant string, reqs []*claudetest.Request) error {
	if dir == "" {
		return nil
	}
	dir = filepath.Join(dir, variant)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("BENCH_DUMP: %w", err)
	}
	for i, req := range reqs {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.json", i)), req.Body, 0o644); err != nil {
			return fmt.Errorf("BENCH_DUMP: %w", err)
		}
	}
	return nil
}

// econAll is 0..n-1.
func econAll(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
