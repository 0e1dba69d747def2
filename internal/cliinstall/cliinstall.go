// Package cliinstall finds the Claude Code CLI the flower command runs, the
// same way for every subcommand, and installs the pinned version with npm
// into the user's cache directory when there is none: FLOWER_CLAUDE, then
// flower's own pinned copy in the cache, then claude on PATH. An install is
// safe when two flowers run it at once (a lock; npm installs into a
// temporary directory that is renamed into place only once its binary
// reports the pinned version), so a half-installed CLI is never used.
package cliinstall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/filelock"
)

// Package is the npm package of the CLI; Version is the pin, the newest
// version the real-CLI tests run against.
const (
	Package = "@anthropic-ai/claude-code"
	Version = claude.NewestTestedCLIVersion
)

// Where a CLI was found.
const (
	FromEnv   = "FLOWER_CLAUDE"
	FromCache = "cache"
	FromPATH  = "PATH"
)

// The install's size, as a person is told before it, in MB as du -sh
// and ls -sh count them (MiB): the pinned version's platform package on
// linux-x64 (2.1.332: a 177.5 MiB tarball, which npm also keeps in its
// own cache, unpacked to 383.7 MiB). A test measures the installed pin.
const (
	DownloadMB  = 180
	InstalledMB = 385
)

// lockWait bounds the wait for another flower's install (npm downloads
// DownloadMB).
const lockWait = 15 * time.Minute

// versionWait bounds `claude --version`.
const versionWait = 20 * time.Second

// Env is what the lookup reads: the environment (FLOWER_CLAUDE, PATH,
// XDG_CACHE_HOME, HOME) through Getenv.
type Env struct {
	Getenv func(string) string
}

func (e Env) get(k string) string {
	if e.Getenv == nil {
		return os.Getenv(k)
	}
	return e.Getenv(k)
}

// Found is a CLI the lookup found.
type Found struct {
	Path string
	// From is FromEnv, FromCache or FromPATH.
	From string
	// Version is what the binary reported ("" when it did not say), and
	// Untested says it lies outside the tested range.
	Version  string
	Untested bool
}

// NotFoundError says no CLI was found and where the pinned one would go.
type NotFoundError struct {
	// Dir is the directory an install would create.
	Dir string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no Claude Code CLI: FLOWER_CLAUDE is not set, %s holds no pinned copy and no claude is on PATH", e.Dir)
}

// CacheRoot is the directory that holds flower's pinned CLIs:
// $XDG_CACHE_HOME/flower/claude-cli, else ~/.cache/flower/claude-cli
// (~/Library/Caches on macOS), as os.UserCacheDir has it.
func (e Env) CacheRoot() (string, error) {
	base := e.get("XDG_CACHE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home := e.get("HOME")
		if home == "" {
			return "", errors.New("neither XDG_CACHE_HOME nor HOME is set: set XDG_CACHE_HOME to a writable directory, or FLOWER_CLAUDE to a claude binary")
		}
		base = filepath.Join(home, ".cache")
		if runtime.GOOS == "darwin" {
			base = filepath.Join(home, "Library", "Caches")
		}
	}
	return filepath.Join(base, "flower", "claude-cli"), nil
}

// Dir is where the pinned version lives.
func (e Env) Dir() (string, error) {
	root, err := e.CacheRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, Version), nil
}

// binaryIn is the platform binary npm puts under dir.
func binaryIn(dir string) (string, error) {
	var p string
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		p = "linux-x64"
	case "linux/arm64":
		p = "linux-arm64"
	case "darwin/arm64":
		p = "darwin-arm64"
	case "darwin/amd64":
		p = "darwin-x64"
	default:
		return "", fmt.Errorf("there is no Claude Code binary package for %s/%s; install claude yourself and set FLOWER_CLAUDE=/path/to/claude", runtime.GOOS, runtime.GOARCH)
	}
	return filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-"+p, "claude"), nil
}

