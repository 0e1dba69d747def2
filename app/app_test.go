package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/pgtest"
)

// flowerBin is the command, built once for the tests that run it as a
// process.
var flowerBin, ownflowBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "flower-bin-")
	if err != nil {
		panic(err)
	}
	flowerBin, ownflowBin = filepath.Join(dir, "flower"), filepath.Join(dir, "ownflow")
	for bin, pkg := range map[string]string{flowerBin: "cmd/flower", ownflowBin: "examples/ownflow"} {
		build := exec.Command("go", "build", "-o", bin, "github.com/flowerrun/flower/"+pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			os.RemoveAll(dir)
			panic("building " + pkg + ": " + err.Error())
		}
	}
	// The binary is on PATH, as `go install` puts it for a person: its
	// hints say `flower …`. TestHintsNameTheCommandThatWasRun runs it from
	// elsewhere.
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// An in-process Command is that flower too: its hints say flower, not
	// the test binary's path.
	invokedOnce.Do(func() {})
	code := 0
	func() {
		defer os.RemoveAll(dir)
		if err := goleak.Find(); err != nil {
			panic(err)
		}
		code = pgtest.Run(m)
		if code == 0 {
			if err := goleak.Find(); err != nil {
				os.Stderr.WriteString("goleak: " + err.Error() + "\n")
				code = 1
			}
		}
	}()
	os.Exit(code)
}

