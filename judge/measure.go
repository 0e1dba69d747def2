package judge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/guard"
)

// Measurement is flower's own run of one command item.
type Measurement struct {
	Item Item
	// Exit is the command's exit status; -1 when it did not finish
	// (TimedOut, stopped) or could not start (Err).
	Exit     int
	TimedOut bool
	// Environment, when not "", says the failing command's output reads
	// like a want of the network ("network") or of a dependency the local
	// cache lacks ("cache") (environmentOf). It is a hint for the person
	// and the judge, never an excuse: the output is the command's own, and
	// a test can print anything, so the item failed all the same.
	Environment string
	// Hidden, when not "", says the workspace could not be copied for the
	// command (a file flower cannot read, a copy that did not end in the
	// time limit): the work kept something from flower's measurement, and
	// its item failed (Exit -1), rather than being left to reading.
	Hidden string
	// Head and Tail are the start and the end of stdout and stderr
	// combined, at most MeasureOptions.OutputBytes each. They never
	// overlap: when Bytes is at most twice that, Head+Tail is the whole
	// output.
	Head, Tail string
	// Bytes is how much output there was in all.
	Bytes int64
	// Duration is the command's own time in the sandbox (the copy of
	// the workspace before it not counted).
	Duration time.Duration
	// Sandbox says how the command was held, or why it was not run.
	Sandbox string
	// Err says why the command could not run at all (no sandbox, the
	// workspace unreadable, flower stopped), in English, one line; ""
	// when it ran.
	Err string
	// Unmeasurable is set when no command can be measured on this machine
	// (no sandbox): the item is then judged by reading alone.
	Unmeasurable bool
}

// Failed reports whether the measurement shows the command failing or not
// running: anything but a finished exit status 0.
func (m Measurement) Failed() bool { return m.Err != "" || m.TimedOut || m.Exit != 0 }

// MeasureOptions bound a measurement. The zero value is useful.
type MeasureOptions struct {
	// Timeout is each command's time limit; 0 means 5 minutes.
	Timeout time.Duration
	// Network lets the commands reach the network (the person allowed
	// it); by default they have none.
	Network bool
	// OutputBytes is how much of the output's head, and of its tail, is
	// kept; 0 means 4 KiB, and more than 64 KiB is taken as 64 KiB.
	OutputBytes int
	// Env is extra environment (KEY=VALUE) beyond the minimal one every
	// command gets (measureEnv). flower's own credentials (the model's
	// key and tokens, FLOWER_*) are dropped even here.
	Env []string
	// Bubblewrap names the sandbox program; "" looks bwrap up on PATH.
	Bubblewrap string
}

const (
	defaultMeasureTimeout = 5 * time.Minute
	defaultOutputBytes    = 4 << 10
	maxOutputBytes        = 64 << 10
	// outputGrace bounds the wait for the output pipe to close once the
	// sandbox has exited (its PID namespace is gone, so nothing should
	// hold it).
	outputGrace = 5 * time.Second
	// probeTimeout bounds the check that bubblewrap can make a sandbox.
	probeTimeout = 20 * time.Second
)

