package team_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/runstate"
	"github.com/flowerrun/flower/runstate/pgrun"
	"github.com/flowerrun/flower/team"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// teamflow builds the tests' workflow program (testdata/teamflow): it
// takes flower's whole command line, worker and submit included.
func teamflow(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "teamflow-")
		if err != nil {
			binErr = err
			return
		}
		// Open to all: a test's worker may run as an ordinary user.
		if binErr = os.Chmod(dir, 0o755); binErr != nil {
			return
		}
		binPath = filepath.Join(dir, "teamflow")
		if out, err := exec.Command("go", "build", "-o", binPath, "./testdata/teamflow").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./testdata/teamflow: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	// A root worker's checkouts belong to its runs' users.
	args = append([]string{"-c", "safe.directory=*"}, args...)
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// origin is a bare repository with one commit on main: the team's remote.
func origin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bare, work := filepath.Join(dir, "origin.git"), filepath.Join(dir, "seed")
	git(t, "", "init", "-q", "--bare", "-b", "main", bare)
	git(t, "", "init", "-q", "-b", "main", work)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "README.md")
	git(t, work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	git(t, work, "push", "-q", bare, "HEAD:refs/heads/main")
	return bare
}

var taskRE = regexp.MustCompile(`task-(\d+)`)

// scripted is the fake model of the team tests. A request "task-N" plans
// (asking the human first when it says "ask"), then writes task-N.txt
// with Bash; "slow" makes that call sleep first, so a worker can be
// killed in the middle of it; "early" writes first and then makes a slow
// call.
type scripted struct {
	// marker is touched when a slow call starts: in the run's own tmp
	// folder (beside its checkout), the only place outside its checkout
	// that a confined run can write and the test can find (runFile).
	marker string
	// attack is the Bash a "task-N attack" run is told to run first.
	attack string
	keys   sync.Map // every x-api-key the fake API was sent
	leak   string   // what a "leak" task writes into its work (a secret)
	sleep  string
	// pause is what a "pause" task's call runs before it writes (default
	// pauseDefault): long enough for what a test does meanwhile.
	pause string
	slept sync.Map // task → true once its slow call was handed out
	// judge, when set, answers the requests it takes (a round's judge).
	judge func(*claudetest.Request) (claudetest.Reply, bool)
}

func (s *scripted) reply(ctx context.Context, r *claudetest.Request) claudetest.Reply {
	s.keys.Store(r.Header.Get("x-api-key"), true)
	if s.judge != nil {
		if reply, ok := s.judge(r); ok {
			return reply
		}
	}
	switch {
	case r.MaxTokens == 16:
		return claudetest.Say("hi")
	case len(r.Tools) == 0:
		return claudetest.Say("ok")
	}
	all := requestText(r)
	m := taskRE.FindStringSubmatch(all)
	if m == nil {
		return claudetest.Say("no task")
	}
	task := m[0]
	if !r.HasText("Now make the change") {
		if strings.Contains(all, task+" ask") && !usesTool(r, flower.AskTool) {
			return claudetest.NewReply(claudetest.ToolUse("", flower.AskTool, map[string]any{"question": "What should " + task + " be called?"}))
		}
		return claudetest.Say("the plan for " + task)
	}
	// The note is in the run's workbench: the report links it.
	write := "echo " + task + " > " + task + ".txt && mkdir -p .flower/notes && echo why > .flower/notes/" + task + ".md"
	if strings.Contains(all, task+" leak") {
		write += " && echo " + s.leak + " > leak-" + task + ".txt" // the worker's own key, into the work
	}
	if strings.Contains(all, task+" early") {
		// Writes first, then a slow call: a worker killed in that call
		// leaves the write done in the session and uncommitted.
		if !wrote(r, write) {
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": write, "description": "write"}))
		}
		if _, done := s.slept.LoadOrStore(task, true); !done {
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + s.marker + "; " + s.sleep, "description": "slow"}))
		}
	}
	if wrote(r, write) {
		return claudetest.Say("made the change for " + task)
	}
	if strings.Contains(all, task+" attack") && s.attack != "" && !usesBash(r, "attacked") {
		return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": s.attack, "description": "attack"}))
	}
	if pause := cmp.Or(s.pause, pauseDefault); strings.Contains(all, task+" pause") && !usesBash(r, pause) {
		return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + s.marker + "-" + task + "; " + pause + "; " + write, "description": "pause, write"}))
	}
	if strings.Contains(all, task+" slow") {
		if _, done := s.slept.LoadOrStore(task, true); !done {
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + s.marker + "; " + s.sleep, "description": "slow"}))
		}
	}
	return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": write, "description": "write"}))
}

// pauseDefault is a "pause" task's wait.
const pauseDefault = "sleep 4.5"

func requestText(r *claudetest.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, bl := range m.Content {
			b.WriteString(bl.Text)
			b.WriteString(bl.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func usesTool(r *claudetest.Request, name string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.Name == name {
				return true
			}
		}
	}
	return false
}

// wrote says a call running command came back whole: not cut off, not
// interrupted (a call a stopped or killed attempt left is done again, as
// a model reading its result would).
func wrote(r *claudetest.Request, command string) bool {
	calls := map[string]bool{}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" && strings.Contains(string(b.Input), command) {
				calls[b.ID] = true
			}
		}
	}
	for _, b := range r.ToolResults() {
		if calls[b.ToolUseID] && !b.IsError && !strings.Contains(b.Content, "nterrupt") {
			return true
		}
	}
	return false
}

