package app

// Tests through the built binary, the pinned real CLI and claudetest's fake
// Messages API (a pty where a terminal is needed).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/human"
)

// binEnv is a hermetic environment for the binary against srv.
func binEnv(t *testing.T, srv *claudetest.Server, extra ...string) []string {
	env := claudetest.BaseEnv()
	for k, v := range claudetest.Env(t, srv) {
		env = append(env, k+"="+v)
	}
	// The tests were written against the Chinese screens; a test of the
	// English ones passes LANG=en_US.UTF-8 in extra (the last value wins).
	env = append(env, "FLOWER_CLAUDE="+claudetest.CLIPath(t), "XDG_CONFIG_HOME="+t.TempDir(), human.StateDirEnv+"="+t.TempDir(), "LANG=zh_CN.UTF-8")
	return append(env, extra...)
}

func TestOnceRunsOneStepOfTheRealCLIThroughTheBinary(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Say("the answer is 42 \x1b]0;owned\x07\x1b[2J done")
	})
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, flowerBin, "-w", ws, "once", "-t", "Read", "what is the answer?")
	cmd.Env = binEnv(t, srv)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("flower once: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "the answer is 42") || !strings.Contains(out, "+ 完成") || !strings.Contains(out, "累计 $") {
		t.Errorf("once's screen:\n%s", out)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("an escape of the model reached the output: %q", out)
	}
	var rows []map[string]any
	data, err := os.ReadFile(filepath.Join(ws, "runs", "manifest.json"))
	if err != nil {
		t.Fatalf("the run dir defaults to <workspace>/runs: %v", err)
	}
	if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 || rows[0]["step"] != "ad-hoc" || rows[0]["ok"] != true {
		t.Errorf("manifest: %s", data)
	}
	probes, asked := 0, false
	for _, r := range srv.Requests() {
		if r.MaxTokens == 16 && r.LastUserText() == "hi" {
			probes++
		}
		asked = asked || r.HasText("what is the answer?")
	}
	if probes != 1 || !asked {
		t.Errorf("want one probe and the prompt at the fake API: probes %d, asked %v", probes, asked)
	}
}

// pty runs the binary on a terminal and lets the test type into it.
type ptyRun struct {
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func startPTY(t *testing.T, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYBin(t, flowerBin, env, args...)
}

func startPTYBin(t *testing.T, bin string, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYSize(t, bin, env, &pty.Winsize{Rows: 40, Cols: 120}, args...)
}

// shortTempDir is a workspace with a short path, removed at the end: the
// screen's banners and closing lines carry it, and a long t.TempDir()
// path would wrap them.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startPTYSize is startPTYBin on a terminal of the given size.
func startPTYSize(t *testing.T, bin string, env []string, size *pty.Winsize, args ...string) *ptyRun {
	t.Helper()
	return startPTYIn(t, bin, t.TempDir(), env, size, args...)
}

// startPTYCols is the flower binary on a terminal cols wide.
func startPTYCols(t *testing.T, cols uint16, env []string, args ...string) *ptyRun {
	t.Helper()
	return startPTYSize(t, flowerBin, env, &pty.Winsize{Rows: 50, Cols: cols}, args...)
}

// startPTYIn is bin started in dir on a terminal of the given size.
func startPTYIn(t *testing.T, bin, dir string, env []string, size *pty.Winsize, args ...string) *ptyRun {
	t.Helper()
	return startCmdPTYWinsize(t, exec.Command(bin, args...), dir, env, size)
}

// startCmdPTY runs cmd in dir under a 120-column pty.
func startCmdPTY(t *testing.T, cmd *exec.Cmd, dir string, env []string) *ptyRun {
	t.Helper()
	return startCmdPTYWinsize(t, cmd, dir, env, &pty.Winsize{Rows: 40, Cols: 120})
}

// startCmdPTYWinsize runs cmd in dir on a terminal of the given size:
// every pty test's one way to start a command.
func startCmdPTYWinsize(t *testing.T, cmd *exec.Cmd, dir string, env []string, size *pty.Winsize) *ptyRun {
	t.Helper()
	cmd.Env, cmd.Dir = env, dir
	tty, err := pty.StartWithSize(cmd, size)
	if err != nil {
		t.Fatal(err)
	}
	p := &ptyRun{cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		r := bufio.NewReader(tty)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		stopAll(cmd)
		tty.Close()
		<-p.done
	})
	return p
}

