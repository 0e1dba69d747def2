package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/sqlite"
	"github.com/flowerrun/flower/workbench"
)

// drvGaps records, per Bash call, the time from its PreToolUse to its
// PostToolUse callback: the CLI's hook round trips plus the tool itself.
type drvGaps struct {
	mu   sync.Mutex
	pre  map[string]time.Time
	gaps []time.Duration
}

// hooks are the benchmark's own trivial hooks: on every tool, they note
// the time and let the call go on.
func (g *drvGaps) hooks() map[string][]claude.HookMatcher {
	g.pre = map[string]time.Time{}
	pre := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		if in.ToolName == "Bash" {
			g.mu.Lock()
			g.pre[in.ToolUseID] = time.Now()
			g.mu.Unlock()
		}
		return nil, nil
	}
	post := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		now := time.Now()
		g.mu.Lock()
		defer g.mu.Unlock()
		if at, ok := g.pre[in.ToolUseID]; ok && in.ToolName == "Bash" {
			g.gaps = append(g.gaps, now.Sub(at))
			delete(g.pre, in.ToolUseID)
		}
		return nil, nil
	}
	return map[string][]claude.HookMatcher{
		claude.PreToolUse:  {{Hooks: []claude.HookFunc{pre}}},
		claude.PostToolUse: {{Hooks: []claude.HookFunc{post}}},
	}
}

func (g *drvGaps) all() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Duration(nil), g.gaps...)
}

// drvQuery runs one flower session to its result and checks it.
func drvQuery(ctx context.Context, prompt string, opts claude.Options) (start, end time.Time, err error) {
	start = time.Now()
	var res *claude.ResultMessage
	for m, err := range claude.Query(ctx, prompt, opts) {
		if err != nil {
			return start, time.Now(), err
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			res = r
		}
	}
	end = time.Now()
	return start, end, drvCheckResult(res != nil, res != nil && res.IsError, resultText(res))
}

func resultText(r *claude.ResultMessage) string {
	if r == nil {
		return ""
	}
	return r.Result
}

// drvCheckResult says what is wrong with a session's final result.
func drvCheckResult(got, isError bool, text string) error {
	switch {
	case !got:
		return errors.New("the session ended without a result")
	case isError:
		return fmt.Errorf("the session ended in an error: %.300s", text)
	case text != drvDone:
		return fmt.Errorf("the session's result is %.300q, the script ends with %q", text, drvDone)
	}
	return nil
}

// drvBase are the options every flower variant shares with the others:
// the same binary, folders, environment, permission mode, system prompt
// and (no) setting sources as the bare CLI and the TS SDK get.
func drvBase(s drvSession) claude.Options {
	return claude.Options{
		CLIPath:        s.cli,
		Cwd:            s.cwd,
		BaseEnv:        claudetest.BaseEnv(),
		Env:            s.env,
		PermissionMode: "acceptEdits",
		SystemPrompt:   claude.PresetPrompt(""),
		SettingSources: []string{},
	}
}

func drvFlower(ctx context.Context, s drvSession) (drvRun, error) {
	var g drvGaps
	opts := drvBase(s)
	opts.Hooks = g.hooks()
	start, end, err := drvQuery(ctx, s.prompt, opts)
	return drvRun{wall: end.Sub(start), start: start, end: end, gaps: g.all()}, err
}

// drvGuarded runs the session with the options a real run gives a
// coordinator (flower.BuildOptions with a workbench, the spill threshold,
// handoff and the SQLite store behind the pruning store), the benchmark's
// timing hooks first. Every guard hook is timed. With worker, the
// coordinator dispatches one worker that makes the calls.
func drvGuarded(ctx context.Context, s drvSession, worker bool) (drvRun, error) {
	wb := workbench.New(s.cwd)
	if err := wb.CheckWritable(); err != nil {
		return drvRun{}, err
	}
	if _, err := wb.Refresh(); err != nil {
		return drvRun{}, err
	}
	db, err := sqlite.Open(filepath.Join(filepath.Dir(s.cwd), "sessions.db"))
	if err != nil {
		return drvRun{}, err
	}
	defer db.Close()
	pruning, err := store.NewPruning(db, s.cwd, store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{})
	if err != nil {
		return drvRun{}, err
	}
	spec := flower.Coordinator("coordinator", "", map[string]claude.AgentDefinition{
		"coder": flower.Worker("runs the commands it is given", "Run the commands you are given."),
	})
	opts, err := flower.BuildOptions(spec, flower.BuildConfig{Cwd: s.cwd, Store: pruning, Workbench: wb,
		SpillThreshold: guard.DefaultSpillThreshold, Handoff: true})
	if err != nil {
		return drvRun{}, err
	}
	var spent atomic.Int64
	guards := drvTimed(opts.Hooks, &spent)
	if trace := os.Getenv("BENCH_GLANCE_TRACE"); trace != "" {
		guards = drvTraceGlances(guards, trace)
	}
	var g drvGaps
	opts.Hooks = map[string][]claude.HookMatcher{}
	mine := g.hooks()
	for ev := range maps.Keys(mine) {
		opts.Hooks[ev] = append(opts.Hooks[ev], mine[ev]...)
	}
	for ev, ms := range guards {
		opts.Hooks[ev] = append(opts.Hooks[ev], ms...)
	}
	base := drvBase(s)
	opts.CLIPath, opts.BaseEnv = base.CLIPath, base.BaseEnv
	env := maps.Clone(s.env)
	maps.Copy(env, opts.Env)
	opts.Env = env
	start, end, err := drvQuery(ctx, s.prompt, opts)
	return drvRun{wall: end.Sub(start), start: start, end: end, gaps: g.all(), guardTime: time.Duration(spent.Load())}, err
}

