package team

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/riverqueue/river"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/cliinstall"
)

// A worker checks its own environment before it takes a run: a worker
// that cannot make a run's folders, start flower or the CLI, or reach the
// model would only fail the run, count that failure against it and, after
// a few such seconds, park runs that any healthy worker would have
// finished. Such a worker takes no run: it hands the job straight back
// (River's snooze, which counts no attempt), says once what is broken and
// how to fix it, marks its row in team_workers "broken: ...", and stops
// fetching until a recheck passes.
//
// Stopping the fetching is done by removing the runs' queue from this
// worker's River client (QueueBundle.Remove) and adding it back once the
// environment is whole again. River's QueuePause is not used: it pauses the
// queue in the database, for every worker of the team, so one broken
// machine would stop them all. Merely snoozing each job handed over would
// keep this worker competing for every queued run, taking each from the
// healthy workers for a moment, over and over.

// minFreeDisk is the free space a worker's --dir needs to take a run: a
// checkout, the CLI's transcripts and the logs of one run, with room to
// spare. Below it a run would fail halfway, or fill the disk for the runs
// in flight.
const minFreeDisk = 100 << 20 // 100 MiB

// envProblem is what is wrong with a worker's own environment, and what to
// do about it, in the worker's language.
type envProblem struct {
	what, fix string
}

func (p *envProblem) String() string { return p.what }

// healthState is what a worker knows of its own environment.
type healthState struct {
	mu sync.Mutex
	// broken is the problem that keeps the worker from taking runs; nil
	// while it takes them.
	broken *envProblem

	// fetchMu serialises taking the queue off and putting it back on this
	// worker's River client; paused says it is off.
	fetchMu sync.Mutex
	paused  bool

	// cli is the CLI the runs use, and cliStarted names the file (see
	// identify) that last started inside a run's confinement.
	cli, cliStarted string
}

