package claude

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is this driver's version, sent to the CLI as
// CLAUDE_AGENT_SDK_VERSION (it shows in the User-Agent).
const Version = "0.1.0"

// The range of CLI versions the real-CLI tier runs against, oldest and
// newest: tools/claude-cli-2.1.310 and tools/claude-cli pin them (a test
// checks that the pins say the same). The driver speaks to any version, but
// warns outside this range: the CLI ships several releases a week, and one
// that nobody ran the tests against may have changed what the driver
// relies on.
const (
	OldestTestedCLIVersion = "2.1.310"
	NewestTestedCLIVersion = "2.1.332"
)

// FindCLI locates the claude binary: the explicit path if given (the
// caller's choice, e.g. from its own configuration), else PATH, then the
// usual install locations. Like the official SDK it reads no environment
// variable of its own: a program that lets users name the binary passes it
// as Options.CLIPath. The error is a *CLINotFoundError listing every place
// it looked.
func FindCLI(explicit string) (string, error) {
	var tried []string
	check := func(p string) bool {
		if p == "" {
			return false
		}
		tried = append(tried, p)
		info, err := os.Stat(p)
		return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
	}
	if explicit != "" {
		if check(explicit) {
			return explicit, nil
		}
		return "", &CLINotFoundError{Path: explicit, Tried: tried}
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p, nil
	}
	tried = append(tried, "$PATH")
	home, _ := os.UserHomeDir()
	candidates := []string{
		filepath.Join(home, ".npm-global/bin/claude"),
		"/usr/local/bin/claude",
		filepath.Join(home, ".local/bin/claude"),
		filepath.Join(home, "node_modules/.bin/claude"),
		filepath.Join(home, ".yarn/bin/claude"),
		filepath.Join(home, ".claude/local/claude"),
	}
	for _, c := range candidates {
		if home == "" && !filepath.IsAbs(c) {
			continue
		}
		if check(c) {
			return c, nil
		}
	}
	return "", &CLINotFoundError{Tried: tried}
}

var versionRE = regexp.MustCompile(`^\d+\.\d+\.\d+`)

// probed remembers the binaries whose version was already checked: the probe
// costs a process start and only ever warns.
var probed sync.Map

// checkVersion runs `claude -v` once per binary and warns when it is older
// than OldestTestedCLIVersion or newer than NewestTestedCLIVersion. Failures
// are ignored: the probe is advisory.
func checkVersion(ctx context.Context, cli string) {
	if _, done := probed.LoadOrStore(cli, true); done {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "-v").Output()
	if err != nil {
		return
	}
	v := versionRE.FindString(strings.TrimSpace(string(out)))
	switch {
	case v == "":
	case compareVersions(v, OldestTestedCLIVersion) < 0:
		slog.Warn("claude CLI is older than the oldest version flower is tested with; update it (npm install -g @anthropic-ai/claude-code) or expect surprises",
			"cli", cli, "version", v, "oldest_tested", OldestTestedCLIVersion, "newest_tested", NewestTestedCLIVersion)
	case compareVersions(v, NewestTestedCLIVersion) > 0:
		slog.Warn("claude CLI is newer than the newest version flower is tested with; if something breaks, try "+NewestTestedCLIVersion,
			"cli", cli, "version", v, "oldest_tested", OldestTestedCLIVersion, "newest_tested", NewestTestedCLIVersion)
	}
}

func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// childEnv builds the child's environment: the inherited (or base)
// environment without CLAUDECODE, the SDK entrypoint, the caller's Env, the
// driver version, and PWD for the working directory.
func (o *Options) childEnv(extra map[string]string) []string {
	base := o.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	env := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := env[k]; !ok {
			order = append(order, k)
		}
		env[k] = v
	}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "CLAUDECODE" {
			continue
		}
		set(k, v)
	}
	set("CLAUDE_CODE_ENTRYPOINT", "sdk-go")
	for k, v := range o.Env {
		set(k, v)
	}
	set("CLAUDE_AGENT_SDK_VERSION", Version)
	if o.Cwd != "" {
		set("PWD", o.Cwd)
	}
	for k, v := range extra {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+env[k])
	}
	return out
}

// checkCwd turns a missing working directory into a clear error before the
// spawn would fail with a bare "no such file".
func checkCwd(dir string) error {
	if dir == "" {
		return nil
	}
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return &ConnectionError{Msg: fmt.Sprintf("working directory %s does not exist", dir)}
	}
	if err != nil {
		return &ConnectionError{Msg: "working directory: " + err.Error()}
	}
	if !info.IsDir() {
		return &ConnectionError{Msg: fmt.Sprintf("working directory %s is not a directory", dir)}
	}
	return nil
}
