package team_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/team"
)

// living is pids without the zombies (exited, not yet reaped by a parent
// that is paused).
func living(pids []int) []int {
	var out []int
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if f := strings.Fields(rest); len(f) > 0 && f[0] != "Z" && f[0] != "X" {
			out = append(out, pid)
		}
	}
	return out
}

// The run's job attempt is its only lease: a worker paused past its
// interval leaves no process of its run working (the leash), another
// worker takes the run over within two intervals without waiting on any
// other lease and without a failure counted, and when the paused worker
// comes back and is stopped, its stale attempt's result does not end the
// new holder's job (it did: the run was started a third time). The new
// holder records no event of the earlier attempt again.
func TestAPausedWorkersRunStopsAndAnotherTakesItOverOnceWithinTwoIntervals(t *testing.T) {
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow")
	const rescue = 8 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	b := w.worker("machine-b", "--rescue", rescue.String())
	time.Sleep(1500 * time.Millisecond)
	run := descendants(a.cmd.Process.Pid)
	if len(living(run)) == 0 {
		t.Fatal("machine A's run has no process before the pause")
	}
	// The worker alone is paused: its run's processes are in groups of
	// their own and would work on.
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT)
		}
	}()
	for deadline := paused.Add(rescue + 5*time.Second); len(living(run)) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s after machine A was paused, its run's processes %v still live (rescue interval %s)", time.Since(paused).Round(time.Second), living(run), rescue)
		}
	}
	t.Logf("machine A's run stopped itself %s after its worker was paused", time.Since(paused).Round(100*time.Millisecond))

	var takenOver time.Time
	for deadline := paused.Add(2 * time.Minute); takenOver.IsZero(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("machine B never took the run over:\n%s", b.out)
		}
		evs, err := tm.Events(context.Background(), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Text == "team_state" && e.Str("state") == team.Running && e.Str("host") == "machine-b" {
				takenOver = e.At
			}
		}
	}
	took := takenOver.Sub(paused)
	t.Logf("machine B took the run over %s after machine A was paused (rescue interval %s)", took.Round(100*time.Millisecond), rescue)
	if took > 2*rescue {
		t.Errorf("the takeover took %s, more than twice the rescue interval %s", took.Round(time.Second), rescue)
	}

	// Machine A comes back, finds the run gone, and is stopped: the
	// result of its stale attempt must not touch machine B's job.
	if err := syscall.Kill(a.cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	time.Sleep(rescue / 2)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		a.done <- err
	case <-time.After(2 * time.Minute):
		t.Fatalf("machine A did not stop after SIGTERM:\n%s", a.out)
	}

	runs := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)
	r := runs[0]
	if r.State != team.Achieved || r.Host != "machine-b" {
		t.Fatalf("%s ended %s on %s: %s\n%s", r.Name(), r.State, r.Host, r.Reason, b.out)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a,machine-b" {
		t.Errorf("the run was started by %v, want machine-a then machine-b only", got)
	}
	if len(r.Failures) != 0 {
		t.Errorf("the takeover counted failures: %+v", r.Failures)
	}
	if got := branchFile(t, w.remote, r.Branch, "task-1.txt"); got != "task-1" {
		t.Errorf("the branch holds %q in task-1.txt, want task-1", got)
	}
	// Each event once: machine B recorded what its own process did, not
	// machine A's events again (it re-recorded every one, Bash calls it
	// never ran included).
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]string{}
	for _, e := range evs {
		if e.Kind != event.ToolCall || e.Str("id") == "" {
			continue
		}
		if by, ok := calls[e.Str("id")]; ok {
			t.Errorf("tool call %s (%s) recorded by %s and again by %s", e.Str("id"), e.Text, by, e.Worker)
		}
		calls[e.Str("id")] = e.Worker
	}
	byB := 0
	for _, by := range calls {
		if by == "machine-b" {
			byB++
		}
	}
	if byB == 0 || len(calls) == byB {
		t.Errorf("tool calls by worker: %v; want machine A's and machine B's own", calls)
	}
}

