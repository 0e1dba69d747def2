package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/guard/jail"
)

// Sandbox says what holds a glance beyond ephemeral.Is. Two rounds of
// outside testing each found commands the parser accepts that write or run
// code, so on Linux a glance runs under bubblewrap: the whole filesystem
// read-only, a private empty /tmp, no network, its own PID namespace (no
// process outlives it), a cleared environment (no key, no token, no
// FLOWER_*) and the credential files hidden. The parser stays the first
// layer and the classifier of what expires.
type Sandbox struct {
	// Program is bubblewrap's path when glances run under it, "" when they
	// rely on the parser alone.
	Program string
	// Jail is the executable bubblewrap starts inside as the glance's
	// last step in (this process's own, see jail_linux.go); "" means
	// os.Executable.
	Jail string
	// Reason says why no sandbox runs, for a person's language; "" when
	// one does.
	Reason SandboxReason
	// Problem says why no sandbox runs (English, one line); "" when one
	// does.
	Problem string
	// Fix is what a person can do about Problem; "" when nothing can be
	// done here (macOS: flower relies on the parser there, as sandbox-exec
	// is deprecated and cannot hide a file while the rest stays readable).
	Fix string
}

// SandboxReason is why glances run without a sandbox.
type SandboxReason string

// The reasons.
const (
	SandboxMissing     SandboxReason = "missing"     // no bwrap on PATH
	SandboxRefused     SandboxReason = "refused"     // bwrap cannot make the namespaces here
	SandboxUnsupported SandboxReason = "unsupported" // not Linux
)

// Active reports whether glances run in the sandbox.
func (s Sandbox) Active() bool { return s.Program != "" }

// sandboxProgram is the name DetectSandbox looks up on PATH.
const sandboxProgram = "bwrap"

// FixSandbox is the command that installs bubblewrap on Debian and Ubuntu.
const FixSandbox = "apt-get install bubblewrap"

var (
	sandboxMu    sync.Mutex
	sandboxCache = map[string]Sandbox{} // by bwrap's path
	sandboxWarn  sync.Once
)

// DetectSandbox finds bubblewrap on PATH and checks, once per program per
// process, that it can make the namespaces a glance needs (a container may
// refuse user namespaces): the same arguments a glance gets, around true.
func DetectSandbox() Sandbox {
	if runtime.GOOS != "linux" {
		return Sandbox{Reason: SandboxUnsupported, Problem: "no glance sandbox on " + runtime.GOOS + ": glances rely on flower's parser alone"}
	}
	path, err := exec.LookPath(sandboxProgram)
	if err != nil {
		return Sandbox{Reason: SandboxMissing, Problem: "bubblewrap (bwrap) is not installed: glances rely on flower's parser alone", Fix: FixSandbox}
	}
	sandboxMu.Lock()
	defer sandboxMu.Unlock()
	if s, ok := sandboxCache[path]; ok {
		return s
	}
	s := probeSandbox(path)
	if s.Active() {
		// A glance runs as env … bash -c in the sandbox: without them
		// the wall falls back to the parser, and so must what the
		// person is told (setup's and the run's protection line).
		_, errBash := exec.LookPath("bash")
		_, errEnv := exec.LookPath("env")
		if err := errors.Join(errBash, errEnv); err != nil {
			s = Sandbox{Reason: SandboxMissing, Problem: fmt.Sprintf("the glance sandbox needs bash and env on PATH (%v): glances rely on flower's parser alone", err), Fix: "install bash and coreutils"}
		}
	}
	sandboxCache[path] = s
	return s
}