// stopAll kills cmd's process group and every process that shares its
// HOME or XDG_CONFIG_HOME (its CLIs, in groups of their own), and waits
// until they are gone: a CLI still writing into a test's HOME failed the
// removal of its temporary folder ("directory not empty") on a loaded
// machine.
func stopAll(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
	var marks []string
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME"} {
		// Only a test's own folder: a HOME shared with the machine would
		// name every process of it.
		if kv := envValue(cmd.Env, k); strings.HasPrefix(kv, k+"="+os.TempDir()+string(os.PathSeparator)) {
			marks = append(marks, kv)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var left []int
		for _, kv := range marks {
			for _, pid := range processesWithEnv(kv) {
				if b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); pid != os.Getpid() && !bytes.Contains(b, []byte(") Z ")) {
					left = append(left, pid)
				}
			}
		}
		if len(left) == 0 {
			return
		}
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// expect waits until the output holds s.
func (p *ptyRun) expect(t *testing.T, s string) {
	t.Helper()
	p.expectWithin(t, s, 3*time.Minute) // a loaded machine starts a CLI slowly
}

// expectWithin waits at most limit until the output holds s.
func (p *ptyRun) expectWithin(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(p.screen(), s) {
			return
		}
	}
	t.Fatalf("never saw %q in:\n%s", s, p.screen())
}

// wait returns flower's exit code once it has exited and its last output
// is read: the reader may still hold bytes the process wrote just before
// it exited (its closing line).
func (p *ptyRun) wait(t *testing.T) int {
	t.Helper()
	// A whole flow's rest (judges, a round, the hand-over) on a loaded
	// machine; the bound only stops a hang.
	return p.exitWithin(t, 3*time.Minute)
}

// exitWithin is wait bounded by limit, showing the screen when flower
// never exits.
func (p *ptyRun) exitWithin(t *testing.T, limit time.Duration) int {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- p.cmd.Wait() }()
	select {
	case err := <-errc:
		select {
		case <-p.done: // the terminal's last reader saw its end
		case <-time.After(10 * time.Second): // a grandchild holds it
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		t.Fatalf("flower did not exit:\n%s", p.screen())
	}
	return -1
}

func TestSetupWritesTheEnvFile0600AfterOneProbe(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply { return claudetest.Say("hi") })
	cfg := t.TempDir()
	// The person's own lines in the file stay; the old credentials and
	// the old header (a Chinese one here) go.
	mine := []string{"# my CLI", "FLOWER_CLAUDE=/opt/claude/bin/claude", `FLOWER_NOTIFY="notify-send 'flower'"`}
	writeFile(t, filepath.Join(cfg, "flower", ".env"), text("zh", "envHeader")+"\nANTHROPIC_API_KEY=sk-ant-old\n"+strings.Join(mine, "\n")+"\n\n", 0o600)
	env := append(claudetest.BaseEnv(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+cfg)
	p := startPTY(t, env, "--lang", "en", "setup")
	p.expect(t, "1. Your API key")
	io.WriteString(p.tty, "gw-token-123\r")
	p.expect(t, "2. Gateway address")
	io.WriteString(p.tty, srv.URL+"\r")
	p.expect(t, "3. Model name")
	io.WriteString(p.tty, "claude-test-model\r")
	if code := p.wait(t); code != 0 {
		t.Fatalf("setup exit %d:\n%s", code, p.out.String())
	}
	path := filepath.Join(cfg, "flower", ".env")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v, mode %v", path, err, fi)
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"ANTHROPIC_AUTH_TOKEN=gw-token-123", "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_MODEL=claude-test-model",
		"ANTHROPIC_DEFAULT_SONNET_MODEL=claude-test-model", "# flower credentials", strings.Join(mine, "\n") + "\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf(".env lacks %q:\n%s", want, data)
		}
	}
	for _, gone := range []string{"sk-ant-old", text("zh", "envHeader"), "\n\n"} {
		if strings.Contains(string(data), gone) {
			t.Errorf(".env still has %q:\n%s", gone, data)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer gw-token-123" || reqs[0].Model != "claude-test-model" || reqs[0].MaxTokens != 16 {
		t.Errorf("want exactly one probe with the token and model, got %d requests", len(reqs))
	}
}