// Measure runs every item of items that has a command, in order, each with
// `sh -c` in the workspace as the round left it, and returns one
// Measurement per such item (items without a command are the judge's to
// read and get none).
//
// Each command runs under bubblewrap: the machine read-only; a throwaway
// copy of the workspace (cp --reflink=auto: the kernel here refuses an
// ordinary user an overlay, and bubblewrap 0.8 has none of its own) bound
// writable at the workspace's own path, so the workspace itself, .git
// included, is never changed and each command sees it as the round left
// it, not as an earlier command left it; HOME read-only (the module
// caches there to read), with flower's and the CLI's credential files
// hidden; the toolchains' build caches empty and writable, the
// measurement's own (cacheEnv); a private /tmp and /run; its own PID namespace, killed
// whole at the time limit; no network unless o.Network; no capability,
// as root too; a cleared environment (measureEnv).
//
// Without a sandbox nothing runs: every measurement says why in Err and
// what to install, and the judge judges those items by reading. The
// workspace is never run unconfined.
func Measure(ctx context.Context, workspace string, items []Item, o MeasureOptions) []Measurement {
	o = o.withDefaults()
	cmds := Commands(items)
	out := make([]Measurement, len(cmds))
	for i, it := range cmds {
		out[i] = Measurement{Item: it, Exit: -1}
	}
	if len(cmds) == 0 {
		return out
	}
	fail := func(why string) []Measurement {
		for i := range out {
			out[i].Err, out[i].Sandbox = why, "not run"
		}
		return out
	}
	ws, err := measuredWorkspace(workspace)
	if err != nil {
		return fail(err.Error())
	}
	sb, err := findSandbox(o.Bubblewrap)
	if err != nil {
		out = fail(err.Error())
		for i := range out {
			out[i].Unmeasurable = true
		}
		return out
	}
	// The toolchains' caches of this measurement: writable, empty at its
	// start and gone at its end (HOME, where they live by default, is
	// read-only in the sandbox, and a cache the work could have written
	// could hold a forged result: Go's test cache says "ok" from it).
	caches, err := os.MkdirTemp("", "flower-caches-")
	if err != nil {
		return fail("no room for the toolchains' caches (" + oneLine(err.Error(), 160) + ")")
	}
	defer removeAll(caches)
	env := append(measureEnv(os.Environ(), o.Env), cacheEnv...)
	for i := range out {
		if err := ctx.Err(); err != nil {
			out[i].Err, out[i].Sandbox = "flower was stopped before its turn ("+err.Error()+")", "not run"
			continue
		}
		sb.run(ctx, ws, caches, env, o, &out[i])
	}
	return out
}

// cachesIn is where a measurement's caches are inside the sandbox (its
// private /tmp), and cacheEnv points each toolchain's cache there, over
// whatever the person's environment says: Go's build and test cache, the
// XDG cache (pip's, pytest's plugins', Go's default), npm's and pip's.
const cachesIn = "/tmp/.flower-caches"

var cacheEnv = []string{
	"GOCACHE=" + cachesIn + "/go-build",
	"XDG_CACHE_HOME=" + cachesIn + "/xdg",
	"npm_config_cache=" + cachesIn + "/npm",
	"PIP_CACHE_DIR=" + cachesIn + "/pip",
}

func (o MeasureOptions) withDefaults() MeasureOptions {
	if o.Timeout <= 0 {
		o.Timeout = defaultMeasureTimeout
	}
	if o.OutputBytes <= 0 {
		o.OutputBytes = defaultOutputBytes
	}
	o.OutputBytes = min(o.OutputBytes, maxOutputBytes)
	return o
}

// measuredWorkspace is the workspace's physical path, which must be a
// folder.
func measuredWorkspace(workspace string) (string, error) {
	if strings.TrimSpace(workspace) == "" {
		return "", errors.New("no workspace was given to run the commands in")
	}
	abs, err := filepath.Abs(workspace)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("the workspace %s cannot be read (%v)", workspace, err)
	}
	info, err := os.Stat(abs)
	if err != nil || !info.IsDir() {
		return "", fmt.Errorf("the workspace %s is not a folder", workspace)
	}
	if abs == "/" {
		return "", errors.New("the workspace cannot be / (flower copies the workspace for each command)")
	}
	return abs, nil
}

// measureSandbox is a bubblewrap that was seen to make the sandbox, and
// the programs around it.
type measureSandbox struct {
	bwrap, sh, cp string
}

var (
	probeMu    sync.Mutex
	probeCache = map[string]error{} // by bubblewrap's path
)

