package app

// The starter flow through the built binary: the real CLI, internal/demo's
// scripted model, a pty where a human types.

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/flowerrun/flower/claude"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

// workMarker opens the English work step's first prompt: every request of
// the coordinator's session holds it.
const workMarker = "Do as this brief says"

// starterServer plays internal/demo's English script for ws, with extra
// rules; a request of the coordinator's session is held while hold says so
// (until the client goes away).
func starterServer(t *testing.T, ws string, extra claudetest.Script, hold func(*claudetest.Request) bool) *claudetest.Server {
	t.Helper()
	script := demo.Script("en", ws)
	for k, v := range extra {
		script[k] = v
	}
	return claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.MaxTokens == 16 {
			return claudetest.Say("hi")
		}
		for hold != nil && r.HasText(workMarker) && hold(r) {
			select {
			case <-ctx.Done():
				return claudetest.Reply{Fault: &claudetest.Fault{Status: 500}}
			case <-time.After(20 * time.Millisecond):
			}
		}
		return script.Reply(r)
	})
}

// gate holds until opened.
type gate struct{ open chan struct{} }

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) held(*claudetest.Request) bool {
	select {
	case <-g.open:
		return false
	default:
		return true
	}
}

func hasRequest(srv *claudetest.Server, ok func(*claudetest.Request) bool) bool {
	for _, r := range srv.Requests() {
		if ok(r) {
			return true
		}
	}
	return false
}

