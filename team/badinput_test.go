package team_test

// Bad input to the team's queue, end to end: what a person gets wrong at
// the command line, and what a worker meets in the world (a repository it
// cannot reach, a branch that is not the run's, a push someone else beat,
// a run started by another flower version). Each ends in a clear message,
// the run refused or parked with its reason, nothing lost, no run worked
// twice at once.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/team"
)

// exitCode is the exit code of a finished command (0 for none).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("the program did not run: %v", err)
	return -1
}

// submitTo submits request against repo with extra flags, and returns the
// run's id.
func (w *world) submitTo(repo, request string, extra ...string) int64 {
	w.t.Helper()
	args := append([]string{"submit", "--db-file", w.dbFile, "--repo", repo, "--lang", "en"}, extra...)
	out, err := w.flower(append(args, request)...)
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

// runOf waits until run id satisfies ok and returns it.
func runOf(t *testing.T, tm *team.Team, id int64, d time.Duration, what string, ok func(team.Run) bool) team.Run {
	t.Helper()
	var got team.Run
	waitFor(t, tm, d, team.RunName(id)+" "+what, func(runs []team.Run) bool {
		for _, r := range runs {
			if r.ID == id {
				got = r
				return ok(r)
			}
		}
		return false
	})
	return got
}

// attemptsNeverOverlap checks from the run's recorded states that no
// attempt started before the one before it had ended (failed, released,
// parked): the run was never worked twice at once. It returns how many
// attempts there were.
func attemptsNeverOverlap(t *testing.T, tm *team.Team, id int64) int {
	t.Helper()
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	working, attempts := "", 0
	for _, e := range evs {
		if e.Text != "team_state" {
			continue
		}
		switch state := e.Str("state"); {
		case state == team.Running && strings.HasPrefix(e.Str("reason"), "attempt "):
			if working != "" {
				t.Errorf("%s: %s started an attempt while %s still worked it", team.RunName(id), e.Str("host"), working)
			}
			working = e.Str("host")
			attempts++
		case state == team.Queued || team.Ended(state):
			working = ""
		}
	}
	return attempts
}

// The program's answer to bad command lines: exit code 2 and a message
// that says what to give, nothing queued.
func TestBadFlagsOfTheTeamCommandsSayWhatToGive(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"submit without --repo", []string{"submit", "--db-file", w.dbFile, "do it"}, []string{"--repo", "every worker can reach"}},
		{"submit without a request", []string{"submit", "--db-file", w.dbFile, "--repo", w.remote}, []string{"needs the request", "submit --repo REPO"}},
		{"submit with a negative budget", []string{"submit", "--db-file", w.dbFile, "--repo", w.remote, "--budget", "-1", "do it"}, []string{"-1", "budget", "negative"}},
		{"submit without a database", []string{"submit", "--repo", w.remote, "do it"}, []string{"needs the team's database", "FLOWER_DATABASE_URL=postgres://", "--db-file PATH", "~/.pgpass"}},
		{"worker with no concurrency", []string{"worker", "--db-file", w.dbFile, "--concurrency", "0"}, []string{"--concurrency 0", "at least 1"}},
		{"worker with a rescue too short", []string{"worker", "--db-file", w.dbFile, "--rescue", "1s"}, []string{"--rescue 1s", "at least 4s"}},
		{"worker with no failures allowed", []string{"worker", "--db-file", w.dbFile, "--max-failures", "0"}, []string{"--max-failures 0", "at least 1"}},
		{"runs of something not a run", []string{"runs", "--db-file", w.dbFile, "notarun"}, []string{`"notarun" is not a run`, "r1, r2", "`flower runs` lists them"}},
		{"cancel without a run", []string{"cancel", "--db-file", w.dbFile}, []string{"cancel takes one run", "cancel r12"}},
		{"reply without an answer", []string{"reply", "--db-file", w.dbFile, "r1"}, []string{"needs the answer"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{c.args[0], "--lang", "en"}, c.args[1:]...)
			out, err := w.flower(args...)
			if code := exitCode(t, err); code != 2 {
				t.Errorf("exit code %d, want 2:\n%s", code, out)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("the message does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "goroutine ") || strings.Contains(out, "panic") {
				t.Errorf("a panic:\n%s", out)
			}
		})
	}
	if runs, err := tm.Runs(context.Background(), team.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("bad command lines queued %d runs (%v)", len(runs), err)
	}
}