// findSandbox finds bubblewrap (program, or bwrap on PATH), sh and cp,
// and checks, once per bubblewrap per process, that it can make the
// namespaces a measurement needs.
func findSandbox(program string) (measureSandbox, error) {
	const refuse = "flower runs checklist commands only inside a sandbox, and "
	if runtime.GOOS != "linux" {
		return measureSandbox{}, errors.New(refuse + "there is none on " + runtime.GOOS + " (bubblewrap is Linux's); the judge reads instead")
	}
	if program == "" {
		program = "bwrap"
	}
	bwrap, err := exec.LookPath(program)
	if err != nil {
		return measureSandbox{}, fmt.Errorf(refuse+"bubblewrap (%s) is not installed: install it (%s); the judge reads instead", program, guard.FixSandbox)
	}
	sh, errSh := exec.LookPath("sh")
	cp, errCp := exec.LookPath("cp")
	if err := errors.Join(errSh, errCp); err != nil {
		return measureSandbox{}, fmt.Errorf(refuse+"it needs sh and cp on PATH (%v): install coreutils and a shell; the judge reads instead", oneLine(err.Error(), 200))
	}
	sb := measureSandbox{bwrap: bwrap, sh: sh, cp: cp}
	probeMu.Lock()
	defer probeMu.Unlock()
	perr, seen := probeCache[bwrap]
	if !seen {
		perr = sb.probe()
		probeCache[bwrap] = perr
	}
	if perr != nil {
		return measureSandbox{}, fmt.Errorf(refuse+"%v; the judge reads instead", perr)
	}
	return sb, nil
}

// probe runs true in the sandbox a measurement gets, without a workspace.
func (sb measureSandbox) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	args := append(sb.baseArgs(false), "--", sb.sh, "-c", "true")
	cmd := exec.CommandContext(ctx, sb.bwrap, args...)
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err != nil {
		why := strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
		return fmt.Errorf("bubblewrap (%s) cannot make a sandbox here (%s): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run flower where they are allowed", sb.bwrap, oneLine(why, 160))
	}
	return nil
}

// coveredFolders are replaced by empty ones in the sandbox: what lives
// there (sockets, other runs' files, flower's temporary files) stays
// outside, and the command gets a private /tmp.
var coveredFolders = []string{"/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm"}

// baseArgs are bubblewrap's arguments before the workspace and the
// environment. Every capability is dropped: started by root, bubblewrap
// would otherwise keep them all inside, and a command could remount the
// machine writable. bubblewrap itself starts with no environment (it is
// the PID namespace's first process, whose environ is readable inside).
func (sb measureSandbox) baseArgs(network bool) []string {
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	for _, dir := range coveredFolders {
		if info, err := os.Lstat(dir); err == nil && info.IsDir() {
			args = append(args, "--tmpfs", dir)
		}
	}
	args = append(args, "--unshare-all")
	if network {
		args = append(args, "--share-net")
	}
	// The command is the namespace's first process (--as-pid-1), so
	// /proc/1 is the shell the item's command runs in, not a bubblewrap
	// that tells a test it is being measured.
	return append(args, "--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL", "--as-pid-1")
}