// The rescuer is the workers', every quarter interval: River's leader
// looked every 30 s and logged a healthy long run as stuck.
func TestALongRunIsNotCalledStuckAndItsSilentWorkerIsShown(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow")
	const rescue = 4 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	time.Sleep(4 * rescue) // four intervals of a healthy run (River called it stuck 10 s after one)
	if strings.Contains(a.out.String(), "stuck") {
		t.Errorf("a healthy run longer than the interval was logged as stuck:\n%s", a.out)
	}
	stopTree(a.cmd.Process.Pid, syscall.SIGSTOP)
	defer stopTree(a.cmd.Process.Pid, syscall.SIGCONT)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		r, err := tm.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(r.Reason, "worker machine-a silent since ") && strings.Contains(r.Reason, "taken over") {
			out, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
			if err != nil || !strings.Contains(out, "worker machine-a silent since") {
				t.Errorf("flower runs does not show the silent worker: %v\n%s", err, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after machine A was paused the run says %s: %q", r.State, r.Reason)
		}
	}
}

// A clone slower than the interval keeps the run: the attempt is
// confirmed from its first moment. It was not before the checkout was
// made, so River gave the run to another worker while the first still
// went on to start it: two processes worked one run.
func TestACloneSlowerThanTheIntervalKeepsTheRunOnItsWorker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	const rescue = 4 * time.Second
	slow := t.TempDir()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$*\" in *clone*|*fetch*) sleep " + strconv.Itoa(int(3*rescue/time.Second)) + ";; esac\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(slow, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	id := w.submit("task-1")
	a := w.workerWith("machine-a", []string{"PATH=" + slow + ":" + os.Getenv("PATH")}, "--rescue", rescue.String())
	waitFor(t, tm, time.Minute, "r1 taken by machine A", func(runs []team.Run) bool {
		return len(runs) == 1 && runs[0].State == team.Running && runs[0].Host == "machine-a"
	})
	b := w.worker("machine-b", "--rescue", rescue.String())
	runs := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)
	if r := runs[0]; r.State != team.Achieved || r.Host != "machine-a" {
		t.Fatalf("%s ended %s on %s: %s", r.Name(), r.State, r.Host, r.Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a" {
		t.Errorf("the run was started by %v, want machine-a alone", got)
	}
	if logs, _ := filepath.Glob(filepath.Join(b.dir, "*", "attempt-*.log")); len(logs) != 0 {
		t.Errorf("machine B started the run's process too: %v\n%s\n%s", logs, a.out, b.out)
	}
}

// A run taken over goes ahead of runs still waiting for their first
// attempt: someone was already promised it.
func TestATakenOverRunGoesAheadOfQueuedRuns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	first := w.submit("task-1 slow")
	const rescue = 6 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName, 3*time.Minute)
	w.submit("task-2")
	w.submit("task-3")
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	a.done <- nil
	time.Sleep(rescue + time.Second)
	w.worker("machine-b", "--rescue", rescue.String())
	var order []int64
	waitFor(t, tm, 4*time.Minute, "machine B started a run", func([]team.Run) bool {
		for id := first; id <= first+2; id++ {
			for _, h := range startedBy(t, tm, id) {
				if h == "machine-b" && !slices.Contains(order, id) {
					order = append(order, id)
				}
			}
		}
		return len(order) > 0
	})
	if order[0] != first {
		t.Errorf("machine B took r%d first, want the run taken over (r%d) ahead of the queued ones", order[0], first)
	}
}

// A worker killed while the remote refuses its finished work leaves a run
// whose state records that work as done while its branch lacks it. The
// next worker must not continue from the branch and call the run achieved
// without the work (the chaos test found r1 "achieved" with an empty
// branch): it parks the run, saying which commit was lost, on which worker,
// and how to bring it back.
func TestARunWhoseLastWorkNeverReachedTheRemoteIsParkedNotAchievedWithoutIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	allowPushes := refusePushes(t, w)
	w.submit("task-1")
	const rescue = 6 * time.Second
	a := w.worker("machine-a", "--rescue", rescue.String())
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(a.out.String(), "not pushed yet; trying again"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("machine A never retried its push:\n%s", a.out)
		}
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
	a.done <- nil
	allowPushes()
	// Another machine: machine A's checkout, and the commit in it, are
	// gone with it.
	b := w.worker("machine-b", "--rescue", rescue.String())
	r := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)[0]
	if r.State != team.Failed {
		t.Fatalf("%s ended %s (%s) while its work was lost with machine A; its branch holds %q in task-1.txt\n%s",
			r.Name(), r.State, r.Reason, branchFile(t, w.remote, r.Branch, "task-1.txt"), b.out)
	}
	for _, want := range []string{"never reached " + r.Branch, "machine-a", "flower retry r1"} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("the parked run's reason lacks %q: %s", want, r.Reason)
		}
	}
	t.Logf("%s parked: %s", r.Name(), r.Reason)
}