func usesBash(r *claudetest.Request, command string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" && strings.Contains(string(b.Input), command) {
				return true
			}
		}
	}
	return false
}

// world is a team: one database, one remote, one fake API, and the
// environment every machine's processes get.
type world struct {
	t      *testing.T
	db     string
	dbFile string // the database's URL, in a file only its owner reads (--db-file)
	remote string
	srv    *claudetest.Server
	model  *scripted
	env    []string

	mu   sync.Mutex
	dirs []string // every worker's --dir
	// onTerminal starts the next workers on a terminal of their own, as
	// from an operator's shell.
	onTerminal bool
	// as, when set, is the ordinary user the next workers run as.
	as *syscall.Credential
	// said is what the test reported through the world (Errorf,
	// Fatalf), said again after the workers' logs: a CI summary shows a
	// failing test's last lines, and those were the logs.
	said []string
}

// Helper, Errorf and Fatalf report as the test's own do, and keep the
// words for the recap after the workers' logs.
func (w *world) Helper() { w.t.Helper() }

func (w *world) Errorf(format string, args ...any) {
	w.t.Helper()
	w.keep(format, args)
	w.t.Errorf(format, args...)
}

func (w *world) Fatalf(format string, args ...any) {
	w.t.Helper()
	w.keep(format, args)
	w.t.Fatalf(format, args...)
}

func (w *world) Logf(format string, args ...any) {
	w.t.Helper()
	w.t.Logf(format, args...)
}

func (w *world) keep(format string, args []any) {
	msg, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
	w.mu.Lock()
	w.said = append(w.said, msg)
	w.mu.Unlock()
}

// recap says again, last, the first line of each failure the test
// reported through the world.
func (w *world) recap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.said) > 0 {
		w.t.Logf("why it failed (each in full above, before the workers' logs):\n  %s", strings.Join(w.said, "\n  "))
	}
}

// markerName is what the scripted model touches when a slow call starts.
const markerName = "slow-started"

// addDir records a worker's --dir, where its runs' folders are.
func (w *world) addDir(dir string) {
	w.mu.Lock()
	w.dirs = append(w.dirs, dir)
	w.mu.Unlock()
}

// runFile is the path of name in some run's tmp folder on some worker,
// "" when there is none yet.
func (w *world) runFile(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.dirs {
		if m, _ := filepath.Glob(filepath.Join(d, "*", "tmp", name)); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// waitMarker waits for the scripted model's marker name (markerName, or
// markerName-task-N) to appear in a run's tmp folder.
func (w *world) waitMarker(name string, d time.Duration) {
	w.t.Helper()
	for deadline := time.Now().Add(d); w.runFile(name) == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			w.t.Fatalf("%s never appeared in a run's tmp folder", name)
		}
	}
}

func newWorld(t *testing.T) *world {
	return newWorldOn(t, pgtest.Database(t))
}