func (p *ptyRun) screen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func TestGoRunsTheStarterFlowThenWakesAndStartsAnew(t *testing.T) {
	t.Parallel()
	// A short path: the banner and the closing line are width-limited.
	ws := shortTempDir(t)
	texts := demo.TextsFor("en")
	g := newGate()
	srv := starterServer(t, ws, claudetest.Script{
		"capital of France":   {claudetest.Say("ORACLE: Paris")},
		"fullwidth question":  {claudetest.Say("ORACLE: full width")},
		"a second hello tool": {claudetest.NewReply(claudetest.ToolUse("", "mcp__human__ask", map[string]any{"question": "Which one this time?", "options": []string{"a", "b"}})), claudetest.Say("## Goal\nx\n\n## Acceptance criteria\n- ls\n\n## Boundaries\nnone\n\n## Unknowns and assumptions\nnone")},
	}, g.held)
	env := binEnv(t, srv)
	p := startPTY(t, env, "-w", ws, "--lang", "en", "--rounds", "2", texts.Ask)
	p.expect(t, texts.Question)
	p.expect(t, "Your answer (Enter = skip")
	io.WriteString(p.tty, "1\r")
	waitFor(t, "the work step's request", func() bool {
		return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) })
	})
	io.WriteString(p.tty, "also write a README\r")
	p.expect(t, "+ Received (it sees this at its next inbox check")
	io.WriteString(p.tty, "? what is the capital of France\r")
	p.expect(t, "ORACLE: Paris")
	io.WriteString(p.tty, "？ and the fullwidth question\r")
	p.expect(t, "ORACLE: full width")
	close(g.open)
	if code := p.wait(t); code != 0 {
		t.Fatalf("flower: exit %d:\n%s", code, p.screen())
	}
	manifest := filepath.Join(ws, "runs", "manifest.json")
	for _, want := range []string{"+ hello", "== clarify ", "## Acceptance criteria", "== goal ", "## Checklist", "== work ",
		texts.Round1, "not yet", texts.Round2, "achieved", "- report: flower report ", " · manifest " + manifest} {
		if !strings.Contains(p.screen(), want) {
			t.Errorf("the screen lacks %q:\n%s", want, p.screen())
		}
	}
	if data, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || strings.TrimSpace(string(data)) != "hello" {
		t.Errorf("%s: %q %v", texts.File, data, err)
	}
	// The inbox line reached the coordinator (its inbox tool's result);
	// the side questions reached only the aside runtime.
	if !hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) && r.HasText("also write a README") }) {
		t.Error("the inbox line never reached the coordinator")
	}
	for _, q := range []string{"capital of France", "fullwidth question"} {
		asked := false
		for _, r := range srv.Requests() {
			if !r.HasText(q) {
				continue
			}
			asked = true
			for _, main := range []string{workMarker, "Judge this round", "into a goal that can be decided", texts.Ask} {
				if r.HasText(main) {
					t.Errorf("the side question %q is in a request of the run (%q)", q, main)
				}
			}
		}
		if !asked {
			t.Errorf("the oracle was never asked %q", q)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "runs", "aside", "manifest.json")); err != nil {
		t.Errorf("the aside runtime's manifest: %v", err)
	}

	// Again, with no --lang: the run directory's language. The goal was
	// achieved: the wake says what it would continue, and Enter would
	// start something new; /continue carries it on.
	setGoal := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r.HasText("into a goal that can be decided") {
				n++
			}
		}
		return n
	}
	goals := setGoal()
	p = startPTY(t, env, "-w", ws)
	p.expect(t, "<- last request: "+texts.Ask)
	p.expect(t, "   goal achieved · ended ")
	p.expect(t, " · round 2 of 2")
	p.expect(t, "The last goal was achieved. Enter = start something new; /continue = carry it on")
	p.expect(t, "> ")
	io.WriteString(p.tty, "/continue\r")
	p.expect(t, "<- continuing in ")
	p.expect(t, "brief confirmed · goal: 2 checks · work context ")
	if code := p.wait(t); code != 0 {
		t.Fatalf("the wake: exit %d:\n%s", code, p.screen())
	}
	if !strings.Contains(p.screen(), texts.Woken) {
		t.Errorf("the wake did not carry on the work:\n%s", p.screen())
	}
	// That wake re-derived the goal: the line typed in the first run was
	// appended to the brief after its goal was set. A second wake, with
	// nothing new at all, does not pay for the goal step again.
	goals = setGoal()
	// With nothing new, /continue says what it would rerun and what that
	// costs, and asks: no reruns the nothing, spends nothing.
	// (The start's reachability probe, 16 tokens, is not the rerun.)
	work := func() (n int) {
		for _, r := range srv.Requests() {
			if r.MaxTokens != 16 {
				n++
			}
		}
		return n
	}
	requests := work()
	// English at 160 columns (n), Chinese at 80 (Enter: the default).
	for _, c := range []struct {
		lang                  string
		cols                  uint16
		says, asks, no, ended string
	}{
		{"en", 160, "! Nothing new to carry it on with: /continue checks the goal again, runs a work round with its judge and writes the hand-over again, for about what the last run cost ($",
			"Run it anyway? [y/N]", "n", "Not rerun; nothing was done."},
		{"zh", 80, "! 没有新的话:/continue 会再核对一遍目标、跑一轮干活和它的判定、重写交接,大约花上次那么多($",
			"还是要跑吗?[y/N]", "", "没有重跑,什么也没做。"},
	} {
		p = startPTYCols(t, c.cols, env, "-w", ws, "--lang", c.lang)
		p.expect(t, "> ")
		io.WriteString(p.tty, "/continue\r")
		p.expectFlat(t, c.says)
		p.expect(t, c.asks)
		io.WriteString(p.tty, c.no+"\r")
		if code := p.wait(t); code != ExitFailure {
			t.Fatalf("declining the rerun (%s): exit %d, want %d:\n%s", c.lang, code, ExitFailure, p.screen())
		}
		p.expectFlat(t, c.ended)
		if n := work(); n != requests {
			t.Errorf("declining the rerun (%s) made %d requests to the model", c.lang, n-requests)
		}
	}
	p = startPTY(t, env, "-w", ws)
	p.expect(t, "The last goal was achieved.")
	p.expect(t, "> ")
	io.WriteString(p.tty, "/continue\r")
	p.expect(t, "Run it anyway? [y/N]")
	io.WriteString(p.tty, "y\r")
	p.expect(t, "<- continuing in ")
	if code := p.wait(t); code != 0 {
		t.Fatalf("the second wake: exit %d:\n%s", code, p.screen())
	}
	if n := setGoal(); n != goals {
		t.Errorf("a wake with nothing new set the goal again (%d requests, was %d)", n, goals)
	}

	// Enter after the achieved goal asks for something new and archives.
	p = startPTY(t, env, "-w", ws)
	p.expect(t, "The last goal was achieved.")
	p.expect(t, "> ")
	io.WriteString(p.tty, "\r")
	p.expect(t, "What should it do? One sentence is enough")
	io.WriteString(p.tty, "a second hello tool\r")
	p.expect(t, "Which one this time?")
	io.WriteString(p.tty, "2\r")
	if code := p.wait(t); code != 0 {
		t.Fatalf("Enter for something new: exit %d:\n%s", code, p.screen())
	}
	if strings.Contains(p.screen(), "<- continuing in") {
		t.Errorf("something new showed the wake banner:\n%s", p.screen())
	}
	old, _ := filepath.Glob(filepath.Join(ws, ".flower", "notes", "archive", "*", "brief.md"))
	if len(old) != 1 {
		t.Fatalf("archived briefs %q", old)
	}
	if data, _ := os.ReadFile(old[0]); !strings.Contains(string(data), "writes hello.txt saying hello") {
		t.Errorf("the archive holds another brief: %s", data)
	}

	// A request on the command line after an achieved goal starts anew
	// and says so; with --continue it is added to the last one.
	piped := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, flowerBin, append([]string{"-w", ws, "--timeout", "0"}, args...)...)
		cmd.Env, cmd.Dir = env, t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flower %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := piped("--continue", "also say hi")
	if !strings.Contains(out, "<- Continuing the last request with these words") || !strings.Contains(out, "<- continuing in ") {
		t.Errorf("--continue after an achieved goal:\n%s", out)
	}
	if archived, _ := filepath.Glob(filepath.Join(ws, ".flower", "notes", "archive", "*", "brief.md")); len(archived) != 1 {
		t.Errorf("--continue archived the brief: %q", archived)
	}
	out = piped(texts.Ask)
	if !strings.Contains(out, "! The last goal was achieved, so this starts something new") || strings.Contains(out, "<- continuing in ") {
		t.Errorf("new words after an achieved goal:\n%s", out)
	}
	if archived, _ := filepath.Glob(filepath.Join(ws, ".flower", "notes", "archive", "*", "brief.md")); len(archived) != 2 {
		t.Errorf("new words after an achieved goal did not archive the last brief: %q", archived)
	}
}