// probeSandbox runs true in the sandbox a glance gets.
func probeSandbox(path string) Sandbox {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := exec.LookPath("true")
	if err != nil {
		tr = "/bin/true"
	}
	exe, err := jailExecutable()
	if err != nil {
		return Sandbox{Reason: SandboxRefused, Problem: fmt.Sprintf("the glance sandbox cannot find flower's own executable (%v): glances rely on flower's parser alone", err)}
	}
	args := sandboxArgs()
	for _, p := range rebound(exe) {
		args = append(args, "--ro-bind", p, p)
	}
	args = append(args, "--", exe, jail.Arg, tr)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		why := strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
		return Sandbox{
			Reason:  SandboxRefused,
			Problem: fmt.Sprintf("bubblewrap (%s) cannot make a sandbox here (%s): glances rely on flower's parser alone", path, clipLine(why, 120)),
			Fix:     "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), or run flower where they are allowed",
		}
	}
	return Sandbox{Program: path, Jail: exe}
}

// jailExecutable is this process's executable, symlinks resolved, which
// bubblewrap starts inside as the jail.
func jailExecutable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(exe)
}

// coveredFolders are the folders the sandbox replaces with empty ones:
// what lives there (sockets, FIFOs, other runs' files) stays outside.
var coveredFolders = []string{"/tmp", "/run", "/var/run"}