// Find looks for the CLI: FLOWER_CLAUDE (which must name an executable
// file), flower's pinned copy in the cache, claude on PATH (its version
// read, Untested set outside the tested range). None is a
// *NotFoundError; a FLOWER_CLAUDE that is no executable is an error that
// says so.
func (e Env) Find(ctx context.Context) (Found, error) {
	if p := e.get("FLOWER_CLAUDE"); p != "" {
		if !executable(p) {
			return Found{}, &UnusableError{Path: p, From: FromEnv}
		}
		f, err := e.versioned(ctx, Found{Path: p, From: FromEnv})
		if err != nil {
			return Found{}, &UnusableError{Path: p, From: FromEnv, Err: err}
		}
		return f, nil
	}
	dir, err := e.Dir()
	if err != nil {
		return Found{}, err
	}
	if bin, err := binaryIn(dir); err == nil && executable(bin) {
		return Found{Path: bin, From: FromCache, Version: Version}, nil
	}
	if p, ok := lookPath("claude", e.get("PATH")); ok {
		f, err := e.versioned(ctx, Found{Path: p, From: FromPATH})
		if err != nil {
			return Found{}, &UnusableError{Path: p, From: FromPATH, Err: err}
		}
		return f, nil
	}
	return Found{}, &NotFoundError{Dir: dir}
}

// UnusableError says the CLI named by FLOWER_CLAUDE, or the claude on
// PATH, is there but cannot be used.
type UnusableError struct {
	Path string
	From string // FromEnv or FromPATH
	// Err is the system's refusal to start it (exec format error:
	// not a program for this machine); nil when it is not an executable
	// file at all.
	Err error
}

func (e *UnusableError) Error() string {
	switch {
	case e.From == FromPATH:
		return fmt.Sprintf("the claude on PATH, %s, cannot be run (%v): reinstall it, or set FLOWER_CLAUDE=/path/to/claude", e.Path, e.Err)
	case e.Err == nil:
		return fmt.Sprintf("FLOWER_CLAUDE=%s is not an executable file: point it at the claude binary, or unset it to use flower's own pinned copy", e.Path)
	}
	return fmt.Sprintf("FLOWER_CLAUDE=%s cannot be run (%v): point it at the claude binary, or unset it to use flower's own pinned copy", e.Path, e.Err)
}

func (e *UnusableError) Unwrap() error { return e.Err }

// versioned is f with the version its binary reports; the error says the
// binary cannot be started at all, which no run could either: every
// attempt of a run then failed alike, retried for minutes.
func (e Env) versioned(ctx context.Context, f Found) (Found, error) {
	v, err := versionOf(ctx, f.Path)
	if err != nil {
		return Found{}, err
	}
	f.Version = v
	f.Untested = f.Version != "" && (compare(f.Version, claude.OldestTestedCLIVersion) < 0 || compare(f.Version, claude.NewestTestedCLIVersion) > 0)
	return f, nil
}

