package main

// glance: what the sandbox costs a coordinator's glance. The same glances
// run as the CLI's shell would run them, three ways, interleaved: bare
// bash, bounded by the timeout program only (the wall without a sandbox),
// and the wall's own command (bubblewrap and timeout), taken from the
// wall's hook answer as the CLI gets it.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/guard/jail"
)

func init() {
	register(benchmark{
		name:  "glance",
		about: "the glance sandbox's cost: git status, ls -la, grep -rn bare, bounded, under bubblewrap alone, with the jail, and as the wall runs them",
		run: func(ctx context.Context) error {
			reps, err := envCount("BENCH_REPS", 20)
			if err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "flower-bench-glance-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			_, err = glanceBench(ctx, glanceConfig{Reps: reps, Dir: dir, Out: os.Stdout})
			return err
		},
	})
}

type glanceConfig struct {
	Reps int
	Dir  string // a folder to make the workspace in
	Out  io.Writer
}

// glanceCommands are the glances measured.
var glanceCommands = []string{"git status", "ls -la", "grep -rn flower ."}

// glanceVariant turns a glance into the command line the CLI's shell runs.
type glanceVariant struct {
	name string
	line func(cmd string) (string, error)
}

// glanceFigures are one glance's times per variant, in variant order.
type glanceFigures struct {
	Glance string
	Times  [][]time.Duration
}

func glanceBench(ctx context.Context, cfg glanceConfig) ([]glanceFigures, error) {
	sb := guard.DetectSandbox()
	if !sb.Active() {
		return nil, fmt.Errorf("no glance sandbox to measure: %s (fix: %s)", sb.Problem, sb.Fix)
	}
	ws := filepath.Join(cfg.Dir, "ws")
	if err := glanceWorkspace(ctx, ws); err != nil {
		return nil, err
	}
	timeout, err := exec.LookPath("timeout")
	if err != nil {
		return nil, fmt.Errorf("the bounded variant needs coreutils timeout: %w", err)
	}
	wall := guard.Wall{Glance: true, Delegate: true, Roots: []string{ws}}.Matcher()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// The parts of the sandbox, each added to the one before: bubblewrap
	// around bash with the wall's mounts and namespaces, then flower's
	// jail (this executable) between them, then the wall's whole command
	// (the hidden files found by the shell, timeout, env).
	bwrap := fmt.Sprintf("%s --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent --new-session --clearenv --cap-drop ALL --tmpfs /tmp --tmpfs /run --ro-bind %s %s --ro-bind %s %s --chdir %s --",
		quote(sb.Program), quote(ws), quote(ws), quote(self), quote(self), quote(ws))
	variants := []glanceVariant{
		{"bare bash", func(cmd string) (string, error) { return cmd, nil }},
		{"bounded (no sandbox)", func(cmd string) (string, error) {
			return fmt.Sprintf("%s -k 5 30 bash -c %s", timeout, quote(cmd)), nil
		}},
		{"bubblewrap alone", func(cmd string) (string, error) { return fmt.Sprintf("%s bash -c %s", bwrap, quote(cmd)), nil }},
		{"bubblewrap + jail", func(cmd string) (string, error) {
			return fmt.Sprintf("%s %s %s /bin/bash -c %s", bwrap, quote(self), jail.Arg, quote(cmd)), nil
		}},
		{"sandboxed (the wall's command)", func(cmd string) (string, error) { return wallCommand(ctx, wall, cmd, ws) }},
	}
	var out []glanceFigures
	for _, g := range glanceCommands {
		f := glanceFigures{Glance: g, Times: make([][]time.Duration, len(variants))}
		for rep := range cfg.Reps {
			for _, i := range drvRotate([]int{0, 1, 2, 3, 4}, rep) {
				line, err := variants[i].line(g)
				if err != nil {
					return nil, err
				}
				start := time.Now()
				c := exec.CommandContext(ctx, "bash", "-c", line)
				c.Dir = ws
				if b, err := c.CombinedOutput(); err != nil {
					return nil, fmt.Errorf("%s, %s: %w\n%s", g, variants[i].name, err, b)
				}
				f.Times[i] = append(f.Times[i], time.Since(start))
			}
		}
		out = append(out, f)
	}
	rows := [][]string{{"glance", "bare bash", "bounded", "bubblewrap alone", "+ jail", "sandboxed", "sandbox ÷ bare", "sandbox cost: bwrap + jail + wrapper (medians)"}}
	for _, f := range out {
		bare, bounded, bw, jailed, boxed := drvSpreadOf(f.Times[0]), drvSpreadOf(f.Times[1]), drvSpreadOf(f.Times[2]), drvSpreadOf(f.Times[3]), drvSpreadOf(f.Times[4])
		rows = append(rows, []string{f.Glance, bare.String(), bounded.String(), bw.String(), jailed.String(), boxed.String(),
			fmt.Sprintf("%.2f×", float64(boxed.med)/float64(bare.med)),
			fmt.Sprintf("+%s = %s + %s + %s", drvDur(boxed.med-bare.med), drvDur(bw.med-bare.med), drvDur(jailed.med-bw.med), drvDur(boxed.med-jailed.med))})
	}
	fmt.Fprintf(cfg.Out, "%d repetitions each, interleaved; median [min … max] per glance\n%s", cfg.Reps, drvTable(rows))
	return out, nil
}

// wallCommand is the command the wall hands the CLI for a glance.
func wallCommand(ctx context.Context, wall claude.HookMatcher, cmd, cwd string) (string, error) {
	input, _ := json.Marshal(map[string]any{"command": cmd})
	res, err := wall.Hooks[0](ctx, &claude.HookInput{ToolName: "Bash", ToolInput: input, Cwd: cwd})
	if err != nil || res == nil || res.HookSpecificOutput == nil || res.HookSpecificOutput.PermissionDecision != claude.DecisionAllow {
		return "", fmt.Errorf("the wall did not allow %q: %v", cmd, err)
	}
	var got struct{ Command string }
	if err := json.Unmarshal(res.HookSpecificOutput.UpdatedInput, &got); err != nil {
		return "", err
	}
	return got.Command, nil
}

// glanceWorkspace is a small git repository: 200 files in 20 folders.
func glanceWorkspace(ctx context.Context, ws string) error {
	for d := range 20 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for f := range 10 {
			body := fmt.Sprintf("package pkg%02d\n\n// flower file %d\nfunc F%d() int { return %d }\n", d, f, f, f)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(body), 0o644); err != nil {
				return err
			}
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init"}} {
		c := exec.CommandContext(ctx, "git", args...)
		c.Dir = ws
		if b, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, b)
		}
	}
	return nil
}

func quote(s string) string {
	out := "'"
	for _, r := range s {
		if r == '\'' {
			out += `'\''`
		} else {
			out += string(r)
		}
	}
	return out + "'"
}
