package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/store/readback"
)

// machine is one machine of a team: its own clone of the repository, its
// own HOME for the CLI, its own state folders, one database for all.
type machine struct {
	t       *testing.T
	ws      string
	env     map[string]string
	capture string
	cmdEnv  []string
}

// origin makes a bare repository with one commit: the team's remote.
func origin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bare, work := filepath.Join(dir, "origin.git"), filepath.Join(dir, "seed")
	git(t, "", "init", "-q", "--bare", bare)
	git(t, "", "init", "-q", work)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("# cli\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "README.md")
	git(t, work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	git(t, work, "push", "-q", bare, "HEAD:refs/heads/main")
	return bare
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newMachine(t *testing.T, srv *claudetest.Server, remote, dbURL string) *machine {
	t.Helper()
	ownflow(t)
	ws := filepath.Join(t.TempDir(), "checkout")
	git(t, "", "clone", "-q", "-b", "main", remote, ws)
	mc := &machine{t: t, ws: ws, env: claudetest.Env(t, srv), capture: t.TempDir()}
	mc.cmdEnv = claudetest.BaseEnv()
	for k, v := range mc.env {
		mc.cmdEnv = append(mc.cmdEnv, k+"="+v)
	}
	mc.cmdEnv = append(mc.cmdEnv, "FLOWER_CLAUDE="+capturingCLI(t, claudetest.CLIPath(t), mc.capture),
		"XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(),
		flower.DatabaseEnv+"="+dbURL, flower.LeaseEnv+"=3s")
	return mc
}

func (mc *machine) command(ctx context.Context) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, ownflow(mc.t), "-w", mc.ws, "-W", "--lang", "en", "add a --json flag")
	cmd.Env, cmd.Dir = mc.cmdEnv, mc.t.TempDir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	return cmd, &out
}

func (mc *machine) config() string { return mc.env["CLAUDE_CONFIG_DIR"] }

// usesTool reports whether req's history holds a Bash call of command.
func usesTool(req *claudetest.Request, command string) bool {
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" && strings.Contains(string(b.Input), command) {
				return true
			}
		}
	}
	return false
}