func newWorldOn(t *testing.T, db string) *world {
	w := &world{t: t, db: db, remote: origin(t), dbFile: filepath.Join(t.TempDir(), "team-db")}
	// Before the workers' cleanups, so after them: the last lines.
	t.Cleanup(w.recap)
	if err := os.WriteFile(w.dbFile, []byte(db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.model = &scripted{marker: "../tmp/" + markerName, sleep: "sleep 600.75"}
	w.srv = claudetest.NewServer(t, w.model.reply)
	env := claudetest.Env(t, w.srv)
	w.env = claudetest.BaseEnv()
	for k, v := range env {
		w.env = append(w.env, k+"="+v)
	}
	w.env = append(w.env, "FLOWER_CLAUDE="+claudetest.CLIPath(t), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	return w
}

// flower runs the program once (submit, runs, reply, cancel) and returns
// its output.
func (w *world) flower(args ...string) (string, error) {
	w.t.Helper()
	return w.flowerEnv(nil, args...)
}

// flowerEnv is flower with env added to the world's environment.
func (w *world) flowerEnv(env []string, args ...string) (string, error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, teamflow(w.t), args...)
	cmd.Env, cmd.Dir = append(append([]string{}, w.env...), env...), w.t.TempDir()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *world) submit(request string, flags ...string) int64 {
	w.t.Helper()
	out, err := w.flower(append(append([]string{"submit", "--db-file", w.dbFile, "--repo", w.remote, "--lang", "en"}, flags...), request)...)
	if err != nil {
		w.t.Fatalf("submit %q: %v\n%s", request, err, out)
	}
	m := regexp.MustCompile(`submitted r(\d+)`).FindStringSubmatch(out)
	if m == nil {
		w.t.Fatalf("submit printed no run:\n%s", out)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// machine is one worker process: its own HOME, temp and state folders
// (the worker gives each run its own beneath its --dir).
type machine struct {
	name string
	dir  string // its --dir
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
	// tty is the terminal it was started on (world.onTerminal), its
	// input side: what a process types into it waits there.
	tty *os.File
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (w *world) worker(name string, extra ...string) *machine {
	w.t.Helper()
	return w.workerWith(name, nil, extra...)
}

// workerWith is worker with env added to the world's environment.
func (w *world) workerWith(name string, env []string, extra ...string) *machine {
	w.t.Helper()
	return w.workerEnvIn(w.t.TempDir(), name, env, append([]string{"--db-file", w.dbFile}, extra...)...)
}

// workerIn is a worker whose HOME is home, with args (its database
// included) after its own.
func (w *world) workerIn(home, name string, extra ...string) *machine {
	w.t.Helper()
	return w.workerEnvIn(home, name, nil, extra...)
}

func (w *world) workerEnvIn(home, name string, env []string, extra ...string) *machine {
	w.t.Helper()
	w.addDir(filepath.Join(home, "runs"))
	args := []string{"worker", "--dir", filepath.Join(home, "runs"), "--name", name, "--lang", "en"}
	if !slices.Contains(extra, "--keep-ended") {
		// The tests read a run's folder after it ended (its CLI's
		// transcripts, its logs); a test of the removal gives its own.
		args = append(args, "--keep-ended", "1h")
	}
	args = append(args, extra...)
	cmd := exec.Command(teamflow(w.t), args...)
	cmd.Env = append(append(append([]string{}, w.env...), "HOME="+home, "TMPDIR="+w.t.TempDir()), env...)
	cmd.Dir = home
	// A group of its own, as a service manager starts it: a test kills
	// the worker's group as an operator would.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: w.as}
	mc := &machine{name: name, dir: filepath.Join(home, "runs"), cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = mc.out, mc.out
	if w.onTerminal {
		// Started from an operator's shell: the terminal is its
		// controlling one (a session of its own, which is a group too).
		ptmx, tty, err := pty.Open()
		if err != nil {
			w.t.Fatal(err)
		}
		w.t.Cleanup(func() { ptmx.Close(); tty.Close() })
		mc.tty = tty
		cmd.Stdin = tty
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		go func() { _, _ = io.Copy(io.Discard, ptmx) }()
	}
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	go func() { mc.done <- cmd.Wait() }()
	w.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-mc.done:
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-mc.done
		}
		if w.t.Failed() {
			w.t.Logf("worker %s:\n%s", name, mc.out)
			logs, _ := filepath.Glob(filepath.Join(home, "runs", "*", "attempt-*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				w.t.Logf("%s:\n%s", l, b)
			}
		}
	})
	return mc
}

// open is the test's own view of the queue.
func (w *world) open() *team.Team {
	w.t.Helper()
	tm, err := team.Open(context.Background(), w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(tm.Close)
	return tm
}

// waitFor polls the queue until ok holds of the runs, or fails after d.
// fataler and errorer are what the helpers below report through: a
// test, or its world, which says the failures again at the end.
type (
	fataler interface {
		Helper()
		Fatalf(format string, args ...any)
	}
	errorer interface {
		Helper()
		Errorf(format string, args ...any)
		Logf(format string, args ...any)
	}
)

func waitFor(t fataler, tm *team.Team, d time.Duration, what string, ok func([]team.Run) bool) []team.Run {
	t.Helper()
	// d is a quiet machine's bound; a hang guard gives a loaded one three
	// times it (two suites side by side took more than 3 and 6 minutes).
	// A bound that is the product's promise is asserted where it is kept.
	if d >= time.Minute {
		d *= 3
	}
	deadline := time.Now().Add(d)
	for {
		runs, err := tm.Runs(context.Background(), team.RunFilter{})
		if err == nil && ok(runs) {
			return runs
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, r := range runs {
				fmt.Fprintf(&b, "  %s %s on %s: %s\n", r.Name(), r.State, r.Host, r.Reason)
				// A later reason hides why an attempt failed.
				for _, f := range r.Failures {
					fmt.Fprintf(&b, "    failed on %s at %s: %s\n", f.Host, f.At.Format("15:04:05"), f.Reason)
				}
			}
			t.Fatalf("after %s, still not %s (err %v):\n%s", d, what, err, b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func allEnded(runs []team.Run) bool {
	for _, r := range runs {
		if !team.Ended(r.State) {
			return false
		}
	}
	return len(runs) > 0
}

// startedBy lists the workers that started the run's attempts (its
// running state events).
func startedBy(t fataler, tm *team.Team, id int64) []string {
	t.Helper()
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatalf("the events of r%d: %v", id, err)
	}
	var hosts []string
	for _, e := range evs {
		if e.Text == "team_state" && e.Str("state") == team.Running && strings.HasPrefix(e.Str("reason"), "attempt ") {
			hosts = append(hosts, e.Str("host"))
		}
	}
	return hosts
}

// waitStored waits until the steps of the run's lineage as written back
// to the database (step name to session) satisfy ok, or fails after d.
func (w *world) waitStored(id int64, d time.Duration, ok func(steps map[string]string) bool) {
	w.t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	defer pool.Close()
	backend, err := pgrun.New(ctx, pool)
	if err != nil {
		w.t.Fatal(err)
	}
	var last string
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		var l struct {
			Steps map[string]string `json:"steps"`
		}
		err := backend.Files(ctx, team.StateName(id), func(f runstate.File) error {
			if path.Base(f.Path) == flower.LineageName {
				last = string(f.Data)
				return json.Unmarshal(f.Data, &l)
			}
			return nil
		})
		if err == nil && ok(l.Steps) {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("after %s the run's stored lineage is still %s (err %v)", d, last, err)
		}
	}
}

// branchFile reads a file of the run's branch on the remote.
// waitTranscriptHolds waits until a run's transcript in the database
// holds text (what names the call: what) and fails the test after 30 s.
func waitTranscriptHolds(t *testing.T, tm *team.Team, text, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int
		err := tm.Pool().QueryRow(context.Background(), `select count(*) from session_entries where store_key like 'run:%' and position($1::bytea in payload) > 0`,
			[]byte(text)).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the database's transcripts (err %v)", what, err)
		}
	}
}

func branchFile(t *testing.T, remote, branch, file string) string {
	out, err := exec.Command("git", "-C", remote, "show", branch+":"+file).CombinedOutput()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func TestTwoWorkersWorkTwentyRunsEachOnceWithAQuestionAnsweredFromAThirdMachine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	n := 20
	if v, err := strconv.Atoi(os.Getenv("TEAM_TEST_RUNS")); err == nil && v >= 3 {
		n = v // a shorter run while working on the queue
	}
	ids := make([]int64, 0, n)
	for i := 1; i <= n; i++ {
		req := fmt.Sprintf("task-%d", i)
		if i == 3 {
			req += " ask"
		}
		ids = append(ids, w.submit(req))
	}
	w.worker("machine-a", "--concurrency", "2")
	w.worker("machine-b", "--concurrency", "2")

	// Run 3 asks; a third process answers it from here.
	waitFor(w, tm, 4*time.Minute, "r3 waiting", func(runs []team.Run) bool {
		for _, r := range runs {
			if r.ID == ids[2] && r.State == team.Waiting {
				return true
			}
		}
		return false
	})
	shown, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en", team.RunName(ids[2]))
	if err != nil || !strings.Contains(shown, "waiting for a person") || !strings.Contains(shown, "What should task-3 be called?") {
		w.Fatalf("flower runs r3 while it waits: %v\n%s", err, shown)
	}
	given := time.Now()
	if out, err := w.flower("reply", "--db-file", w.dbFile, "--lang", "en", team.RunName(ids[2]), "call it zed"); err != nil {
		w.Fatalf("flower reply --db: %v\n%s", err, out)
	}
	runs := waitFor(w, tm, 6*time.Minute, "all ended", allEnded)
	for _, r := range w.srv.Requests() {
		if r.HasText("call it zed") {
			t.Logf("the reply reached the model %s after it was given (NOTIFY → worker → the run's channel → the CLI's next request)", r.At.Sub(given).Round(time.Millisecond))
			break
		}
	}

	listing, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if err != nil {
		w.Fatalf("flower runs: %v\n%s", err, listing)
	}
	t.Logf("flower runs:\n%s", listing)
	hosts := map[string]int{}
	for _, r := range runs {
		if r.State != team.Achieved {
			w.Errorf("%s ended %s: %s", r.Name(), r.State, r.Reason)
			continue
		}
		task := fmt.Sprintf("task-%d", r.ID-ids[0]+1)
		if got := branchFile(t, w.remote, r.Branch, task+".txt"); got != task {
			w.Errorf("%s's branch %s holds %q in %s.txt, want %q", r.Name(), r.Branch, got, task, task)
		}
		if branchFile(t, w.remote, r.Branch, "runs/manifest.json") != "" || branchFile(t, w.remote, r.Branch, "runs/events.jsonl") != "" {
			w.Errorf("%s's branch holds flower's own files", r.Name())
		}
		started := startedBy(w, tm, r.ID)
		if len(started) != 1 {
			w.Errorf("%s was started %d times (%v), want once", r.Name(), len(started), started)
		} else {
			hosts[started[0]]++
		}
		if !regexp.MustCompile(`(?m)^` + r.Name() + `\s+achieved\s`).MatchString(listing) {
			w.Errorf("flower runs does not list %s as achieved", r.Name())
		}
		// The row agrees with the run's own manifest, as the database
		// holds it: its steps, its last step and its cost.
		dir := t.TempDir()
		if err := tm.LayOut(context.Background(), r.ID, filepath.Join(dir, "runs"), filepath.Join(dir, ".flower")); err != nil {
			w.Fatalf("%s: %v", r.Name(), err)
		}
		rows, err := flower.ReadManifest(filepath.Join(dir, "runs", "manifest.json"))
		if err != nil {
			w.Fatalf("%s's manifest: %v", r.Name(), err)
		}
		var cost float64
		var steps []string
		for _, row := range rows {
			cost += row.CostUSD
			steps = append(steps, row.Step)
		}
		if strings.Join(steps, ",") != "plan,build" || r.Step != "build" || math.Abs(cost-r.Cost) > 1e-9 {
			w.Errorf("%s: the row says step %s, $%.6f; its manifest steps %v, $%.6f", r.Name(), r.Step, r.Cost, steps, cost)
		}
	}
	t.Logf("runs per worker: %v", hosts)
	page := filepath.Join(t.TempDir(), "r3.html")
	if out, err := w.flower("report", "--db-file", w.dbFile, "-o", page, team.RunName(ids[2])); err != nil {
		w.Errorf("flower report --db: %v\n%s", err, out)
	} else if html, _ := os.ReadFile(page); !bytes.Contains(html, []byte("build")) || !bytes.Contains(html, []byte("plan")) {
		w.Errorf("the report page of r3 from the database names no steps (%d bytes)", len(html))
	} else if !bytes.Contains(html, []byte("task-3 ask")) || bytes.Contains(html, []byte("not in the session store")) {
		// The request and the tokens come from the run's transcripts,
		// which are in the database's session store.
		w.Errorf("the report page of r3 from the database lacks the run's transcripts (%d bytes)", len(html))
	} else {
		checkReportPage(w, page, html, team.RunName(ids[2]), w.remote)
	}
	if hosts["machine-a"] == 0 || hosts["machine-b"] == 0 {
		w.Errorf("one worker did all the work: %v", hosts)
	}
	reached := false
	for _, r := range w.srv.Requests() {
		reached = reached || r.HasText("call it zed")
	}
	if !reached {
		w.Errorf("the reply never reached the model")
	}
}

// checkReportPage fails t unless the page from the database is headed
// with the run's name and repository (it named a temporary folder), and
// every file it links is there after the command ended (its notes and
// handoffs were in a temporary folder, removed).
func checkReportPage(t errorer, page string, html []byte, run, repo string) {
	t.Helper()
	_, header, _ := bytes.Cut(html, []byte("<header>"))
	header, _, _ = bytes.Cut(header, []byte("</header>"))
	if !bytes.Contains(header, []byte(run+" · postgres://")) || !bytes.Contains(header, []byte(repo)) || bytes.Contains(header, []byte("flower-report-")) {
		t.Errorf("the page's header does not name %s and %s, or names a temporary folder: %s", run, repo, header)
	}
	links := 0
	for _, m := range regexp.MustCompile(`href="([^"#:]+)"`).FindAllSubmatch(html, -1) {
		p, err := url.PathUnescape(string(m[1]))
		if err != nil {
			t.Errorf("link %s: %v", m[1], err)
			continue
		}
		links++
		if _, err := os.Stat(filepath.Join(filepath.Dir(page), filepath.FromSlash(p))); err != nil {
			t.Errorf("the page links %s, which is gone: %v", p, err)
		}
	}
	t.Logf("the page links %d files", links)
}

// descendants lists pid's children, their children and so on.
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		rest := b[bytes.LastIndexByte(b, ')')+1:]
		f := strings.Fields(string(rest))
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

func TestAWorkerKilledMidToolCallIsTakenOverByAnotherThatResumesTheSession(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow", "--budget", "1")
	const rescue = 8 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	b := w.worker("machine-b", "--rescue", rescue.String())
	// The machine dies once its worker wrote the build step back: its
	// session in the lineage, and the call in flight in its transcript
	// (which the CLI writes only once it answers, after the lineage names
	// the session). What is tested is the takeover of a call in flight,
	// not a kill racing the write-back: a loaded machine took longer than
	// the 1.5 s once waited; the chaos test kills at any moment.
	w.waitStored(id, 30*time.Second, func(steps map[string]string) bool { return steps["build"] != "" })
	waitTranscriptHolds(t, tm, w.model.sleep, "the killed call")
	run := descendants(a.cmd.Process.Pid)
	killed := time.Now()
	// The worker's process group, as an operator's kill does: the run's
	// processes are in groups of their own, and must go with it.
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	a.done <- nil // for the cleanup
	for deadline := time.Now().Add(5 * time.Second); len(living(run)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after machine A's worker was killed its run's processes %v live on", living(run))
		}
	}
	time.Sleep(rescue / 2)
	for _, req := range w.srv.Requests() {
		if req.At.After(killed.Add(time.Second)) && req.At.Before(killed.Add(rescue/2)) {
			t.Errorf("a model request came %s after machine A was killed, before anyone took its run over", req.At.Sub(killed))
		}
	}
	runs := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)
	r := runs[0]
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s\n%s", r.Name(), r.State, r.Reason, b.out)
	}
	for _, req := range w.srv.Requests() {
		if req.At.After(killed) {
			t.Logf("takeover: the first API request of machine B came %s after the kill (rescue interval %s; River's rescuer looks every 30 s)",
				req.At.Sub(killed).Round(time.Millisecond), rescue)
			break
		}
	}
	if got := startedBy(t, tm, id); len(got) != 2 || got[0] != "machine-a" || got[1] != "machine-b" {
		t.Errorf("the run was started by %v, want machine-a then machine-b", got)
	}
	// The budget went with the run: machine B's process got what machine
	// A had left of it.
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	budgets := map[string]float64{}
	for _, e := range evs {
		if e.Kind == event.Step {
			budgets[e.Worker] = e.Float("budget")
		}
	}
	if budgets["machine-a"] != 1 || budgets["machine-b"] <= 0 || budgets["machine-b"] >= 1 {
		t.Errorf("the steps' budgets by worker: %v; want machine A's 1 and machine B's what was left", budgets)
	}
	if r.Cost <= 0 || r.Cost >= 1 {
		t.Errorf("the run's cost is $%v", r.Cost)
	}
	if got := branchFile(t, w.remote, r.Branch, "task-1.txt"); got != "task-1" {
		t.Errorf("the branch holds %q in task-1.txt, want task-1", got)
	}
	// No commit lost or made twice: a straight line from main, each
	// commit a change.
	log := git(t, w.remote, "log", "--format=%H %T %s", "main.."+r.Branch)
	trees := map[string]bool{}
	for _, line := range strings.Split(log, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || trees[f[1]] {
			t.Errorf("the branch repeats a tree or is empty:\n%s", log)
			break
		}
		trees[f[1]] = true
	}
	if merges := git(t, w.remote, "rev-list", "--merges", "main.."+r.Branch); merges != "" {
		t.Errorf("the branch has merges: %s", merges)
	}
	if r.Pushed != git(t, w.remote, "rev-parse", r.Branch) {
		t.Errorf("the run's row says it pushed %s; the branch is at %s", r.Pushed, git(t, w.remote, "rev-parse", r.Branch))
	}
	// B continued A's session: its build request carries A's plan and the
	// killed call, healed.
	var last *claudetest.Request
	for _, req := range w.srv.Requests() {
		if req.At.After(killed) && req.HasText("Now make the change") && len(req.Tools) > 0 {
			last = req
		}
	}
	if last == nil || !last.HasText("the plan for task-1") || !usesBash(last, w.model.sleep) {
		t.Fatal("machine B's build request does not carry machine A's session")
	}
}

// TestATakeoverKeepsTheFilesTheSessionRemembers: the build step writes
// task-1.txt, then makes a slow call; its worker is killed in that call,
// before the step ends and its work is committed. The machine that takes
// the run over resumes a session in which the file was written: it finds
// the file in its checkout (the checkpoint pushed before that transcript
// was written back), and the run ends achieved with the file on its
// branch. Before checkpoints the takeover checked out the plan's commit,
// the model went on as if the file were there, and the run ended achieved
// without it.
func TestATakeoverKeepsTheFilesTheSessionRemembers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 early")
	const rescue = 8 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	// The slow call is in the database's transcripts, so the write before
	// it is too: the takeover resumes after it.
	waitTranscriptHolds(t, tm, w.model.sleep, "the slow call")
	if got := branchFile(t, w.remote, "flower/r1", "task-1.txt"); got != "" {
		t.Fatalf("task-1.txt is on the branch before the step ended (%q): nothing would be tested", got)
	}
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	a.done <- nil // for the cleanup
	killed := time.Now()
	b := w.worker("machine-b", "--rescue", rescue.String())
	r := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)[0]
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s\n%s", r.Name(), r.State, r.Reason, b.out)
	}
	if got := startedBy(t, tm, id); len(got) != 2 || got[1] != "machine-b" {
		t.Fatalf("the run was started by %v, want machine-a then machine-b", got)
	}
	if got := branchFile(t, w.remote, r.Branch, "task-1.txt"); got != "task-1" {
		t.Errorf("the run ended achieved and its branch holds %q in task-1.txt, want task-1 (written before the kill)", got)
	}
	// Machine B did not write it again: its session remembered the write.
	for _, req := range w.srv.Requests() {
		writes := 0
		for _, m := range req.Messages {
			for _, bl := range m.Content {
				if bl.Type == "tool_use" && strings.Contains(string(bl.Input), "echo task-1 > task-1.txt") {
					writes++
				}
			}
		}
		if req.At.After(killed) && writes > 1 {
			t.Errorf("machine B's session holds the write %d times: it was made again", writes)
			break
		}
	}
	if !strings.Contains(b.out.String(), "restored from its checkpoint") {
		t.Errorf("machine B's log does not say it restored the work:\n%s", b.out)
	}
}