// under reports whether p is dir or lies inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// run measures m.Item in the sandbox and fills m.
func (sb measureSandbox) run(ctx context.Context, ws, caches string, env []string, o MeasureOptions, m *Measurement) {
	network := "no network"
	if o.Network {
		network = "network allowed"
	}
	m.Sandbox = "bubblewrap, a throwaway copy of the workspace, HOME read-only, the toolchains' caches empty and writable, " + network
	scratch, err := os.MkdirTemp("", "flower-measure-")
	if err != nil {
		m.Err, m.Sandbox = "no room for the workspace's copy ("+oneLine(err.Error(), 160)+")", "not run"
		return
	}
	defer removeAll(scratch)
	work := filepath.Join(scratch, "ws")
	if err := sb.copyWorkspace(ctx, ws, work, o.Timeout); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			m.Err, m.Sandbox = "stopped: flower was stopped while it copied the workspace ("+cerr.Error()+")", "not run"
			return
		}
		m.Hidden = err.Error()
		return
	}

	args := sb.baseArgs(o.Network)
	home := envValue(env, "HOME")
	// HOME lives on in the sandbox read-only; one under a covered folder
	// is bound again over the empty one.
	if home != "" && filepath.IsAbs(home) {
		if real, err := filepath.EvalSymlinks(home); err == nil {
			for _, dir := range coveredFolders {
				if under(real, dir) {
					args = append(args, "--ro-bind", real, real)
					break
				}
			}
		}
	}
	args = append(args, "--bind", work, ws, "--bind", caches, cachesIn)
	for _, p := range guard.CredentialPlaces() {
		info, err := os.Stat(p)
		switch {
		case err != nil:
		case info.IsDir():
			args = append(args, "--tmpfs", p)
		default:
			args = append(args, "--ro-bind", "/dev/null", p)
		}
	}
	args = append(args, "--info-fd", "3")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--chdir", ws, "--", sb.sh, "-c", m.Item.Command)

	outR, outW, err := os.Pipe()
	if err != nil {
		m.Err, m.Sandbox = oneLine(err.Error(), 160), "not run"
		return
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		m.Err, m.Sandbox = oneLine(err.Error(), 160), "not run"
		return
	}
	defer infoR.Close()
	cmd := exec.Command(sb.bwrap, args...)
	cmd.Env = []string{}
	cmd.Dir = scratch
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.ExtraFiles = []*os.File{infoW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	start := time.Now()
	err = cmd.Start()
	outW.Close()
	infoW.Close()
	if err != nil {
		outR.Close()
		m.Err, m.Sandbox = "bubblewrap could not start ("+oneLine(err.Error(), 160)+")", "not run"
		return
	}
	kept := newHeadTail(o.OutputBytes)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(kept, outR)
	}()
	info := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(infoR, 4096))
		info <- b
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	limit := time.NewTimer(o.Timeout)
	defer limit.Stop()
	var stopped error
	select {
	case err = <-exited:
	case <-limit.C:
		m.TimedOut = true
	case <-ctx.Done():
		stopped = ctx.Err()
	}
	if m.TimedOut || stopped != nil {
		// bubblewrap is the group's leader; its death kills the PID
		// namespace's first process (--die-with-parent), and with it
		// everything the command started.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-exited
	}
	m.Duration = time.Since(start)
	select {
	case <-copied:
	case <-time.After(outputGrace):
		outR.Close() // something still holds the pipe: stop reading
		<-copied
	}
	outR.Close()
	m.Head, m.Tail, m.Bytes = kept.result()

	var started []byte
	select {
	case started = <-info:
	case <-time.After(outputGrace):
	}
	switch {
	case stopped != nil:
		m.Exit, m.Err = -1, "stopped: flower was stopped while the command ran ("+stopped.Error()+")"
	case m.TimedOut:
		m.Exit = -1
	case !strings.Contains(string(started), "child-pid"):
		// bubblewrap failed before the command started: what it said is
		// the reason, not the command's output.
		m.Exit = -1
		m.Err = "bubblewrap could not make the command's sandbox (" + oneLine(m.Head+m.Tail, 200) + ")"
		m.Sandbox, m.Head, m.Tail, m.Bytes = "not run", "", "", 0
	default:
		var exit *exec.ExitError
		switch {
		case err == nil:
			m.Exit = 0
		case errors.As(err, &exit):
			m.Exit = exit.ExitCode()
		default:
			m.Exit, m.Err = -1, "the command's end could not be read ("+oneLine(err.Error(), 160)+")"
		}
		if m.Exit != 0 {
			m.Environment = environmentOf(m.Head + "\n" + m.Tail)
		}
	}
}

// copyWorkspace copies ws to dst as it is, bounded by limit: links as
// links, modes and times kept (make compares times), owned by whoever
// measures (a root measurement without capabilities could not write
// another user's files otherwise), on the same blocks where the file
// system can share them.
func (sb measureSandbox) copyWorkspace(ctx context.Context, ws, dst string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, sb.cp, "-a", "--no-preserve=ownership", "--reflink=auto", ws+"/.", dst)
	cmd.WaitDelay = outputGrace
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("the copy was stopped or took longer than %s", limit)
		}
		why := strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
		return errors.New(oneLine(why, 200))
	}
	return nil
}