// rebound are the paths among paths that live under a covered folder
// (physical paths, as bubblewrap binds them): the sandbox binds them again,
// read-only, over the empty folder.
func rebound(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		p = filepath.Clean(p)
		for _, dir := range coveredFolders {
			if strings.HasPrefix(p, dir+"/") {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// sandboxArgs are bubblewrap's arguments every glance gets, before the
// folders it keeps, the files it hides and the program. Every capability
// is dropped: started by root, bubblewrap would otherwise keep them all
// inside, and a glance could unmount the empty folders or remount the
// filesystem writable. /tmp, /run and /var/run (where a real folder) are
// empty: the sockets and FIFOs there stay outside.
func sandboxArgs() []string {
	args := []string{
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-all", "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
	}
	for _, dir := range coveredFolders {
		if info, err := os.Lstat(dir); err == nil && info.IsDir() {
			args = append(args, "--tmpfs", dir)
		}
	}
	return args
}

// sandboxEnv is the whole environment of a glance, as bash words the CLI's
// shell expands: what a read needs and nothing else. Git writes no index
// (optional locks off), never runs an fsmonitor hook a repository's config
// names, and does not take a folder laid out as a bare repository (one
// committed as plain files survives a clone) for a repository unless told
// with --git-dir.
var sandboxEnv = []string{
	`--setenv PATH "$PATH"`, `--setenv HOME "$HOME"`,
	`--setenv LANG "${LANG:-C.UTF-8}"`, `--setenv TERM "${TERM:-dumb}"`,
	`--setenv TMPDIR ` + jail.Scratch, `--setenv GIT_OPTIONAL_LOCKS 0`,
	`--setenv GIT_CONFIG_COUNT 2`,
	`--setenv GIT_CONFIG_KEY_0 safe.bareRepository --setenv GIT_CONFIG_VALUE_0 explicit`,
	`--setenv GIT_CONFIG_KEY_1 core.fsmonitor --setenv GIT_CONFIG_VALUE_1 false`,
}

// hiddenByShell are the credential files a glance never sees, as bash
// words the CLI's shell expands: its HOME and config folder are the CLI's,
// which flower does not know when it builds the wall.
var hiddenByShell = []string{
	`"$HOME/.claude/.credentials.json"`, `"$HOME/.claude.json"`,
	`"$HOME/.claude/settings.json"`, `"$HOME/.claude/settings.local.json"`,
	`"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/.credentials.json"`,
	`"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/.claude.json"`,
	`"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/settings.json"`,
	`"${XDG_CONFIG_HOME:-$HOME/.config}/flower/.env"`,
}

// sandboxed wraps a glance: bubblewrap around bash running cmd, bounded in
// time by timeout when the program is there. The physical working
// directory is bound again over the private /tmp (a workspace may live
// there) and is where the glance starts: bubblewrap refuses to start
// rather than run it anywhere else. Each existing file of hide and
// hiddenByShell is replaced by an empty one, each folder by an empty one.
// When bubblewrap cannot start, the glance fails with its message: it
// never runs outside.
func (g *wall) sandboxed(cmd string, limit time.Duration) string {
	var b strings.Builder
	b.WriteString(`__flower_cwd=$(pwd -P) || exit 1; __flower_hide=(); for __flower_f in`)
	for _, p := range g.hidden() {
		b.WriteString(" " + shellQuote(p))
	}
	for _, p := range hiddenByShell {
		b.WriteString(" " + p)
	}
	b.WriteString(`; do if [ -d "$__flower_f" ]; then __flower_hide+=(--tmpfs "$__flower_f"); elif [ -e "$__flower_f" ]; then __flower_hide+=(--ro-bind /dev/null "$__flower_f"); fi; done; `)
	b.WriteString(`__flower_keep=(); if [ "$__flower_cwd" != / ] && [ "$__flower_cwd" != /tmp ]; then __flower_keep=(--ro-bind "$__flower_cwd" "$__flower_cwd"); fi; `)
	if g.timeoutCmd != "" {
		b.WriteString(fmt.Sprintf("%s -k %d %s ", shellQuote(g.timeoutCmd), int(glanceGrace.Seconds()), seconds(limit)))
	}
	// bubblewrap itself starts with no environment: it is the glance's
	// PID 1, and /proc/1/environ is readable inside.
	b.WriteString(shellQuote(g.envCmd) + " -i " + shellQuote(g.sandbox.Program))
	for _, a := range sandboxArgs() {
		b.WriteString(" " + shellQuote(a))
	}
	exe := g.sandbox.Jail
	if exe == "" {
		exe, _ = jailExecutable()
	}
	for _, p := range rebound(append(slices.Clone(g.w.Roots), exe)...) {
		b.WriteString(" --ro-bind " + shellQuote(p) + " " + shellQuote(p))
	}
	b.WriteString(` "${__flower_keep[@]}" "${__flower_hide[@]}" ` + strings.Join(sandboxEnv, " "))
	b.WriteString(` --chdir "$__flower_cwd" -- ` + shellQuote(exe) + " " + jail.Arg + " " + shellQuote(g.bashCmd) + " -c " + shellQuote(cmd))
	if g.timeoutCmd != "" {
		b.WriteString(fmt.Sprintf("; s=$?; if [ $s -eq 124 ]; then printf '%%s\\n' %s >&2; fi; exit $s", shellQuote(fmt.Sprintf(g.texts.GlanceTimedOut, seconds(limit)))))
	}
	return b.String()
}

// hidden are the wall's own files to hide plus the resume folders of the
// claude driver, which hold copies of the CLI's credentials, as they are
// when the glance is asked for.
func (g *wall) hidden() []string {
	out := append([]string(nil), g.w.Hide...)
	if m, err := filepath.Glob(filepath.Join(os.TempDir(), "claude-resume-*")); err == nil {
		out = append(out, m...)
	}
	return out
}

// warnNoSandboxOnce logs, once per process, that glances rely on the
// parser alone. At Info: a program tells its person at start, in their
// language (flower's first screen does), and a warning here would reach
// the same screen a second time, in English.
func warnNoSandboxOnce(s Sandbox) {
	sandboxWarn.Do(func() {
		logger().Info("guard: wall: "+s.Problem, "fix", s.Fix)
	})
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// CredentialPlaces are the files and folders holding flower's and the
// CLI's credentials for this process's HOME and configuration variables
// (~/.claude*, ~/.config/flower, $CLAUDE_CONFIG_DIR), symlinks resolved
// where they exist, plus the claude driver's resume folders: what any
// sandbox that keeps HOME in view (the judge's measurements) hides.
func CredentialPlaces() []string {
	out := credentialPlaces(nil)
	if m, err := filepath.Glob(filepath.Join(os.TempDir(), "claude-resume-*")); err == nil {
		out = append(out, m...)
	}
	return out
}
