package app

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/cliinstall"
)

// NpmInstallEnv gates the test that installs the real CLI from npm's
// registry: scripts/test runs it in a step of its own, outside the
// loopback-only namespace the other tests run in, and fails when it did
// not run (FLOWER_NPM_INSTALL_LOG names the file it writes).
const NpmInstallEnv = "FLOWER_TEST_NPM_INSTALL"

// The README's Quick start, from a fresh clone with no CLI installed and
// an empty npm cache: go install, the PATH line and the demo to its end
// with exit 0, the pinned CLI installed into a temporary cache directory
// after the one question, the demo's screen the run the README's top
// pictures; then the installed `flower once` in a git project, with a fake
// key and ANTHROPIC_BASE_URL at a fake Messages API, finds the same CLI
// without installing again.
func TestReadmeFirstCommandFromAFreshClone(t *testing.T) {
	t.Parallel()
	if os.Getenv(NpmInstallEnv) == "" {
		t.Skipf("set %s=1 (outside a network namespace: it needs npm's registry); scripts/test runs it in a step of its own", NpmInstallEnv)
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "flower")
	if out, err := exec.Command("git", "clone", "-q", moduleRoot(t), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v %s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(clone, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := readmeQuickStart(t, string(readme))
	_, picture := readmePicture(t, string(readme))
	cache, gopath := filepath.Join(tmp, "cache"), filepath.Join(tmp, "go")
	env := quickStartEnv(t, filepath.Join(tmp, "home"), gopath,
		"XDG_CACHE_HOME="+cache, "XDG_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"npm_config_cache="+filepath.Join(tmp, "npm-cache")) // an empty npm cache
	if _, err := exec.LookPath("claude"); err == nil {
		t.Fatalf("a claude is on PATH (%s): the test needs a machine without one", os.Getenv("PATH"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	p := startCmdPTY(t, exec.CommandContext(ctx, "bash", "-e", "-c", script), clone, env)
	p.expectWithin(t, "Install the Claude Code CLI "+cliinstall.Version, 10*time.Minute)
	p.tty.Write([]byte("\r"))
	p.expectWithin(t, "installed the Claude Code CLI", 15*time.Minute)
	p.expectWithin(t, "Demo over", 5*time.Minute)
	if code := p.wait(t); code != 0 {
		t.Fatalf("the Quick start: exit %d\n%s", code, p.screen())
	}
	checkPicture(t, picture, p.screen())
	bin := filepath.Join(cache, "flower", "claude-cli", cliinstall.Version, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the CLI is not in the cache: %v", err)
	}

	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		return claudetest.Say("the answer is 42")
	})
	proj := filepath.Join(tmp, "proj")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	once := exec.CommandContext(ctx, filepath.Join(gopath, "bin", "flower"), "-w", proj, "once", "what is the answer?")
	once.Dir, once.Env = clone, append(env, "ANTHROPIC_API_KEY=sk-ant-fake", "ANTHROPIC_BASE_URL="+srv.URL)
	out, err := once.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the answer is 42") || strings.Contains(string(out), "installing") {
		t.Fatalf("flower once: %v\n%s", err, out)
	}
	if log := os.Getenv("FLOWER_NPM_INSTALL_LOG"); log != "" {
		os.WriteFile(log, []byte("ran\n"), 0o644)
	}
}
