package team_test

// A worker whose own environment is broken (issue 33, point 7: a
// read-only --dir, no CLI) takes no run, parks none, says once why and
// what to do, and marks itself broken in team_workers; a healthy worker
// works the runs. Workers as processes, the real CLI, real PostgreSQL.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/team"
)

// brokenLine is what a broken worker logs, once per problem.
const brokenLine = "cannot take runs:"

// workerWrapped is a worker process whose command line is wrap followed by
// teamflow's (wrap may be empty), with env laid over the world's; its
// HOME is home and its --dir home/runs.
func (w *world) workerWrapped(home, name string, wrap, env []string, extra ...string) *machine {
	w.t.Helper()
	dir := filepath.Join(home, "runs")
	w.addDir(dir)
	args := append([]string{"worker", "--dir", dir, "--name", name, "--lang", "en", "--db-file", w.dbFile}, extra...)
	args = append(append(append([]string{}, wrap...), teamflow(w.t)), args...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(append(append([]string{}, w.env...), "HOME="+home, "TMPDIR="+w.t.TempDir()), env...)
	cmd.Dir = home
	mc := &machine{name: name, dir: dir, cmd: cmd, out: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = mc.out, mc.out
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
		}
	})
	return mc
}

// workerState is the worker's state in team_workers ("" without a row).
func (w *world) workerState(name string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var state string
	err = conn.QueryRow(ctx, "select state from team_workers where name = $1", name).Scan(&state)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		w.t.Fatal(err)
	}
	return state
}

// waitWorkerState waits until the worker's row state starts with prefix;
// false (with an error) when it does not within d.
func (w *world) waitWorkerState(name, prefix string, d time.Duration) bool {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.HasPrefix(w.workerState(name), prefix) {
		if time.Now().After(deadline) {
			w.t.Errorf("after %s, worker %s is %q in team_workers, not %s...", d, name, w.workerState(name), prefix)
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}

// checkBrokenWorkerTookNone submits three runs, lets the broken worker
// (already started) be handed them, then starts a healthy worker and
// checks that it alone worked all three to achieved, with no failure
// recorded, and that the broken one said why once and is marked broken.
func checkBrokenWorkerTookNone(t *testing.T, w *world, tm *team.Team, broken *machine, wantInLine ...string) (healthy *machine) {
	t.Helper()
	var ids []int64
	for i := 1; i <= 3; i++ {
		ids = append(ids, w.submit(fmt.Sprintf("task-%d", i)))
	}
	w.waitWorkerState(broken.name, "broken: ", time.Minute)
	// Time for the broken worker to take runs, as it did before (it failed
	// two of three in 11 s): none may be taken in it.
	time.Sleep(5 * time.Second)
	healthy = w.worker("machine-ok", "--rescue", "8s")
	runs := waitFor(t, tm, 8*time.Minute, "all ended", allEnded)
	for _, r := range runs {
		if r.State != team.Achieved || len(r.Failures) > 0 {
			t.Errorf("%s ended %s with %d failures: %s %v", r.Name(), r.State, len(r.Failures), r.Reason, r.Failures)
		}
		if got := startedBy(t, tm, r.ID); strings.Join(got, ",") != "machine-ok" {
			t.Errorf("%s was started by %v, want machine-ok alone", r.Name(), got)
		}
	}
	out := broken.out.String()
	if n := strings.Count(out, brokenLine); n != 1 {
		t.Errorf("the broken worker said %q %d times, want once:\n%s", brokenLine, n, out)
	}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, brokenLine) {
			line = l
		}
	}
	for _, want := range append(wantInLine, broken.name, "To fix:") {
		if !strings.Contains(line, want) {
			t.Errorf("the broken worker's line does not say %q: %s", want, line)
		}
	}
	t.Logf("the broken worker said: %s", line)
	if s := w.workerState(broken.name); !strings.HasPrefix(s, "broken: ") {
		t.Errorf("the broken worker is %q in team_workers", s)
	}
	return healthy
}

// A worker whose --dir is on a read-only mount (root ignores permission
// bits, so the worker, as root, gets a read-only bind mount of its own
// --dir in a mount namespace of its own) takes none of three runs; a
// healthy worker works all three.
func TestAWorkerWithAReadOnlyDirTakesNoRunAndSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	home := t.TempDir()
	dir := filepath.Join(home, "runs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var wrap []string
	if os.Geteuid() == 0 {
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Fatalf("unshare (util-linux) is needed to give the worker a read-only --dir as root: %v", err)
		}
		wrap = []string{unshare, "-m", "--propagation", "private", "sh", "-c",
			`mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"`, dir}
	} else if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	broken := w.workerWrapped(home, "machine-ro", wrap, nil, "--rescue", "8s")
	checkBrokenWorkerTookNone(t, w, tm, broken, dir)
}