// pidsRunning lists the processes whose command line holds text.
func pidsRunning(text string) []int {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(text)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
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
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
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
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// lease is machine A's in TestFaultARunContinuedOnAnotherMachine.
const lease = 15 * time.Second

func TestFaultARunContinuedOnAnotherMachine(t *testing.T) {
	t.Parallel()
	fault(t, "a run whose machine dies (flower and its CLI killed with SIGKILL mid-tool-call) is continued from PostgreSQL by another machine with its own HOME and its own clone: the same session resumed from the store (none of the first machine's CLI files there), the lineage and spills restored, every pointed byte readable there, and every line of both machines' CLI transcripts in the database in order")
	dbURL := pgtest.Database(t)
	remote := origin(t)
	marker := filepath.Join(t.TempDir(), "sleeping")
	sleep := "sleep 600.25"  // a fraction no other test's sleep has
	bigCmd := "seq 1 3000"   // 13,893 bytes: spilled to the workbench
	hugeCmd := "seq 1 8200"  // 40,000 bytes: cut by the CLI, which keeps it whole in its HOME, then spilled whole
	var sleeping atomic.Bool // handed out once: a second time would run for ten minutes
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.MaxTokens == 16:
			return claudetest.Say("hi")
		case len(r.Tools) == 0:
			return claudetest.Say("ok")
		case !r.HasText("Now make the change"):
			return claudetest.Say("the plan: one flag")
		case usesTool(r, sleep):
			return claudetest.Say("made the change")
		case usesTool(r, hugeCmd) && sleeping.CompareAndSwap(false, true):
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + marker + "; " + sleep, "description": "wait"}))
		}
		if sleeping.Load() {
			return claudetest.Say("a new session: the old one was not continued")
		}
		if usesTool(r, bigCmd) {
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": hugeCmd, "description": "count more"}))
		}
		return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": bigCmd, "description": "count"}))
	})
	a, b := newMachine(t, srv, remote, dbURL), newMachine(t, srv, remote, dbURL)
	// A lease machine B's start cannot outlast on a loaded machine: with
	// 3 s, B took longer than that to look and found the run free.
	for _, mc := range []*machine{a, b} {
		mc.cmdEnv = append(mc.cmdEnv, flower.LeaseEnv+"="+lease.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	first, outA := a.command(ctx)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			first.Process.Kill()
			first.Wait()
			t.Fatalf("machine A never ran the long tool call:\n%s", outA)
		}
	}
	time.Sleep(1500 * time.Millisecond) // a second's write-back of the workbench, then the machine dies
	// The machine goes down: flower, its CLIs and the tool, all at once
	// (a resumed session's CLI has a temporary config folder: its
	// processes are found as flower's descendants).
	for _, pid := range append(descendants(first.Process.Pid), first.Process.Pid) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	first.Wait()
	if left := pidsRunning(sleep); len(left) > 0 {
		t.Fatalf("machine A's tool outlived the machine: %v", left)
	}
	linA := readLineage(t, filepath.Join(a.ws, "runs"))
	if linA["build"] == "" {
		t.Fatalf("machine A's lineage has no build session: %v\n%s", linA, outA)
	}

	// Machine B at once: the run is busy until A's lease lapses.
	early, outEarly := b.command(ctx)
	if err := early.Run(); err == nil || !strings.Contains(outEarly.String(), "is busy on") {
		t.Fatalf("machine B right after the kill: %v, want busy\n%s", err, outEarly)
	}
	t.Logf("machine B right after the kill: %s", lastLine(outEarly.String()))
	if _, err := os.Stat(filepath.Join(b.ws, "runs", flower.LineageName)); err == nil {
		t.Fatal("machine B, refused, laid out the run anyway")
	}
	time.Sleep(lease + 500*time.Millisecond) // past A's lease

	before := srv.Count()
	second, outB := b.command(ctx)
	if err := second.Run(); err != nil {
		t.Fatalf("machine B: %v\n%s", err, outB)
	}
	t.Logf("machine B's screen:\n%s", outB)
	for _, want := range []string{"run state in the database", "made the change"} {
		if !strings.Contains(outB.String(), want) {
			t.Errorf("machine B's screen lacks %q", want)
		}
	}
	linB := readLineage(t, filepath.Join(b.ws, "runs"))
	if linB["build"] != linA["build"] || linB["plan"] != linA["plan"] {
		t.Errorf("machine B did not continue A's sessions: A %v, B %v", linA, linB)
	}
	if _, err := os.Stat(filepath.Join(b.config(), "projects", claude.ProjectKey(a.ws))); err == nil {
		t.Error("machine B's HOME holds machine A's project: the test's machines are not apart")
	}

	// B's requests continue A's build: the plan, the spilled output's
	// pointer, and the killed call, healed.
	var last *claudetest.Request
	for _, r := range srv.Requests()[before:] {
		if r.HasText("Now make the change") && len(r.Tools) > 0 {
			last = r
		}
	}
	if last == nil || !last.HasText("the plan: one flag") || !usesTool(last, bigCmd) || !usesTool(last, sleep) {
		t.Fatalf("machine B's build request does not carry A's session")
	}
	want := map[string]readback.Output{}
	for _, m := range last.Messages {
		for _, bl := range m.Content {
			if cmd := bashCommand(bl); bl.Type == "tool_use" && (cmd == bigCmd || cmd == hugeCmd) {
				out, err := exec.Command("bash", "-c", cmd).Output()
				if err != nil {
					t.Fatal(err)
				}
				want[bl.ID] = readback.Output{Text: string(out)}
			}
		}
	}
	sent := map[string]string{}
	for _, bl := range last.ToolResults() {
		sent[bl.ToolUseID] = bl.Content
	}
	rep := readback.Check(sent, want, b.ws)
	t.Logf("read back on machine B: %s", rep)
	if len(want) != 2 || rep.Percent() != 100 {
		t.Errorf("on machine B %.1f%% of the pointed bytes are readable: %+v", rep.Percent(), rep.Results)
	}
	for _, r := range rep.Results {
		if r.Status != readback.Recoverable {
			t.Errorf("%s: %s (%s): the output was not spilled, or its file is not on machine B", r.ToolUseID, r.Status, r.Why)
		}
	}

	s, err := postgres.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := strings.TrimSpace(git(t, a.ws, "rev-list", "--max-parents=0", "HEAD"))
	runs := store.OneProject{Base: s, Project: "run:git:" + name + ":.:runs"}
	checkStoreTranscripts(t, runs, []string{claude.ProjectKey(a.ws), claude.ProjectKey(b.ws)}, killed,
		a.config(), a.capture, b.config(), b.capture)
}

