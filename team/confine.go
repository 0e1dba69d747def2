package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowerrun/flower/guard"
)

// confinement is how a worker fences its runs in: bubblewrap, which the
// worker starts around each run's process, or nothing (Unconfined).
type confinement struct {
	bwrap string // "" when runs are not confined
	// setpriv drops root to the run's own user (user) between
	// bubblewrap's two stages when the worker is root ("" otherwise).
	setpriv string
	user    *runUser // a root worker's run's (withRunUser)
	// apiSocket, when set, gives each run a network of its own with
	// nothing in it but its loopback: the host's loopback ports, abstract
	// sockets, the metrics, the dashboard and the database are out of
	// reach, and the model's API is reached through the worker's proxy on
	// this unix socket, bound in (see flower.APISocketEnv).
	apiSocket string
}

// withRunUser is the confinement of one run: a root worker's runs each
// run as a user of their own (takeRunUser): an ordinary user, so that
// nothing of root's (capabilities, files only root may write) is theirs,
// and so that the glance sandbox can nest inside the run's (a bubblewrap
// started by root makes mounts an unprivileged one beneath it may not
// cover; started by an ordinary user it nests). A worker run as an
// ordinary user runs its runs as itself. release gives the user back.
func (c confinement) withRunUser() (confinement, error) {
	if c.setpriv == "" {
		return c, nil
	}
	u, err := takeRunUser()
	if err != nil {
		return c, err
	}
	c.user = u
	return c, nil
}

func (c confinement) release() { c.user.release() }

// uid is the user a run's processes run as, when the worker changes it.
func (c confinement) uid() (int, error) {
	if c.user == nil {
		return 0, errors.New("team: a root worker's run has no user of its own (withRunUser)")
	}
	return c.user.uid, nil
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
	c := confinement{bwrap: s.Program}
	if os.Geteuid() == 0 {
		var err error
		if c.setpriv, err = exec.LookPath("setpriv"); err != nil {
			return confinement{}, fmt.Errorf("%w: a root worker runs its runs as an ordinary user with setpriv (util-linux), which is not on PATH: install util-linux, or run the worker as an ordinary user", ErrUnconfined)
		}
	}
	return c, nil
}

// ErrUnconfined: the worker cannot confine its runs.
var ErrUnconfined = errors.New("team: runs cannot be confined here")

