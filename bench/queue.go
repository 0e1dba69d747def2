package main

// The queue benchmark: the team's queue on River (package team) against
// running the same flows one after another in one process, the queue's
// own cost per run, and how soon a run moves to another worker when its
// worker dies.
//
// Every run is the team tests' workflow program (team/testdata/teamflow,
// built here) on the real CLI against a scripted fake Messages API in this
// process; the queue's database is a throwaway PostgreSQL cluster with
// fsync on; each variant has a database and a bare git remote of its own.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/team"
)

// riverRescuerTick is how often River's rescuer looks for stuck jobs: a
// fixed interval in River v0.51.2 (maintenance.JobRescuerIntervalDefault),
// which its Config does not expose.
const riverRescuerTick = 30 * time.Second

var queueFlags = struct {
	fs       *flag.FlagSet
	runs     *int
	rescue   *time.Duration
	takeover *bool
}{fs: flag.NewFlagSet("queue", flag.ContinueOnError)}

func init() {
	queueFlags.runs = queueFlags.fs.Int("runs", 10, "queue: runs of each variant")
	queueFlags.rescue = queueFlags.fs.Duration("rescue", 30*time.Second, "queue: the workers' --rescue interval (the takeover is measured against it)")
	queueFlags.takeover = queueFlags.fs.Bool("takeover", true, "queue: measure the takeover after a SIGKILL")
	register(benchmark{
		name:  "queue",
		about: "the team queue on River: runs/min with 1 and 2 workers against one process running them one after another; the queue's own overhead per run; takeover time after a SIGKILL (flags after its name: -runs, -rescue, -takeover)",
		flags: queueFlags.fs,
		run: func(ctx context.Context) error {
			if *queueFlags.runs < 1 {
				return fmt.Errorf("-runs %d: give at least 1", *queueFlags.runs)
			}
			if *queueFlags.rescue < 4*time.Second {
				return fmt.Errorf("-rescue %s: a worker takes at least 4s", *queueFlags.rescue)
			}
			root, err := moduleRoot()
			if err != nil {
				return err
			}
			cli, err := claudeCLI(root)
			if err != nil {
				return err
			}
			return runQueue(ctx, queueConfig{out: os.Stdout, runs: *queueFlags.runs, rescue: *queueFlags.rescue,
				takeover: *queueFlags.takeover, cli: cli, timeout: 20 * time.Minute})
		},
	})
}

type queueConfig struct {
	out      io.Writer
	runs     int           // runs of each throughput variant
	rescue   time.Duration // the workers' --rescue
	takeover bool          // measure the takeover too
	cli      string        // the real claude CLI
	pg       *pgtest.Server
	// timeout bounds each variant (and the takeover).
	timeout time.Duration
}

// queueRun is one run's figures.
type queueRun struct {
	task           string
	host           string
	wall           time.Duration // through the queue: the worker took it → River finalized its job; sequential: clone + process
	child          time.Duration // the run's flower process, its own start → end (ending.json)
	process        time.Duration // sequential only: the process from exec to exit
	taken, settled time.Time
	before, after  time.Duration // queued only: taken → the flow's start; the flow's end → the job finalized
}

// queueVariant is one way of working the runs.
type queueVariant struct {
	name   string
	window time.Duration // the first run's start → the last run's end
	runs   []queueRun
	gaps   []time.Duration // a worker's idle time between its runs
}

func (v queueVariant) perMinute() float64 {
	if v.window <= 0 {
		return 0
	}
	return float64(len(v.runs)) / v.window.Minutes()
}

// queueTakeover is the takeover's figures.
type queueTakeover struct {
	rescue    time.Duration
	confirmed time.Duration // how long before the kill worker A last confirmed the job
	rescued   time.Duration // kill → worker B's attempt started
	request   time.Duration // kill → the first API request of B's resumed run
	startedBy []string
}