// healthTexts are the worker's words about its environment, in Chinese
// and in English (as app's texts are).
var healthTexts = map[string][2]string{
	"dirMake":  {"--dir %s 建不出来(%v)", "its --dir %s cannot be made (%v)"},
	"dirWrite": {"--dir %s 写不进去(%v)", "its --dir %s cannot be written (%v)"},
	"dirFixWrite": {"给 --dir 换一个这个 worker 的用户(uid %d)能写、所在磁盘不是只读的目录,或者把这个目录改成它能写",
		"give --dir a folder that this worker's user (uid %d) can write on a disk that is not read-only, or make this one so"},
	"dirFull":    {"--dir %s 所在的磁盘只剩 %s,一个运行至少要 %s", "its --dir %s has %s free on its disk, and a run needs at least %s"},
	"dirFixFull": {"清出磁盘空间,或者给 --dir 换到有空间的磁盘上", "free space on that disk, or give --dir a folder on a disk with room"},
	"flower":     {"运行要用的 flower 程序 %s 启动不了(%s)", "the flower program its runs start, %s, cannot be run (%s)"},
	"flowerFix":  {"重新安装 flower,再重启这个 worker", "reinstall flower and restart this worker"},
	"cliBad":     {"FLOWER_CLAUDE=%s 不是可执行文件,运行找不到 Claude Code CLI", "FLOWER_CLAUDE=%s is not an executable file, so its runs have no Claude Code CLI"},
	"cliNone": {"运行找不到 Claude Code CLI:没设 FLOWER_CLAUDE,%s 里没有固定版本,PATH 上也没有 claude",
		"its runs find no Claude Code CLI: FLOWER_CLAUDE is not set, %s holds no pinned copy, and no claude is on PATH"},
	"cliConfined": {"Claude Code CLI %s 在运行的隔离环境里启动不了(%s):运行只看到这台机器的系统目录(/usr、/bin、/lib、/etc 里程序要读的文件),而且只读,/tmp、/var/tmp、/run、/root、/home 都是空的;flower 只让运行看到 CLI 本身的文件和它的包目录,看不到包装脚本再去调用的东西",
		"the Claude Code CLI %s does not start inside a run's confinement (%s): a run sees of the machine only its system folders (/usr, /bin, /lib, what programs read of /etc), read-only, with /tmp, /var/tmp, /run, /root and /home empty, and of the CLI only its own file and package folder, not what a wrapper script runs"},
	"cliConfinedFix": {"把 CLI 装到这些目录以外(例如 npm install -g),或者让 FLOWER_CLAUDE 直接指向 claude 程序本身;如果它确实需要别处的文件,用 --readable PATH 把那个文件或目录列出来,再重启这个 worker",
		"install the CLI outside those folders (npm install -g, for one) or point FLOWER_CLAUDE at the claude binary itself; if it needs files elsewhere, name each with --readable PATH and restart this worker"},
	"cliOther": {"运行找不到 Claude Code CLI(%v)", "its runs find no Claude Code CLI (%v)"},
	"cliFix": {"把 claude 放回 FLOWER_CLAUDE 指的地方,或者用 FLOWER_CLAUDE=/path/to/claude(或 PATH 上有 claude)重启这个 worker",
		"put claude back where FLOWER_CLAUDE points, or restart this worker with FLOWER_CLAUDE=/path/to/claude (or claude on its PATH)"},
	"creds": {"运行没有模型的凭据:worker 的环境里和 %s 里都没有 ANTHROPIC_API_KEY 或 ANTHROPIC_AUTH_TOKEN",
		"its runs have no credentials for the model: neither its environment nor %s holds ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"},
	"credsFix": {"在 worker 的环境里或它的 .env(flower setup)里设 ANTHROPIC_API_KEY(或 ANTHROPIC_AUTH_TOKEN),再重启这个 worker",
		"set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the worker's environment or its .env (flower setup) and restart this worker"},
	"broken": {"flower worker %s 接不了运行:%s。解决:%s。在那之前它一个运行也不接(运行留在队列里给别的 worker),每 %s 再查一次。",
		"flower worker %s cannot take runs: %s. To fix: %s. Until then it takes no run (runs stay queued for other workers) and checks again every %s."},
	"dbDown":  {"连不上数据库(%s)", "the database cannot be reached (%s)"},
	"runNote": {"worker %s 接不了运行:%s", "worker %s cannot take runs: %s"},
	"healed":  {"flower worker %s 又接运行了:它的环境好了", "flower worker %s takes runs again: its environment is whole"},
}

// say is the worker's text key in its language.
func (w *Worker) say(key string, args ...any) string {
	t := healthTexts[key]
	f := t[1]
	if w.o.Lang.IsChinese() {
		f = t[0]
	}
	return fmt.Sprintf(f, args...)
}

// checkEnv looks at what every run of this worker needs from the worker
// itself, as a run would find it: nil when all is there.
func (w *Worker) checkEnv(ctx context.Context) *envProblem {
	if p := w.checkDir(); p != nil {
		return p
	}
	if p := w.checkFlower(); p != nil {
		return p
	}
	if p := w.checkCLI(ctx); p != nil {
		return p
	}
	return w.checkCredentials()
}

// checkDir: the --dir exists (or can be made), takes a new file and has
// minFreeDisk free.
func (w *Worker) checkDir() *envProblem {
	dir := w.o.Dir
	fixWrite := w.say("dirFixWrite", os.Geteuid())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &envProblem{w.say("dirMake", dir, errno(err)), fixWrite}
	}
	// Creating and removing a file is what a run's folders need first;
	// permission bits alone do not tell (root, read-only mounts, ACLs).
	f, err := os.CreateTemp(dir, ".flower-probe-")
	if err != nil {
		return &envProblem{w.say("dirWrite", dir, errno(err)), fixWrite}
	}
	_, werr := f.Write([]byte("flower"))
	cerr := f.Close()
	rerr := os.Remove(f.Name())
	if err := errors.Join(werr, cerr, rerr); err != nil {
		return &envProblem{w.say("dirWrite", dir, errno(err)), fixWrite}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		if free := uint64(st.Bavail) * uint64(st.Bsize); free < minFreeDisk {
			return &envProblem{w.say("dirFull", dir, mib(free), mib(minFreeDisk)), w.say("dirFixFull")}
		}
	}
	return nil
}

