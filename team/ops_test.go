package team_test

// Operator control of the team's queue (issue 33, points 5 and 7): a
// cancel works at any age and stays, a parked run is retried, a worker's
// name is its own, --team-budget 0 lifts the budget, `flower runs` pages
// and filters. Each through the command line, workers as processes.

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/team"
)

// sql runs a statement on the team's database, as an operator (or River's
// cleaner) would behind the queue's back.
func (w *world) sql(q string, args ...any) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// rowState is the state the run's own row holds (not as shown).
func (w *world) rowState(id int64) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	var state string
	if err := conn.QueryRow(ctx, "select state from team_runs where id = $1", id).Scan(&state); err != nil {
		w.t.Fatal(err)
	}
	return state
}

// A run working longer than the rescue interval (River's job deadline,
// after which River's own remote cancel never reaches it) is still
// cancelled: stopped, its work pushed, ended cancelled, not achieved.
func TestCancelStopsARunRunningLongerThanItsRescue(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	w.model.sleep = "sleep 20"
	id := w.submit("task-1 slow")
	w.worker("machine-a", "--rescue", "4s")
	w.waitMarker(markerName, 3*time.Minute)
	time.Sleep(6 * time.Second) // past the job's deadline
	if r := runOf(t, tm, id, time.Second, "running", func(r team.Run) bool { return true }); r.State != team.Running {
		t.Fatalf("%s is %s before the cancel: %s", r.Name(), r.State, r.Reason)
	}
	out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", team.RunName(id))
	if err != nil || !strings.Contains(out, "stopping r1") {
		t.Fatalf("flower cancel: %v\n%s", err, out)
	}
	r := runOf(t, tm, id, 3*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Cancelled {
		t.Fatalf("%s ended %s after a cancel: %s", r.Name(), r.State, r.Reason)
	}
	if !strings.Contains(r.Reason, "cancelled by a person") {
		t.Errorf("the reason does not say a person cancelled it: %s", r.Reason)
	}
	if got := git(t, w.remote, "rev-parse", r.Branch); r.Pushed == "" || got != r.Pushed {
		t.Errorf("the cancelled run's work: branch at %s, its row says %q", got, r.Pushed)
	}
	// A cancel of a run that ended: said in the user's language, exit 1.
	for _, c := range []struct{ lang, want string }{{"en", "r1 is already cancelled"}, {"zh", "r1 已经结束了(已取消"}} {
		out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", c.lang, "r1")
		if code := exitCode(t, err); code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("cancel of an ended run (%s): exit %d, want 1 and %q:\n%s", c.lang, code, c.want, out)
		}
		t.Logf("flower cancel r1 --lang %s (ended): exit %d\n%s", c.lang, exitCode(t, err), out)
	}
}

// A run cancelled while no worker holds it stays cancelled once River's
// job is gone (its cleaner deletes ended jobs): the run's row is the
// truth, settled by any live worker, never started again.
func TestARunCancelledWhileNoWorkerHoldsItStaysCancelledWhenItsJobIsDeleted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow")
	a := w.worker("machine-a", "--rescue", "8s")
	w.waitMarker(markerName, 3*time.Minute)
	stopTree(a.cmd.Process.Pid, syscall.SIGKILL)
	<-a.done
	a.done <- nil
	out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", team.RunName(id))
	if err != nil {
		t.Fatalf("flower cancel: %v\n%s", err, out)
	}
	t.Logf("flower cancel r1 (its worker dead):\n%s", out)
	// River's cleaner, early.
	w.sql("delete from river_job")
	r := runOf(t, tm, id, 10*time.Second, "shown", func(team.Run) bool { return true })
	if r.State != team.Cancelled {
		t.Errorf("with its job deleted, %s shows %s: %s", r.Name(), r.State, r.Reason)
	}
	w.worker("machine-b", "--rescue", "8s")
	deadline := time.Now().Add(time.Minute)
	for w.rowState(id) != team.Cancelled {
		if time.Now().After(deadline) {
			t.Fatalf("the run's row still says %s a minute after a live worker started", w.rowState(id))
		}
		time.Sleep(200 * time.Millisecond)
	}
	list, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !regexp.MustCompile(`(?m)^r1\s+cancelled`).MatchString(list) {
		t.Errorf("flower runs: %v\n%s", err, list)
	}
	again, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", "r1")
	if code := exitCode(t, err); code != 1 || !strings.Contains(again, "already cancelled") || strings.Contains(again, "no such run") {
		t.Errorf("a second cancel: exit %d\n%s", code, again)
	}
	time.Sleep(5 * time.Second)
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a" {
		t.Errorf("a cancelled run was started again: %v", got)
	}
}