// drvTimed wraps every hook so that the time spent inside it adds to spent.
func drvTimed(hooks map[string][]claude.HookMatcher, spent *atomic.Int64) map[string][]claude.HookMatcher {
	out := make(map[string][]claude.HookMatcher, len(hooks))
	for ev, ms := range hooks {
		for _, m := range ms {
			w := m
			w.Hooks = nil
			for _, h := range m.Hooks {
				w.Hooks = append(w.Hooks, func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
					t := time.Now()
					defer func() { spent.Add(int64(time.Since(t))) }()
					return h(ctx, in)
				})
			}
			out[ev] = append(out[ev], w)
		}
	}
	return out
}

// drvBare runs the CLI alone with the prompt on its command line: no
// hooks, no control protocol, only its stream-json output read to the end.
func drvBare(ctx context.Context, s drvSession) (drvRun, error) {
	cmd := exec.CommandContext(ctx, s.cli, "-p", s.prompt, "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--setting-sources=")
	cmd.Dir = s.cwd
	cmd.Env = drvEnviron(s.env)
	drvOwnGroup(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return drvRun{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return drvRun{}, fmt.Errorf("start %s: %w", s.cli, err)
	}
	var res struct {
		Type    string `json:"type"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	got := false
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "result" {
			got = json.Unmarshal(sc.Bytes(), &res) == nil
		}
	}
	werr := cmd.Wait()
	end := time.Now()
	if werr != nil && !got {
		return drvRun{}, fmt.Errorf("the CLI failed: %w: %s", werr, drvTail(stderr.Bytes()))
	}
	return drvRun{wall: end.Sub(start), start: start, end: end}, drvCheckResult(got, res.IsError, res.Result)
}

// drvTS runs the TypeScript SDK's query() in node, driven by
// bench/ts/driver.mjs, which reports its own timings on one JSON line.
// The node process's start-up and the SDK's import are not counted,
// as flower's variants do not count this process's.
func drvTS(ctx context.Context, s drvSession, script, sdk string) (drvRun, error) {
	in, err := json.Marshal(map[string]any{"sdk": sdk, "cli": s.cli, "cwd": s.cwd, "prompt": s.prompt,
		"env": s.env, "path": os.Getenv("PATH")})
	if err != nil {
		return drvRun{}, err
	}
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Dir = s.cwd
	cmd.Env = drvEnviron(nil)
	drvOwnGroup(cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return drvRun{}, fmt.Errorf("node %s: %w: %s", filepath.Base(script), err, drvTail(stderr.Bytes()))
	}
	var rep struct {
		StartMs, EndMs float64 // Unix epoch, milliseconds with a fraction
		GapsUs         []float64
		Result         string
		IsError        bool
		Got            bool
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &rep); err != nil {
		return drvRun{}, fmt.Errorf("node %s printed no report (%w): %s", filepath.Base(script), err, drvTail(stdout.Bytes()))
	}
	r := drvRun{start: drvFromMs(rep.StartMs), end: drvFromMs(rep.EndMs)}
	r.wall = r.end.Sub(r.start)
	for _, us := range rep.GapsUs {
		r.gaps = append(r.gaps, time.Duration(us*float64(time.Microsecond)))
	}
	return r, drvCheckResult(rep.Got, rep.IsError, rep.Result)
}

func drvFromMs(ms float64) time.Time {
	return time.UnixMicro(int64(ms * 1000))
}

// drvEnviron is a minimal environment (PATH) with env laid over it.
func drvEnviron(env map[string]string) []string {
	out := claudetest.BaseEnv()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// drvTail is the last line or so of a process's output, for an error.
func drvTail(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 400 {
		b = append([]byte("…"), b[len(b)-400:]...)
	}
	if len(b) == 0 {
		return "(no output)"
	}
	return string(b)
}

// drvTraceGlances makes every glance the wall allows log, to the file
// trace (BENCH_GLANCE_TRACE), when the hook answered, when the command
// began and ended in the CLI's shell, and when PostToolUse came: the
// CLI's own share of a glance's gap is what lies outside the command.
func drvTraceGlances(hooks map[string][]claude.HookMatcher, trace string) map[string][]claude.HookMatcher {
	var mu sync.Mutex
	note := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(trace, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		fmt.Fprintf(f, "%s %.6f\n", what, float64(time.Now().UnixMicro())/1e6)
	}
	out := maps.Clone(hooks)
	out[claude.PreToolUse] = nil
	for _, m := range hooks[claude.PreToolUse] {
		w := m
		w.Hooks = nil
		for _, h := range m.Hooks {
			w.Hooks = append(w.Hooks, func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
				res, err := h(ctx, in)
				if err != nil || res == nil || res.HookSpecificOutput == nil || res.HookSpecificOutput.UpdatedInput == nil {
					return res, err
				}
				var input map[string]any
				if json.Unmarshal(res.HookSpecificOutput.UpdatedInput, &input) != nil {
					return res, err
				}
				cmd, _ := input["command"].(string)
				q := quote(trace)
				input["command"] = fmt.Sprintf(`printf 'start %%s\n' "$EPOCHREALTIME" >> %s; ( %s ); s=$?; printf 'end %%s\n' "$EPOCHREALTIME" >> %s; exit $s`, q, cmd, q)
				raw, _ := json.Marshal(input)
				res.HookSpecificOutput.UpdatedInput = raw
				note("allow")
				return res, err
			})
		}
		out[claude.PreToolUse] = append(out[claude.PreToolUse], w)
	}
	out[claude.PostToolUse] = append(slices.Clone(out[claude.PostToolUse]), claude.HookMatcher{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { note("post"); return nil, nil }}})
	return out
}