// removeAll removes a measurement's scratch folder, making folders a
// command left read-only (Go's module cache does) writable first.
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

// headTail keeps the first n bytes written and the last n after them, and
// counts them all: a command that prints a gigabyte costs 2n bytes.
type headTail struct {
	n     int
	head  []byte
	ring  []byte
	pos   int // where the ring's next byte goes
	full  bool
	total int64
}

func newHeadTail(n int) *headTail { return &headTail{n: n} }

func (h *headTail) Write(p []byte) (int, error) {
	h.total += int64(len(p))
	written := len(p)
	if room := h.n - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return written, nil
	}
	if h.ring == nil {
		h.ring = make([]byte, h.n)
	}
	if len(p) >= h.n {
		copy(h.ring, p[len(p)-h.n:])
		h.pos, h.full = 0, true
		return written, nil
	}
	k := copy(h.ring[h.pos:], p)
	if k < len(p) {
		copy(h.ring, p[k:])
		h.full = true
	}
	h.pos = (h.pos + len(p)) % h.n
	if h.pos == 0 && len(p) > 0 {
		h.full = true
	}
	return written, nil
}

func (h *headTail) result() (head, tail string, total int64) {
	if !h.full {
		return string(h.head), string(h.ring[:h.pos]), h.total
	}
	return string(h.head), string(h.ring[h.pos:]) + string(h.ring[:h.pos]), h.total
}

// passedEnv are the variables a command gets from flower's environment
// (when set, and when neither their name nor their value looks like a
// secret): what finds programs, caches and the language, nothing more.
var passedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE",
	"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
	"GOFLAGS", "GOPATH", "GOROOT", "GOCACHE", "GOMODCACHE", "GOENV", "GOTOOLCHAIN", "GO111MODULE",
	"GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "GONOSUMCHECK", "GOSUMDB", "GOINSECURE", "CGO_ENABLED",
	"npm_config_cache", "NPM_CONFIG_CACHE", "NODE_PATH",
	"PIP_CACHE_DIR", "PIP_INDEX_URL", "PIP_NO_INDEX", "PYTHONPATH", "VIRTUAL_ENV",
	"CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME",
}

var (
	// secretName is a variable whose name says it holds a credential.
	secretName = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSW|_KEY|APIKEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE_KEY)`)
	// secretValue is a value carrying one: a URL with a user and
	// password (a proxy or an index with its login in it).
	secretValue = regexp.MustCompile(`://[^/\s@]*:[^/\s@]*@`)
)