func bashCommand(b claudetest.Block) string {
	var in struct{ Command string }
	_ = json.Unmarshal(b.Input, &in)
	return in.Command
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// snapshot is what the database holds of every run, and the files of one
// machine's run directory: what a process that lost its run must not
// change.
func snapshot(t *testing.T, dbURL, runDir string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var b strings.Builder
	for _, q := range []string{
		"select count(*)::text || ':' || coalesce(md5(string_agg(store_key || seq::text || md5(payload), ',' order by store_key, seq)), '') from session_entries",
		"select count(*)::text || ':' || coalesce(md5(string_agg(root || path || md5(data) || updated_at::text, ',' order by root, path)), '') from runstate_files",
		"select string_agg(epoch::text || holder_host || holder_pid::text || beat_at::text, ',') from runstate_runs",
	} {
		var out string
		if err := conn.QueryRow(ctx, q).Scan(&out); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		b.WriteString(out + "\n")
	}
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		if data, err := os.ReadFile(filepath.Join(runDir, e.Name())); err == nil {
			fmt.Fprintf(&b, "%s %d %x\n", e.Name(), len(data), data[max(0, len(data)-32):])
		}
	}
	return b.String()
}

func TestFaultAMachinePausedPastItsLeaseWritesNothingWhenItWakes(t *testing.T) {
	t.Parallel()
	fault(t, "flower paused (SIGSTOP) mid-tool-call past its lease: another machine takes the run over and finishes it; continued (SIGCONT), the paused flower stops with a message and writes nothing: the database's rows and its run directory's files are as the other machine left them")
	dbURL := pgtest.Database(t)
	remote := origin(t)
	marker := filepath.Join(t.TempDir(), "sleeping")
	sleep := "sleep 600.35"
	var handed atomic.Bool
	srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		switch {
		case r.MaxTokens == 16:
			return claudetest.Say("hi")
		case len(r.Tools) == 0:
			return claudetest.Say("ok")
		case !r.HasText("Now make the change"):
			return claudetest.Say("the plan: one flag")
		case usesTool(r, sleep):
			return claudetest.Say("made the change")
		case handed.CompareAndSwap(false, true):
			return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch " + marker + "; " + sleep, "description": "wait"}))
		}
		return claudetest.Say("a new session: the old one was not continued")
	})
	a, b := newMachine(t, srv, remote, dbURL), newMachine(t, srv, remote, dbURL)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	first, outA := a.command(ctx)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- first.Wait() }()
	t.Cleanup(func() {
		for _, pid := range append(descendants(first.Process.Pid), first.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		syscall.Kill(first.Process.Pid, syscall.SIGCONT)
		<-done
	})
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("machine A never ran the long tool call:\n%s", outA)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // past A's 3 s lease

	second, outB := b.command(ctx)
	if err := second.Run(); err != nil {
		t.Fatalf("machine B: %v\n%s", err, outB)
	}
	if !strings.Contains(outB.String(), "made the change") {
		t.Fatalf("machine B did not finish the run:\n%s", outB)
	}
	before := snapshot(t, dbURL, filepath.Join(a.ws, "runs"))
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err // for the cleanup
		if err == nil {
			t.Errorf("machine A, continued after losing the run, exited 0:\n%s", outA)
		}
	case <-time.After(time.Minute):
		t.Fatalf("machine A, continued after losing the run, did not stop:\n%s", outA)
	}
	t.Logf("machine A after SIGCONT:\n%s", outA)
	if !strings.Contains(outA.String(), "Another machine took this run over") {
		t.Errorf("machine A's screen does not say another took the run over")
	}
	if after := snapshot(t, dbURL, filepath.Join(a.ws, "runs")); after != before {
		t.Errorf("machine A wrote after it lost the run:\nbefore %s\nafter  %s", before, after)
	}
}

// dbScene is a Runtime on a database of a server of the test's own, which
// the test stops and starts.
type dbScene struct {
	srv    *pgtest.Server
	url    string
	db     *flower.Database
	rt     *flower.Runtime
	api    *claudetest.Server
	ws     string
	env    map[string]string
	config string
}

func newDBScene(t *testing.T, h claudetest.Handler, wait time.Duration) *dbScene {
	t.Helper()
	ctx := context.Background()
	sc := &dbScene{srv: pgtest.Start(t), api: claudetest.NewServer(t, h), ws: t.TempDir()}
	var err error
	if sc.url, err = sc.srv.CreateDatabase(ctx); err != nil {
		t.Fatal(err)
	}
	sc.env = claudetest.Env(t, sc.api)
	sc.config = sc.env["CLAUDE_CONFIG_DIR"]
	sc.db, err = flower.OpenDatabase(ctx, sc.url, flower.DatabaseOptions{Workspace: sc.ws, Run: "restart", ConfigDir: sc.config, Lease: 5 * time.Second, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.db.Close(context.Background()) })
	cli := claudetest.CLIPath(t)
	sc.rt, err = flower.New(sc.ws, flower.WithDatabase(sc.db), flower.WithEnv(sc.env), flower.WithResilience(fastResilience()),
		flower.WithLanguage(flower.English), flower.WithDefaultWorkbench(),
		flower.WithSessionOptions(func(o *claude.Options) { o.CLIPath, o.BaseEnv = cli, claudetest.BaseEnv() }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.rt.Close() })
	return sc
}

