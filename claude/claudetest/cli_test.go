package claudetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cliRun is what one real CLI process printed.
type cliRun struct {
	lines   []map[string]any // stream-json stdout, one object a line
	result  map[string]any   // the last "result" line
	stderr  string
	elapsed time.Duration
	exitErr error // how the process ended, nil for exit 0
}

// The real-CLI tests run in parallel, so at most GOMAXPROCS CLI processes
// (about 200 MiB each) run at once; the retry test mostly waits on backoff.

// runCLI runs the real CLI in dir against srv with exactly BaseEnv plus Env,
// `-p prompt --output-format stream-json --verbose --permission-mode
// acceptEdits` and extra args, and fails the test unless it exits 0 with a
// result line.
func runCLI(t *testing.T, srv *Server, dir, prompt string, extra ...string) cliRun {
	t.Helper()
	run := runCLIExit(t, srv, dir, prompt, extra...)
	if run.exitErr != nil {
		t.Fatalf("claude: %v\nstderr: %s", run.exitErr, run.stderr)
	}
	return run
}

// runCLIExit is runCLI for a run that may exit non-zero (an error result):
// it fails the test only when no result line came, and records the exit.
func runCLIExit(t *testing.T, srv *Server, dir, prompt string, extra ...string) cliRun {
	t.Helper()
	cli := CLIPath(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	args := append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits"}, extra...)
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Dir = dir
	cmd.Env = BaseEnv()
	for k, v := range Env(t, srv) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	run := cliRun{stderr: stderr.String(), elapsed: time.Since(start)}
	t.Logf("claude %s: %v", strings.Join(args[:2], " "), run.elapsed.Round(time.Millisecond))
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			t.Errorf("stdout line is not JSON: %.300s", sc.Text())
			continue
		}
		run.lines = append(run.lines, m)
		if m["type"] == "result" {
			run.result = m
		}
	}
	run.exitErr = err
	if run.result == nil {
		t.Fatalf("claude: %v, no result line\nstderr: %s\nstdout: %.2000s", err, run.stderr, stdout.String())
	}
	return run
}

// initModel returns the model named by the system/init line.
func (r cliRun) initModel() string {
	for _, m := range r.lines {
		if m["type"] == "system" && m["subtype"] == "init" {
			s, _ := m["model"].(string)
			return s
		}
	}
	return ""
}

func TestCLIAnswersScriptedPrompt(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Script{"SCENARIO:hi": {Say("hello from the fake")}}.Handler())
	run := runCLI(t, srv, t.TempDir(), "SCENARIO:hi")

	if got := run.result["result"]; got != "hello from the fake" || run.result["is_error"] != false {
		t.Errorf("result = %v, is_error %v; want the scripted text", got, run.result["is_error"])
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d POSTs, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model == "" || r.Model != run.initModel() {
		t.Errorf("request model %q, init model %q", r.Model, run.initModel())
	}
	if r.LastUserText() != "SCENARIO:hi" || r.Turn() != 0 || !r.Stream || r.Subagent {
		t.Errorf("request: prompt %q turn %d stream %v subagent %v", r.LastUserText(), r.Turn(), r.Stream, r.Subagent)
	}
	if !slices.Contains(r.Tools, "Bash") || len(r.System) == 0 || r.Header.Get("x-api-key") != "sk-fake" {
		t.Errorf("request: tools %v, %d system blocks, x-api-key %q", r.Tools, len(r.System), r.Header.Get("x-api-key"))
	}
}

func TestCLIRunsScriptedBashTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := NewServer(t, Script{"SCENARIO:bash": {
		NewReply(Text("touching"), ToolUse("", "Bash", map[string]any{
			"command": "touch MARKER && echo touched", "description": "Create marker"})),
		Func(func(r *Request) Reply {
			res, _ := r.LastToolResult()
			return Say("saw: " + res.Content)
		}),
	}}.Handler())
	run := runCLI(t, srv, dir, "SCENARIO:bash please")

	if _, err := os.Stat(filepath.Join(dir, "MARKER")); err != nil {
		t.Errorf("the Bash tool did not run: %v", err)
	}
	if got := run.result["result"]; got != "saw: touched" {
		t.Errorf("result = %v, want %q", got, "saw: touched")
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d POSTs, want 2", len(reqs))
	}
	if res, ok := reqs[1].LastToolResult(); !ok || res.IsError || !strings.HasPrefix(res.ToolUseID, "toolu_fake_") || reqs[1].Turn() != 1 {
		t.Errorf("second request: tool result %+v (ok %v), turn %d", res, ok, reqs[1].Turn())
	}
}

func TestCLIRetriesOverloadedTwiceThenSucceeds(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Script{"SCENARIO:retry": {FailFirst(2, &Fault{Status: 529, RetryAfter: 100 * time.Millisecond}, Say("recovered"))}}.Handler())
	run := runCLI(t, srv, t.TempDir(), "SCENARIO:retry")

	if got := run.result["result"]; got != "recovered" || run.result["is_error"] != false {
		t.Errorf("result = %v, is_error %v; want recovered", got, run.result["is_error"])
	}
	if n := srv.Count(); n != 3 {
		t.Errorf("server saw %d POSTs, want 3 (two 529s, then success)", n)
	}
}

func TestCLIFallsBackToNonStreamingWhenStreamEndsEarly(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Script{"SCENARIO:cut": {FailFirst(1, &Fault{EndStreamEarly: true}, Say("whole"))}}.Handler())
	run := runCLI(t, srv, t.TempDir(), "SCENARIO:cut")

	if got := run.result["result"]; got != "whole" {
		t.Errorf("result = %v, want whole", got)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || reqs[1].Stream {
		t.Fatalf("want a streaming request then a non-streaming one; got %d requests", len(reqs))
	}
}