func TestCancelStopsARunningRunCleanlyAndTheNextRunStarts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	first := w.submit("task-1 slow")
	w.worker("machine-a")
	w.waitMarker(markerName, 3*time.Minute)
	second := w.submit("task-2")
	out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", team.RunName(first))
	if err != nil || !strings.Contains(out, "stopping r") {
		t.Fatalf("flower cancel: %v\n%s", err, out)
	}
	runs := waitFor(t, tm, 3*time.Minute, "both ended", func(runs []team.Run) bool { return len(runs) == 2 && allEnded(runs) })
	for _, r := range runs {
		switch r.ID {
		case first:
			if r.State != team.Cancelled {
				t.Errorf("the cancelled run ended %s: %s", r.State, r.Reason)
			}
		case second:
			if r.State != team.Achieved {
				t.Errorf("the next run ended %s: %s", r.State, r.Reason)
			}
		}
	}
	if again, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", team.RunName(first)); err == nil || !strings.Contains(again, "already cancelled") {
		t.Errorf("a second cancel: %v\n%s", err, again)
	}
}

func TestTheTeamBudgetStopsWorkersTakingRunsAndRunsSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	first := w.submit("task-1")
	w.worker("machine-a", "--team-budget", "0.0001")
	waitFor(t, tm, 3*time.Minute, "r1 ended", func(runs []team.Run) bool { return len(runs) == 1 && allEnded(runs) })
	second := w.submit("task-2")
	runs := waitFor(t, tm, 2*time.Minute, "r2 refused for the budget", func(runs []team.Run) bool {
		for _, r := range runs {
			if r.ID == second && strings.Contains(r.Reason, "team budget") {
				return true
			}
		}
		return false
	})
	for _, r := range runs {
		if r.ID == second && r.State != team.Queued {
			t.Errorf("the run past the budget is %s, want queued", r.State)
		}
		if r.ID == first && r.State != team.Achieved {
			t.Errorf("the first run ended %s: %s", r.State, r.Reason)
		}
	}
	out, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !strings.Contains(out, "workers take no new runs") || !strings.Contains(out, "team budget") {
		t.Errorf("flower runs does not say the team budget is spent: %v\n%s", err, out)
	}
	zh, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "zh")
	if err != nil || !strings.Contains(zh, "团队预算") || !strings.Contains(zh, "排队中") {
		t.Errorf("flower runs --lang zh: %v\n%s", err, zh)
	}
}

