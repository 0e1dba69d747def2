package team_test

// Operating a team (issue 35, points 1 and 6): `flower workers` with live,
// silent, drained and gone workers, `flower worker --drain`, a worker whose
// clock is off, the folders of ended runs, and `flower runs prune` leaving
// live runs whole. Each through the command line, workers as processes.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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

// waitWorkers polls the team's workers until ok holds, or fails after d.
func waitWorkers(t *testing.T, tm *team.Team, d time.Duration, what string, ok func(map[string]team.WorkerInfo) bool) map[string]team.WorkerInfo {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ws, err := tm.Workers(context.Background())
		byName := map[string]team.WorkerInfo{}
		for _, w := range ws {
			byName[w.Name] = w
		}
		if err == nil && ok(byName) {
			return byName
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, w := range ws {
				fmt.Fprintf(&b, "  %s %s runs %v heard %s ago: %s\n", w.Name, w.State, w.Runs, w.Silence, w.Reason)
			}
			t.Fatalf("after %s, the workers are still not %s (err %v):\n%s", d, what, err, b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// workerLine is the line of `flower workers` that names worker.
func workerLine(out, worker string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, worker+" ") {
			return l
		}
	}
	return ""
}

// toolCallFinished says the call running command came back to the model
// whole, not cut off by its worker stopping.
func (w *world) toolCallFinished(command string) bool {
	for _, req := range w.srv.Requests() {
		var call string
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.Type == "tool_use" && strings.Contains(string(b.Input), command) {
					call = b.ID
				}
			}
		}
		for _, b := range req.ToolResults() {
			if call != "" && b.ToolUseID == call && !b.IsError && !strings.Contains(b.Content, "nterrupt") {
				return true
			}
		}
	}
	return false
}