// toolThenSay answers a step with one Bash call of command, then text.
func toolThenSay(command, text string) claudetest.Handler {
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if len(r.Tools) == 0 {
			return claudetest.Say("ok")
		}
		if _, ok := r.LastToolResult(); ok {
			return claudetest.Say(text)
		}
		return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": command, "description": "work"}))
	}
}

func TestFaultDatabaseRestartedMidStep(t *testing.T) {
	t.Parallel()
	fault(t, "PostgreSQL restarted (down 3 s) while a step's tool runs: the step waits for it with a line saying so, succeeds, and the database holds every transcript line of the CLI and the run's files")
	marker := filepath.Join(t.TempDir(), "working")
	sc := newDBScene(t, toolThenSay("touch "+marker+"; sleep 2", "done after the restart"), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	restarted := make(chan error, 1)
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				if err := sc.srv.Stop(ctx); err != nil {
					restarted <- err
					return
				}
				time.Sleep(3 * time.Second)
				restarted <- sc.srv.Start(ctx)
				return
			}
		}
		restarted <- errors.New("the tool never ran")
	}()
	var waits []string
	var mu sync.Mutex
	r, err := sc.rt.Run(ctx, spec(), "work through a restart", flower.RunOptions{OnEvent: func(e flower.Event) {
		if e.Kind == "retry" && strings.Contains(e.Text, "waiting for the database") {
			mu.Lock()
			waits = append(waits, e.Text)
			mu.Unlock()
		}
	}})
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if err != nil || !r.OK || !strings.Contains(r.Text, "done after the restart") {
		t.Fatalf("the step: ok %v text %q err %v (%s)\n%s", r.OK, r.Text, err, r.Error, sc.srv.Log())
	}
	mu.Lock()
	if len(waits) == 0 {
		t.Error("the step never said it was waiting for the database")
	} else {
		t.Logf("the step said: %s", waits[0])
	}
	mu.Unlock()
	s, err := postgres.Open(ctx, sc.url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkStoreTranscripts(t, store.OneProject{Base: s, Project: "run:restart"}, []string{claude.ProjectKey(sc.ws)}, strict, sc.config)
	if err := sc.db.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// What a second machine finds: the manifest with the step's row.
	other := filepath.Join(t.TempDir(), "ws")
	db2, err := flower.OpenDatabase(ctx, sc.url, flower.DatabaseOptions{Workspace: other, Run: "restart", ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close(ctx)
	rows := readManifest(t, filepath.Join(other, "runs"))
	if len(rows) != 1 || !rows[0].OK {
		t.Errorf("the manifest in the database: %+v", rows)
	}
}

func TestFaultDatabaseGoneForGood(t *testing.T) {
	t.Parallel()
	fault(t, "PostgreSQL stopped for good during a step: the step's end waits the configured time, then the run stops, resumable, with a message naming the database's URL with its password masked")
	marker := filepath.Join(t.TempDir(), "working")
	sc := newDBScene(t, toolThenSay("touch "+marker+"; sleep 1", "done"), 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(marker); err == nil {
				sc.srv.Stop(ctx)
				return
			}
		}
	}()
	r, err := sc.rt.Run(ctx, spec(), "work", flower.RunOptions{})
	if err == nil || r.OK {
		t.Fatalf("the step succeeded with its database gone: %+v", r)
	}
	t.Logf("the step's error: %v", err)
	shown := postgres.Redact(sc.url)
	if !strings.Contains(err.Error(), shown) || !strings.Contains(shown, "xxxxx") {
		t.Errorf("the error does not name the URL %s", shown)
	}
	if pw := strings.TrimPrefix(strings.SplitN(strings.TrimPrefix(sc.url, "postgres://postgres:"), "@", 2)[0], ""); strings.Contains(err.Error(), pw) {
		t.Error("the error shows the password")
	}
	// Resumable: the step's session is on this machine and in the lineage.
	if _, err := os.Stat(filepath.Join(sc.ws, "runs", flower.ManifestName)); err != nil {
		t.Errorf("the run left no manifest to resume from: %v", err)
	}
}