func TestSetupRejectedCredentialsKeepTheOldFile(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Fault: &claudetest.Fault{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"}}
	})
	cfg := t.TempDir()
	path := filepath.Join(cfg, "flower", ".env")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("ANTHROPIC_API_KEY=sk-ant-old\n"), 0o600)
	env := append(claudetest.BaseEnv(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+cfg)
	p := startPTY(t, env, "--lang", "en", "setup")
	p.expect(t, "Reconfiguring.")
	p.expect(t, "1. Your API key")
	io.WriteString(p.tty, "sk-ant-wrong\r")
	p.expect(t, "2. Gateway address")
	io.WriteString(p.tty, srv.URL+"\r")
	p.expect(t, "3. Model name")
	io.WriteString(p.tty, "\r")
	if code := p.wait(t); code != ExitFailure {
		t.Fatalf("rejected setup: exit %d", code)
	}
	p.expect(t, "Credentials rejected: 401")
	p.expect(t, "nothing was written")
	if data, _ := os.ReadFile(path); string(data) != "ANTHROPIC_API_KEY=sk-ant-old\n" {
		t.Errorf("the old file changed: %q", data)
	}
	if n := srv.Count(); n != 1 {
		t.Errorf("%d probe requests, want 1", n)
	}
}

// startSlowOnce starts `flower once` against a model that never answers
// the step (only the probe), and waits until the step's request arrived.
func startSlowOnce(t *testing.T) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.MaxTokens == 16 {
			return claudetest.Say("hi")
		}
		return claudetest.Reply{Fault: &claudetest.Fault{Delay: 2 * time.Minute}}
	})
	ws := t.TempDir()
	cmd := exec.Command(flowerBin, "-w", ws, "once", "think for a long time")
	cmd.Env = binEnv(t, srv)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(5 * time.Minute)
	for srv.Count() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the step's request never arrived")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd, filepath.Join(ws, "runs", "manifest.json"), &stderr
}

func waitExit(t *testing.T, cmd *exec.Cmd) *os.ProcessState {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case <-errc:
	case <-time.After(3 * time.Minute):
		t.Fatal("flower did not exit")
	}
	return cmd.ProcessState
}