func runQueue(ctx context.Context, cfg queueConfig) error {
	out := cfg.out
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "flower-bench-queue-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "teamflow")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./team/testdata/teamflow")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./team/testdata/teamflow: %w: %s", err, b)
	}
	if cfg.pg == nil {
		srv, err := pgtest.StartServer(ctx, pgtest.Options{Durable: true})
		if errors.Is(err, pgtest.ErrNoServer) {
			return fmt.Errorf("the queue needs PostgreSQL's server binaries: %s", pgtest.Install)
		}
		if err != nil {
			return fmt.Errorf("start a PostgreSQL cluster: %w", err)
		}
		defer srv.Remove()
		cfg.pg = srv
	}
	fmt.Fprintf(out, "%d runs of a scripted two-step flow (plan; then a Bash call writes task-N.txt), the real CLI against the fake API; PostgreSQL on a throwaway cluster, fsync on\n", cfg.runs)
	loadBefore := queueLoad()
	qb := &queueBench{cfg: cfg, dir: dir, bin: bin}
	seq, err := qb.sequential(ctx)
	if err != nil {
		return fmt.Errorf("one after another: %w", err)
	}
	one, err := qb.through(ctx, 1)
	if err != nil {
		return fmt.Errorf("the queue, 1 worker: %w", err)
	}
	two, err := qb.through(ctx, 2)
	if err != nil {
		return fmt.Errorf("the queue, 2 workers: %w", err)
	}
	queueThroughputReport(out, seq, []queueVariant{one, two})
	fmt.Fprintf(out, "machine load (1/5/15-min averages, %d cores): before %s, after %s\n", runtime.NumCPU(), loadBefore, queueLoad())
	if !cfg.takeover {
		fmt.Fprintln(out, "\ntakeover: not measured (-takeover=false)")
		return nil
	}
	tk, err := qb.takeover(ctx)
	if err != nil {
		return fmt.Errorf("the takeover: %w", err)
	}
	queueTakeoverReport(out, tk)
	fmt.Fprintf(out, "machine load after the takeover: %s\n", queueLoad())
	return nil
}

// queueBench is one benchmark run's shared parts.
type queueBench struct {
	cfg queueConfig
	dir string // everything of the run
	bin string // teamflow
	n   int    // folders made so far
}

func (qb *queueBench) folder(name string) (string, error) {
	qb.n++
	d := filepath.Join(qb.dir, fmt.Sprintf("%02d-%s", qb.n, name))
	return d, os.MkdirAll(d, 0o700)
}

// remote makes a bare repository with one commit on main: the team's
// remote, one per variant (each variant's runs are r1… on their own
// database, so their branches would meet on one remote).
func (qb *queueBench) remote(ctx context.Context) (string, error) {
	d, err := qb.folder("remote")
	if err != nil {
		return "", err
	}
	bare, seed := filepath.Join(d, "origin.git"), filepath.Join(d, "seed")
	steps := [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"init", "-q", "-b", "main", seed},
		{"-C", seed, "add", "README.md"},
		{"-C", seed, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "first"},
		{"-C", seed, "push", "-q", bare, "HEAD:refs/heads/main"},
	}
	for i, s := range steps {
		if i == 2 {
			if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# app\n"), 0o644); err != nil {
				return "", err
			}
		}
		if b, err := exec.CommandContext(ctx, "git", s...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", s[0], err, b)
		}
	}
	return bare, nil
}

// env is the environment of every process of a variant: the CLI's
// hermetic settings against the fake API at url (HOME and the temp
// folders are set per process).
func (qb *queueBench) env(url, d string) []string {
	env := claudetest.BaseEnv()
	for k, v := range claudetest.EnvAt(url, filepath.Join(d, "home"), filepath.Join(d, "tmp")) {
		env = append(env, k+"="+v)
	}
	return append(env, "FLOWER_CLAUDE="+qb.cfg.cli, "XDG_CONFIG_HOME="+filepath.Join(d, "config"), "XDG_STATE_HOME="+filepath.Join(d, "state"))
}