// checkFlower: the flower program each run starts is an executable file.
func (w *Worker) checkFlower() *envProblem {
	fi, err := os.Stat(w.o.Flower)
	switch {
	case err != nil:
		return &envProblem{w.say("flower", w.o.Flower, errno(err)), w.say("flowerFix")}
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return &envProblem{w.say("flower", w.o.Flower, fi.Mode().String()), w.say("flowerFix")}
	}
	return nil
}

// runView is a variable as a run's flower sees it: what it gets of the
// worker's Env (runEnv), the CLI the worker hands it (FLOWER_CLAUDE), and
// a HOME and XDG folders of the run's own (fresh, so empty: a stand-in
// that does not exist).
func (w *Worker) runView() func(string) (string, bool) {
	vars := map[string]string{}
	for _, kv := range w.o.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && (k == cliinstall.FromEnv || passed(k, w.o.PassEnv) && !teamOnlyEnv(k)) {
			vars[k] = v
		}
	}
	fresh := filepath.Join(w.o.Dir, ".flower-no-such-run", "home")
	vars["HOME"] = fresh
	vars["XDG_CONFIG_HOME"] = filepath.Join(fresh, ".config")
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// checkCLI: a run finds the Claude Code CLI as every flower command does
// (FLOWER_CLAUDE, the pinned copy in the cache, claude on PATH), in the
// run's environment: the worker's own HOME is not the run's, so a pinned
// copy only there is not found by the run either.
func (w *Worker) checkCLI(ctx context.Context) *envProblem {
	look := w.runView()
	env := cliinstall.Env{Getenv: func(k string) string { v, _ := look(k); return v }}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	found, err := env.Find(cctx)
	if err == nil {
		return w.checkCLIConfined(ctx, found.Path)
	}
	var none *cliinstall.NotFoundError
	switch p, _ := look("FLOWER_CLAUDE"); {
	case p != "":
		return &envProblem{w.say("cliBad", p), w.say("cliFix")}
	case errors.As(err, &none):
		return &envProblem{w.say("cliNone", none.Dir), w.say("cliFix")}
	default:
		return &envProblem{w.say("cliOther", err), w.say("cliFix")}
	}
}

// checkCLIConfined: the CLI a run would use starts (claude --version)
// inside the very confinement a run gets, with the run's environment. A
// CLI under /home, /tmp or the worker's HOME, or a wrapper that runs one
// from there, is found by the worker and hidden from its runs: without
// this check every attempt failed "(unknown)" until the run was parked.
// A file that started once is not started again until it changes.
func (w *Worker) checkCLIConfined(ctx context.Context, path string) *envProblem {
	id := identify(path)
	w.health.mu.Lock()
	known := id != "" && w.health.cliStarted == id
	w.health.mu.Unlock()
	if known {
		return nil
	}
	out, err := w.startConfined(ctx, path, "--version")
	if err != nil {
		return &envProblem{w.say("cliConfined", path, cliFailure(err, out)), w.say("cliConfinedFix")}
	}
	w.health.mu.Lock()
	w.health.cli, w.health.cliStarted = path, id
	w.health.mu.Unlock()
	return nil
}

// identify names a file's content as far as the worker can tell without
// reading it: where it resolves to, its size and its time of change.
func identify(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(real)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s %d %d", real, fi.Size(), fi.ModTime().UnixNano())
}

// cliPath is the CLI this worker's runs use: the one that started in
// their confinement.
func (w *Worker) cliPath() string {
	w.health.mu.Lock()
	defer w.health.mu.Unlock()
	return w.health.cli
}

// cliStartWait bounds the confined `claude --version`: seconds on an idle
// machine, and far more on one that is busy.
const cliStartWait = 2 * time.Minute

