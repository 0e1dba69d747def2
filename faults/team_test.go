package faults

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/team"
)

var (
	teamflowOnce sync.Once
	teamflowPath string
	teamflowErr  error
)

// teamflow builds the team tests' workflow program, which takes flower's
// whole command line (worker and submit included).
func teamflow(t *testing.T) string {
	t.Helper()
	teamflowOnce.Do(func() {
		dir, err := os.MkdirTemp("", "faults-teamflow-")
		if err != nil {
			teamflowErr = err
			return
		}
		teamflowPath = filepath.Join(dir, "teamflow")
		if out, err := exec.Command("go", "build", "-o", teamflowPath, "../team/testdata/teamflow").CombinedOutput(); err != nil {
			teamflowErr = err
			t.Logf("%s", out)
		}
	})
	if teamflowErr != nil {
		t.Fatalf("go build ../team/testdata/teamflow: %v", teamflowErr)
	}
	return teamflowPath
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFaultATeamWorkerKilledMidToolCall(t *testing.T) {
	fault(t, "a team's worker killed with SIGKILL mid-tool-call (the worker, its run's flower, its CLI and the tool at once): River gives the run to another worker, which resumes the same session from the store; every line of both machines' CLI transcripts is in the database in order")
	dbURL := pgtest.Database(t)
	remote := origin(t)
	// The run is confined to its own folders: it marks the slow call and
	// keeps the CLI's transcripts in its own tmp folder ("$TMPDIR").
	const marker = "../tmp/sleeping"
	sleep := "sleep 600.5"
	write := "echo done > result.txt"
	var slept atomic.Bool
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.MaxTokens == 16:
			return claudetest.Say("hi")
		case len(r.Tools) == 0:
			return claudetest.Say("ok")
		case !r.HasText("Now make the change"):
			return claudetest.Say("the plan: one file")
		case usesTool(r, write):
			return claudetest.Say("made the change")
		case slept.CompareAndSwap(false, true):
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + marker + "; " + sleep, "description": "wait"}))
		}
		return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": write, "description": "write"}))
	})
	env := claudetest.BaseEnv()
	for k, v := range claudetest.Env(t, srv) {
		env = append(env, k+"="+v)
	}
	env = append(env, "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	env = append(env, "FLOWER_DATABASE_URL="+dbURL) // never on a command line
	submit := exec.CommandContext(ctx, teamflow(t), "submit", "--repo", remote, "--branch", "main", "--lang", "en", "add a result file")
	submit.Env = env
	out, err := submit.CombinedOutput()
	m := regexp.MustCompile(`submitted r(\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	id, _ := strconv.ParseInt(string(m[1]), 10, 64)

	type worker struct {
		dir, capture string
		cmd          *exec.Cmd
		out          *syncBuffer
	}
	start := func(name string) *worker {
		w := &worker{dir: t.TempDir(), out: &syncBuffer{}}
		w.capture = filepath.Join(w.dir, team.RunName(id), "tmp", "capture")
		w.cmd = exec.CommandContext(ctx, teamflow(t), "worker", "--dir", w.dir, "--name", name, "--rescue", "8s", "--lang", "en",
			"--keep-ended", "1h", // the CLI's transcripts are read from the folder afterwards
			"--readable", claudetest.CLIPath(t)) // what the capturing wrapper runs, wherever the checkout is
		w.cmd.Env = append(append([]string{}, env...), "FLOWER_CLAUDE="+capturingCLIInto(t, claudetest.CLIPath(t), `"$TMPDIR/capture"`), "HOME="+t.TempDir())
		w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	a := start("machine-a")
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(a.dir, team.RunName(id), "tmp", "sleeping")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			a.cmd.Process.Kill()
			a.cmd.Wait()
			t.Fatalf("machine A never ran the long tool call:\n%s", a.out)
		}
	}
	b := start("machine-b")
	defer func() {
		b.cmd.Process.Signal(syscall.SIGTERM)
		b.cmd.Wait()
		if t.Failed() {
			t.Logf("machine B:\n%s", b.out)
		}
	}()
	// Killed once the call in flight is in the database's transcripts: the
	// takeover of a call in flight is what is tested, not a kill racing
	// the write-back. (A 1.5 s wait failed with the suite side by side:
	// machine B resumed from before the build step.)
	waitStoredTranscriptHolds(t, ctx, dbURL, sleep)
	for _, pid := range append(descendants(a.cmd.Process.Pid), a.cmd.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	a.cmd.Wait()
	// A SIGKILL ends a process when it is next scheduled, not at the
	// kill: the tool, two PID namespaces down (the run's, its CLI's), was
	// seen 10-50 ms after the worker was reaped. Gone within 5 s, or it
	// outlived the machine.
	for deadline := time.Now().Add(5 * time.Second); len(pidsRunning(sleep)) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("machine A's tool outlived the machine: %v", pidsRunning(sleep))
		}
	}

	tm, err := team.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	var r team.Run
	for {
		if r, err = tm.Run(ctx, id); err == nil && team.Ended(r.State) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the run never ended: %+v (%v)", r, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if r.State != team.Achieved || r.Host != "machine-b" {
		t.Fatalf("the run ended %s on %s: %s", r.State, r.Host, r.Reason)
	}
	if got := strings.TrimSpace(git(t, remote, "show", r.Branch+":result.txt")); got != "done" {
		t.Errorf("the run's branch holds %q", got)
	}

	s, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkout := func(w *worker) string { return filepath.Join(w.dir, team.RunName(id), "work") }
	config := func(w *worker) string { return filepath.Join(w.dir, team.RunName(id), "home", ".claude") }
	if _, err := os.Stat(filepath.Join(config(b), "projects", claude.ProjectKey(checkout(a)))); err == nil {
		t.Error("machine B's HOME holds machine A's project: the machines are not apart")
	}
	runs := store.OneProject{Base: s, Project: "run:" + team.StateName(id)}
	checkStoreTranscripts(t, runs, []string{claude.ProjectKey(checkout(a)), claude.ProjectKey(checkout(b))}, killed,
		config(a), a.capture, config(b), b.capture)

	// B's build request continues A's: the plan and the killed call.
	var last *claudetest.Request
	for _, req := range srv.Requests() {
		if req.HasText("Now make the change") && len(req.Tools) > 0 {
			last = req
		}
	}
	if last == nil || !last.HasText("the plan: one file") || !usesTool(last, sleep) {
		t.Fatal("machine B's build request does not carry machine A's session")
	}
}

// waitStoredTranscriptHolds waits until a transcript in the database at dbURL
// holds text (a worker writes a run's transcripts back every few seconds).
func waitStoredTranscriptHolds(t *testing.T, ctx context.Context, dbURL, text string) {
	t.Helper()
	tm, err := team.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var n int
		err := tm.Pool().QueryRow(ctx, `select count(*) from session_entries where position($1::bytea in payload) > 0`, []byte(text)).Scan(&n)
		if err == nil && n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call in flight never reached the database's transcripts (err %v)", err)
		}
	}
}
