package claudetest

import (
	"context"
	"fmt"
	"github.com/flowerrun/flower/claude/fakeapi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// cliRelPath is where tools/claude-cli/install.sh leaves the pinned native
// binary, relative to the module root. The npm bin stub is avoided: it
// stays a stub under npm install --ignore-scripts.
const cliRelPath = fakeapi.PinnedCLI

// PinnedCLI is the pinned CLI's path relative to the module root.
const PinnedCLI = fakeapi.PinnedCLI

// EnvAt is Env outside a test: see fakeapi.CLIEnv.
var EnvAt = fakeapi.CLIEnv

// CLIPath returns the path of the real claude binary for the real-CLI test
// tier: $FLOWER_CLAUDE when set, else the pinned binary under the module
// root (the directory holding go.mod, found by walking up from the working
// directory). When there is none it fails the test if $CI is non-empty, as
// that tier must run in CI, and skips it otherwise. With
// $FLOWER_CLAUDE_VERSION set, the binary must report that version (`claude
// --version`), or the test fails naming both: the test command sets it for
// each CLI of the tested range, so a wrong binary cannot pass for another.
func CLIPath(t testing.TB) string {
	t.Helper()
	const fix = "run tools/claude-cli/install.sh (or set FLOWER_CLAUDE to a claude binary)"
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("claudetest: the real-CLI tier must run in CI: "+format+"; "+fix, args...)
		}
		t.Skipf("claudetest: "+format+"; "+fix, args...)
	}
	if p := os.Getenv("FLOWER_CLAUDE"); p != "" {
		if !isExecutable(p) {
			missing("FLOWER_CLAUDE=%s is not an executable file", p)
			return p
		}
		checkVersion(t, p)
		noteRealCLI(t)
		return p
	}
	root, err := moduleRoot()
	if err != nil {
		missing("no claude CLI: %v", err)
		return ""
	}
	p := filepath.Join(root, cliRelPath)
	if !isExecutable(p) {
		missing("no claude CLI at %s", p)
		return p
	}
	checkVersion(t, p)
	noteRealCLI(t)
	return p
}

// PinnedCLIPath is the repository's pinned copy of the CLI
// (tools/claude-cli, which scripts/test installs), whatever FLOWER_CLAUDE
// names: for a test about the pin itself (its size), which no older CLI's
// pass can stand in for. It does not count as a use of the real CLI.
// Missing, it fails under CI and skips elsewhere, as CLIPath does.
func PinnedCLIPath(t testing.TB) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("claudetest: the module's root: %v", err)
	}
	p := filepath.Join(root, cliRelPath)
	if !isExecutable(p) {
		if os.Getenv("CI") != "" {
			t.Fatalf("claudetest: no pinned claude CLI at %s; run tools/claude-cli/install.sh", p)
		}
		t.Skipf("claudetest: no pinned claude CLI at %s; run tools/claude-cli/install.sh", p)
	}
	return p
}

// versions caches each binary's `--version` answer: asked once per test
// process, not once per test.
var versions sync.Map // path -> versionAnswer

type versionAnswer struct {
	version string
	err     error
}

// checkVersion fails t when $FLOWER_CLAUDE_VERSION is set and cli reports
// another version.
func checkVersion(t testing.TB, cli string) {
	t.Helper()
	want := os.Getenv("FLOWER_CLAUDE_VERSION")
	if want == "" {
		return
	}
	a, ok := versions.Load(cli)
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, cli, "--version").Output()
		cancel()
		version, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
		a, _ = versions.LoadOrStore(cli, versionAnswer{version, err})
	}
	got := a.(versionAnswer)
	switch {
	case got.err != nil:
		t.Fatalf("claudetest: FLOWER_CLAUDE_VERSION=%s, but %s --version failed: %v; install that CLI with tools/claude-cli/install.sh tools/claude-cli-%s", want, cli, got.err, want)
	case got.version != want:
		t.Fatalf("claudetest: the claude CLI %s is version %q, but FLOWER_CLAUDE_VERSION wants %s; point FLOWER_CLAUDE at CLI %s (tools/claude-cli/install.sh prints its path) or unset FLOWER_CLAUDE_VERSION", cli, got.version, want, want)
	}
}

// noteRealCLI appends the test's name to $FLOWER_REALCLI_LOG, which the
// test command reads to prove that the real-CLI tier ran.
func noteRealCLI(t testing.TB) {
	log := os.Getenv("FLOWER_REALCLI_LOG")
	if log == "" {
		return
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Logf("claudetest: cannot note the real-CLI run in %s: %v", log, err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, t.Name())
}

// moduleRoot walks up from the working directory to the one holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Env returns the environment for a hermetic CLI run against srv, to lay
// over BaseEnv (or over the inherited environment):
//   - a fresh HOME and CLAUDE_CODE_TMPDIR (t.TempDir); CLAUDE_CONFIG_DIR is
//     $HOME/.claude, so transcripts are under $HOME/.claude/projects/ and
//     the global config is $HOME/.claude/.claude.json;
//   - ANTHROPIC_BASE_URL=srv.URL and ANTHROPIC_API_KEY=sk-fake;
//   - the variables that keep all traffic on the loopback fake;
//   - empty values for the variables that would otherwise leak in from a
//     developer's environment and change the provider, proxy, credentials,
//     model, headers or nesting (see fakeapi.CLIEnv).
func Env(t testing.TB, srv *Server) map[string]string {
	t.Helper()
	return fakeapi.CLIEnv(srv.URL, t.TempDir(), t.TempDir())
}

// BaseEnv returns a minimal base environment (PATH only) for a CLI run,
// in exec.Cmd.Env form; lay Env over it.
func BaseEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH")}
}