// A worker stopped (SIGTERM) while the remote refuses its run's finished
// work keeps pushing for as long as an attempt's end does (two minutes).
// River's stop gave its jobs 90 s: the worker left mid-retry and the work
// stayed on its machine, for the next worker to park the run. Pushes come
// back 100 s after the SIGTERM: the worker waits for that, pushes, and the
// run ends achieved with its work on the branch.
func TestAStoppingWorkerPushesWorkTheRemoteRefusedForAWhileBeforeItLeaves(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	allowPushes := refusePushes(t, w)
	id := w.submit("task-1")
	a := w.worker("machine-a")
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(a.out.String(), "not pushed yet; trying again"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("machine A never retried its push:\n%s", a.out)
		}
	}
	termed := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	back := time.AfterFunc(100*time.Second, allowPushes)
	defer back.Stop()
	select {
	case err := <-a.done:
		a.done <- err
		if err != nil {
			t.Errorf("the worker's exit after SIGTERM: %v\n%s", err, a.out)
		}
	case <-time.After(6 * time.Minute):
		t.Fatalf("the worker did not stop after SIGTERM:\n%s", a.out)
	}
	t.Logf("the worker stopped %s after SIGTERM", time.Since(termed).Round(time.Millisecond))
	r, err := tm.Run(context.Background(), id)
	if err != nil || r.State != team.Achieved {
		t.Fatalf("after the worker stopped, %s is %s: %s (err %v)\n%s", r.Name(), r.State, r.Reason, err, a.out)
	}
	if got := branchFile(t, w.remote, r.Branch, "task-1.txt"); got != "task-1" {
		t.Errorf("the branch holds %q in task-1.txt, want the run's work", got)
	}
}

// refusePushes makes the world's remote refuse every push (a pre-receive
// hook) until allow is called.
func refusePushes(t *testing.T, w *world) (allow func()) {
	t.Helper()
	refuse := filepath.Join(t.TempDir(), "refuse-pushes")
	hook := "#!/bin/sh\nif [ -e " + refuse + " ]; then echo 'pushes are refused for a while' >&2; exit 1; fi\n"
	if err := os.WriteFile(filepath.Join(w.remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(refuse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() { os.Remove(refuse) }
}

// A job carries its holder's interval from the attempt's first
// transaction. It was written at the holder's first confirmation, or when
// it started the run's process, after its clone: until then a worker
// looking for silent workers' runs judged the job by its own interval, and
// one with --rescue 8s took the run a default worker was still cloning.
func TestAShortRescueWorkerLeavesARunADefaultWorkerIsCloning(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1")
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	slow := t.TempDir()
	wrapper := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = clone ] && sleep 15; done\nexec '" + git + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(slow, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	w.workerWith("machine-a", []string{"PATH=" + slow + string(os.PathListSeparator) + os.Getenv("PATH")})
	waitFor(t, tm, 3*time.Minute, "machine A took r1", func(runs []team.Run) bool { return len(runs) == 1 && runs[0].State == team.Running })
	w.worker("machine-b", "--rescue", "8s")
	runs := waitFor(t, tm, 4*time.Minute, "r1 ended", allEnded)
	if runs[0].State != team.Achieved {
		t.Errorf("%s ended %s: %s", runs[0].Name(), runs[0].State, runs[0].Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a" {
		t.Errorf("r1 was started by %v, want machine-a alone: a worker with a shorter interval took the run its holder was cloning", got)
	}
}