// confined is cmd run inside bubblewrap, where the run's processes see of
// the machine only what is listed (mountPlan.system: its programs and
// libraries, and of /etc what programs read), read-only, and their own
// folders: the worker's folder (other runs, their checkouts, transcripts
// and questions), this user's HOME, /root, /home, /tmp and /run (sockets,
// other processes' files) are empty, and what is not listed (/var, /srv,
// /opt, the rest of /etc) is not there; the checkout's .git is read-only
// (what git runs from a repository's config runs in the worker, which
// commits and pushes); its own PID namespace shows no process but the
// run's (no other environment, no command line); no capability, as root
// too. With an API socket the run has a network of its own, empty (see
// apiSocket); without one (a worker without a key to proxy) the network
// stays. The returned file gives the process's own PID once it has
// started (bubblewrap's --info-fd).
func (c confinement) confined(cmd *exec.Cmd, rw []string, ro []string, hide []string) (*exec.Cmd, *os.File, error) {
	if c.bwrap == "" {
		return cmd, nil, nil
	}
	plan := newMountPlan()
	plan.system("/")
	if c.user != nil {
		plan.mount("--ro-bind", c.user.passwd, "/etc/passwd")
		plan.mount("--ro-bind", c.user.group, "/etc/group")
	}
	plan.mount("--dev", "/dev")
	if c.apiSocket != "" {
		ro = append(slices.Clone(ro), c.apiSocket)
	}
	// Empty, as programs expect them; with HOME's and the worker's
	// folder (hide) emptied too where a listed folder shows them. A
	// folder is emptied before what lies in it is bound again: shorter
	// paths first.
	emptied := []string{"/tmp", "/var/tmp", "/run", "/root", "/home"}
	for _, h := range hide {
		if fi, err := os.Lstat(h); err == nil && fi.IsDir() && plan.there(h) {
			emptied = append(emptied, h)
		}
	}
	slices.SortFunc(emptied, func(a, b string) int { return len(a) - len(b) })
	for _, h := range slices.Compact(emptied) {
		plan.mount("--tmpfs", h)
	}
	for i, p := range append(slices.Clone(rw), ro...) {
		if i >= len(rw) {
			if _, err := os.Stat(p); err != nil {
				continue
			}
			plan.mount("--ro-bind", p, p)
			continue
		}
		plan.mount("--bind", p, p)
	}
	mounts := plan.args
	// The root bubblewrap made, which holds the folders bound, is read
	// only once made: nothing the run writes lands beside them.
	const rootReadOnly = "--remount-ro"
	// The run's own PID namespace (no other process, environment or
	// command line), no capability, gone with the worker.
	isolate := []string{"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"}
	if c.apiSocket != "" {
		isolate = append(isolate, "--unshare-net")
	}
	isolate = append(isolate,
		"--as-pid-1", "--die-with-parent", "--cap-drop", "ALL", "--info-fd", "3", "--chdir", cmd.Dir, "--", cmd.Path)
	var args []string
	if c.setpriv == "" {
		args = append(append(append(mounts, "--proc", "/proc", rootReadOnly, "/"), isolate...), cmd.Args[1:]...)
	} else {
		// Root: the first stage (root's) makes the mounts and keeps the
		// machine's /proc writable for the second, which setpriv starts
		// as runUID: it makes the namespaces and its own /proc.
		// setpriv's change of user clears the parent-death signal, which
		// left the second stage waiting forever when the worker died
		// while it started (the chaos test found one): --pdeathsig sets
		// it again, so the second stage dies with the first.
		uid, err := c.uid()
		if err != nil {
			return nil, nil, err
		}
		args = append(mounts, "--bind", "/proc", "/proc", rootReadOnly, "/", "--die-with-parent", "--",
			c.setpriv, "--pdeathsig", "KILL", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(uid), "--clear-groups",
			"--inh-caps=-all", "--bounding-set=-all", "--",
			c.bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
		args = append(append(args, isolate...), cmd.Args[1:]...)
	}
	info, infoW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	out := exec.Command(c.bwrap, args...)
	out.Dir, out.Env, out.Stdin, out.Stdout, out.Stderr, out.SysProcAttr = cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.SysProcAttr
	out.ExtraFiles = []*os.File{infoW}
	return out, info, nil
}

// handOver gives the run's user (its own, when the worker is root) what
// the worker wrote in the run's folders: the checkout it cloned, the
// state it laid out, the replies it delivered.
func (c confinement) handOver(paths ...string) error {
	if c.setpriv == "" {
		return nil
	}
	uid, err := c.uid()
	if err != nil {
		return err
	}
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			return os.Lchown(path, uid, uid)
		})
		if err != nil {
			return fmt.Errorf("giving the run's folder %s to its user %d: %w", p, uid, err)
		}
	}
	return nil
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
	rw, ro, hide = a.w.confinedPaths(a.w.cliPath(), a.home, tmp)
	rw = append([]string{a.checkout, a.state}, rw...)
	ro = append([]string{filepath.Join(a.checkout, ".git")}, ro...)
	return rw, ro, hide
}

// confinedPaths are what any process of this worker's runs sees beyond
// the machine's listed system folders (mountPlan.system): its HOME and temp folder
// (written), flower and the CLI with what it needs, the operator's
// --readable paths (read), and what is hidden beyond the usual.
func (w *Worker) confinedPaths(cli, home, tmp string) (rw, ro, hide []string) {
	rw = []string{home, tmp}
	ro = append([]string{w.o.Flower}, cliPaths(cli)...)
	ro = append(ro, w.o.Readable...)
	for _, kv := range w.o.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "XDG_CACHE_HOME" && v != "" {
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

// cliPaths are what the CLI at path needs to start: the path as given,
// the file it resolves to (a symlink into a folder the run does not see:
// ~/.local/bin/claude), and, where that file lies in an npm package (a
// package.json beside it), the package's folder (cli.js's vendor/).
func cliPaths(path string) []string {
	if path == "" {
		return nil
	}
	paths := []string{path}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return paths
	}
	if real != path {
		paths = append(paths, real)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(real), "package.json")); err == nil {
		paths = append(paths, filepath.Dir(real))
	}
	return paths
}

// runProcAttr starts a run's process (or the probe of its CLI) in a
// session of its own, which is its own process group too: stopped as one
// (a signal to the group), killed with the worker, and without the
// worker's controlling terminal, so that nothing the run starts can open
// /dev/tty or type into the operator's shell (TIOCSTI).
func runProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
