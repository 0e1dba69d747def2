package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// requireSandbox is the wall's sandbox; without bubblewrap the test fails
// under CI (scripts/test installs it) and is skipped elsewhere.
func requireSandbox(t *testing.T) Sandbox {
	t.Helper()
	s := DetectSandbox()
	if !s.Active() {
		if os.Getenv("CI") != "" {
			t.Fatalf("the glance sandbox must run in CI: %s; fix: %s", s.Problem, s.Fix)
		}
		t.Skipf("no glance sandbox: %s", s.Problem)
	}
	return s
}

// sandboxWall is a coordinator's wall as Texts.Wall builds it, with the
// sandbox on.
func sandboxWall(t *testing.T, w Wall) *wall {
	t.Helper()
	s := requireSandbox(t)
	return &wall{texts: ChineseTexts, w: w, timeoutCmd: mustLookPath(t, "timeout"), sandbox: s, bashCmd: mustLookPath(t, "bash"), envCmd: mustLookPath(t, "env")}
}

// runIn runs a command line under bash in dir with env, as the CLI's shell
// does, and returns its combined output and exit status.
func runIn(t *testing.T, dir string, env []string, line string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), exitCode(err)
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%q did not end in a minute", line)
	}
	return "", -1
}

// glanceScene is a git workspace (its parent bound as a root, so that
// ls -la shows the same "..") and a HOME holding the CLI's and flower's
// credential files.
type glanceScene struct {
	root, ws, home string
	env            []string
}

const sceneKey = "sk-ant-sandbox-test-key-0123456789"