func TestCtrlCOnTheStarterFlow(t *testing.T) {
	t.Parallel()
	t.Run("once resumes with the typed words", func(t *testing.T) {
		ws := t.TempDir()
		words := "focus on the tests"
		srv := starterServer(t, ws, claudetest.Script{words: {claudetest.Say(demo.TextsFor("en").Round1)}},
			func(r *claudetest.Request) bool { return !r.HasText(words) })
		p := startPTY(t, binEnv(t, srv), "-w", ws, "--lang", "en", "--timeout", "0", "--rounds", "2", demo.TextsFor("en").Ask)
		waitFor(t, "the work step's request", func() bool {
			return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) })
		})
		p.cmd.Process.Signal(os.Interrupt)
		p.expect(t, "What do you want to say? (Enter = no words: it resumes at once")
		io.WriteString(p.tty, words+"\r")
		if code := p.wait(t); code != 0 {
			t.Fatalf("exit %d:\n%s", code, p.screen())
		}
		if !hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) && r.HasText(words) }) {
			t.Errorf("the coordinator's session did not resume with the words:\n%s", p.screen())
		}
		for _, line := range []string{"! The round is interrupted when you press Enter", "interrupted: resuming with your words"} {
			if n := strings.Count(p.screen(), line); n != 1 {
				t.Errorf("%q is said %d times, want once:\n%s", line, n, p.screen())
			}
		}
	})
	t.Run("twice quits with 130, lineage intact", func(t *testing.T) {
		ws := t.TempDir()
		srv := starterServer(t, ws, nil, func(*claudetest.Request) bool { return true })
		p := startPTY(t, binEnv(t, srv), "-w", ws, "--lang", "en", "--timeout", "0", demo.TextsFor("en").Ask)
		waitFor(t, "the work step's request", func() bool {
			return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) })
		})
		p.cmd.Process.Signal(os.Interrupt)
		p.expect(t, "What do you want to say?")
		p.cmd.Process.Signal(os.Interrupt)
		if code := p.wait(t); code != ExitInterrupted {
			t.Fatalf("exit %d, want %d:\n%s", code, ExitInterrupted, p.screen())
		}
		p.expect(t, "Quit. Run flower again in the same directory to continue.")
		if s := p.screen(); strings.Contains(s, "goroutine") || strings.Contains(s, "panic") {
			t.Errorf("a trace:\n%s", s)
		}
		var lin struct {
			Steps map[string]string `json:"steps"`
		}
		data, err := os.ReadFile(filepath.Join(ws, "runs", "lineage.json"))
		if err != nil || json.Unmarshal(data, &lin) != nil {
			t.Fatalf("lineage: %v %s", err, data)
		}
		// The goal's judge is Fresh: never remembered, so never resumed.
		if lin.Steps["goal"] != "" {
			t.Errorf("the lineage remembers the goal's judge: %s", data)
		}
		for _, step := range []string{"clarify", "work"} {
			if lin.Steps[step] == "" {
				t.Errorf("the lineage lost %s: %s", step, data)
			}
		}
		errs := manifestErrors(t, filepath.Join(ws, "runs", "manifest.json"))
		if len(errs) != 3 || errs[0] != "" || errs[1] != "" || errs[2] == "" {
			t.Errorf("manifest errors %q: clarify and goal ok, the work step rescued", errs)
		}
	})
}