// A parked run retried goes back to the queue with a new job and works to
// its end; a retry of a run that is not failed is refused, clearly.
func TestARetriedParkedRunWorksToItsEnd(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1")
	branch := "flower/" + team.RunName(id)
	// Someone made the run's branch: the run is parked.
	other := t.TempDir()
	git(t, "", "clone", "-q", w.remote, other)
	if err := os.WriteFile(filepath.Join(other, "theirs.txt"), []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, other, "add", "theirs.txt")
	git(t, other, "-c", "user.name=o", "-c", "user.email=o@example.com", "commit", "-q", "-m", "theirs")
	git(t, other, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	w.worker("machine-a")
	r := runOf(t, tm, id, 3*time.Minute, "parked", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Failed {
		t.Fatalf("%s ended %s, want parked: %s", r.Name(), r.State, r.Reason)
	}
	// The person removes the stray branch and retries.
	git(t, w.remote, "branch", "-D", branch)
	out, err := w.flower("retry", "--db-file", w.dbFile, "--lang", "en", "r1")
	if err != nil || !strings.Contains(out, "r1 is back in the queue") {
		t.Fatalf("flower retry: %v\n%s", err, out)
	}
	t.Logf("flower retry r1:\n%s", out)
	r = runOf(t, tm, id, 3*time.Minute, "ended again", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Fatalf("the retried run ended %s: %s", r.State, r.Reason)
	}
	if got := branchFile(t, w.remote, r.Branch, "task-1.txt"); got != "task-1" {
		t.Errorf("the retried run's branch holds %q in task-1.txt", got)
	}
	if len(r.Failures) != 0 && r.FailuresBefore != len(r.Failures) {
		t.Errorf("failures %d, before the retry %d", len(r.Failures), r.FailuresBefore)
	}
	for _, c := range []struct{ lang, want string }{{"en", "r1 is achieved: only a failed (parked) run can be retried"}, {"zh", "只有失败(已搁置)的运行能重试"}} {
		out, err := w.flower("retry", "--db-file", w.dbFile, "--lang", c.lang, "r1")
		if code := exitCode(t, err); code != 1 || !strings.Contains(out, c.want) {
			t.Errorf("retry of an achieved run (%s): exit %d, want 1 and %q:\n%s", c.lang, code, c.want, out)
		}
		t.Logf("flower retry r1 --lang %s (achieved): exit %d\n%s", c.lang, exitCode(t, err), out)
	}
	out, err = w.flower("retry", "--db-file", w.dbFile, "--lang", "en")
	if code := exitCode(t, err); code != 2 || !strings.Contains(out, "retry takes one run") {
		t.Errorf("retry without a run: exit %d\n%s", code, out)
	}
}

// A retry of a running run is refused and leaves it running.
func TestARetryOfARunningRunIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 slow")
	w.worker("machine-a")
	w.waitMarker(markerName, 3*time.Minute)
	out, err := w.flower("retry", "--db-file", w.dbFile, "--lang", "en", team.RunName(id))
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "r1 is running on machine-a: only a failed (parked) run can be retried") {
		t.Errorf("retry of a running run: exit %d\n%s", code, out)
	}
	t.Logf("flower retry r1 (running): exit %d\n%s", exitCode(t, err), out)
	if r := runOf(t, tm, id, time.Second, "read", func(team.Run) bool { return true }); r.State != team.Running || startedBy(t, tm, id)[0] != "machine-a" {
		t.Errorf("after a refused retry %s is %s: %s", r.Name(), r.State, r.Reason)
	}
}

// Two live workers never share a name: the second is refused with the
// first's host and how to choose another; once the first stopped, the
// name is free.
func TestASecondWorkerOfTheSameNameIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	first := w.worker("twin", "--rescue", "8s")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(first.out.String(), "takes runs from"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first worker did not start:\n%s", first.out)
		}
	}
	second := w.worker("twin", "--rescue", "8s")
	select {
	case err := <-second.done:
		second.done <- err
		host, _ := os.Hostname()
		if code := exitCode(t, err); code != 1 || !strings.Contains(second.out.String(), "a worker named twin is already working (on host "+host) ||
			!strings.Contains(second.out.String(), "--name NAME") {
			t.Errorf("the second twin: exit %d\n%s", code, second.out)
		}
		t.Logf("the second worker named twin: exit %d\n%s", exitCode(t, err), second.out)
	case <-time.After(30 * time.Second):
		t.Fatalf("a second worker named twin was accepted:\n%s", second.out)
	}
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	err := <-first.done
	first.done <- err
	third := w.worker("twin", "--rescue", "8s")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(third.out.String(), "takes runs from"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the name of a stopped worker stays taken:\n%s", third.out)
		}
	}
}