// withHome is env with HOME and the temp folders below home.
func withHome(env []string, home string) []string {
	tmp := filepath.Join(home, "tmp")
	_ = os.MkdirAll(tmp, 0o700)
	return append(slices.Clone(env), "HOME="+home, "CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"CLAUDE_CODE_TMPDIR="+tmp, "TMPDIR="+tmp)
}

// sequential runs the flows one after another, each in a fresh clone,
// without a database: what one machine does without the queue.
func (qb *queueBench) sequential(ctx context.Context) (queueVariant, error) {
	v := queueVariant{name: "one after another, one process at a time"}
	d, err := qb.folder("sequential")
	if err != nil {
		return v, err
	}
	remote, err := qb.remote(ctx)
	if err != nil {
		return v, err
	}
	srv, err := claudetest.Start((&queueModel{}).reply)
	if err != nil {
		return v, fmt.Errorf("the fake Messages API: %w", err)
	}
	defer srv.Close()
	env := qb.env(srv.URL, d)
	ctx, cancel := context.WithTimeout(ctx, qb.cfg.timeout)
	defer cancel()
	first := time.Now()
	for i := 1; i <= qb.cfg.runs; i++ {
		task := fmt.Sprintf("task-%d", i)
		base := filepath.Join(d, task)
		work := filepath.Join(base, "work")
		start := time.Now()
		if b, err := exec.CommandContext(ctx, "git", "clone", "-q", remote, work).CombinedOutput(); err != nil {
			return v, fmt.Errorf("git clone: %w: %s", err, b)
		}
		cmd := exec.CommandContext(ctx, qb.bin, "go", "-w", work, "--lang", "en", "--", task)
		cmd.Dir, cmd.Env = work, withHome(env, filepath.Join(base, "home"))
		// As the worker gives its runs: an input that never closes.
		stdin, hold, err := os.Pipe()
		if err != nil {
			return v, err
		}
		var log bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &log, &log
		began := time.Now()
		err = cmd.Run()
		ended := time.Now()
		stdin.Close()
		hold.Close()
		if ctx.Err() != nil {
			return v, fmt.Errorf("%s did not end within %s", task, qb.cfg.timeout)
		}
		if err != nil {
			return v, fmt.Errorf("%s: %w: %s", task, err, drvTail(log.Bytes()))
		}
		end, err := queueEnding(filepath.Join(work, "runs"))
		if err != nil {
			return v, fmt.Errorf("%s: %w", task, err)
		}
		if got, _ := os.ReadFile(filepath.Join(work, task+".txt")); strings.TrimSpace(string(got)) != task {
			return v, fmt.Errorf("%s did not write %s.txt: %s", task, task, drvTail(log.Bytes()))
		}
		v.runs = append(v.runs, queueRun{task: task, wall: ended.Sub(start), process: ended.Sub(began),
			child: end.Ended.Sub(end.Started), taken: start, settled: ended})
	}
	v.window = time.Since(first)
	return v, nil
}

// queueEndingFile is what the benchmark reads of a run's ending.json
// (app.Ending).
type queueEndingFile struct {
	Outcome, Reason string
	Started, Ended  time.Time
}

// queueEnding reads a run's ending.json; a run that did not end achieved
// is an error.
func queueEnding(runDir string) (queueEndingFile, error) {
	var e queueEndingFile
	b, err := os.ReadFile(filepath.Join(runDir, "ending.json"))
	if err != nil {
		return e, fmt.Errorf("no ending: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("ending.json: %w", err)
	}
	if e.Outcome != "achieved" && e.Outcome != "done" {
		return e, fmt.Errorf("ended %s: %s", e.Outcome, e.Reason)
	}
	if e.Started.IsZero() || e.Ended.Before(e.Started) {
		return e, fmt.Errorf("ending.json times %s → %s", e.Started, e.Ended)
	}
	return e, nil
}

// queueWorker is one worker process ("a machine").
type queueWorker struct {
	name string
	dir  string // its --dir
	cmd  *exec.Cmd
	out  *drvLockedBuffer
	done chan error
}

type drvLockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *drvLockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *drvLockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.b.Bytes())
}