// A worker whose runs would find no CLI (FLOWER_CLAUDE names a missing
// file; no claude on PATH) takes none of three runs; a healthy worker
// works them. Once the file is there, the same worker takes runs again
// within its rechecks and works one to achieved.
func TestAWorkerWithNoCLITakesNoRunUntilItHasOne(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	if p, err := exec.LookPath("claude"); err == nil {
		t.Fatalf("claude is on the test's PATH (%s): the worker would find it", p)
	}
	cli := filepath.Join(t.TempDir(), "claude")
	broken := w.workerWrapped(t.TempDir(), "machine-nocli", nil, []string{"FLOWER_CLAUDE=" + cli}, "--rescue", "4s")
	healthy := checkBrokenWorkerTookNone(t, w, tm, broken, "FLOWER_CLAUDE="+cli)
	if t.Failed() {
		return
	}

	// The healthy worker stops, and the CLI is put where FLOWER_CLAUDE
	// points (a hard link: the run's confinement binds that very file).
	_ = healthy.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-healthy.done:
		healthy.done <- nil
	case <-time.After(2 * time.Minute):
		t.Fatal("the healthy worker did not stop within 2 minutes of SIGTERM")
	}
	if err := os.Link(claudetest.CLIPath(t), cli); err != nil {
		t.Fatalf("link the CLI into place: %v", err)
	}
	if !w.waitWorkerState(broken.name, "working", time.Minute) {
		return
	}
	if !strings.Contains(broken.out.String(), "takes runs again") {
		t.Errorf("the mended worker did not say it takes runs again:\n%s", broken.out)
	}
	id := w.submit("task-4")
	r := runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved || len(r.Failures) > 0 {
		t.Errorf("%s ended %s with %d failures on the mended worker: %s", r.Name(), r.State, len(r.Failures), r.Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != broken.name {
		t.Errorf("%s was started by %v, want the mended %s", r.Name(), got, broken.name)
	}
}

// The CLI a person's worker finds may live where a run sees nothing: under
// /home (a per-user install), /tmp (a checkout) or behind a wrapper script
// that runs it from there. Before, every attempt failed "(unknown)" with 0
// tokens until the run was parked (issue 40). Now a worker whose CLI is a
// wrapper of a hidden binary takes no run and says which CLI and what to
// do; with --readable naming what the wrapper runs it works a run to
// achieved; a CLI reached through a symlink under /home runs as it is.
func TestAWorkerWhoseCLIAHiddenFolderHoldsRunsItOrSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	// The real binary, copied where no run sees it whatever the checkout's
	// place: a temporary folder (under /tmp).
	hidden := t.TempDir()
	real := filepath.Join(hidden, "claude-real")
	copyFile(t, claudetest.CLIPath(t), real, 0o755)
	wrapper := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nexec '"+real+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	id := w.submit("task-1")
	broken := w.workerWrapped(t.TempDir(), "machine-wrapper", nil, []string{"FLOWER_CLAUDE=" + wrapper}, "--rescue", "4s")
	if !w.waitWorkerState(broken.name, "broken: ", 2*time.Minute) {
		return
	}
	line := ""
	for _, l := range strings.Split(broken.out.String(), "\n") {
		if strings.Contains(l, brokenLine) {
			line = l
		}
	}
	for _, want := range []string{wrapper, "does not start inside a run's confinement", "--readable PATH", "To fix:"} {
		if !strings.Contains(line, want) {
			t.Errorf("the worker's line does not say %q: %s", want, line)
		}
	}
	if r := runOf(t, tm, id, time.Second, "read", func(team.Run) bool { return true }); r.State != team.Queued || len(r.Failures) > 0 {
		t.Errorf("with a CLI its runs cannot start, %s is %s with %d failures, want queued with none", r.Name(), r.State, len(r.Failures))
	}
	_ = broken.cmd.Process.Signal(syscall.SIGTERM)
	<-broken.done
	broken.done <- nil

	// Told what the wrapper runs, the same wrapper works the run.
	mended := w.workerWrapped(t.TempDir(), "machine-readable", nil, []string{"FLOWER_CLAUDE=" + wrapper}, "--rescue", "8s", "--readable", hidden)
	r := runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved || len(r.Failures) > 0 {
		t.Fatalf("%s ended %s with %d failures with --readable %s: %s %v\n%s", r.Name(), r.State, len(r.Failures), hidden, r.Reason, r.Failures, mended.out)
	}
	_ = mended.cmd.Process.Signal(syscall.SIGTERM)
	<-mended.done
	mended.done <- nil

	// A CLI under /home, on the worker's PATH as a symlink (as the native
	// installer leaves ~/.local/bin/claude), with no FLOWER_CLAUDE: the
	// run gets the file it resolves to.
	home, err := os.MkdirTemp("/home", "flower-test-")
	if err != nil {
		t.Fatalf("a folder under /home: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	bin := filepath.Join(home, ".local", "bin")
	versions := filepath.Join(home, ".local", "share", "claude", "versions")
	for _, d := range []string{bin, versions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, real, filepath.Join(versions, claude.NewestTestedCLIVersion), 0o755)
	if err := os.Symlink(filepath.Join(versions, claude.NewestTestedCLIVersion), filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "FLOWER_CLAUDE=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	w.env = env
	id = w.submit("task-2")
	home1 := w.workerWrapped(home, "machine-home", nil, nil, "--rescue", "8s")
	r = runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved || len(r.Failures) > 0 {
		t.Errorf("%s ended %s with %d failures with the CLI under %s: %s %v\n%s", r.Name(), r.State, len(r.Failures), bin, r.Reason, r.Failures, home1.out)
	}
}

// copyFile copies from to a new file at to with mode perm.
func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, perm); err != nil {
		t.Fatal(err)
	}
}