// startConfined runs the program with args as a run's process runs (its
// confinement, its environment, a HOME and temp folder of its own under
// the worker's --dir) and returns what it printed.
func (w *Worker) startConfined(ctx context.Context, program string, args ...string) ([]byte, error) {
	probe, err := os.MkdirTemp(w.o.Dir, ".flower-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(probe)
	home, tmp := filepath.Join(probe, "home"), filepath.Join(probe, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	confine, err := w.confine.withRunUser()
	if err != nil {
		return nil, err
	}
	defer confine.release()
	if err := confine.handOver(probe); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cliStartWait)
	defer cancel()
	cmd := exec.Command(program, args...)
	if confine.bwrap != "" {
		// As a run starts its CLIs: apart from its flower.
		cmd = exec.Command(confine.bwrap, append(append(flower.CLIApart(confine.bwrap)[1:], program), args...)...)
	}
	cmd.Dir = home
	cmd.Env = runEnv(w.o.Env, w.o.PassEnv, map[string]string{"HOME": home, "TMPDIR": tmp, "CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"),
		"CLAUDE_CODE_TMPDIR": tmp, "XDG_CONFIG_HOME": filepath.Join(home, ".config")}, w.envSecrets()...)
	cmd.SysProcAttr = runProcAttr()
	rw, ro, hide := w.confinedPaths(program, home, tmp)
	cmd, info, err := confine.confined(cmd, rw, ro, hide)
	if err != nil {
		return nil, err
	}
	if info != nil {
		defer info.Close()
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("it did not finish within %s", cliStartWait)
	}
	return out.Bytes(), err
}

// cliFailure is why the CLI did not start: its exit and the last line it
// printed.
func cliFailure(err error, out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	if last == "" {
		return err.Error()
	}
	return err.Error() + ": " + last
}

// checkCredentials: the model's key reaches the runs, through the worker's
// proxy (it holds a key) or from what a run's flower loads itself (the
// .env beside the flower program). A key that only a repository's own
// .env would give is not counted: it is not the worker's to rely on.
func (w *Worker) checkCredentials() *envProblem {
	if w.proxy != nil || holdsKey(w.o.Env) {
		return nil // its proxy serves the key (started from it by Run)
	}
	look := w.runView()
	set := map[string]string{}
	e := flower.Environment{
		LookupEnv: func(k string) (string, bool) {
			if v, ok := set[k]; ok {
				return v, true
			}
			return look(k)
		},
		Setenv:     func(k, v string) error { set[k] = v; return nil },
		Executable: w.o.Flower,
	}
	e.Home, _ = look("HOME")
	e.Cwd = e.Home
	_, _ = e.LoadDotenv()
	if e.CheckCredentials() == nil {
		return nil
	}
	exe := w.o.Flower
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return &envProblem{w.say("creds", filepath.Join(filepath.Dir(exe), ".env")), w.say("credsFix")}
}

// unable is the problem that keeps the worker from taking a run now: the
// one it knows of (a recheck clears it), or what a check finds.
func (w *Worker) unable(ctx context.Context) *envProblem {
	w.health.mu.Lock()
	p := w.health.broken
	w.health.mu.Unlock()
	if p != nil {
		return p
	}
	if p := w.checkEnv(ctx); p != nil {
		w.setBroken(ctx, p)
		return p
	}
	return nil
}

// refuse hands a job back untouched by a worker that cannot take runs: no
// attempt counted, no failure recorded; a queued run's reason says why
// this worker left it.
func (w *Worker) refuse(ctx context.Context, run int64, p *envProblem) error {
	_, _ = w.t.pool.Exec(ctx, "update team_runs set reason = $2, updated_at = now() where id = $1 and state = $3",
		run, w.say("runNote", w.o.Name, p.what), Queued)
	return river.JobSnooze(0)
}

// envFailure settles an attempt that failed while the worker's own
// environment is broken (its folders could not be made, flower could not
// start, the disk filled): the failure is the worker's, not the run's.
// The run goes back to the queue uncounted and the worker stops taking
// runs. nil when the environment is whole: the failure is the run's.
func (w *Worker) envFailure(ctx context.Context, a *attempt, cause error) error {
	ctx = context.WithoutCancel(ctx)
	p := w.checkEnv(ctx)
	if p == nil {
		return nil
	}
	w.setBroken(ctx, p)
	w.log.Warn("flower worker: an attempt failed because of this worker's environment; the run goes back to the queue, its failure not counted",
		"run", a.name(), "err", cause)
	if err := a.setState(ctx, Queued, w.say("runNote", w.o.Name, p.what), false); err != nil {
		return err
	}
	return river.JobSnooze(0)
}