// stopTree sends sig to pid and all its descendants: a machine paused or
// continued as a whole.
func stopTree(pid int, sig syscall.Signal) {
	for _, p := range append(descendants(pid), pid) {
		_ = syscall.Kill(p, sig)
	}
}

func TestAWorkerPausedPastItsRescueWritesNothingAfterAnotherTookOver(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow")
	const rescue = 8 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	time.Sleep(1500 * time.Millisecond)
	stopTree(a.cmd.Process.Pid, syscall.SIGSTOP)
	paused := true
	defer func() {
		if paused {
			stopTree(a.cmd.Process.Pid, syscall.SIGCONT)
		}
	}()
	w.worker("machine-b", "--rescue", rescue.String())
	runs := waitFor(t, tm, 4*time.Minute, "r1 ended by machine B", allEnded)
	r := runs[0]
	if r.State != team.Achieved || r.Host != "machine-b" {
		t.Fatalf("%s ended %s on %s: %s", r.Name(), r.State, r.Host, r.Reason)
	}
	head := git(t, w.remote, "rev-parse", r.Branch)
	files := func() string {
		var n int
		var last time.Time
		if err := tm.Pool().QueryRow(context.Background(), "select count(*), coalesce(max(updated_at), 'epoch') from runstate_files where run = $1", team.StateName(id)).Scan(&n, &last); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d files, last written %s", n, last.Format(time.RFC3339Nano))
	}
	before := files()
	continued := time.Now()
	stopTree(a.cmd.Process.Pid, syscall.SIGCONT)
	paused = false
	// Machine A wakes: three of its confirmations find the job gone.
	time.Sleep(3 * rescue)
	if after := git(t, w.remote, "rev-parse", r.Branch); after != head {
		t.Errorf("the branch moved after machine A was continued: %s → %s", head, after)
	}
	if after := files(); after != before {
		t.Errorf("the run's files were written after machine A was continued: %s, then %s", before, after)
	}
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Worker == "machine-a" && e.At.After(continued) {
			t.Errorf("machine A recorded an event after it was continued: %s %s", e.Kind, e.Text)
		}
	}
	again, err := tm.Run(context.Background(), id)
	if err != nil || again.State != team.Achieved || again.Host != "machine-b" || again.Pushed != head {
		t.Errorf("the run's row changed after machine A was continued: %+v (err %v)", again, err)
	}
	if !strings.Contains(a.out.String(), "taken over") {
		t.Errorf("machine A does not say it lost the run:\n%s", a.out)
	}
}