// runCmd runs the Command in-process with stdin text.
func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	m := &Command{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb}
	code = m.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func TestRewriteInsertsGoUnlessASubcommandComesFirst(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", "go"},
		{"build X", "go build X"},
		{"-w /p build", "go -w /p build"},
		{"-w /p setup", "setup -w /p"},
		{"setup", "setup"},
		{"-v once hi", "once -v hi"},
		{"--workspace=/p reply yes", "reply --workspace=/p yes"},
		{"--rounds 2 x", "go --rounds 2 x"},
		{"go run", "go run"},
		{"run", "run"},
		{"--help", "help"},
		{"-w /p -h", "help -w /p"},
		{"--version", "version"},
		{"-v", "version"},
		{"-v hi", "go -v hi"},
		{"-w /p -V", "version -w /p"},
		{"verison", "go verison"},
		{"once --help", "once --help"},
	} {
		got := strings.Join(rewrite(strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("rewrite(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestGoFlagsHaveTheirSemantics(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	m := &Command{Stdout: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
	cfg, err := m.parseGo([]string{"-w", ws, "build", "X", "--asks", "2", "--rounds=5", "--no-goal", "--judge-can-run", "--check-network",
		"--timeout", "0", "--isolate", "--window", "200000", "--no-handoff", "--new", "--clarify-only", "--no-trim",
		"--lang", "en", "--budget", "$12.5", "--notify", "true", "--no-bequest", "-v"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Request: "build X", Workspace: ws, RunDir: filepath.Join(ws, "runs"), Verbose: true, Lang: "en",
		MaxAsks: 2, Rounds: 5, NoGoal: true, JudgeCanRun: true, CheckNetwork: true, AskTimeout: 0, Isolate: true, Window: 200000,
		NoHandoff: true, New: true, ClarifyOnly: true, Trim: false, BudgetUSD: 12.5, Notify: "true", NoBequest: true}
	if cfg != want {
		t.Errorf("parsed\n %+v\nwant\n %+v", cfg, want)
	}
	cfg, err = m.parseGo([]string{"-w", ws}, false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxAsks != -1 || cfg.Rounds != 3 || cfg.AskTimeout != human.DefaultTimeout || !cfg.Trim || cfg.Request != "" {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, _ = m.parseGo([]string{"-w", ws, "--timeout", "forever", "-r", "rel"}, false)
	cwd, _ := os.Getwd()
	if cfg.AskTimeout != human.Forever || cfg.RunDir != filepath.Join(cwd, "rel") {
		t.Errorf("--timeout forever / relative -r: %+v", cfg)
	}
	m.Getenv = func(k string) string {
		if k == NotifyEnv {
			return "notify-send hi"
		}
		return ""
	}
	if cfg, _ = m.parseGo([]string{"-w", ws}, false); cfg.Notify != "notify-send hi" {
		t.Errorf("FLOWER_NOTIFY not read: %q", cfg.Notify)
	}
}

func TestBadInputSaysTheFixWithItsExitCode(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--window", "-1", "x"}, ExitUsage, "--window -1"},
		{[]string{"--window", "0", "x"}, ExitUsage, "above 0"},
		{[]string{"--rounds", "0", "x"}, ExitUsage, "at least 1"},
		{[]string{"--asks", "-2", "x"}, ExitUsage, "-1 (unlimited"},
		{[]string{"--timeout", "-3", "x"}, ExitUsage, "forever"},
		{[]string{"--timeout", "soon", "x"}, ExitUsage, "not a number"},
		{[]string{"--budget", "-1", "x"}, ExitUsage, "negative"},
		{[]string{"--round", "2", "x"}, ExitUsage, "did you mean --rounds"},
		{[]string{"--lang", "fr", "x"}, ExitUsage, "--lang en"},
		{[]string{"-W", "x"}, ExitUsage, "drop -W"},
		{[]string{"-T", "--no-trim", "x"}, ExitUsage, "give one"},
		{[]string{"--new", "--continue", "x"}, ExitUsage, "give one of them"},
		{[]string{"--isolate", "x"}, ExitFailure, "git init"},
		{[]string{"--lang", "zh", "   "}, ExitFailure, "诉求是空的"},
		{[]string{"--lang", "en", " \t "}, ExitFailure, "The request is empty"},
		{[]string{"once", "-p", "yolo", "hi"}, ExitUsage, "acceptEdits"},
		{[]string{"once", "  "}, ExitUsage, "needs a prompt"},
		{[]string{"once", "--fork", "hi"}, ExitUsage, "--resume"},
		{[]string{"reply"}, ExitUsage, "needs the words"},
		{[]string{"setup", "extra"}, ExitUsage, "no arguments"},
		{[]string{"demo", "build X"}, ExitUsage, "takes no request"},
		{[]string{"report"}, ExitFailure, "no such run directory"},
		{[]string{"report", "--pdf"}, ExitUsage, "pdf"},
		{[]string{"run"}, ExitUsage, "app.Main"},
	} {
		code, _, stderr := runCmd(t, "", append([]string{"-w", ws}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr, c.code, c.says)
		}
		if strings.Count(stderr, "\n") > 12 || strings.Contains(stderr, "goroutine") {
			t.Errorf("%q: a usage error is a message, not a dump: %q", c.args, stderr)
		}
	}
}

func TestHelpTeachesExamplesExitCodesAndFiles(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"go", "--help"}, {"-h"}} {
		code, out, _ := runCmd(t, "", args...)
		for _, want := range []string{"Examples:", "Exit codes of a run:", "130", "-W, --workbench", "--lang"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%q: exit %d, help lacks %q", args, code, want)
			}
		}
	}
	if _, out, _ := runCmd(t, "", "go", "--help"); !strings.Contains(out, "Files written:") {
		t.Errorf("go --help does not say which files a run writes")
	}
	_, out, _ := runCmd(t, "", "go", "--help")
	for _, f := range []string{"--asks", "--rounds", "--no-goal", "--judge-can-run", "--check-network", "--timeout", "--isolate", "--window",
		"--no-handoff", "--new", "--clarify-only", "--no-trim", "--budget", "--notify", "notify-send", "ntfy", "--no-bequest"} {
		if !strings.Contains(out, f) {
			t.Errorf("go --help lacks %s", f)
		}
	}
	_, out, _ = runCmd(t, "", "once", "-h")
	for _, f := range []string{"--instructions", "--tools", "--permission-mode", "--budget", "--resume", "--fork"} {
		if !strings.Contains(out, f) {
			t.Errorf("once --help lacks %s", f)
		}
	}
}

// TestMissingCredentialsWithoutATerminalSaysWhatToSet runs the binary with
// stdin from /dev/null and no key anywhere.
func TestMissingCredentialsWithoutATerminalSaysWhatToSet(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, args := range [][]string{{"build X"}, {"once", "hi"}, {"--lang", "en", "once", "hi"}} {
		cmd := exec.Command(flowerBin, append([]string{"-w", t.TempDir()}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, "cfg"), "FLOWER_CLAUDE=" + stubCLI(t)}
		cmd.Dir = t.TempDir()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitFailure {
			t.Fatalf("%q: %v, want exit 1", args, err)
		}
		want := "ANTHROPIC_API_KEY"
		path := filepath.Join(home, "cfg", "flower", ".env")
		if !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), "flower setup") || !strings.Contains(stderr.String(), path) {
			t.Errorf("%q: stderr %q lacks what to set and where", args, stderr.String())
		}
	}
}