func newGlanceScene(t *testing.T) *glanceScene {
	t.Helper()
	root := t.TempDir()
	s := &glanceScene{root: root, ws: filepath.Join(root, "work space"), home: filepath.Join(root, "home")}
	for name, body := range map[string]string{
		"work space/a.txt":                   "alpha\nbeta\n",
		"work space/sub/b.txt":               "beta gamma\n",
		"home/.claude/.credentials.json":     `{"claudeAiOauth":{"accessToken":"` + sceneKey + `"}}`,
		"home/.config/flower/.env":           "ANTHROPIC_API_KEY=" + sceneKey + "\n",
		"home/.claude/settings.json":         `{"env":{"ANTHROPIC_AUTH_TOKEN":"` + sceneKey + `"}}`,
		"home/.gitconfig":                    "[user]\n\tname = t\n\temail = t@example.com\n",
		"work space/notes/keep.md":           "keep\n",
		"work space/.flower/artifacts/x.txt": "x\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, "LANG=C.UTF-8", "ANTHROPIC_API_KEY=" + sceneKey,
		"FLOWER_NOTIFY=touch /tmp/notified", "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1"}
	for _, args := range []string{"init -q -b main", "add .", "commit -q -m init", "commit -q --allow-empty -m second"} {
		if out, code := runIn(t, s.ws, s.env, "git "+args); code != 0 {
			t.Fatalf("git %s: %s", args, out)
		}
	}
	// A change, so that git status and git diff have something to show.
	if err := os.WriteFile(filepath.Join(s.ws, "a.txt"), []byte("alpha\nbeta\ndelta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSandboxGlancesSeeWhatTheyWouldOutside: the glances people use give
// the same output and status inside the sandbox as outside it, in a
// workspace under /tmp whose name has a space.
func TestSandboxGlancesSeeWhatTheyWouldOutside(t *testing.T) {
	s := newGlanceScene(t)
	g := sandboxWall(t, Wall{Roots: []string{s.root}})
	for _, cmd := range []string{
		"git status", "git log -5 --format='%s %an'", "git diff --stat", "git diff", "git branch",
		"ls -la", "ls -la sub", "grep -rn beta .", "cat a.txt", "head -n 1 a.txt", "tail -n 1 a.txt",
		"wc -l a.txt sub/b.txt", "find . -name '*.txt' -not -path './.git/*'", "pwd", "cat missing",
		"git show --stat HEAD~1 --format=%s",
	} {
		t.Run(cmd, func(t *testing.T) {
			want, wantCode := runIn(t, s.ws, s.env, cmd)
			got, code := runIn(t, s.ws, s.env, g.sandboxed(cmd, 10*time.Second))
			if got != want || code != wantCode {
				t.Errorf("inside the sandbox (exit %d):\n%s\noutside (exit %d):\n%s", code, got, wantCode, want)
			}
		})
	}
}

// TestSandboxHoldsWhatTheParserMightNot runs, as glances, commands that
// write the workspace, .git, HOME and /tmp, connect to a listener, read
// the key from the environment and from the credential files, and leave a
// process behind: nothing changes, nothing connects, no key is read, no
// process survives.
func TestSandboxHoldsWhatTheParserMightNot(t *testing.T) {
	s := newGlanceScene(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connected := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			connected <- struct{}{}
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	marker := fmt.Sprintf("flower-sandbox-%d", time.Now().UnixNano())
	g := sandboxWall(t, Wall{Roots: []string{s.root}, Hide: []string{filepath.Join(s.home, ".config", "flower", ".env")}})
	before := snapshot(t, s.root)
	attacks := []string{
		"touch pwned; echo x >> a.txt",
		"echo x > .git/pwned; git add a.txt; git commit -qm pwned",
		"touch \"$HOME/pwned\"; mkdir -p ~/.ssh",
		"touch /tmp/" + marker,
		fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d", port),
		"printenv; env; cat /proc/1/environ; cat /proc/$PPID/environ",
		"cat ~/.claude/.credentials.json ~/.config/flower/.env ~/.claude/settings.json",
		"grep -r " + sceneKey[:12] + " ~ /proc/*/environ 2>/dev/null",
		"(exec -a " + marker + " sleep 60) & disown; setsid bash -c 'exec -a " + marker + " sleep 60' & echo started",
	}
	for _, cmd := range attacks {
		out, _ := runIn(t, s.ws, s.env, g.sandboxed(cmd, 10*time.Second))
		if strings.Contains(out, sceneKey) || strings.Contains(out, sceneKey[:12]) {
			t.Errorf("%s: the key reached the glance's output:\n%s", cmd, out)
		}
		if strings.Contains(out, "FLOWER_NOTIFY") {
			t.Errorf("%s: flower's variables reached the glance:\n%s", cmd, out)
		}
	}
	if diff := changes(before, snapshot(t, s.root)); diff != "" {
		t.Errorf("the glances changed the scene:\n%s", diff)
	}
	if _, err := os.Lstat(filepath.Join("/tmp", marker)); err == nil {
		t.Errorf("a glance wrote the real /tmp")
	}
	select {
	case <-connected:
		t.Error("a glance connected to the listener")
	case <-time.After(100 * time.Millisecond):
	}
	if pids := processesNamed(t, marker); len(pids) > 0 {
		t.Errorf("processes outlived their glance: %v", pids)
	}
}

// TestSandboxBadPlaces: a workspace path with a newline and a symlink
// component, a HOME that is a symlink; the glance runs in the sandbox
// there, or fails: never outside.
func TestSandboxBadPlaces(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real\nline")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	homeReal := filepath.Join(root, "home-real")
	if err := os.MkdirAll(filepath.Join(homeReal, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(homeReal, ".claude", ".credentials.json"), []byte(sceneKey), 0o600); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	if err := os.Symlink(homeReal, home); err != nil {
		t.Fatal(err)
	}
	g := sandboxWall(t, Wall{Roots: []string{link}})
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	out, code := runIn(t, link, env, g.sandboxed("cat f; cat ~/.claude/.credentials.json; touch g", 10*time.Second))
	if code == 0 || !strings.Contains(out, "content") || strings.Contains(out, sceneKey) {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(real, "g")); err == nil {
		t.Error("the glance wrote the workspace")
	}
}

// TestSandboxThatCannotStartRunsNothing: bubblewrap that refuses to start
// (here: a stand-in that fails as a kernel without user namespaces makes
// it fail) leaves the glance unrun, with its message, never run outside.
func TestSandboxThatCannotStartRunsNothing(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bwrap")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := &wall{texts: ChineseTexts, timeoutCmd: mustLookPath(t, "timeout"), sandbox: Sandbox{Program: fake}, bashCmd: mustLookPath(t, "bash"), envCmd: mustLookPath(t, "env")}
	out, code := runIn(t, dir, []string{"PATH=" + os.Getenv("PATH")}, g.sandboxed("touch ran", 5*time.Second))
	if code == 0 || !strings.Contains(out, "namespace") {
		t.Errorf("exit %d, output %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the glance ran outside the sandbox")
	}
	// DetectSandbox finds the same stand-in on PATH and says glances rely
	// on the parser, with what to do.
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := DetectSandbox()
	if s.Active() || !strings.Contains(s.Problem, "cannot make a sandbox") || !strings.Contains(s.Problem, "namespace") || s.Fix == "" {
		t.Errorf("DetectSandbox with a refusing bwrap: %+v", s)
	}
	t.Setenv("PATH", dir+"/none")
	if s := DetectSandbox(); s.Active() || s.Fix != FixSandbox {
		t.Errorf("DetectSandbox without bwrap: %+v", s)
	}
}

// TestWallRunsGlancesInTheSandbox: the command the wall hands the CLI is
// the sandbox's, the model's own command inside it.
func TestWallRunsGlancesInTheSandbox(t *testing.T) {
	requireSandbox(t)
	out := call(t, coordinatorWall().Matcher(), &claude.HookInput{ToolName: "Bash", ToolInput: bashInput("git status")})
	if out == nil || out.HookSpecificOutput == nil {
		t.Fatalf("answer %s, want allow", mustJSON(out))
	}
	var got struct{ Command string }
	if err := json.Unmarshal(out.HookSpecificOutput.UpdatedInput, &got); err != nil {
		t.Fatal(err)
	}
	cmd := got.Command
	if !strings.Contains(cmd, "--unshare-all") || !strings.Contains(cmd, "--clearenv") || !strings.Contains(cmd, " -c 'git status'") {
		t.Errorf("the glance is not sandboxed: %s", cmd)
	}
}

// snapshot maps every path under root to its size, mode and content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() && info.Size() < 1<<20 {
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	return out
}

func changes(before, after map[string]string) string {
	var b strings.Builder
	for p, v := range after {
		if old, ok := before[p]; !ok {
			fmt.Fprintf(&b, "new: %s\n", p)
		} else if old != v {
			fmt.Fprintf(&b, "changed: %s\n", p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			fmt.Fprintf(&b, "removed: %s\n", p)
		}
	}
	return b.String()
}

// processesNamed lists the processes whose command line holds name.
func processesNamed(t *testing.T, name string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(name)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestSandboxedGlanceEndsAtItsLimit: a sandboxed glance that would run for
// a minute ends at the limit with the note, its processes with it.
func TestSandboxedGlanceEndsAtItsLimit(t *testing.T) {
	g := sandboxWall(t, Wall{})
	dir := t.TempDir()
	start := time.Now()
	out, code := runIn(t, dir, []string{"PATH=" + os.Getenv("PATH")}, g.sandboxed("sleep 60", time.Second))
	took := time.Since(start)
	t.Logf("took %v", took)
	if code != 124 || !strings.Contains(out, fmt.Sprintf(ChineseTexts.GlanceTimedOut, "1")) {
		t.Errorf("exit %d, output %q", code, out)
	}
	if took > 20*time.Second {
		t.Errorf("the sandboxed sleep took %v", took)
	}
}

// TestASandboxWithoutBashIsNoSandbox: bubblewrap that works but no bash
// or env on PATH is reported as no sandbox, as the wall then runs the
// parser alone (the protection line the person reads said "sandbox").
func TestASandboxWithoutBashIsNoSandbox(t *testing.T) {
	requireSandbox(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(bwrap, filepath.Join(dir, "bwrap")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	s := DetectSandbox()
	if s.Active() || !strings.Contains(s.Problem, "bash and env") || s.Fix == "" {
		t.Errorf("without bash and env: %+v", s)
	}
}