func TestPostgreSQLRestartedWhileTwoRunsWorkBothContinue(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	db, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorldOn(t, db)
	tm := w.open()
	w.submit("task-1 pause")
	w.submit("task-2 pause")
	// The restart must end within the rescue interval for the runs to
	// stay where they are; on a loaded CI machine stopping and starting
	// a cluster took tens of seconds, so the interval is the default's
	// (a longer silence hands a run on: TestAWorkerPausedPastItsRescueWritesNothingAfterAnotherTookOver).
	w.worker("machine-a", "--rescue", "2m")
	w.worker("machine-b", "--rescue", "2m")
	w.waitMarker(markerName+"-task-1", 3*time.Minute)
	w.waitMarker(markerName+"-task-2", 3*time.Minute)
	restarting := time.Now()
	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("restart: %v\n%s", err, srv.Log())
	}
	t.Logf("PostgreSQL restarted in %s while both runs were in their tool call", time.Since(restarting).Round(time.Millisecond))
	runs := waitFor(t, tm, 4*time.Minute, "both ended", func(runs []team.Run) bool { return len(runs) == 2 && allEnded(runs) })
	for _, r := range runs {
		if r.State != team.Achieved {
			t.Errorf("%s ended %s: %s", r.Name(), r.State, r.Reason)
		}
		if got := startedBy(t, tm, r.ID); len(got) != 1 {
			t.Errorf("%s was started %d times across the restart (%v), want once", r.Name(), len(got), got)
		}
		task := "task-" + strconv.FormatInt(r.ID, 10)
		if got := branchFile(t, w.remote, r.Branch, task+".txt"); got != task {
			t.Errorf("%s's branch holds %q in %s.txt", r.Name(), got, task)
		}
	}
}

func TestARunStopsAtItsBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1", "--budget", "0.0002")
	w.worker("machine-a")
	runs := waitFor(t, tm, 3*time.Minute, "r1 ended", allEnded)
	r := runs[0]
	if r.ID != id || r.State != team.Stopped || !strings.Contains(r.Reason, "budget") || r.Cost < r.Budget {
		t.Fatalf("%s ended %s, $%v of $%v: %s", r.Name(), r.State, r.Cost, r.Budget, r.Reason)
	}
	if got := startedBy(t, tm, id); len(got) != 1 {
		t.Errorf("a run stopped by its budget was started %d times: %v", len(got), got)
	}
	out, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !strings.Contains(out, "stopped") || !strings.Contains(out, "/$0.0002") {
		t.Errorf("flower runs:\n%s", out)
	}
}

func TestEveryStateChangeIsAnEventAFollowerSees(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	// Three minutes: the first submit of a package builds the flower it
	// runs, which took most of a minute under CI's load.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	got := make(chan team.Event, 16)
	following := make(chan error, 1)
	go func() { following <- tm.Follow(ctx, func(e team.Event) { got <- e }) }()
	time.Sleep(300 * time.Millisecond) // LISTENing
	id := w.submit("task-1")
	if _, err := tm.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	var states []string
	for len(states) < 2 {
		select {
		case e := <-got:
			if e.Run == id && e.Text == "team_state" {
				states = append(states, e.Str("state"))
			}
		case err := <-following:
			t.Fatalf("Follow ended: %v", err)
		case <-ctx.Done():
			t.Fatalf("the follower saw %v", states)
		}
	}
	if strings.Join(states, ",") != "queued,cancelled" {
		t.Errorf("the follower saw %v, want queued then cancelled", states)
	}
}