// setBroken records that the worker cannot take runs: said once per
// problem, written to its row, and its fetching stopped.
func (w *Worker) setBroken(ctx context.Context, p *envProblem) {
	w.health.mu.Lock()
	same := w.health.broken != nil && w.health.broken.what == p.what
	w.health.broken = p
	w.health.mu.Unlock()
	if same {
		return
	}
	w.log.Error(w.say("broken", w.o.Name, p.what, p.fix, w.o.Rescue/4))
	w.markRow(ctx, "broken: "+p.what)
	go w.steerFetching(context.WithoutCancel(ctx))
}

// setHealthy records that the worker's environment is whole again.
func (w *Worker) setHealthy(ctx context.Context) {
	w.health.mu.Lock()
	was := w.health.broken
	w.health.broken = nil
	w.health.mu.Unlock()
	if was == nil {
		return
	}
	w.log.Info(w.say("healed", w.o.Name))
	w.markRow(ctx, "working")
	go w.steerFetching(context.WithoutCancel(ctx))
}

// markRow writes the worker's state in team_workers.
func (w *Worker) markRow(ctx context.Context, state string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := w.t.pool.Exec(cctx, "update team_workers set state = $4 where name = $1 and host = $2 and pid = $3",
		w.o.Name, w.host, os.Getpid(), state); err != nil {
		w.log.Warn("flower worker: its state did not reach the database", "state", state, "err", err)
	}
}

// steerFetching takes the runs' queue off this worker's River client while
// it is broken and puts it back once it is whole. Taking it off waits for
// the jobs in hand to return (River's Remove), so it runs apart from them;
// each call does what the newest state asks, whatever order calls come in.
func (w *Worker) steerFetching(ctx context.Context) {
	w.health.fetchMu.Lock()
	defer w.health.fetchMu.Unlock()
	w.health.mu.Lock()
	broken := w.health.broken != nil
	w.health.mu.Unlock()
	switch {
	case broken && !w.health.paused:
		if err := w.client.Queues().Remove(ctx, queueName); err != nil {
			w.log.Warn("flower worker: could not stop fetching runs; it hands each back instead, and tries again at its next check", "err", err)
			return
		}
		w.health.paused = true
	case !broken && w.health.paused:
		if err := w.client.Queues().Add(queueName, river.QueueConfig{MaxWorkers: w.o.Concurrency}); err != nil {
			w.log.Warn("flower worker: could not take up fetching runs again; it tries again at its next check", "err", err)
			return
		}
		w.health.paused = false
	}
}

// watchHealth checks the worker's environment (every quarter interval,
// see everyQuarter): a broken worker takes runs again as soon as it is
// whole; an idle one that broke (its disk filled) stops before it is
// handed a run.
func (w *Worker) watchHealth(ctx context.Context) {
	if p := w.checkEnv(ctx); p != nil {
		w.setBroken(ctx, p)
	} else {
		w.setHealthy(ctx)
	}
	if w.fetchingOutOfStep() {
		go w.steerFetching(context.WithoutCancel(ctx))
	}
}

// fetchingOutOfStep says the runs' queue is on this worker's client while
// it is broken, or off while it is whole: a change that failed (River's
// Remove or Add on a stalled connection) is tried again at the next check,
// where before a failed Add left a healed worker fetching nothing until
// it was restarted. False while a change is under way.
func (w *Worker) fetchingOutOfStep() bool {
	if !w.health.fetchMu.TryLock() {
		return false
	}
	defer w.health.fetchMu.Unlock()
	w.health.mu.Lock()
	broken := w.health.broken != nil
	w.health.mu.Unlock()
	return broken != w.health.paused
}

// errno is err's system error alone when it has one ("read-only file
// system"): the path is in the text already.
func errno(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// mib shows a size in MiB.
func mib(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }
