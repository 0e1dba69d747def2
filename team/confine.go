package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/flowerrun/flower/guard"
)

// confinement is how a worker fences its runs in: bubblewrap, which the
// worker starts around each run's process, or nothing (Unconfined).
type confinement struct {
	bwrap string // "" when runs are not confined
}

// detectConfinement finds bubblewrap and checks it can make namespaces
// here; a worker refuses to start without it unless told to run its runs
// unconfined.
func detectConfinement(unconfined bool) (confinement, error) {
	if unconfined {
		return confinement{}, nil
	}
	s := guard.DetectSandbox()
	if !s.Active() {
		fix := s.Fix
		if fix == "" {
			fix = "run workers on Linux with bubblewrap"
		}
		return confinement{}, fmt.Errorf("%w: a run is confined to its own folders by bubblewrap, and %s (fix: %s; or start the worker with --unconfined, and each run's processes can read whatever this user can: the worker's folders, other runs', this HOME)",
			ErrUnconfined, strings.TrimSuffix(s.Problem, ": glances rely on flower's parser alone"), fix)
	}
	return confinement{bwrap: s.Program}, nil
}

// ErrUnconfined: the worker cannot confine its runs.
var ErrUnconfined = errors.New("team: runs cannot be confined here")

// confined is cmd run inside bubblewrap, where the run's processes see
// the machine read-only and, of what is private, only their own folders:
// the worker's folder (other runs, their checkouts, transcripts and
// questions), this user's HOME, /root, /home, /tmp and /run (sockets,
// other processes' files) are empty; the checkout's .git is read-only
// (what git runs from a repository's config runs in the worker, which
// commits and pushes); its own PID namespace shows no process but the
// run's (no other environment, no command line); no capability, as root
// too. The network stays: the model's API is reached through the
// worker's proxy on 127.0.0.1. The returned file gives the process's own
// PID once it has started (bubblewrap's --info-fd).
func (c confinement) confined(cmd *exec.Cmd, rw []string, ro []string, hide []string) (*exec.Cmd, *os.File, error) {
	if c.bwrap == "" {
		return cmd, nil, nil
	}
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	hidden := []string{"/tmp", "/var/tmp", "/run", "/root", "/home"}
	hidden = append(hidden, hide...)
	// A folder is hidden before what lies in it is bound again: shorter
	// paths first.
	slices.SortFunc(hidden, func(a, b string) int { return len(a) - len(b) })
	for _, h := range slices.Compact(hidden) {
		if h == "/" {
			continue
		}
		if fi, err := os.Lstat(h); err == nil && fi.IsDir() {
			args = append(args, "--tmpfs", h)
		}
	}
	for _, p := range rw {
		args = append(args, "--bind", p, p)
	}
	for _, p := range ro {
		if _, err := os.Stat(p); err == nil {
			args = append(args, "--ro-bind", p, p)
		}
	}
	args = append(args, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--as-pid-1", "--die-with-parent", "--cap-drop", "ALL", "--info-fd", "3", "--chdir", cmd.Dir, "--")
	args = append(args, cmd.Path)
	args = append(args, cmd.Args[1:]...)
	info, infoW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	out := exec.Command(c.bwrap, args...)
	out.Dir, out.Env, out.Stdin, out.Stdout, out.Stderr, out.SysProcAttr = cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr
	out.ExtraFiles = []*os.File{infoW}
	return out, info, nil
}

// sandboxPID reads the PID (in the worker's namespace) of the process
// bubblewrap started, which is the one to signal: bubblewrap itself dies
// of a SIGINT and takes the run with it, unsaved. 0 when it cannot tell.
func sandboxPID(info *os.File, wait time.Duration) int {
	if info == nil {
		return 0
	}
	defer info.Close()
	got := make(chan int, 1)
	go func() {
		var v struct {
			ChildPID int `json:"child-pid"`
		}
		b, _ := io.ReadAll(io.LimitReader(info, 4096))
		_ = json.Unmarshal(b, &v)
		got <- v.ChildPID
	}()
	select {
	case pid := <-got:
		return pid
	case <-time.After(wait):
		return 0
	}
}

// interrupt asks the run's process to stop as Ctrl-C does.
func (a *attempt) interrupt(cmd *exec.Cmd) {
	if a.pid > 0 {
		_ = syscall.Kill(a.pid, syscall.SIGINT)
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
}

// confinedPaths are the folders a run's process may write and read, and
// those it may only read (the checkout's .git, the programs it runs), and
// what the worker hides beyond the usual: its own folder and HOME.
func (a *attempt) confinedPaths(tmp string) (rw, ro, hide []string) {
	w := a.w
	rw = []string{a.checkout, a.home, a.state, tmp}
	ro = []string{filepath.Join(a.checkout, ".git"), w.o.Flower}
	for _, kv := range w.o.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "FLOWER_CLAUDE" && v != "":
			ro = append(ro, v)
		case k == "XDG_CACHE_HOME" && v != "":
			ro = append(ro, filepath.Join(v, "flower"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		hide = append(hide, home)
		ro = append(ro, filepath.Join(home, ".cache", "flower"))
	}
	hide = append(hide, w.o.Dir)
	return rw, ro, hide
}