func (qb *queueBench) startWorker(d, db, name string, env []string, rescue time.Duration) (*queueWorker, error) {
	home := filepath.Join(d, name)
	w := &queueWorker{name: name, dir: filepath.Join(home, "runs"), out: &drvLockedBuffer{}, done: make(chan error, 1)}
	w.cmd = exec.Command(qb.bin, "worker", "--dir", w.dir, "--name", name, "--lang", "en",
		"--rescue", rescue.String(), "--concurrency", "1",
		// The bench reads each run's ending from its folder afterwards.
		"--keep-ended", "1h")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	w.cmd.Dir, w.cmd.Env = home, append(withHome(env, home), "FLOWER_DATABASE_URL="+db) // never on a command line
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { w.done <- w.cmd.Wait() }()
	return w, nil
}

// stop ends a worker as its machine's shutdown would (SIGTERM), killing
// it after a minute and a half.
func (w *queueWorker) stop() {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(90 * time.Second):
		w.kill()
	}
}

// kill kills the worker and every process below it at once, as a dead
// machine loses them.
func (w *queueWorker) kill() {
	for _, pid := range append(queueDescendants(w.cmd.Process.Pid), w.cmd.Process.Pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-w.done
	w.done <- nil
}

// queueDescendants lists pid's children, their children and so on.
func queueDescendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
		children[ppid] = append(children[ppid], child)
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// queueSetup is a variant's database, remote, fake API and environment.
type queueSetup struct {
	d, db, remote string
	srv           *claudetest.Server
	env           []string
	tm            *team.Team
	conn          *pgx.Conn // the benchmark's own look at River's rows
}

func (qb *queueBench) setup(ctx context.Context, name string, model *queueModel) (*queueSetup, error) {
	s := &queueSetup{}
	var err error
	if s.d, err = qb.folder(name); err != nil {
		return nil, err
	}
	if s.remote, err = qb.remote(ctx); err != nil {
		return nil, err
	}
	if s.db, err = qb.cfg.pg.CreateDatabase(ctx); err != nil {
		return nil, err
	}
	if s.srv, err = claudetest.Start(model.reply); err != nil {
		return nil, fmt.Errorf("the fake Messages API: %w", err)
	}
	s.env = qb.env(s.srv.URL, s.d)
	if s.tm, err = team.Open(ctx, s.db); err != nil {
		s.srv.Close()
		return nil, err
	}
	if s.conn, err = pgx.Connect(ctx, s.db); err != nil {
		s.tm.Close()
		s.srv.Close()
		return nil, err
	}
	return s, nil
}

func (s *queueSetup) close() {
	s.conn.Close(context.Background())
	s.tm.Close()
	s.srv.Close()
}

func (s *queueSetup) submit(ctx context.Context, request string) (team.Run, error) {
	return s.tm.Submit(ctx, team.Submission{Request: request, Repo: s.remote, By: "bench"})
}

// waitEnded polls the runs until every one has ended.
func (s *queueSetup) waitEnded(ctx context.Context, d time.Duration, workers []*queueWorker) ([]team.Run, error) {
	deadline := time.Now().Add(d)
	for {
		runs, err := s.tm.Runs(ctx, team.RunFilter{})
		if err == nil && len(runs) > 0 && !slices.ContainsFunc(runs, func(r team.Run) bool { return !team.Ended(r.State) }) {
			return runs, nil
		}
		for _, w := range workers {
			select {
			case err := <-w.done:
				w.done <- err
				return nil, fmt.Errorf("worker %s stopped (%v): %s", w.name, err, drvTail(w.out.Bytes()))
			default:
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			var b strings.Builder
			for _, r := range runs {
				fmt.Fprintf(&b, "\n  %s %s on %s: %s", r.Name(), r.State, r.Host, r.Reason)
			}
			return nil, fmt.Errorf("the runs did not all end within %s (%v):%s", d, err, b.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// finalized is when River marked the run's job completed: its completer
// does so in batches, a moment after the run's row says it ended.
func (s *queueSetup) finalized(ctx context.Context, r team.Run) (time.Time, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var at *time.Time
		if err := s.conn.QueryRow(ctx, "select finalized_at from river_job where id = $1", r.JobID).Scan(&at); err != nil {
			return time.Time{}, fmt.Errorf("%s's River job: %w", r.Name(), err)
		}
		if at != nil {
			return *at, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s ended; its River job %d was not finalized within 30s", r.Name(), r.JobID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// attempts are the times the run's attempts started, with their workers
// (the team's "running, attempt N" events).
func (s *queueSetup) attempts(ctx context.Context, id int64) (at []time.Time, hosts []string, err error) {
	evs, err := s.tm.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range evs {
		if e.Text == "team_state" && e.Str("state") == team.Running && strings.HasPrefix(e.Str("reason"), "attempt ") {
			at, hosts = append(at, e.At), append(hosts, e.Str("host"))
		}
	}
	return at, hosts, nil
}

// through works the runs through the queue with n workers of
// concurrency 1, submitted before the workers start.
func (qb *queueBench) through(ctx context.Context, n int) (queueVariant, error) {
	v := queueVariant{name: fmt.Sprintf("the queue, %d worker%s", n, map[bool]string{true: "s"}[n > 1])}
	s, err := qb.setup(ctx, fmt.Sprintf("queue-%d", n), &queueModel{})
	if err != nil {
		return v, err
	}
	defer s.close()
	tasks := map[int64]string{}
	for i := 1; i <= qb.cfg.runs; i++ {
		r, err := s.submit(ctx, fmt.Sprintf("task-%d", i))
		if err != nil {
			return v, err
		}
		tasks[r.ID] = fmt.Sprintf("task-%d", i)
	}
	var workers []*queueWorker
	dirs := map[string]string{}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	for i := range n {
		w, err := qb.startWorker(s.d, s.db, fmt.Sprintf("worker-%c", 'a'+i), s.env, qb.cfg.rescue)
		if err != nil {
			return v, err
		}
		workers = append(workers, w)
		dirs[w.name] = w.dir
	}
	runs, err := s.waitEnded(ctx, qb.cfg.timeout, workers)
	if err != nil {
		return v, err
	}
	var first, last time.Time
	byHost := map[string][]queueRun{}
	for _, r := range runs {
		task := tasks[r.ID]
		if r.State != team.Achieved {
			return v, fmt.Errorf("%s (%s) ended %s: %s", r.Name(), task, r.State, r.Reason)
		}
		at, hosts, err := s.attempts(ctx, r.ID)
		if err != nil {
			return v, err
		}
		if len(at) != 1 {
			return v, fmt.Errorf("%s was started %d times (%v), want once", r.Name(), len(at), hosts)
		}
		finalized, err := s.finalized(ctx, r)
		if err != nil {
			return v, err
		}
		end, err := queueEnding(filepath.Join(dirs[hosts[0]], r.Name(), "work", "runs"))
		if err != nil {
			return v, fmt.Errorf("%s on %s: %w", r.Name(), hosts[0], err)
		}
		if got, _ := exec.CommandContext(ctx, "git", "-C", s.remote, "show", r.Branch+":"+task+".txt").Output(); strings.TrimSpace(string(got)) != task {
			return v, fmt.Errorf("%s's branch %s does not hold %s.txt", r.Name(), r.Branch, task)
		}
		qr := queueRun{task: task, host: hosts[0], taken: at[0], settled: finalized, wall: finalized.Sub(at[0]), child: end.Ended.Sub(end.Started),
			before: end.Started.Sub(at[0]), after: finalized.Sub(end.Ended)}
		v.runs = append(v.runs, qr)
		byHost[qr.host] = append(byHost[qr.host], qr)
		if first.IsZero() || qr.taken.Before(first) {
			first = qr.taken
		}
		if qr.settled.After(last) {
			last = qr.settled
		}
	}
	v.window = last.Sub(first)
	for _, rs := range byHost {
		slices.SortFunc(rs, func(a, b queueRun) int { return a.taken.Compare(b.taken) })
		for i := 1; i < len(rs); i++ {
			v.gaps = append(v.gaps, rs[i].taken.Sub(rs[i-1].settled))
		}
	}
	slices.SortFunc(v.runs, func(a, b queueRun) int { return a.taken.Compare(b.taken) })
	return v, nil
}

// takeover: one slow run; worker A killed (its whole process tree) in the
// middle of the run's slow Bash call while worker B runs; B's resumed
// run's first request to the API.
func (qb *queueBench) takeover(ctx context.Context) (queueTakeover, error) {
	tk := queueTakeover{rescue: qb.cfg.rescue}
	model := &queueModel{sleep: "sleep 600"}
	s, err := qb.setup(ctx, "takeover", model)
	if err != nil {
		return tk, err
	}
	defer s.close()
	// A confined run writes only its own folders: the slow call marks
	// its start in the run's tmp folder, beside its checkout.
	model.marker = "../tmp/slow-started"
	r, err := s.submit(ctx, "task-1 slow")
	if err != nil {
		return tk, err
	}
	a, err := qb.startWorker(s.d, s.db, "worker-a", s.env, qb.cfg.rescue)
	if err != nil {
		return tk, err
	}
	workers := []*queueWorker{a}
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	for deadline := time.Now().Add(qb.cfg.timeout); ; time.Sleep(50 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(a.dir, "*", "tmp", "slow-started")); len(m) > 0 {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return tk, fmt.Errorf("the slow call never started on worker A: %s", drvTail(a.out.Bytes()))
		}
	}
	b, err := qb.startWorker(s.d, s.db, "worker-b", s.env, qb.cfg.rescue)
	if err != nil {
		return tk, err
	}
	workers = append(workers, b)
	time.Sleep(1500 * time.Millisecond) // B is up; A in the middle of its call
	var confirmed time.Time
	if err := s.conn.QueryRow(ctx, "select attempted_at from river_job where id = $1", r.JobID).Scan(&confirmed); err != nil {
		return tk, err
	}
	killed := time.Now()
	a.kill()
	tk.confirmed = killed.Sub(confirmed)
	// Rescued within the interval plus a tick of River's rescuer, then
	// the rest of the run.
	runs, err := s.waitEnded(ctx, min(qb.cfg.timeout, 2*qb.cfg.rescue+riverRescuerTick+3*time.Minute), []*queueWorker{b})
	if err != nil {
		var state string
		var attempt int
		var attemptedAt time.Time
		if qerr := s.conn.QueryRow(context.WithoutCancel(ctx), "select state::text, attempt, attempted_at from river_job where id = $1", r.JobID).
			Scan(&state, &attempt, &attemptedAt); qerr == nil {
			err = fmt.Errorf("%w\n  %s after the kill, its River job is %s, attempt %d, last confirmed %s before the kill", err,
				drvDur(time.Since(killed)), state, attempt, drvDur(killed.Sub(attemptedAt)))
		}
		return tk, err
	}
	if runs[0].State != team.Achieved {
		return tk, fmt.Errorf("%s ended %s: %s", runs[0].Name(), runs[0].State, runs[0].Reason)
	}
	at, hosts, err := s.attempts(ctx, r.ID)
	if err != nil {
		return tk, err
	}
	tk.startedBy = hosts
	if len(at) != 2 || hosts[0] != a.name || hosts[1] != b.name {
		return tk, fmt.Errorf("the run was started by %v, want %s then %s", hosts, a.name, b.name)
	}
	tk.rescued = at[1].Sub(killed)
	for _, req := range s.srv.Requests() {
		if req.At.After(killed) {
			tk.request = req.At.Sub(killed)
			break
		}
	}
	if tk.request == 0 {
		return tk, errors.New("no API request came after the kill")
	}
	return tk, nil
}

// queueModel is the fake model of the team tests: a request "task-N"
// plans, then writes task-N.txt with Bash; "slow" makes that call touch
// marker and sleep first (once per task), so that a worker can be killed
// in the middle of it.
type queueModel struct {
	marker, sleep string
	slept         sync.Map
}

var queueTaskRE = regexp.MustCompile(`task-\d+`)

func (m *queueModel) reply(_ context.Context, r *claudetest.Request) claudetest.Reply {
	switch {
	case r.MaxTokens == 16:
		return claudetest.Say("hi")
	case len(r.Tools) == 0:
		return claudetest.Say("ok")
	}
	var all strings.Builder
	for _, msg := range r.Messages {
		for _, b := range msg.Content {
			all.WriteString(b.Text + "\n" + b.Content + "\n")
		}
	}
	task := queueTaskRE.FindString(all.String())
	if task == "" {
		return claudetest.Say("no task")
	}
	if !r.HasText("Now make the change") {
		return claudetest.Say("the plan for " + task)
	}
	write := "echo " + task + " > " + task + ".txt"
	for _, msg := range r.Messages {
		for _, b := range msg.Content {
			if b.Type == "tool_use" && strings.Contains(string(b.Input), write) {
				return claudetest.Say("made the change for " + task)
			}
		}
	}
	if m.sleep != "" && strings.Contains(all.String(), task+" slow") {
		if _, done := m.slept.LoadOrStore(task, true); !done {
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{
				"command": "touch " + m.marker + "; " + m.sleep + "; " + write, "description": "slow write"}))
		}
	}
	return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": write, "description": "write"}))
}

// queueLoad is the machine's load averages (/proc/loadavg), "?" where
// there are none.
func queueLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// queueOverhead is a queued run's own cost: its wall through the queue
// less its process's own wall.
func queueOverhead(r queueRun) time.Duration { return r.wall - r.child }

func queueVerdict(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

// queueThroughputReport prints the runs per minute and the queue's
// overhead per run.
func queueThroughputReport(out io.Writer, seq queueVariant, queued []queueVariant) {
	rows := [][]string{{"variant", "window", "runs/min", "× one after another", "per run [min … max]"}}
	base := seq.perMinute()
	add := func(v queueVariant) {
		var walls []time.Duration
		for _, r := range v.runs {
			walls = append(walls, r.wall)
		}
		ratio := "-"
		if base > 0 {
			ratio = fmt.Sprintf("%.2f×", v.perMinute()/base)
		}
		rows = append(rows, []string{v.name, drvDur(v.window), fmt.Sprintf("%.2f", v.perMinute()), ratio, drvSpreadOf(walls).String()})
	}
	add(seq)
	for _, v := range queued {
		add(v)
	}
	fmt.Fprintln(out, "\nthroughput (runs per minute over the window from the first run's start to the last one's end):")
	fmt.Fprint(out, drvTable(rows))
	fmt.Fprintln(out, "  one after another: each run a fresh `git clone` and one `teamflow go` process, no database, one at a time;")
	fmt.Fprintln(out, "  the queue: the same flows submitted first, then worker processes of concurrency 1 started; a run is timed")
	fmt.Fprintln(out, "  from its \"running, attempt 1\" event to its River job's finalized_at (checkout, the flow, its pushes, the end)")

	fmt.Fprintln(out, "\nthe queue's own overhead per run (all queued runs of both variants):")
	var walls, childs, overs, seqProc, befores, afters []time.Duration
	var pcts []float64
	for _, v := range queued {
		for _, r := range v.runs {
			walls, childs, overs = append(walls, r.wall), append(childs, r.child), append(overs, queueOverhead(r))
			befores, afters = append(befores, r.before), append(afters, r.after)
			pcts = append(pcts, 100*float64(queueOverhead(r))/float64(r.wall))
		}
	}
	var clones []time.Duration
	for _, r := range seq.runs {
		seqProc, clones = append(seqProc, r.process-r.child), append(clones, r.wall-r.process)
	}
	var gaps []time.Duration
	for _, v := range queued {
		gaps = append(gaps, v.gaps...)
	}
	slices.Sort(pcts)
	pct := func(p []float64) string {
		if len(p) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f%% [%.2f%% … %.2f%%]", queueMedian(p), p[0], p[len(p)-1])
	}
	over := drvSpreadOf(overs)
	procShare := drvSpreadOf(seqProc)
	var nets []float64
	for i := range overs {
		nets = append(nets, 100*float64(overs[i]-procShare.med)/float64(walls[i]))
	}
	slices.Sort(nets)
	orows := [][]string{{"figure", "median [min … max]"},
		{"a run through the queue (taken → job finalized)", drvSpreadOf(walls).String()},
		{"  its flower process (ending.json started → ended)", drvSpreadOf(childs).String()},
		{"  the queue's overhead (the difference)", over.String()},
		{"  the overhead as % of the run's wall", pct(pcts)},
		{"  of it before the flow: checkout, rows, the process's start-up", drvSpreadOf(befores).String()},
		{"  of it after the flow: the process's exit, last push, rows, River's completion", drvSpreadOf(afters).String()},
		{"a flower process's own start + exit (one after another: exec → exit − ending.json span)", procShare.String()},
		{"  the overhead less that (the queue's alone)", pct(nets)},
		{"a worker's idle time between two runs (River's fetch)", drvSpreadOf(gaps).String()},
		{"for comparison: a git clone of the remote (one after another)", drvSpreadOf(clones).String()},
	}
	fmt.Fprint(out, drvTable(orows))
	fmt.Fprintln(out, "  the overhead: the worker's checkout of the run's branch, its database rows and events, the last commit and push")
	fmt.Fprintln(out, "  after the process ended, River's completion, and the run process's own start and exit (not in its ending span)")
	if over.med > 0 {
		fmt.Fprintf(out, "  the overhead is a fixed cost per run, not a share of its work: %s is under 1%% of a run longer than %s\n",
			drvDur(over.med), drvDur(100*over.med))
	}
	if len(pcts) > 0 {
		fmt.Fprintf(out, "goal (the queue's overhead < 1%% of a run's wall time): median %.2f%%, less the process's own start and exit %.2f%%: %s\n",
			queueMedian(pcts), queueMedian(nets), queueVerdict(queueMedian(pcts) < 1))
	}
}

// queueTakeoverReport prints the takeover's figures.
func queueTakeoverReport(out io.Writer, tk queueTakeover) {
	fmt.Fprintf(out, "\ntakeover (one slow run; worker A killed with SIGKILL, its whole process tree, in the middle of the run's Bash call; worker B running):\n")
	trows := [][]string{{"figure", "time"},
		{"the kill → the first API request of worker B's resumed run", drvDur(tk.request)},
		{"  the kill → B's attempt started (River rescued the job, B took it)", drvDur(tk.rescued)},
		{"  worker A had last confirmed the job before the kill", drvDur(tk.confirmed)},
		{"the configured rescue interval (--rescue)", drvDur(tk.rescue)},
	}
	fmt.Fprint(out, drvTable(trows))
	fmt.Fprintf(out, "  River's rescuer looks every %s (a fixed interval in River v0.51.2, not configurable) and only on the elected\n", drvDur(riverRescuerTick))
	fmt.Fprintln(out, "  leader: a job is rescued at the first look after it went unconfirmed for the rescue interval, so the takeover")
	fmt.Fprintln(out, "  is the rescue interval less A's last confirmation's age, plus up to one tick, plus the retry's 2 s and up to one")
	fmt.Fprintln(out, "  5 s tick of River's scheduler (it makes the retry available), plus the CLI's resume; with a --rescue shorter")
	fmt.Fprintln(out, "  than the tick, the tick bounds it")
	fmt.Fprintf(out, "goal (takeover within 2× the rescue interval, %s): %s: %s\n", drvDur(2*tk.rescue), drvDur(tk.request), queueVerdict(tk.request <= 2*tk.rescue))
}

func queueMedian(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