// --team-budget 0 lifts a budget an earlier worker set.
func TestTeamBudgetZeroLiftsTheBudget(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	first := w.submit("task-1")
	a := w.worker("machine-a", "--team-budget", "0.0001")
	runOf(t, tm, first, 3*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	second := w.submit("task-2")
	runOf(t, tm, second, 2*time.Minute, "refused for the budget", func(r team.Run) bool { return strings.Contains(r.Reason, "team budget") })
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	err := <-a.done
	a.done <- err
	b := w.worker("machine-b", "--team-budget", "0")
	r := runOf(t, tm, second, 3*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Errorf("with the budget lifted %s ended %s: %s", r.Name(), r.State, r.Reason)
	}
	if budget, err := tm.TeamBudget(context.Background()); err != nil || budget != 0 {
		t.Errorf("the team budget is %v (%v), want none", budget, err)
	}
	if !strings.Contains(b.out.String(), "team budget is lifted") {
		t.Errorf("the worker does not say it lifted the budget:\n%s", b.out)
	}
}

// `flower runs` shows a page (--limit) and says how many more there are;
// --state keeps the runs in those states; a state that is none is refused.
func TestRunsPagesAndFiltersByState(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for i := 1; i <= 4; i++ {
		w.submit("task-" + string(rune('0'+i)))
	}
	if out, err := w.flower("cancel", "--db-file", w.dbFile, "--lang", "en", "r2"); err != nil {
		t.Fatalf("cancel r2: %v\n%s", err, out)
	}
	out, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en", "--limit", "2")
	t.Logf("flower runs --limit 2:\n%s", out)
	if err != nil || !regexp.MustCompile(`(?m)^r4\s`).MatchString(out) || !regexp.MustCompile(`(?m)^r3\s`).MatchString(out) ||
		regexp.MustCompile(`(?m)^r[12]\s`).MatchString(out) || !regexp.MustCompile(`2 older runs not shown \(the newest 2 are\)\. To see them all: \S*teamflow runs --limit 4`).MatchString(out) {
		t.Errorf("flower runs --limit 2: %v\n%s", err, out)
	}
	out, err = w.flower("runs", "--db-file", w.dbFile, "--lang", "en", "--state", "cancelled")
	t.Logf("flower runs --state cancelled:\n%s", out)
	if err != nil || !regexp.MustCompile(`(?m)^r2\s+cancelled`).MatchString(out) || regexp.MustCompile(`(?m)^r[134]\s`).MatchString(out) {
		t.Errorf("flower runs --state cancelled: %v\n%s", err, out)
	}
	out, err = w.flower("runs", "--db-file", w.dbFile, "--lang", "en", "--state", "queued,cancelled", "--limit", "3")
	t.Logf("flower runs --state queued,cancelled --limit 3:\n%s", out)
	if err != nil || !strings.Contains(out, "1 older runs not shown") || !strings.Contains(out, "--state queued,cancelled") {
		t.Errorf("flower runs --state queued,cancelled --limit 3: %v\n%s", err, out)
	}
	out, err = w.flower("runs", "--db-file", w.dbFile, "--lang", "en", "--state", "achieved")
	t.Logf("flower runs --state achieved:\n%s", out)
	if err != nil || !strings.Contains(out, "no runs are achieved") {
		t.Errorf("flower runs --state achieved: %v\n%s", err, out)
	}
	for _, lang := range []string{"en", "zh"} {
		out, err = w.flower("runs", "--db-file", w.dbFile, "--lang", lang, "--state", "done")
		t.Logf("flower runs --state done --lang %s: exit %d\n%s", lang, exitCode(t, err), out)
		if code := exitCode(t, err); code != 2 || !strings.Contains(out, "--state done") || !strings.Contains(out, "queued,running,waiting,achieved,stopped,failed,cancelled") {
			t.Errorf("flower runs --state done (%s): exit %d\n%s", lang, code, out)
		}
	}
}

// A worker whose database answers slower than River's first fetch allows
// (10 s: a busy machine, a database under load) exited with River's
// timeout before (the workers test met it with the suite run side by side).
// Now it says so, tries again and works the run once the database answers.
// The slowness is a lock held on River's queue table past that bound.
func TestAWorkerWhoseDatabaseIsSlowAtStartWaitsAndWorks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "lock table river_queue in access exclusive mode"); err != nil {
		t.Fatal(err)
	}
	m := w.worker("machine-a")
	for !strings.Contains(m.out.String(), "the queue did not start") {
		select {
		case err := <-m.done:
			m.done <- err
			t.Fatalf("the worker exited (%v) while its database was slow:\n%s", err, m.out)
		case <-ctx.Done():
			t.Fatalf("the worker never said its queue did not start:\n%s", m.out)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved || len(r.Failures) > 0 {
		t.Errorf("%s ended %s with %d failures after the slow start: %s", r.Name(), r.State, len(r.Failures), r.Reason)
	}
}