func TestSIGTERMLetsTheToolCallFinishThenReleasesTheRunToAnotherWorker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 pause")
	a := w.worker("machine-a")
	w.waitMarker(markerName+"-task-1", 3*time.Minute)
	termed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		a.done <- err
		if err != nil {
			t.Errorf("the worker's exit after SIGTERM: %v\n%s", err, a.out)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the worker did not stop after SIGTERM")
	}
	t.Logf("the worker stopped %s after SIGTERM", time.Since(termed).Round(time.Millisecond))
	r, err := tm.Run(context.Background(), id)
	if err != nil || r.State != team.Queued || !strings.Contains(r.Reason, "released by machine-a") {
		t.Fatalf("after the worker stopped the run is %s: %s (err %v)", r.State, r.Reason, err)
	}
	// The call in flight ran to its end: its result reached the model,
	// not an interruption.
	finished := false
	for _, req := range w.srv.Requests() {
		var call string
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_use" && strings.Contains(string(b.Input), pauseDefault) {
					call = b.ID
				}
			}
		}
		for _, b := range req.ToolResults() {
			if call != "" && b.ToolUseID == call && !b.IsError && !strings.Contains(b.Content, "nterrupt") {
				finished = true
			}
		}
	}
	if !finished {
		t.Error("the tool call in flight did not finish before the worker stopped the run")
	}
	w.worker("machine-b")
	runs := waitFor(t, tm, 3*time.Minute, "r1 ended", allEnded)
	if runs[0].State != team.Achieved {
		t.Errorf("%s ended %s: %s", runs[0].Name(), runs[0].State, runs[0].Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a,machine-b" {
		t.Errorf("started by %v, want machine-a then machine-b", got)
	}
	if got := branchFile(t, w.remote, runs[0].Branch, "task-1.txt"); got != "task-1" {
		t.Errorf("the branch holds %q", got)
	}
}

func TestARunCancelledWhileItsWorkerIsDeadEndsCancelled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow")
	a := w.worker("machine-a", "--rescue", "8s")
	w.waitMarker(markerName, 3*time.Minute)
	stopTree(a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
	a.done <- nil
	if out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", team.RunName(id)); err != nil {
		t.Fatalf("flower cancel: %v\n%s", err, out)
	}
	w.worker("machine-b", "--rescue", "8s") // a team always has a worker: River's rescuer runs in one
	runs := waitFor(t, tm, 3*time.Minute, "r1 cancelled", allEnded)
	if runs[0].State != team.Cancelled {
		t.Errorf("the run is %s: %s", runs[0].State, runs[0].Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a" {
		t.Errorf("a cancelled run was started again: %v", got)
	}
	out, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !regexp.MustCompile(`(?m)^r1\s+cancelled`).MatchString(out) {
		t.Errorf("flower runs: %v\n%s", err, out)
	}
}

// A follower listens on a connection of its own and closes it when it
// ends (issue 44's review): it took one from the pool and gave it back
// still listening, its buffer growing with every notice for as long as the
// pool kept it; and followers held the pool's connections while they
// waited. After many followers, none of the pool's connections listens,
// and the pool still has room while followers wait.
func TestAFollowerLeavesNoListeningConnectionInThePool(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a first submit builds flower
	defer cancel()
	max := int(tm.Pool().Config().MaxConns)
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range max + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := tm.Follow(fctx, func(team.Event) {}); err != nil && fctx.Err() == nil {
				t.Errorf("Follow: %v", err)
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // listening
	// More followers than the pool has connections, and the pool serves.
	qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
	if _, err := tm.Runs(qctx, team.RunFilter{}); err != nil {
		t.Errorf("with %d followers waiting the pool served no query: %v", max+2, err)
	}
	qcancel()
	w.submit("task-1")
	stop()
	wg.Wait()
	for _, c := range tm.Pool().AcquireAllIdle(ctx) {
		var n int
		err := c.QueryRow(ctx, "select count(*) from pg_listening_channels()").Scan(&n)
		c.Release()
		if err != nil || n != 0 {
			t.Errorf("a connection of the pool still listens on %d channels after its follower ended (%v)", n, err)
		}
	}
}