func TestPipedStarterFlow(t *testing.T) {
	t.Parallel()
	t.Run("with --timeout 0 runs to the end, every question settled at once", func(t *testing.T) {
		ws := t.TempDir()
		srv := starterServer(t, ws, nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, flowerBin, "-w", ws, "--lang", "en", "--timeout", "0", "--rounds", "2")
		cmd.Env, cmd.Dir = binEnv(t, srv), t.TempDir()
		cmd.Stdin = strings.NewReader(demo.TextsFor("en").Ask + "\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{"! No answer", "== work ", "achieved", "- report: flower report "} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for _, not := range []string{"What should it do?", "Standard input is not a terminal"} {
			if strings.Contains(string(out), not) {
				t.Errorf("output has %q:\n%s", not, out)
			}
		}
	})
	t.Run("without --timeout 0 warns, and the end of input settles the questions", func(t *testing.T) {
		ws := t.TempDir()
		srv := starterServer(t, ws, nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, flowerBin, "-w", ws, "--lang", "en", "--no-goal")
		cmd.Env, cmd.Dir = binEnv(t, srv), t.TempDir()
		cmd.Stdin = strings.NewReader(demo.TextsFor("en").Ask + "\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{"Standard input is not a terminal", "--timeout 0", "The input is closed", "- report: flower report "} {
			if !strings.Contains(string(out), want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "== goal ") {
			t.Errorf("--no-goal ran the goal step:\n%s", out)
		}
	})
	t.Run("SIGTERM leaves a killed-by-signal row", func(t *testing.T) {
		ws := t.TempDir()
		srv := starterServer(t, ws, nil, func(*claudetest.Request) bool { return true })
		cmd := exec.Command(flowerBin, "-w", ws, "--lang", "en", "--timeout", "0", demo.TextsFor("en").Ask)
		cmd.Env, cmd.Dir = binEnv(t, srv), t.TempDir()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		waitFor(t, "the work step's request", func() bool {
			return hasRequest(srv, func(r *claudetest.Request) bool { return r.HasText(workMarker) })
		})
		cmd.Process.Signal(syscall.SIGTERM)
		st := waitExit(t, cmd)
		if w, ok := st.Sys().(syscall.WaitStatus); !ok || !w.Signaled() || w.Signal() != syscall.SIGTERM {
			t.Errorf("flower should die by SIGTERM, got %v:\n%s", st, out.String())
		}
		// Its CLIs died before it: none is left writing its files.
		if pids := processesWithEnv(envValue(cmd.Env, "HOME")); len(pids) > 0 {
			t.Errorf("CLI processes %v outlived flower's SIGTERM", pids)
		}
		errs := manifestErrors(t, filepath.Join(ws, "runs", "manifest.json"))
		if len(errs) != 3 || errs[2] != "killed-by-signal" {
			t.Errorf("manifest errors %q, want the work step killed-by-signal", errs)
		}
	})
}

func TestClarifyOnlyOnAClarifiedDirectorySaysSo(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	brief := filepath.Join(ws, ".flower", "notes", "brief.md")
	os.MkdirAll(filepath.Dir(brief), 0o755)
	os.WriteFile(brief, []byte("## Goal\nx\n\n## Acceptance criteria\n- ls\n\n## Boundaries\nnone\n\n## Unknowns and assumptions\nnone\n"), 0o644)
	srv := starterServer(t, ws, nil, nil)
	cmd := exec.Command(flowerBin, "-w", ws, "--lang", "en", "--clarify-only", "more words")
	cmd.Env, cmd.Dir = binEnv(t, srv), t.TempDir()
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != ExitFailure || !strings.Contains(string(out), "already clarified") || !strings.Contains(string(out), "--new") {
		t.Errorf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	if _, err := os.Stat(filepath.Join(ws, "runs", "lineage.json")); err == nil {
		t.Error("a refused --clarify-only still counted a wake")
	}
	if hasRequest(srv, func(r *claudetest.Request) bool { return r.MaxTokens != 16 }) {
		t.Error("a refused --clarify-only still ran a step")
	}
}

func TestDemoRunsEveryStageWithoutCredentials(t *testing.T) {
	t.Parallel()
	// A machine where flower installed its pinned CLI before: the CLI in
	// the user's cache, found with no FLOWER_CLAUDE and none on PATH.
	cache := t.TempDir()
	pinned := filepath.Join(cache, "flower", "claude-cli", claude.NewestTestedCLIVersion, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	os.MkdirAll(filepath.Dir(pinned), 0o755)
	if err := os.Symlink(claudetest.CLIPath(t), pinned); err != nil {
		t.Fatal(err)
	}
	inside := t.TempDir()
	// Off a terminal the simulated human answers, after its pause. With
	// no -w the demo makes a folder of its own in TMPDIR.
	tmp := t.TempDir()
	env := append(claudetest.BaseEnv(), "HOME="+t.TempDir(), "XDG_CACHE_HOME="+cache, "FLOWER_DEMO_PAUSE=1s", "TMPDIR="+tmp)
	// A hang guard: on CI's loaded machine the demo took 161 s (ci7) and
	// more than 180 s (ci9) for what takes 40 s alone.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBin, "demo", "--lang", "en")
	cmd.Env, cmd.Dir = env, inside
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flower demo: %v\n%s", err, out)
	}
	made, _ := filepath.Glob(filepath.Join(tmp, "flower-demo-*"))
	if len(made) != 1 {
		t.Fatalf("the demo's own folder: %v\n%s", made, out)
	}
	ws := made[0]
	texts := demo.TextsFor("en")
	// The folder the demo made is a git work tree: the ending lists the
	// file it wrote (it said the folder was not a git work tree).
	for _, want := range []string{"the model is simulated", texts.Question, "the simulated human answered hello", "== clarify ",
		"== goal ", "== work ", "> dispatch coder", texts.Round1, "not yet", texts.Round2, "achieved", "## Hand-over",
		"- report: flower report ", "Demo over", "- protection: glances in a bubblewrap sandbox",
		"1 new files (untracked):\n     " + texts.File} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "not a git work tree") {
		t.Errorf("the ending says the demo's own folder is not a git work tree:\n%s", out)
	}
	if strings.Contains(string(out), "Standard input is not a terminal") {
		t.Errorf("the demo warns that nobody answers:\n%s", out)
	}
	if data, err := os.ReadFile(filepath.Join(ws, texts.File)); err != nil || strings.TrimSpace(string(data)) != texts.Answer {
		t.Errorf("%s: %q %v", texts.File, data, err)
	}

	// Without a CLI anywhere, off a terminal, it says how to get one.
	missing := exec.Command(flowerBin, "demo")
	missing.Env, missing.Dir = append(claudetest.BaseEnv(), "HOME="+t.TempDir()), t.TempDir()
	out, _ = missing.CombinedOutput()
	if missing.ProcessState.ExitCode() != ExitFailure || !strings.Contains(string(out), "--yes") || !strings.Contains(string(out), "FLOWER_CLAUDE=") {
		t.Errorf("no CLI: exit %d %s", missing.ProcessState.ExitCode(), out)
	}
}

// envValue is k=v of env.
func envValue(env []string, k string) string {
	for _, kv := range env {
		if strings.HasPrefix(kv, k+"=") {
			return kv
		}
	}
	return ""
}

// processesWithEnv lists the processes whose environment holds kv.
func processesWithEnv(kv string) []int {
	return processesWhose("environ", func(env []byte) bool {
		return bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00"))
	})
}

// processesWhose lists the processes whose /proc/PID/file satisfies ok.
func processesWhose(file string, ok func([]byte) bool) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, file))
		if err != nil || !ok(data) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