// A database unreachable at submit (nothing listens; a wrong password):
// one message naming the database with its password masked, exit code 1,
// nothing queued.
func TestSubmitToADatabaseItCannotUseSaysSoWithThePasswordMasked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	u, err := url.Parse(w.db)
	if err != nil {
		t.Fatal(err)
	}
	wrong := *u
	wrong.User = url.UserPassword(u.User.Username(), "wrong-pass-4711")
	closed := "postgres://flower:s3cret-pw@127.0.0.1:1/team"
	for _, c := range []struct {
		name, url, secret string
		want              []string
	}{
		{"nothing listens", closed, "s3cret-pw", []string{"127.0.0.1:1", "xxxxx", "Check the database's address"}},
		{"a wrong password", wrong.String(), "wrong-pass-4711", []string{u.Host, "xxxxx", "password authentication failed", "Check the database's address"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := w.flowerEnv([]string{"FLOWER_DATABASE_URL=" + c.url}, "submit", "--repo", w.remote, "--lang", "en", "task-1")
			if code := exitCode(t, err); code != 1 {
				t.Errorf("exit code %d, want 1:\n%s", code, out)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("the message does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, c.secret) {
				t.Errorf("the message shows the password:\n%s", out)
			}
			if n := strings.Count(out, "the database at"); n != 1 {
				t.Errorf("the database is named %d times, want one message:\n%s", n, out)
			}
			if strings.Contains(out, "submitted") || strings.Contains(out, "goroutine ") {
				t.Errorf("submit went on:\n%s", out)
			}
		})
	}
	if runs, err := tm.Runs(context.Background(), team.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("%d runs were queued (%v)", len(runs), err)
	}
}

// A repository no worker can reach (submitted with --no-check): each
// worker's attempt fails and the run goes back to the queue, never worked
// by two at once; once it failed on --max-failures workers it is parked
// with every reason, each naming the repository, and `flower runs rN`
// shows them.
func TestARepositoryNoWorkerCanReachIsParkedWithItsReasons(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	missing := filepath.Join(t.TempDir(), "no-such-repo.git")
	// Refused at submit without --no-check: the submitting machine cannot
	// reach it either.
	out, err := w.flower("submit", "--db-file", w.dbFile, "--repo", missing, "--lang", "en", "task-1")
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "cannot reach the repository "+missing) || !strings.Contains(out, "--no-check") {
		t.Errorf("submit of a repository this machine cannot reach: exit %d\n%s", code, out)
	}
	if runs, _ := tm.Runs(context.Background(), team.RunFilter{}); len(runs) != 0 {
		t.Fatalf("a refused submit queued a run")
	}

	id := w.submitTo(missing, "task-1", "--no-check")
	// Machine A fails it and stops: the retry is machine B's. (With both
	// up, the worker that just failed it mostly takes the retry too, and
	// the run is parked after 2×2 failures on one.)
	a := w.worker("machine-a", "--max-failures", "2")
	runOf(t, tm, id, 3*time.Minute, "failed once", func(r team.Run) bool { return len(r.Failures) > 0 })
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(a.out.String(), "worker machine-a stopped"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("machine-a did not stop:\n%s", a.out)
		}
	}
	w.worker("machine-b", "--max-failures", "2")
	r := runOf(t, tm, id, 3*time.Minute, "parked", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Failed {
		t.Fatalf("%s ended %s (%s), want failed", r.Name(), r.State, r.Reason)
	}
	hosts := map[string]bool{}
	for _, f := range r.Failures {
		hosts[f.Host] = true
		if !strings.Contains(f.Reason, missing) || !strings.Contains(f.Reason, "cannot be reached") {
			t.Errorf("a failure's reason does not name the repository: %s", f.Reason)
		}
	}
	// Parked once it failed on two workers (A may have failed it twice
	// before it stopped).
	if len(hosts) != 2 || len(r.Failures) > 3 || r.Failures[len(r.Failures)-1].Host != "machine-b" {
		t.Errorf("parked after %d failures on %v, want the last on machine-b, on both workers", len(r.Failures), hosts)
	}
	t.Logf("parked after %d failures on %d workers", len(r.Failures), len(hosts))
	if !strings.Contains(r.Reason, fmt.Sprintf("failed %d times on %d workers", len(r.Failures), len(hosts))) || !strings.Contains(r.Reason, missing) {
		t.Errorf("the parked run's reason: %s", r.Reason)
	}
	if n := attemptsNeverOverlap(t, tm, id); n != len(r.Failures) {
		t.Errorf("%d attempts for %d failures", n, len(r.Failures))
	}
	shown, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en", r.Name())
	if err != nil {
		t.Fatalf("flower runs %s: %v\n%s", r.Name(), err, shown)
	}
	named := true
	for h := range hosts {
		named = named && strings.Contains(shown, h+": ")
	}
	if !strings.Contains(shown, "failed (parked)") || strings.Count(shown, "cannot be reached") < len(r.Failures) || !named {
		t.Errorf("flower runs %s does not show the reasons:\n%s", r.Name(), shown)
	}
	listing, _ := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if !regexp.MustCompile(`(?m)^` + r.Name() + `\s+failed \(parked\)\s.*failed \d+ times on 2 workers`).MatchString(listing) {
		t.Errorf("flower runs does not list %s as parked with why:\n%s", r.Name(), listing)
	}
	// Parked is final: no worker takes it again.
	time.Sleep(3 * time.Second)
	if again := attemptsNeverOverlap(t, tm, id); again != len(r.Failures) {
		t.Errorf("a parked run was taken again: %d attempts, was %d", again, len(r.Failures))
	}
}