// runRows counts run id's rows in every table that holds a run's: by its
// id, its state's name, its transcripts' keys, its River jobs.
func (w *world) runRows(id int64) map[string]int {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, w.db)
	if err != nil {
		w.t.Fatal(err)
	}
	defer conn.Close(ctx)
	state := team.StateName(id)
	project := "run:" + state
	out := map[string]int{}
	for table, q := range map[string]string{
		"team_runs":         "select count(*) from team_runs where id = $1",
		"team_events":       "select count(*) from team_events where run = $1",
		"team_replies":      "select count(*) from team_replies where run = $1",
		"river_job":         "select count(*) from river_job where kind = 'flower_run' and (args->>'run')::bigint = $1",
		"runstate_runs":     "select count(*) from runstate_runs where run = $2",
		"runstate_files":    "select count(*) from runstate_files where run = $2",
		"session_entries":   "select count(*) from session_entries where store_key like $3 || '/%'",
		"session_meta":      "select count(*) from session_meta where store_key like $3 || '/%'",
		"session_summaries": "select count(*) from session_summaries where project_key = $3",
	} {
		var n int
		if err := conn.QueryRow(ctx, q+" and $1::bigint is not null and $2::text is not null and $3::text is not null", id, state, project).Scan(&n); err != nil {
			w.t.Fatalf("%s: %v", table, err)
		}
		out[table] = n
	}
	// And any other table whose rows name the run's state (a table added
	// later that this list does not know).
	rows, err := conn.Query(ctx, "select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'")
	if err != nil {
		w.t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		w.t.Fatal(err)
	}
	for _, table := range tables {
		if _, known := out[table]; known {
			continue
		}
		var n int
		q := fmt.Sprintf(`select count(*) from %s x where x::text ~ $1`, pgx.Identifier{table}.Sanitize())
		if err := conn.QueryRow(ctx, q, regexp.QuoteMeta(state)+`([^0-9]|$)`).Scan(&n); err != nil {
			w.t.Fatalf("%s: %v", table, err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

func TestWorkersShowsASilentAndADrainedWorkerWhoseRunAnotherFinishes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// r2's slow call (checkPrune) outlasts the prune's checks, not the test.
	w.model.sleep = "sleep 40"
	// A's call outlasts the drain's way to it on a loaded machine (4.5 s
	// did not: the run ended on A before A heard of the drain).
	w.model.pause = "sleep 30"
	tm := w.open()
	const rescue = 8 * time.Second
	id := w.submit("task-1 pause")
	a := w.worker("machine-a", "--rescue", rescue.String())
	w.waitMarker(markerName+"-task-1", 3*time.Minute)
	b := w.worker("machine-b", "--rescue", rescue.String(), "--keep-ended", "0s")
	c := w.worker("machine-c", "--rescue", rescue.String(), "--concurrency", "2")
	waitWorkers(t, tm, time.Minute, "A working r1, B and C idle", func(ws map[string]team.WorkerInfo) bool {
		return ws["machine-a"].State == team.WorkerWorking && fmt.Sprint(ws["machine-a"].Runs) == fmt.Sprint([]int64{id}) &&
			ws["machine-b"].State == team.WorkerIdle && ws["machine-c"].State == team.WorkerIdle
	})
	out, err := w.flower("workers", "--db-file", w.dbFile, "--lang", "en")
	t.Logf("flower workers:\n%s", out)
	for name, want := range map[string]string{"machine-a": "working 1/1 r1", "machine-b": "idle 0/1", "machine-c": "idle 0/2"} {
		if l := strings.Join(strings.Fields(workerLine(out, name)), " "); err != nil || !strings.Contains(l, want) {
			t.Errorf("flower workers says of %s %q, want %q (err %v)", name, l, want, err)
		}
	}

	// C's machine is paused; A is asked to drain while its tool call runs.
	stopTree(c.cmd.Process.Pid, syscall.SIGSTOP)
	paused := true
	defer func() {
		if paused {
			stopTree(c.cmd.Process.Pid, syscall.SIGCONT)
		}
	}()
	out, err = w.flower("worker", "--drain", "machine-a", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !strings.Contains(out, "asked worker machine-a to drain") || !strings.Contains(out, "(r1)") {
		t.Fatalf("flower worker --drain machine-a: %v\n%s", err, out)
	}
	select {
	case err := <-a.done:
		a.done <- err
		if err != nil {
			t.Errorf("the drained worker's exit: %v\n%s", err, a.out)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the worker asked to drain did not stop:\n%s", a.out)
	}
	if !strings.Contains(a.out.String(), "drained at a person's request") {
		t.Errorf("the drained worker does not say why it stopped:\n%s", a.out)
	}
	if !w.toolCallFinished(w.model.pause) {
		t.Error("the tool call in flight did not finish before the drained worker released the run")
	}
	runs := waitFor(t, tm, 3*time.Minute, "r1 ended", allEnded)
	if r := runs[0]; r.State != team.Achieved || r.Host != "machine-b" {
		t.Errorf("%s ended %s on %s: %s", r.Name(), r.State, r.Host, r.Reason)
	}
	if got := startedBy(t, tm, id); strings.Join(got, ",") != "machine-a,machine-b" {
		t.Errorf("r1 was started by %v, want machine-a then machine-b", got)
	}

	ws := waitWorkers(t, tm, time.Minute, "C silent", func(ws map[string]team.WorkerInfo) bool {
		return ws["machine-c"].State == team.WorkerSilent
	})
	if a := ws["machine-a"]; a.State != team.WorkerGone || a.DrainRequested.IsZero() || a.Live() {
		t.Errorf("the drained worker is %+v", a)
	}
	out, err = w.flower("workers", "--db-file", w.dbFile, "--lang", "en")
	t.Logf("flower workers:\n%s", out)
	for name, want := range map[string]string{"machine-a": "drained", "machine-b": "idle", "machine-c": "silent"} {
		if l := workerLine(out, name); err != nil || !strings.Contains(l, want) {
			t.Errorf("flower workers says of %s %q, want %q (err %v)", name, l, want, err)
		}
	}
	if !strings.Contains(out, "! machine-c has not been heard from for") {
		t.Errorf("flower workers does not say machine-c is silent:\n%s", out)
	}
	zh, err := w.flower("workers", "--db-file", w.dbFile, "--lang", "zh")
	if l := workerLine(zh, "machine-c"); err != nil || !strings.Contains(l, "失联") || !strings.Contains(workerLine(zh, "machine-a"), "已收尾离开") {
		t.Errorf("flower workers --lang zh: %v\n%s", err, zh)
	}

	// Bad input: a name no worker has, a worker that is gone.
	out, err = w.flower("worker", "--drain", "machine-z", "--db-file", w.dbFile, "--lang", "en")
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "no worker is named machine-z; the team's workers are machine-b, machine-c, machine-a") {
		t.Errorf("a drain of an unknown worker: exit %d\n%s", code, out)
	}
	out, err = w.flower("worker", "--drain", "machine-a", "--db-file", w.dbFile, "--lang", "en")
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "worker machine-a stopped already") {
		t.Errorf("a drain of a gone worker: exit %d\n%s", code, out)
	}

	// The run's folder went with its end on the worker that ended it.
	if _, err := os.Stat(filepath.Join(b.dir, "r1")); !os.IsNotExist(err) {
		t.Errorf("machine B kept the folder of the achieved r1: %v", err)
	}
	freed := regexp.MustCompile(`removed the folder of an ended run.*run=r1 bytes=(\d+)`).FindStringSubmatch(b.out.String())
	if freed == nil {
		t.Errorf("machine B does not say it removed r1's folder:\n%s", b.out)
	} else {
		t.Logf("MEASURED: r1's folder on its worker took %s bytes on disk", freed[1])
	}
	stopTree(c.cmd.Process.Pid, syscall.SIGCONT)
	paused = false

	checkClockOff(t, w, tm)
	checkPrune(t, w, tm, id)
}

// checkClockOff: a worker whose clock is five minutes ahead is idle, not
// silent (its heartbeat is the database's time), and named as off.
func checkClockOff(t *testing.T, w *world, tm *team.Team) {
	t.Helper()
	home := t.TempDir()
	worker, err := tm.NewWorker(w.db, team.WorkerOptions{
		Name: "machine-d", Dir: filepath.Join(home, "runs"), Rescue: 8 * time.Second, Flower: teamflow(t),
		Env: append(append([]string{}, w.env...), "HOME="+home), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock: func() time.Time { return time.Now().Add(5 * time.Minute) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(2 * time.Minute):
			t.Error("the worker with its clock off did not stop")
		}
	}()
	// Past its rescue interval by its own clock at once, it is still heard
	// from by the database's, through two of its heartbeats.
	time.Sleep(5 * time.Second)
	ws := waitWorkers(t, tm, time.Minute, "D heard from", func(ws map[string]team.WorkerInfo) bool {
		return ws["machine-d"].State == team.WorkerIdle
	})
	if skew := ws["machine-d"].ClockSkew; skew < 4*time.Minute || skew > 6*time.Minute {
		t.Errorf("machine-d's clock is %s off, want about 5m ahead", skew)
	}
	out, err := w.flower("workers", "--db-file", w.dbFile, "--lang", "en")
	if l := workerLine(out, "machine-d"); err != nil || !strings.Contains(l, "idle") || !regexp.MustCompile(`the clock of machine-d is (4m5\ds|5m[01]s) ahead`).MatchString(out) {
		t.Errorf("flower workers with machine-d's clock ahead (err %v):\n%s", err, out)
	}
}

// checkPrune: with r1 ended, r2 running and r3 queued, a prune of what
// ended removes r1's every row and leaves r2 and r3 whole; a prune naming
// the running run is refused; r2 then works to its end.
func checkPrune(t *testing.T, w *world, tm *team.Team, ended int64) {
	t.Helper()
	// One worker with one slot is left (machine-c drained, with no run
	// to release): r2 runs on it as long as its slow call lasts, r3 waits.
	// Machine C outlived its pause: River's notifier gave up a LISTEN that
	// took over 5 s on the slow connection the pause left ("timed out
	// waiting for interrupt operation", ci28), and the worker had stopped,
	// its runs back in the queue; it now starts its queue again.
	if _, err := tm.Drain(context.Background(), "machine-c"); err != nil {
		t.Fatalf("machine-c after its pause: %v", err)
	}
	waitWorkers(t, tm, 2*time.Minute, "C gone", func(ws map[string]team.WorkerInfo) bool {
		return ws["machine-c"].State == team.WorkerGone
	})
	running := w.submit("task-2 slow")
	w.waitMarker(markerName, 3*time.Minute)
	queued := w.submit("task-3")
	before := map[int64]map[string]int{ended: w.runRows(ended), running: w.runRows(running), queued: w.runRows(queued)}
	t.Logf("MEASURED: rows of the ended r1 per table: %v", before[ended])
	out, err := w.flower("runs", "prune", team.RunName(running), "--db-file", w.dbFile, "--lang", "en")
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "r2 is running: only an ended run can be pruned") {
		t.Errorf("a prune of the running r2: exit %d\n%s", code, out)
	}
	out, err = w.flower("runs", "prune", "--ended-before", "3 fortnights", "--db-file", w.dbFile, "--lang", "en")
	if code := exitCode(t, err); code != 2 || !strings.Contains(out, "--ended-before 3 fortnights: give an age (30d, 12h, 90m) or a date") {
		t.Errorf("a prune with a wrong age: exit %d\n%s", code, out)
	}
	out, err = w.flower("runs", "prune", "--ended-before", "0s", "--db-file", w.dbFile, "--lang", "en")
	t.Logf("MEASURED: flower runs prune:\n%s", out)
	if err != nil || !strings.Contains(out, "removed 1 ended runs (r1)") {
		t.Fatalf("flower runs prune --ended-before 0s: %v\n%s", err, out)
	}
	for table, n := range w.runRows(ended) {
		if n != 0 {
			t.Errorf("after the prune %s still holds %d rows of r1", table, n)
		}
	}
	for _, id := range []int64{running, queued} {
		after := w.runRows(id)
		for table, n := range before[id] {
			if after[table] < n {
				t.Errorf("the prune removed %s's rows from %s: %d before, %d after", team.RunName(id), table, n, after[table])
			}
		}
	}
	runs, err := tm.Runs(context.Background(), team.RunFilter{})
	if err != nil || len(runs) != 2 || runs[0].State != team.Queued || runs[1].State != team.Running || runs[1].Host != "machine-b" {
		t.Errorf("after the prune the runs are %+v (err %v), want r3 queued and r2 running on machine-b", runs, err)
	}
	// Its slow call is not waited for.
	if _, err := tm.Cancel(context.Background(), running); err != nil {
		t.Error(err)
	}
}

// A failed (parked) run's folder stays on its worker for --keep-failed,
// through the worker's quarter rounds, and goes at the first round after.
func TestAFailedRunsFolderIsKeptForKeepFailedThenRemoved(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	home := t.TempDir()
	m := w.workerIn(home, "machine-a", "--db-file", w.dbFile, "--rescue", "8s", "--keep-failed", "1h")
	// A repository inside the worker's own --dir is parked before it is
	// cloned, its folder made.
	id := w.submitTo(filepath.Join(m.dir, "r9"), "task-1", "--no-check")
	r := runOf(t, tm, id, 3*time.Minute, "parked", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Failed {
		t.Fatalf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}
	folder := filepath.Join(m.dir, r.Name())
	// Two heartbeats after the end: a round looked at the folder between.
	var last time.Time
	for beats := 0; beats < 2; {
		ws := waitWorkers(t, tm, time.Minute, "heard from again", func(ws map[string]team.WorkerInfo) bool {
			return ws["machine-a"].Heartbeat.After(last) && ws["machine-a"].Heartbeat.After(r.Ended)
		})
		last = ws["machine-a"].Heartbeat
		beats++
	}
	if _, err := os.Stat(folder); err != nil {
		t.Fatalf("the failed run's folder went before --keep-failed: %v", err)
	}
	// Ended two hours ago, by the database's clock.
	w.sql("update team_runs set ended_at = now() - interval '2 hours' where id = $1", id)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(folder); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the folder of a run failed longer ago than --keep-failed is still there after a minute:\n%s", m.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The line follows the removal: it is waited for, not looked for.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(m.out.String(), "removed the folder of an ended run"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker does not say it removed the folder:\n%s", m.out)
		}
	}
}