func manifestErrors(t *testing.T, path string) []string {
	t.Helper()
	var rows []struct {
		Step  string  `json:"step"`
		Error *string `json:"error"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("manifest %s: %v", data, err)
	}
	var out []string
	for _, r := range rows {
		if r.Error != nil {
			out = append(out, *r.Error)
		} else {
			out = append(out, "")
		}
	}
	return out
}

func TestSIGTERMLeavesAKilledBySignalRowAndDiesByTheSignal(t *testing.T) {
	t.Parallel()
	cmd, manifest, _ := startSlowOnce(t)
	clis := childPIDs(cmd.Process.Pid)
	if len(clis) == 0 {
		t.Fatal("no CLI child to watch")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	st := waitExit(t, cmd)
	// The CLIs die with it: none is left to finish a request.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		alive := 0
		for _, pid := range clis {
			if syscall.Kill(pid, 0) == nil {
				alive++
			}
		}
		if alive == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d CLI processes outlived flower", alive)
		}
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("flower should die by SIGTERM, got %v", st)
	}
	if errs := manifestErrors(t, manifest); len(errs) != 1 || errs[0] != "killed-by-signal" {
		t.Errorf("manifest errors %q, want one killed-by-signal row", errs)
	}
}

func TestCtrlCOnOnceExits130InOneLine(t *testing.T) {
	t.Parallel()
	cmd, manifest, stderr := startSlowOnce(t)
	cmd.Process.Signal(os.Interrupt)
	st := waitExit(t, cmd)
	if st.ExitCode() != ExitInterrupted {
		t.Errorf("exit %v, want 130", st)
	}
	if s := strings.TrimSpace(stderr.String()); !strings.HasSuffix(s, "已退出。同一目录再跑一次 flower 会接着做。") || strings.Contains(s, "goroutine") || strings.Contains(s, "panic") {
		t.Errorf("stderr: %q", s)
	}
	if errs := manifestErrors(t, manifest); len(errs) != 1 || errs[0] == "" {
		t.Errorf("the interrupted step must be in the manifest: %q", errs)
	}
}

func TestAWorkflowProgramGetsTheSameCommandLine(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.MaxTokens == 16:
			return claudetest.Say("hi")
		case r.HasText("Now make the change"):
			return claudetest.Say("made the change")
		}
		return claudetest.Say("the plan: one flag")
	})
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ownflowBin, "-w", ws, "--lang", "en", "add a --json flag", "--budget", "5")
	cmd.Env = binEnv(t, srv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ownflow: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	manifest := filepath.Join(ws, "runs", "manifest.json")
	for _, want := range []string{"== plan ", "  1/2", "the plan: one flag", "== build ", "  2/2", "made the change", "+ Done", "- report: ownflow report ", " · manifest " + manifest} {
		if !strings.Contains(out, want) {
			t.Errorf("the screen lacks %q:\n%s", want, out)
		}
	}
	if errs := manifestErrors(t, manifest); len(errs) != 2 || errs[0] != "" || errs[1] != "" {
		t.Errorf("manifest errors %q", errs)
	}
	// The second step resumed the first one's session: its request holds the plan.
	resumed := false
	for _, r := range srv.Requests() {
		resumed = resumed || (r.HasText("Now make the change") && r.HasText("the plan: one flag"))
	}
	if !resumed {
		t.Error("build did not continue plan's session")
	}
	// Bad input is refused the same way as flower's.
	bad := exec.Command(ownflowBin, "-w", ws, "--window", "-3", "x")
	bad.Env = cmd.Env
	if out, err := bad.CombinedOutput(); !strings.Contains(string(out), "--window -3") || bad.ProcessState.ExitCode() != ExitUsage {
		t.Errorf("ownflow --window -3: %v %s", err, out)
	}
}

// ownflowServer answers the probe and every step.
func ownflowServer(t *testing.T) *claudetest.Server {
	return claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if r.MaxTokens == 16 {
			return claudetest.Say("hi")
		}
		return claudetest.Say("step done")
	})
}

func TestBareProgramAsksForTheRequestOnATerminal(t *testing.T) {
	t.Parallel()
	srv := ownflowServer(t)
	p := startPTYBin(t, ownflowBin, binEnv(t, srv), "-w", t.TempDir())
	p.expect(t, "要做什么? 一句话就够,回车开始(Ctrl-C 退出)")
	p.expect(t, "> ")
	io.WriteString(p.tty, "add a --json flag; keep 'quotes' and $HOME as typed\r")
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.out.String())
	}
	// The program's own name: it takes flower's whole command line.
	p.expect(t, "- 报告:ownflow report ")
	typed := false
	for _, r := range srv.Requests() {
		typed = typed || r.HasText("add a --json flag; keep 'quotes' and $HOME as typed")
	}
	if !typed {
		t.Error("the typed line did not reach the model as typed")
	}
}

func TestBareProgramCtrlDAtThePromptCancels(t *testing.T) {
	t.Parallel()
	p := startPTYBin(t, ownflowBin, binEnv(t, ownflowServer(t)), "-w", t.TempDir())
	p.expect(t, "要做什么?")
	p.expect(t, "> ")
	p.tty.Write([]byte{4})
	if code := p.wait(t); code != ExitFailure {
		t.Fatalf("Ctrl-D: exit %d", code)
	}
	p.expect(t, "已取消")
}

func TestPipedRequestRunsWithoutAHeader(t *testing.T) {
	t.Parallel()
	srv := ownflowServer(t)
	cmd := exec.Command(ownflowBin, "-w", t.TempDir())
	cmd.Env = binEnv(t, srv)
	cmd.Stdin = strings.NewReader("build X\nwith two lines\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(string(out), "要做什么") {
		t.Errorf("a header on a pipe:\n%s", out)
	}
	found := false
	for _, r := range srv.Requests() {
		found = found || r.HasText("build X\nwith two lines")
	}
	if !found {
		t.Error("the piped request did not reach the model")
	}
	empty := exec.Command(ownflowBin, "-w", t.TempDir())
	empty.Env = binEnv(t, srv)
	empty.Stdin = strings.NewReader("  \n")
	if out, _ := empty.CombinedOutput(); empty.ProcessState.ExitCode() != ExitFailure || !strings.Contains(string(out), "诉求是空的") {
		t.Errorf("an empty piped request: exit %d %s", empty.ProcessState.ExitCode(), out)
	}
}

func TestBareProgramCtrlCAtThePromptCancels(t *testing.T) {
	t.Parallel()
	p := startPTYBin(t, ownflowBin, binEnv(t, ownflowServer(t)), "-w", t.TempDir())
	p.expect(t, "要做什么?")
	p.expect(t, "> ")
	p.tty.Write([]byte{3})
	if code := p.wait(t); code != ExitInterrupted {
		t.Fatalf("Ctrl-C at the prompt: exit %d, want %d", code, ExitInterrupted)
	}
	p.expect(t, "已取消(Ctrl-C),什么都没做。")
	if strings.Contains(p.out.String(), "goroutine") {
		t.Errorf("a trace:\n%s", p.out.String())
	}
}

func TestARunDirThatCannotBeWrittenSaysSo(t *testing.T) {
	t.Parallel()
	srv := ownflowServer(t)
	file := filepath.Join(t.TempDir(), "not-a-dir")
	os.WriteFile(file, nil, 0o600)
	cmd := exec.Command(flowerBin, "-w", t.TempDir(), "-r", filepath.Join(file, "runs"), "once", "hi")
	cmd.Env = binEnv(t, srv)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != ExitFailure || !strings.Contains(string(out), "writable (-w DIR, -r DIR)") {
		t.Errorf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
}