func TestAProgramGetsTheParsedCommandLine(t *testing.T) {
	m := &Command{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	called := false
	stop := errors.New("the program stops here")
	m.Program = func(ctx context.Context, cfg Config, ui *UI) (*flower.Workflow, error) {
		called = cfg.Request == "build X" && cfg.Rounds == 2 && !cfg.Trim
		return nil, stop
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-x")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1") // the probe fails as a network problem: run anyway
	t.Setenv("FLOWER_CLAUDE", stubCLI(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if code := m.Run(ctx, []string{"-w", t.TempDir(), "build X", "--rounds", "2"}); code != ExitFailure || !called {
		t.Errorf("the program: exit %d, called with the parsed flags and run's trim default: %v", code, called)
	}
}

func TestStarterOptionsFromTheFlags(t *testing.T) {
	t.Parallel()
	n := 2
	for _, c := range []struct {
		cfg  Config
		want flower.StarterOptions
	}{
		{Config{MaxAsks: -1, AskTimeout: 0, Rounds: 3}, flower.StarterOptions{Timeout: -1, Rounds: 3}},
		{Config{MaxAsks: 2, AskTimeout: human.Forever, Rounds: 1, NoGoal: true, JudgeCanRun: true, Isolate: true, New: true,
			ClarifyOnly: true, NoBequest: true, Lang: "en", Workspace: "/w", RunDir: "/r"},
			flower.StarterOptions{MaxAsks: &n, Timeout: human.Forever, Rounds: 1, NoGoal: true, JudgeCanRun: true, Isolate: true,
				New: true, ClarifyOnly: true, NoBequest: true, Lang: "en", Workspace: "/w", RunDir: "/r"}},
		{Config{MaxAsks: 0, AskTimeout: 90 * time.Second}, flower.StarterOptions{Timeout: 90 * time.Second}},
	} {
		got := c.cfg.StarterOptions()
		gotAsks, wantAsks := -1, -1
		if got.MaxAsks != nil {
			gotAsks = *got.MaxAsks
		}
		if c.want.MaxAsks != nil {
			wantAsks = *c.want.MaxAsks
		} else if c.cfg.MaxAsks == 0 {
			wantAsks = 0
		}
		got.MaxAsks, c.want.MaxAsks = nil, nil
		if gotAsks != wantAsks || got != c.want {
			t.Errorf("%+v:\n got %+v (asks %d)\nwant %+v (asks %d)", c.cfg, got, gotAsks, c.want, wantAsks)
		}
	}
}

// stubCLI is an executable that reports the pinned CLI version and does
// nothing else: enough for the command's CLI lookup, for tests that stop
// before a session starts.
func stubCLI(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+claude.NewestTestedCLIVersion+" (Claude Code)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