func TestCLISubagentRequestsAreMarked(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Script{
		"SCENARIO:agent": {
			NewReply(ToolUse("", "Agent", map[string]any{"description": "d", "prompt": "SUBAGENT: do it",
				"subagent_type": "tester", "run_in_background": false})),
			Func(func(r *Request) Reply {
				res, _ := r.LastToolResult()
				return Say("main got: " + res.Content)
			}),
		},
		"SUBAGENT:": {Say("sub done")},
	}.Handler())
	agents := `{"tester":{"description":"Runs checks","prompt":"You are the tester.","tools":["Bash"]}}`
	run := runCLI(t, srv, t.TempDir(), "SCENARIO:agent", "--agents", agents)

	var sub *Request
	for _, r := range srv.Requests() {
		if r.Subagent {
			sub = r
		} else if strings.Contains(r.LastUserText(), "SUBAGENT:") {
			t.Errorf("request with the subagent prompt not marked Subagent: system[0] %q", r.System[0])
		}
	}
	if sub == nil {
		t.Fatalf("no request with Subagent set among %d", srv.Count())
	}
	if sub.LastUserText() != "SUBAGENT: do it" || !slices.Equal(sub.Tools, []string{"Bash"}) {
		t.Errorf("subagent request: prompt %q tools %v", sub.LastUserText(), sub.Tools)
	}
	if got, _ := run.result["result"].(string); !strings.Contains(got, "sub done") {
		t.Errorf("result = %q, want the subagent's answer relayed", got)
	}
}

// fakeTB records Fatalf and Skipf instead of stopping the test.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }
func (f *fakeTB) Skipf(format string, args ...any)  { f.skip = fmt.Sprintf(format, args...) }

func TestCLIPathFailsInCIAndSkipsElsewhereWhenMissing(t *testing.T) {
	t.Setenv("FLOWER_CLAUDE", filepath.Join(t.TempDir(), "no-claude"))
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{TB: t}
		CLIPath(f)
		got := f.skip
		if ci != "" {
			got = f.fatal
		}
		if !strings.Contains(got, "tools/claude-cli/install.sh") || (ci != "") != (f.fatal != "") {
			t.Errorf("CI=%q: fatal %q, skip %q", ci, f.fatal, f.skip)
		}
	}
}

func TestCLIPathPrefersFlowerClaude(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FLOWER_CLAUDE", exe)
	t.Setenv("FLOWER_CLAUDE_VERSION", "")
	if got := CLIPath(t); got != exe {
		t.Errorf("CLIPath = %q, want %q", got, exe)
	}
}

// TestCLIPathChecksTheWantedVersion: with FLOWER_CLAUDE_VERSION set, a
// binary reporting another version (or none) fails the test, naming both
// versions; the right one passes.
func TestCLIPathChecksTheWantedVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(name, script string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := write("old", "echo '2.1.300 (Claude Code)'\n")
	right := write("right", "echo '2.1.310 (Claude Code)'\n")
	broken := write("broken", "exit 3\n")
	t.Setenv("FLOWER_CLAUDE_VERSION", "2.1.310")
	for _, c := range []struct {
		cli  string
		want []string // in the failure; nil for none
	}{
		{old, []string{`version "2.1.300"`, "wants 2.1.310", old}},
		{broken, []string{"FLOWER_CLAUDE_VERSION=2.1.310", "--version failed"}},
		{right, nil},
	} {
		t.Setenv("FLOWER_CLAUDE", c.cli)
		f := &fakeTB{TB: t}
		if got := CLIPath(f); got != c.cli {
			t.Errorf("CLIPath = %q, want %q", got, c.cli)
		}
		if (f.fatal != "") != (c.want != nil) {
			t.Errorf("%s: failure %q, want one: %v", c.cli, f.fatal, c.want != nil)
		}
		for _, w := range c.want {
			if !strings.Contains(f.fatal, w) {
				t.Errorf("%s: failure %q does not say %q", c.cli, f.fatal, w)
			}
		}
	}
}

func TestEnvIsHermeticAndBlanksLeakyVariables(t *testing.T) {
	srv := NewServer(t, nil)
	a, b := Env(t, srv), Env(t, srv)
	if a["HOME"] == b["HOME"] || a["HOME"] == a["CLAUDE_CODE_TMPDIR"] {
		t.Errorf("HOME and CLAUDE_CODE_TMPDIR not fresh: %q %q %q", a["HOME"], b["HOME"], a["CLAUDE_CODE_TMPDIR"])
	}
	for _, k := range []string{"HOME", "CLAUDE_CODE_TMPDIR"} {
		if fi, err := os.Stat(a[k]); err != nil || !fi.IsDir() {
			t.Errorf("%s=%q is not a directory", k, a[k])
		}
	}
	want := map[string]string{
		"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "sk-fake",
		"CLAUDE_CONFIG_DIR":                        filepath.Join(a["HOME"], ".claude"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
		"DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
		"ANTHROPIC_AUTH_TOKEN": "", "ANTHROPIC_MODEL": "", "CLAUDECODE": "", "HTTPS_PROXY": "",
	}
	for k, v := range want {
		if got, ok := a[k]; !ok || got != v {
			t.Errorf("%s = %q (set %v), want %q", k, got, ok, v)
		}
	}
}