// flowersOwn reports whether k is one of flower's own secrets, which no
// command gets, not even when a caller names it.
func flowersOwn(k string) bool {
	return slices.Contains(claude.SecretEnv, k) || strings.HasPrefix(k, "FLOWER_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "CLAUDE_")
}

// measureEnv is a command's whole environment: passedEnv from base,
// scrubbed; TERM=dumb, TMPDIR=/tmp (the sandbox's private one), a PATH,
// HOME and LANG when base has none; then extra, less flower's own
// secrets. One KEY=VALUE per variable, sorted.
func measureEnv(base, extra []string) []string {
	vars := map[string]string{}
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !slices.Contains(passedEnv, k) || secretName.MatchString(k) || secretValue.MatchString(v) {
			continue
		}
		vars[k] = v
	}
	if vars["PATH"] == "" {
		vars["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	if vars["HOME"] == "" {
		if home, err := os.UserHomeDir(); err == nil {
			vars["HOME"] = home
		}
	}
	if vars["LANG"] == "" {
		vars["LANG"] = "C.UTF-8"
	}
	vars["TERM"], vars["TMPDIR"] = "dumb", "/tmp"
	for _, kv := range extra {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || flowersOwn(k) {
			continue
		}
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// environmentSigns are what tools print when they failed for want of the
// network, or of a dependency missing from a cache that nothing could
// fill, read from the command's output. A match names the failure's
// cause; the exit status stands and the judge is told both.
var environmentSigns = []struct {
	kind string
	sign *regexp.Regexp
}{
	{"network", regexp.MustCompile(`(?i)could not resolve host|temporary failure in name resolution|network is unreachable|dial tcp: lookup |dial udp: lookup |getaddrinfo (ENOTFOUND|EAI_AGAIN)|\bEAI_AGAIN\b|npm (ERR!|error) (code ENOTFOUND|network)|Failed to establish a new connection|NewConnectionError|ProxyError|Could not fetch URL .*connection`)},
	// HOME is read-only in the sandbox, so a module or package missing
	// from its cache cannot be fetched into it: Go and npm then fail on
	// the cache folder itself.
	{"cache", regexp.MustCompile(`(?i)module lookup disabled by GOPROXY=off|pkg/mod/cache/download/\S*: read-only file system|npm (ERR!|error) code ENOTCACHED|EROFS(?s:.{0,400})\.npm/_cacache|attempting to make an HTTP request, but --offline was specified`)},
}

// environmentOf is the environment a failing command's output shows it
// wanted: "network", "cache" or "".
func environmentOf(output string) string {
	for _, s := range environmentSigns {
		if s.sign.MatchString(output) {
			return s.kind
		}
	}
	return ""
}

// oneLine is s on one line, at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "?")), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// MaxRenderedMeasurements bounds RenderMeasurements' text in bytes: the
// judge's prompt holds it whatever the commands printed and however many
// items there are.
const MaxRenderedMeasurements = 16 << 10

const (
	maxRenderedText    = 300 // an item's text, in bytes
	maxRenderedCommand = 600 // a command, in bytes
	minRenderedOutput  = 200 // below this an output block is left out
)

// RenderMeasurements is the measurements as the judge is shown them,
// marked as measured by flower, in lang: each item's id, its command, its
// exit status (or that it timed out, or was not run and why), a failure for
// want of the network or a cache said as such, and the head and tail of
// its output in a fence longer than any backtick run inside. At most
// MaxRenderedMeasurements bytes: the outputs share what the headings
// leave, and items beyond even that are named at the end. "" when there
// is no measurement.
func RenderMeasurements(ms []Measurement, lang doc.Lang) string {
	if len(ms) == 0 {
		return ""
	}
	t := measureTexts(lang)
	var head strings.Builder
	head.WriteString(t.title + "\n\n" + t.intro + "\n")
	if s := commonSandbox(ms); s != "" {
		fmt.Fprintf(&head, "\n"+t.sandbox+"\n", s)
	}
	perItem := commonSandbox(ms) == ""
	heads := make([]string, len(ms))
	for i, m := range ms {
		heads[i] = renderMeasurementHead(m, t, perItem)
	}
	// Each item costs its heading and, at the least, the line saying its
	// output was left out; as many items as that allows are shown, and
	// their outputs share what is left.
	const footRoom = 600 // the line naming the items left out
	room := MaxRenderedMeasurements - head.Len() - footRoom
	shown := 0
	for i, h := range heads {
		cost := len(h) + 1 + len(fmt.Sprintf(t.outputLeftOut, ms[i].Bytes)) + 1
		if room < cost {
			break
		}
		room -= cost
		shown++
	}
	withOutput := 0
	for _, m := range ms[:shown] {
		if m.Bytes > 0 && m.Err == "" {
			withOutput++
		}
	}
	per := 0
	if withOutput > 0 {
		per = room / withOutput
	}
	var b strings.Builder
	b.WriteString(head.String())
	for i, m := range ms[:shown] {
		b.WriteString("\n" + heads[i])
		switch {
		case m.Err != "" || m.Hidden != "":
		case m.Bytes == 0:
			b.WriteString(t.noOutput + "\n")
		default:
			b.WriteString(renderOutput(m, per+len(fmt.Sprintf(t.outputLeftOut, m.Bytes))+1, t))
		}
	}
	if shown < len(ms) {
		ids := make([]string, 0, len(ms)-shown)
		for _, m := range ms[shown:] {
			ids = append(ids, m.Item.ID)
		}
		b.WriteString("\n" + fmt.Sprintf(t.leftOut, len(ms)-shown, idList(ids, footRoom-200)) + "\n")
	}
	return b.String()
}

// idList is ids joined by commas within n bytes: the first and the last
// ones, with an ellipsis between when they do not all fit.
func idList(ids []string, n int) string {
	all := strings.Join(ids, ", ")
	if len(all) <= n {
		return all
	}
	var first, last []string
	size := len(" … ")
	for i, j := 0, len(ids)-1; i <= j; i, j = i+1, j-1 {
		if size+len(ids[i])+2 > n {
			break
		}
		size += len(ids[i]) + 2
		first = append(first, clipBytes(ids[i], 40))
		if i == j || size+len(ids[j])+2 > n {
			break
		}
		size += len(ids[j]) + 2
		last = append([]string{clipBytes(ids[j], 40)}, last...)
	}
	return strings.Join(first, ", ") + " … " + strings.Join(last, ", ")
}

// commonSandbox is the Sandbox every measurement that ran shares, "" when
// they differ.
func commonSandbox(ms []Measurement) string {
	s := ""
	for _, m := range ms {
		if m.Err != "" {
			continue
		}
		if s != "" && m.Sandbox != s {
			return ""
		}
		s = m.Sandbox
	}
	return s
}

// renderMeasurementHead is an item's heading, command and status.
func renderMeasurementHead(m Measurement, t measureText, sandbox bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### [%s] %s\n\n", m.Item.ID, clipBytes(oneLine(m.Item.Text, maxRenderedText), maxRenderedText))
	cmd := clipBytes(m.Item.Command, maxRenderedCommand)
	f := fenceFor(cmd)
	b.WriteString(t.command + "\n" + f + "sh\n" + cmd + "\n" + f + "\n")
	b.WriteString(m.status(t) + "\n")
	if sandbox && m.Err == "" {
		fmt.Fprintf(&b, t.sandbox+"\n", m.Sandbox)
	}
	return b.String()
}

// renderOutput is the output's head and tail in a fence, within room bytes
// (the fence and the line saying how much there was counted in).
func renderOutput(m Measurement, room int, t measureText) string {
	label := fmt.Sprintf(t.output, m.Bytes)
	body := m.Head + m.Tail
	whole := int64(len(m.Head)+len(m.Tail)) == m.Bytes
	if !whole {
		body = m.Head + "\n" + fmt.Sprintf(t.middle, m.Bytes-int64(len(m.Head)+len(m.Tail))) + "\n" + m.Tail
	}
	budget := room - len(label) - 2*16 - 8 // two fences and the newlines
	if budget < minRenderedOutput {
		return fmt.Sprintf(t.outputLeftOut, m.Bytes) + "\n"
	}
	if len(body) > budget {
		half := (budget - 64) / 2
		cut := len(body) - 2*half
		body = clipBytes(body[:half], half) + "\n" + fmt.Sprintf(t.middle, int64(cut)) + "\n" + tailBytes(body[len(body)-half:], half)
	}
	body = printable(body)
	f := fenceFor(body)
	return label + "\n" + f + "\n" + strings.TrimRight(body, "\n") + "\n" + f + "\n"
}

// fenceFor is a backtick fence longer than any run of backticks in s.
func fenceFor(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// printable is s as valid UTF-8 with no control characters but newlines
// and tabs (a terminal's escape sequences, carriage returns and NULs read
// as noise, and could hide a line).
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// clipBytes is s's first n bytes at most, ending on a whole rune.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// tailBytes is s's last n bytes at most, starting on a whole rune.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// measureText is RenderMeasurements' words in one language.
type measureText struct {
	title, intro, sandbox, command          string
	exit, exitEnv, wantNetwork, wantCache   string
	timedOut, notRun, hidden                string
	output, middle, outputLeftOut, noOutput string
	leftOut                                 string
}

func measureTexts(lang doc.Lang) measureText {
	if lang.IsChinese() {
		return measureText{
			title: "## flower 亲自测量的结果",
			intro: "下列清单命令由 flower 在这一轮结束后亲自在沙箱里运行(工作区为本轮结束时的样子,写入落在一次性的副本上)。" +
				"这些是证据;工作者自己写下的文件(日志、报告、产物)只是它的说法,不是证据。",
			sandbox:       "沙箱:%s。",
			command:       "命令:",
			exit:          "退出码:%d(用时 %s)。",
			exitEnv:       "退出码:%d(用时 %s)——未通过。它的输出看起来像是%s;那是命令自己的输出,不是 flower 的发现,不能为这一项开脱。",
			wantNetwork:   "缺少网络(--check-network 让 flower 的实测联网)",
			wantCache:     "本地缓存缺少依赖(且无法下载)",
			hidden:        "未通过:无法为该命令复制工作区(%s)。工作对 flower 的实测藏起的东西,令这一项不通过。",
			timedOut:      "超时:运行 %s 后被终止,连同它启动的一切。",
			notRun:        "未运行:%s。此项请通过阅读文件来判断。",
			output:        "输出(共 %d 字节,开头与结尾):",
			middle:        "[……中间省略 %d 字节……]",
			outputLeftOut: "输出共 %d 字节,因篇幅所限未列出。",
			noOutput:      "没有输出。",
			leftOut:       "另有 %d 项测量因篇幅所限未列出:%s。",
		}
	}
	return measureText{
		title: "## Measured by flower",
		intro: "flower ran each checklist command below itself after the round, in a sandbox (the workspace as the round left it; its writes went to a throwaway copy). " +
			"These results are evidence; files the worker wrote (logs, reports, artifacts) are its claims, not evidence.",
		sandbox:       "Sandbox: %s.",
		command:       "Command:",
		exit:          "Exit status: %d (in %s).",
		exitEnv:       "Exit status: %d (in %s) — a failure. Its output reads like %s; that is the command's own output, not flower's finding, and it does not excuse the item.",
		wantNetwork:   "a want of the network (--check-network lets flower's measurement use it)",
		wantCache:     "a want of a dependency missing from the local cache (nothing could download it)",
		hidden:        "Failed: the workspace could not be copied for the command (%s). What the work keeps from flower's measurement fails its item.",
		timedOut:      "Timed out: killed after %s, with everything it started.",
		notRun:        "Not run: %s. Judge this item by reading files.",
		output:        "Output (%d bytes in all, head and tail):",
		middle:        "[… %d bytes left out …]",
		outputLeftOut: "Output: %d bytes, left out for room.",
		noOutput:      "No output.",
		leftOut:       "%d more measurements are left out for room: %s.",
	}
}

// status is the measurement's outcome in one sentence: exit status, time
// limit, a failure for want of the network or a cache, or why it did not
// run.
func (m Measurement) status(t measureText) string {
	secs := m.Duration.Round(10 * time.Millisecond)
	switch {
	case m.Err != "":
		return fmt.Sprintf(t.notRun, oneLine(m.Err, 300))
	case m.Hidden != "":
		return fmt.Sprintf(t.hidden, oneLine(m.Hidden, 300))
	case m.TimedOut:
		return fmt.Sprintf(t.timedOut, secs)
	case m.Environment != "":
		why := t.wantNetwork
		if m.Environment == "cache" {
			why = t.wantCache
		}
		return fmt.Sprintf(t.exitEnv, m.Exit, secs, why)
	}
	return fmt.Sprintf(t.exit, m.Exit, secs)
}

// Outcome is the measurement's outcome in one sentence, in lang, as the
// judge is shown it.
func (m Measurement) Outcome(lang doc.Lang) string { return m.status(measureTexts(lang)) }
