package team_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/team"
)

// replyOut is `flower reply` on the world's database; it returns the
// output and whether the command succeeded.
func (w *world) reply(lang string, args ...string) (string, bool) {
	w.t.Helper()
	out, err := w.flower(append([]string{"reply", "--db-file", w.dbFile, "--lang", lang}, args...)...)
	return out, err == nil
}

// waitRun polls run id until ok holds of it, or fails after d.
func waitRun(t *testing.T, tm *team.Team, id int64, d time.Duration, what string, ok func(team.Run) bool) team.Run {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		r, err := tm.Run(context.Background(), id)
		if err == nil && ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %s is still not %s: %s (step %s #%d, %s), err %v", d, team.RunName(id), what, r.State, r.Step, r.Round, r.Reason, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// askEvents are the run's question events its human channel wrote (not
// the replies given), as "q1 asked" / "q1 answered".
func askEvents(t *testing.T, tm *team.Team, id int64) []string {
	t.Helper()
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Kind == event.Ask && !e.Bool("reply") && e.Str("id") != "" {
			out = append(out, e.Str("id")+" "+e.Str("state"))
		}
	}
	return out
}

// A reply names its question: one given before any question waits is
// refused unless it names the question it is for, and then only that
// question gets it; the question waiting now gets a reply that names
// none; a reply that can reach no question (an answered one, an id not of
// a question's form, an ended run) is refused in the person's language,
// and nothing kept is lost.
func TestRepliesNameTheirQuestion(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	id := w.submit("task-1 ask")
	run := team.RunName(id)

	// No worker yet: nothing waits. A reply that names no question was
	// given to whatever the run asked next; now it is refused, and says
	// how to name a question to come.
	out, ok := w.reply("en", run, "please also add a README line")
	if ok || !strings.Contains(out, "no question of "+run+" waits now") || !strings.Contains(out, "--question q1") {
		t.Errorf("a reply naming no question while none waits: ok=%v\n%s", ok, out)
	}
	out, ok = w.reply("zh", run, "please also add a README line")
	if ok || !strings.Contains(out, "现在没有问题在等回答") || !strings.Contains(out, "--question q1") {
		t.Errorf("a reply naming no question while none waits (zh): ok=%v\n%s", ok, out)
	}
	for _, bad := range []string{"m2", "3", "q0", "q1; drop"} {
		out, ok = w.reply("en", "--question", bad, run, "words")
		if ok || !strings.Contains(out, "is not a question id") {
			t.Errorf("a reply to question %q: ok=%v\n%s", bad, ok, out)
		}
	}
	// A run of the queue has no inbox a person writes to from afar.
	out, ok = w.reply("en", "--mail", run, "words")
	if ok || !strings.Contains(out, "--mail is for a run in a folder on this machine") || !strings.Contains(out, "--question Q") {
		t.Errorf("--mail to a run of the queue: ok=%v\n%s", ok, out)
	}
	// The help says what a question id is.
	if out, _ := w.flower("reply", "--help"); !strings.Contains(out, "--question Q") || !strings.Contains(out, "(q1, m2, q3") {
		t.Errorf("flower reply --help does not say how a question is named:\n%s", out)
	}
	// A reply for a question the run has not asked waits for it alone.
	out, ok = w.reply("en", "--question", "q2", run, "early words for q2")
	if !ok || !strings.Contains(out, "kept for "+run+"'s question q2") {
		t.Errorf("a reply to a question to come: ok=%v\n%s", ok, out)
	}

	w.worker("machine-a")
	waitRun(t, tm, id, 4*time.Minute, "waiting", func(r team.Run) bool { return r.State == team.Waiting })
	// The question's own event is in the run's feed, with its id, and
	// flower runs shows it: the person learns what to name.
	shown, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en", run)
	if err != nil || !strings.Contains(shown, "q1 asked: What should task-1 be called?") {
		t.Errorf("flower runs %s while it waits names no question id (%v):\n%s", run, err, shown)
	}

	out, ok = w.reply("en", run, "call it zed")
	if !ok || !strings.Contains(out, "question q1") {
		t.Errorf("the reply to the waiting question: ok=%v\n%s", ok, out)
	}
	// The question was answered (the run no longer waits): a reply
	// naming it now is refused.
	waitRun(t, tm, id, 2*time.Minute, "past its question", func(r team.Run) bool { return r.State != team.Waiting })
	out, ok = w.reply("en", "--question", "q1", run, "call it zed after all")
	if ok || !strings.Contains(out, "question q1 is answered already") {
		t.Errorf("a reply to an answered question: ok=%v\n%s", ok, out)
	}
	out, ok = w.reply("zh", "--question", "q1", run, "call it zed after all")
	if ok || !strings.Contains(out, "q1 已经回答过了") {
		t.Errorf("a reply to an answered question (zh): ok=%v\n%s", ok, out)
	}

	r := waitRun(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s", run, r.State, r.Reason)
	}
	for _, req := range w.srv.Requests() {
		for _, words := range []string{"please also add a README line", "early words for q2", "call it zed after all"} {
			if req.HasText(words) {
				t.Errorf("the model was given %q, a reply it was never to get", words)
			}
		}
	}
	answered := false
	for _, req := range w.srv.Requests() {
		answered = answered || req.HasText("call it zed")
	}
	if !answered {
		t.Error("the answer to q1 never reached the model")
	}
	// The reply kept for q2 is still there, undelivered: nothing lost.
	var kept int
	if err := tm.Pool().QueryRow(context.Background(), "select count(*) from team_replies where run = $1 and question = 'q2' and delivered_at is null", id).Scan(&kept); err != nil || kept != 1 {
		t.Errorf("the reply kept for q2: %d undelivered rows (err %v), want 1", kept, err)
	}

	// An ended run takes no reply, in either language.
	out, ok = w.reply("en", run, "one more thing")
	if ok || !strings.Contains(out, run+" is achieved: nothing waits for a reply") {
		t.Errorf("a reply to an ended run: ok=%v\n%s", ok, out)
	}
	out, ok = w.reply("zh", run, "one more thing")
	if ok || !strings.Contains(out, run+" 已结束(已达成):没有问题在等回答") {
		t.Errorf("a reply to an ended run (zh): ok=%v\n%s", ok, out)
	}
}

// What the run says reaches the team at once: its question's events are
// in its feed, its row is running again once the answer is taken (not
// "waiting for a person" until it ends), and the round shown is the one
// it works, not how many its step may take.
func TestARunIsRunningAgainOnceItsAnswerIsTakenAndShowsItsOwnRound(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	// It asks while planning; its build step may take three rounds and
	// pauses in its first, so the run is seen running after the answer.
	id := w.submit("task-1 ask pause rounds")
	run := team.RunName(id)
	w.worker("machine-a")
	waitRun(t, tm, id, 4*time.Minute, "waiting", func(r team.Run) bool { return r.State == team.Waiting })
	if got := strings.Join(askEvents(t, tm, id), ", "); got != "q1 asked" {
		t.Errorf("the run's question events in its feed while it waits: %q, want q1's asked event", got)
	}
	if out, ok := w.reply("en", run, "call it zed"); !ok {
		t.Fatalf("the reply to the waiting question:\n%s", out)
	}
	given := time.Now()
	// Running again once the run took the answer: the row follows what
	// waits in the run (a couple of seconds on a quiet machine: NOTIFY,
	// the run's 200 ms reply poll, the worker's 250 ms tick). The time is
	// logged, not asserted: a loaded machine takes longer.
	waitRun(t, tm, id, 2*time.Minute, "running again after the answer", func(r team.Run) bool { return r.State == team.Running })
	t.Logf("running again %s after the reply", time.Since(given).Round(time.Millisecond))
	shown, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en", run)
	if err != nil || strings.Contains(shown, "waiting for a person") {
		t.Errorf("flower runs %s after the answer (%v):\n%s", run, err, shown)
	}

	// Its first round of build: the step event says the step may take
	// three, which is not the round it works.
	r := waitRun(t, tm, id, 2*time.Minute, "building", func(r team.Run) bool { return r.Step == "build" })
	if r.Round != 1 {
		t.Errorf("%s builds its first round; the row says round %d", run, r.Round)
	}
	r = waitRun(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s", run, r.State, r.Reason)
	}
	if got := strings.Join(askEvents(t, tm, id), ", "); got != "q1 asked, q1 answered" {
		t.Errorf("the run's question events in its feed: %q, want the asked and the answered event of q1", got)
	}
	listing, err := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !regexp.MustCompile(run+`\s+achieved.*build #1`).MatchString(listing) {
		t.Errorf("flower runs does not show %s achieved at build #1 (%v):\n%s", run, err, listing)
	}
}

// The work is pushed after every judged round: the run writes each
// round's verdict to its events, and the worker commits and pushes the
// work when it reads one, before the next round starts.
func TestTheWorkIsPushedAfterEveryJudgedRound(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	var rounds atomic.Int32
	// The judge finds the first round short and the second done.
	w.model.judge = func(r *claudetest.Request) (claudetest.Reply, bool) {
		if !r.HasText("Judge this round") {
			return claudetest.Reply{}, false
		}
		status, conclusion := "failed", "not_yet"
		if rounds.Add(1) >= 2 {
			status, conclusion = "passed", "achieved"
		}
		return claudetest.StructuredOutput(map[string]any{
			"items":      []map[string]string{{"id": "c1", "status": status, "evidence": "cat task-1.txt: task-1", "reason": status}},
			"conclusion": conclusion, "reason": "round " + conclusion}), true
	}
	id := w.submit("task-1 judged")
	w.worker("machine-a")
	r := waitRun(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Fatalf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var judged []int
	for _, e := range evs {
		if e.Kind == event.Verdict {
			judged = append(judged, e.Int("round"))
		}
	}
	if !slices.Equal(judged, []int{1, 2}) || r.Round != 2 {
		t.Errorf("the run's verdicts in its feed: rounds %v, its row round %d; want rounds 1 and 2", judged, r.Round)
	}
	// The first round's work was pushed when it was judged, in a commit
	// of its own, before the second round began.
	log := git(t, w.remote, "log", "--format=%H %s", r.Branch)
	var judgedCommit string
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		hash, subject, _ := strings.Cut(line, " ")
		if strings.Contains(subject, "round 1 judged") {
			judgedCommit = hash
		}
	}
	if judgedCommit == "" {
		t.Fatalf("no commit of %s says round 1 was judged:\n%s", r.Branch, log)
	}
	if got := branchFile(t, w.remote, judgedCommit, "task-1.txt"); got != "task-1" {
		t.Errorf("the commit pushed when round 1 was judged holds %q in task-1.txt, want task-1\n%s", got, log)
	}
	t.Logf("%s:\n%s", r.Branch, log)
}