// Install installs the pinned version with npm into the cache and returns
// it. progress is told what happens (one line each: waiting for another
// install, installing, done). Under the cache root's lock it looks again
// first (another flower may have installed it meanwhile); npm installs into
// a temporary directory beside the final one, and only a tree whose binary
// reports the pinned version is renamed into place. Every failure says
// what to do in command-line terms.
func (e Env) Install(ctx context.Context, progress func(string)) (Found, error) {
	if progress == nil {
		progress = func(string) {}
	}
	root, err := e.CacheRoot()
	if err != nil {
		return Found{}, err
	}
	dir := filepath.Join(root, Version)
	bin, err := binaryIn(dir)
	if err != nil {
		return Found{}, err
	}
	npm, ok := lookPath("npm", e.get("PATH"))
	if !ok {
		return Found{}, fmt.Errorf("npm is not on PATH, and flower installs the Claude Code CLI %s with it: install Node.js and npm (https://nodejs.org/), or install claude yourself and set FLOWER_CLAUDE=/path/to/claude", Version)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Found{}, fmt.Errorf("cannot create the cache directory for the Claude Code CLI: %w\nset XDG_CACHE_HOME to a writable directory, or FLOWER_CLAUDE=/path/to/claude", err)
	}
	lockPath := filepath.Join(root, ".install.lock")
	lock, err := tryLock(ctx, lockPath)
	if err == nil && lock == nil {
		progress("waiting for another flower that is installing the Claude Code CLI …")
		lctx, cancel := context.WithTimeout(ctx, lockWait)
		defer cancel()
		lock, err = filelock.Acquire(lctx, lockPath)
		if err != nil && ctx.Err() == nil && lctx.Err() != nil {
			return Found{}, fmt.Errorf("another flower has been installing the Claude Code CLI into %s for %s: wait for it, or remove %s if none runs", root, lockWait, lockPath)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return Found{}, context.Cause(ctx)
		}
		return Found{}, fmt.Errorf("cannot lock the cache directory %s: %w\nset XDG_CACHE_HOME to a writable directory, or FLOWER_CLAUDE=/path/to/claude", root, err)
	}
	defer lock.Unlock()
	if executable(bin) {
		return Found{Path: bin, From: FromCache, Version: Version}, nil // another flower installed it
	}
	tmp, err := os.MkdirTemp(root, ".install-"+Version+"-")
	if err != nil {
		return Found{}, fmt.Errorf("cannot write into the cache directory %s: %w\nset XDG_CACHE_HOME to a writable directory, or FLOWER_CLAUDE=/path/to/claude", root, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed; a failed install leaves nothing
	manifest := fmt.Sprintf(`{"name":"flower-claude-cli","private":true,"dependencies":{%q:%q}}`+"\n", Package, Version)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(manifest), 0o644); err != nil {
		return Found{}, fmt.Errorf("cannot write into the cache directory %s: %w\nset XDG_CACHE_HOME to a writable directory, or FLOWER_CLAUDE=/path/to/claude", root, err)
	}
	progress(fmt.Sprintf("installing the Claude Code CLI %s with npm into %s (a %d MB download, %d MB on disk; once) …", Version, dir, DownloadMB, InstalledMB))
	start := time.Now()
	// --ignore-scripts: the binary arrives as an ordinary registry package
	// (the exact-version optional dependency of the platform); the
	// postinstall only links it onto a stub flower does not use.
	cmd := exec.CommandContext(ctx, npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "PATH="+e.get("PATH"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Found{}, context.Cause(ctx)
		}
		return Found{}, fmt.Errorf("npm install %s@%s failed (%v): %s\ncheck the network and npm's registry (npm config get registry), then run flower again; or install claude yourself and set FLOWER_CLAUDE=/path/to/claude", Package, Version, err, lastLines(out.String(), 3))
	}
	tmpBin, _ := binaryIn(tmp)
	if fi, err := os.Stat(tmpBin); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 == 0 {
		os.Chmod(tmpBin, 0o755) // npm may unpack it without the bit when scripts are off
	}
	if got, _ := versionOf(ctx, tmpBin); got != Version {
		return Found{}, fmt.Errorf("npm installed %s@%s, but %s reports version %q: remove %s and run flower again, or set FLOWER_CLAUDE=/path/to/claude", Package, Version, tmpBin, got, tmp)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return Found{}, fmt.Errorf("cannot move the installed CLI into %s: %w\nremove %s and run flower again", dir, err, dir)
	}
	progress(fmt.Sprintf("installed the Claude Code CLI %s in %s", Version, time.Since(start).Round(time.Second)))
	return Found{Path: bin, From: FromCache, Version: Version}, nil
}

// tryLock takes the lock if nobody holds it: nil, nil when another
// process does.
func tryLock(ctx context.Context, path string) (*filelock.Lock, error) {
	once, cancel := context.WithCancel(ctx)
	cancel() // Acquire tries once before it looks at the context
	lock, err := filelock.Acquire(once, path)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.Canceled) {
		return nil, nil
	}
	return lock, err
}

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+`)

// versionOf is what `cli --version` reports, "" when it says nothing
// readable in time. The error is the system's refusal to start it (not a
// program for this machine, no permission, an interpreter that is not
// there); a binary that starts and fails says no version, not an error.
func versionOf(ctx context.Context, cli string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "--version").Output()
	var refused *os.PathError
	switch {
	case errors.As(err, &refused):
		return "", refused.Err
	case err != nil:
		return "", nil
	}
	return versionRE.FindString(string(out)), nil
}

func compare(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3 && i < len(pa) && i < len(pb); i++ {
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

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// lookPath is exec.LookPath over the given PATH (the command's, not
// necessarily the process's).
func lookPath(name, path string) (string, bool) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, name); executable(p) {
			if abs, err := filepath.Abs(p); err == nil {
				return abs, true
			}
			return p, true
		}
	}
	return "", false
}

// lastLines is the last n non-empty lines of s, joined by " / ".
func lastLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	if len(keep) == 0 {
		return "(npm said nothing)"
	}
	return strings.Join(keep, " / ")
}