// A branch that exists on the remote and is not the run's: the run is
// parked at once with a reason naming the branch, and the branch is left
// as it was.
func TestABranchThatIsNotTheRunsIsParkedAndLeftAlone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1")
	branch := "flower/" + team.RunName(id)
	// Someone made the run's branch before any worker took the run.
	other := t.TempDir()
	git(t, "", "clone", "-q", w.remote, other)
	if err := os.WriteFile(filepath.Join(other, "theirs.txt"), []byte("theirs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, other, "add", "theirs.txt")
	git(t, other, "-c", "user.name=o", "-c", "user.email=o@example.com", "commit", "-q", "-m", "theirs")
	git(t, other, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	theirs := git(t, w.remote, "rev-parse", branch)

	w.worker("machine-a")
	r := runOf(t, tm, id, 3*time.Minute, "parked", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Failed || !strings.Contains(r.Reason, branch) || !strings.Contains(r.Reason, "never pushed") {
		t.Errorf("%s ended %s: %s; want failed naming %s", r.Name(), r.State, r.Reason, branch)
	}
	if got := git(t, w.remote, "rev-parse", branch); got != theirs {
		t.Errorf("the foreign branch moved: %s, was %s", got, theirs)
	}
	if refs := git(t, w.remote, "for-each-ref", "--format=%(refname)", "refs/heads/"+branch+"-kept-*"); refs != "" {
		t.Errorf("a run that never worked pushed %s", refs)
	}
	if n := attemptsNeverOverlap(t, tm, id); n != 1 {
		t.Errorf("a parked run was attempted %d times, want once", n)
	}
	if len(w.srv.Requests()) != 0 {
		t.Errorf("the model was asked %d times for a run that could not start", len(w.srv.Requests()))
	}
}

// A push rejected because someone pushed to the run's branch while it
// worked: the run is parked with the reason, its work kept on a branch of
// its own (nothing lost), the outsider's commit left on the run's branch.
func TestAPushSomeoneElseBeatIsParkedAndTheWorkKept(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	// The build step's write waits for the test (bounded: the call ends
	// after 120s whatever happens): for a file in the run's own tmp
	// folder, the test's one way in.
	w.model.sleep = "for i in $(seq 600); do [ -e ../tmp/go-on ] && break; sleep 0.2; done"
	id := w.submit("task-1 slow")
	branch := "flower/" + team.RunName(id)
	w.worker("machine-a")

	// The plan step's end pushed the run's branch; the build step waits.
	pushed := runOf(t, tm, id, 4*time.Minute, "pushed once", func(r team.Run) bool { return r.Pushed != "" }).Pushed
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if w.runFile(markerName) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the build step's write never started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := git(t, w.remote, "rev-parse", branch); got != pushed {
		t.Fatalf("the run's branch is at %s, the run's row says it pushed %s", got, pushed)
	}
	other := t.TempDir()
	git(t, "", "clone", "-q", "-b", branch, w.remote, other)
	if err := os.WriteFile(filepath.Join(other, "outsider.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, other, "add", "outsider.txt")
	git(t, other, "-c", "user.name=o", "-c", "user.email=o@example.com", "commit", "-q", "-m", "an outsider's commit")
	git(t, other, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	outsider := git(t, other, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(filepath.Dir(w.runFile(markerName)), "go-on"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	r := runOf(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Failed || !strings.Contains(r.Reason, "rejected") || !strings.Contains(r.Reason, branch) {
		t.Fatalf("%s ended %s: %s; want failed with the rejected push", r.Name(), r.State, r.Reason)
	}
	kept := regexp.MustCompile(regexp.QuoteMeta(branch) + `-kept-[0-9a-f]+`).FindString(r.Reason)
	if kept == "" {
		t.Fatalf("the reason does not name the branch the work is kept on: %s", r.Reason)
	}
	if got := branchFile(t, w.remote, kept, "task-1.txt"); got != "task-1" {
		t.Errorf("%s holds %q in task-1.txt, want the run's work", kept, got)
	}
	if got := git(t, w.remote, "rev-parse", branch); got != outsider {
		t.Errorf("the run's branch is at %s, want the outsider's commit %s left in place", got, outsider)
	}
	if got := branchFile(t, w.remote, branch, "outsider.txt"); got != "mine" {
		t.Errorf("the outsider's file on %s: %q", branch, got)
	}
	if base := git(t, w.remote, "merge-base", kept, outsider); base != pushed {
		t.Errorf("the kept work does not start from the run's last push %s (merge base %s)", pushed, base)
	}
	if n := attemptsNeverOverlap(t, tm, id); n != 1 {
		t.Errorf("attempted %d times, want once (a rejected push is parked, not retried)", n)
	}
}

// A run started with a newer state protocol is left by a worker that reads
// only older ones: the run's row keeps the protocol (and version) it
// started with and says why it waits; any worker of its protocol, another
// build included, finishes it.
func TestAWorkerOfAnotherVersionLeavesTheRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	// The build step's write takes a while; the newer build's worker stops
	// in the middle of it and lets it finish (longer than the rescue
	// interval) before it releases the run.
	w.model.sleep = "sleep 12"
	id := w.submit("task-1 slow")
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the workers' log:\n%s", logs)
		}
	})
	log := slog.New(slog.NewTextHandler(logs, nil))

	// An in-process worker: the library's Version and Protocol stand for
	// a build.
	start := func(name, version string, protocol int) (stop func()) {
		t.Helper()
		home := t.TempDir()
		env := append(append([]string{}, w.env...), "HOME="+home, "TMPDIR="+t.TempDir())
		w.addDir(filepath.Join(home, "runs"))
		wk, err := tm.NewWorker(w.db, team.WorkerOptions{Name: name, Dir: filepath.Join(home, "runs"), Rescue: 8 * time.Second,
			Flower: teamflow(t), Env: env, Args: []string{"--lang", "en"}, Version: version, Protocol: protocol, Log: log.With("worker", name)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- wk.Run(ctx) }()
		var once bool
		stop = func() {
			if once {
				return
			}
			once = true
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("worker %s: %v", name, err)
				}
			case <-time.After(3 * time.Minute):
				t.Errorf("worker %s did not stop", name)
			}
		}
		t.Cleanup(stop)
		return stop
	}

	// A newer build (state protocol 2) starts the run.
	stopNewer := start("newer-build", "2.0.0+bbbb", 2)
	r := runOf(t, tm, id, 4*time.Minute, "started by 2.0.0", func(r team.Run) bool { return r.State == team.Running })
	if r.Version != "2.0.0+bbbb" || r.Protocol != 2 {
		t.Errorf("the run's row records version %q, protocol %d; want the ones it started with", r.Version, r.Protocol)
	}
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if w.runFile(markerName) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the build step never started")
		}
	}
	// Its machine stops: it releases the run (not lost to a takeover
	// while it let the write finish).
	stopNewer()
	runOf(t, tm, id, time.Minute, "released", func(r team.Run) bool { return r.State == team.Queued })

	// An older build reads protocol 1 only: it leaves the run.
	stopOlder := start("older-build", "1.0.0+aaaa", 1)
	r = runOf(t, tm, id, 2*time.Minute, "left by the older build", func(r team.Run) bool {
		return strings.Contains(r.Reason, "older-build")
	})
	if r.State != team.Queued || r.Protocol != 2 || !strings.Contains(r.Reason, "started with state protocol 2 (flower 2.0.0+bbbb)") ||
		!strings.Contains(r.Reason, "reads protocol 1 at most (flower 1.0.0+aaaa)") {
		t.Errorf("%s is %s, protocol %d: %s; want queued, its protocol kept, the reason naming both", r.Name(), r.State, r.Protocol, r.Reason)
	}
	// It stays left while only the older build works.
	time.Sleep(6 * time.Second)
	if got := startedBy(t, tm, id); len(got) != 1 || got[0] != "newer-build" {
		t.Errorf("started by %v, want only the newer build", got)
	}

	// The older build stops first: with both up, it kept winning the
	// snoozed job for minutes. Another build of the same protocol (the
	// same commit built with other flags) continues the run.
	stopOlder()
	start("other-flags", "2.0.0+cccc", 2)
	r = runOf(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Errorf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}
	if got := startedBy(t, tm, id); len(got) != 2 || got[1] != "other-flags" {
		t.Errorf("started by %v, want newer-build then other-flags", got)
	}
	attemptsNeverOverlap(t, tm, id)
	if got := git(t, w.remote, "rev-parse", r.Branch); r.Pushed == "" || got != r.Pushed {
		t.Errorf("the run's branch is at %s, its row says it pushed %q", got, r.Pushed)
	}
	// (Whether the stopped write reached the branch depends on whether
	// the worker saw the tool call start before it stopped; the scripted
	// model takes an interrupted write for done, so the branch is checked
	// for the run's last push, not for the file.)
}
