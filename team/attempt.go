package team

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/beneath"
	"github.com/flowerrun/flower/internal/gitwork"
	"github.com/flowerrun/flower/runstate"
)

// redacted stands where a run's event held one of the worker's secrets.
const redacted = "xxxxx"

// runDirName and workbenchDirName are flower's own files in a checkout:
// kept in the database, never committed.
const (
	runDirName       = "runs"
	workbenchDirName = ".flower"
)

// errLost: River gave the run's job to another worker (this one was not
// heard from for the rescue interval): nothing more is written or pushed.
var errLost = errors.New("another worker took the run over")

// errDrain: the worker is stopping; the run goes back to the queue.
var errDrain = errors.New("the worker is stopping")

// attempt is one worker's work on one run: one River attempt of its job.
type attempt struct {
	w       *Worker
	confine confinement // the worker's, as the run's own user
	run     Run
	job     *rivertype.JobRow
	replies chan struct{}

	checkout, home, state, runDir string

	mu      sync.Mutex
	base    float64            // the run's cost before this attempt
	costs   map[string]float64 // the newest cost each session reported in this attempt
	spentBy float64            // costs of sessions whose process ended (a session reports from 0 again when resumed)
	step    string
	round   int
	// inFlight are the tool calls started and not yet answered: a
	// stopping worker lets them finish.
	inFlight map[string]bool
	// stop ends the attempt early with a cause (set while it works).
	stop context.CancelCauseFunc
	// rs is the run's state in the database, kept by this attempt.
	rs *runState
	// cp keeps the work tree with the transcripts (checkpoint.go).
	cp *checkpoints
	// revoke ends the run's token for the worker's API proxy.
	revoke func()
	// info gives pid: the run's process inside its confinement (0 when
	// not confined: then the command's own process is signalled).
	info *os.File
	pid  int
	// lastKind is the main thread's newest event: a tool result the
	// model has not answered yet may not be in its transcript yet.
	lastKind event.Kind
	// leash ties the run's process to this attempt's confirmations.
	leash *leash
	// replyKey signs the replies delivered to the run (replyKeyOf).
	replyKey []byte
	// continuing says an earlier attempt started the run (its lineage
	// was laid out): this one carries it on, the request not given again.
	continuing bool
	// laidOutEvents is how much of the run's events file the database
	// held: recorded by earlier attempts already.
	laidOutEvents int64
	// questions is what the run's row shows of its waiting questions.
	questions questionWatch
	// trace is the attempt's spans (trace.go); nil when the worker does
	// not export.
	trace *attemptTrace

	// What the worker's metrics were told of this attempt (metrics.go):
	// the run's cost counted so far (from the run's cost when the attempt
	// began), when the step and the round that run began (zero when they
	// began before this attempt), the tool of each call, and the state
	// the attempt last gave the run.
	costCounted float64
	stepSince   time.Time
	roundSince  time.Time
	calls       map[string]string
	outcome     string
}

func (a *attempt) kickReplies() {
	select {
	case a.replies <- struct{}{}:
	default:
	}
}

func (a *attempt) name() string { return a.run.Name() }

// log is the worker's log with the run, the attempt and, once known, the
// step and round: what an operator filters one run's lines by.
func (a *attempt) log() *slog.Logger {
	l := a.w.log.With("run", a.name(), "attempt", a.job.Attempt)
	a.mu.Lock()
	step, round := a.step, a.round
	a.mu.Unlock()
	if step != "" {
		l = l.With("step", step, "round", max(round, 1))
	}
	return l
}

// work runs the run to its end, or until it is lost, cancelled or the
// worker stops.
func (a *attempt) work(ctx context.Context) error {
	t, w := a.w.t, a.w
	base := filepath.Join(w.o.Dir, a.name())
	a.checkout, a.home = filepath.Join(base, "work"), filepath.Join(base, "home")
	a.runDir = filepath.Join(a.checkout, runDirName)
	a.state = filepath.Join(base, "state")
	a.base, a.costs, a.inFlight, a.calls = a.run.Cost, map[string]float64{}, map[string]bool{}, map[string]string{}
	a.costCounted = a.run.Cost
	if err := a.nameAttempt(ctx); err != nil {
		return err
	}
	// The job carries this worker's interval from the attempt's first
	// transaction on. Written only at the first confirmation (a quarter
	// interval later) or at the process's start (after the clone), it left
	// a gap in which a worker with a shorter interval judged the job by
	// its own and took a run this one was still cloning.
	if !a.stillOurs(ctx) {
		return errLost
	}
	leash, err := newLeash()
	if err != nil {
		return err
	}
	a.leash = leash
	defer leash.close()
	// Confirmed from the start, not only once the checkout is made: a
	// clone slower than the interval would let the job go to another
	// worker while this one still meant to start the run. The job is
	// confirmed until the attempt returns, not only until it is stopped:
	// a stopping worker lets the tool call in flight finish and then
	// pushes, which may take longer than the interval.
	actx, stop := context.WithCancelCause(ctx)
	a.stop = stop
	defer stop(nil)
	cctx, confirmed := context.WithCancel(context.WithoutCancel(ctx))
	defer confirmed()
	go a.confirm(cctx, stop)
	if a.confine, err = w.confine.withRunUser(); err != nil {
		return a.failed(ctx, err)
	}
	defer a.confine.release()
	// The run's own folders exist before they are handed to its user
	// (handOver): one the worker made later would be root's alone.
	for _, d := range []string{a.home, a.state, filepath.Join(base, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return a.failed(ctx, fmt.Errorf("worker %s cannot make %s: %w", w.o.Name, d, err))
		}
	}
	err = a.fenced(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "update team_runs set version = coalesce(nullif(version, ''), $2) where id = $1", a.run.ID, w.o.Version); err != nil {
			return err
		}
		return setStateTx(ctx, tx, a.run.ID, Running, w.o.Name, fmt.Sprintf("attempt %d", a.job.Attempt), false)
	})
	if err != nil {
		return err
	}
	if err := gitwork.CheckOutside(a.run.cloneURL, w.o.Dir); err != nil {
		return a.park(ctx, fmt.Sprintf("not cloned by worker %s: %v", w.o.Name, err))
	}
	// flower's folders, and its hand-over where the repository has none of
	// its own (a tracked CLAUDE.md is the repository's, and is committed
	// with flower's block in it): nothing the work did not make reaches
	// the branch.
	exclude := []string{"/" + runDirName + "/", "/" + workbenchDirName + "/"}
	for _, name := range flower.BequestFiles {
		exclude = append(exclude, "/"+name)
	}
	head, err := gitwork.Prepare(ctx, a.run.cloneURL, a.checkout, a.run.Branch, a.run.Base, a.run.Pushed, exclude)
	if pushing := a.pushing(ctx); errors.Is(err, gitwork.ErrForeignBranch) && pushing != "" && pushing != a.run.Pushed {
		// The branch may be at the run's own push whose record was lost
		// (the worker died, the database restarted): it said which
		// commit it was pushing before it pushed.
		if head, err = gitwork.Prepare(ctx, a.run.cloneURL, a.checkout, a.run.Branch, a.run.Base, pushing, exclude); err == nil {
			a.run.Pushed = pushing
			err = a.fenced(ctx, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "update team_runs set pushed = $2 where id = $1", a.run.ID, pushing)
				return err
			})
		}
	}
	w.m.gitFailed(err)
	switch {
	case errors.Is(err, gitwork.ErrForeignBranch), errors.Is(err, gitwork.ErrNoBase):
		return a.park(ctx, err.Error())
	case err != nil:
		return a.failed(ctx, err)
	}
	if err := a.lostWork(ctx, head); err != nil {
		return err
	}
	if err := a.restore(ctx, head); err != nil {
		w.m.gitFailed(err)
		return a.failed(ctx, err)
	}
	a.log().Info("flower worker: working", "head", head)

	state, err := a.openState(ctx)
	if err != nil {
		return a.failed(ctx, err)
	}
	a.rs = state
	if fi, err := os.Stat(filepath.Join(a.runDir, "events.jsonl")); err == nil {
		a.laidOutEvents = fi.Size()
	}
	if _, err := os.Stat(filepath.Join(a.runDir, flower.LineageName)); err == nil {
		a.continuing = true
	}
	defer func() { _ = state.close(context.WithoutCancel(ctx), false, false) }()
	if done, err := a.countEarlierSpend(ctx); done {
		return err
	}
	if err := a.confine.handOver(filepath.Dir(a.checkout)); err != nil {
		return a.failed(ctx, err)
	}

	go func() {
		select {
		case <-state.db.Lost():
			stop(errLost)
		case <-actx.Done():
		}
	}()
	go func() {
		select {
		case <-w.drain:
			stop(errDrain)
		case <-actx.Done():
		}
	}()

	if a.replyKey, err = a.w.t.replyKeyOf(actx, a.run.ID); err != nil {
		return a.failed(ctx, err)
	}
	cmd, logFile, err := a.command()
	if a.revoke != nil {
		// The run's token and its way out end with the attempt, also
		// when its process could not be made.
		defer a.revoke()
	}
	if err != nil {
		return a.failed(ctx, err)
	}
	defer logFile.Close()
	// An input that never closes: the run's questions wait for replies
	// (a closed input would settle each at once, unanswered).
	stdin, hold, err := os.Pipe()
	if err != nil {
		return a.failed(ctx, err)
	}
	defer stdin.Close()
	defer hold.Close()
	cmd.Stdin = stdin
	started := time.Now()
	// Only the attempt's holder starts the run's process: the checkout
	// and the layout may have taken longer than the interval.
	if actx.Err() != nil || !a.stillOurs(ctx) {
		return errLost
	}
	err = cmd.Start()
	for _, f := range cmd.ExtraFiles {
		f.Close() // the process's ends
	}
	if err != nil {
		return a.failed(ctx, fmt.Errorf("worker %s cannot start %s: %w", w.o.Name, w.o.Flower, err))
	}
	a.pid = sandboxPID(a.info, 10*time.Second)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopSync := state.keep(actx, a.stillOurs, func(err error) {
		a.log().Warn("flower worker: the run's state was not written back yet", "err", err)
	})
	defer stopSync()

	// The events an earlier attempt recorded are in the database already:
	// only what this attempt's process adds is followed.
	tail := &tailer{dir: a.checkout, name: filepath.Join(runDirName, "events.jsonl"), offset: a.laidOutEvents}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var exitErr error
	var stopped error // why the worker stopped the run, nil when it ended by itself
loop:
	for {
		select {
		case exitErr = <-exited:
			break loop
		case <-a.replies:
			a.deliver(ctx)
		case <-tick.C:
			a.follow(actx, tail)
			a.watchQuestions(actx)
		case <-actx.Done():
			stopped = context.Cause(actx)
			if errors.Is(stopped, errLost) {
				// Not ours any more: the process group goes at once and
				// nothing it did since is pushed.
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
				return errLost
			}
			exitErr = a.stopChild(cmd, exited, tail)
			break loop
		}
	}
	a.follow(context.WithoutCancel(ctx), tail)
	a.stepEnded(time.Now())
	stopSync()
	ctx = context.WithoutCancel(ctx)
	if !a.stillOurs(ctx) {
		return errLost
	}
	// The work is committed and pushed before the last write-back, so the
	// transcripts it writes describe a tree the branch holds.
	pushErr := a.saveWithin(ctx, "end of attempt", pushBound(w.o.Rescue))
	if errors.Is(pushErr, errLost) {
		return errLost
	}
	// A run whose work could not be pushed is parked below, its work on
	// this machine: its transcripts are written all the same.
	if err := state.close(ctx, true, pushErr == nil); err != nil {
		if errors.Is(err, runstate.ErrLeaseLost) {
			return errLost
		}
		return a.failed(ctx, fmt.Errorf("the run's state did not reach the database: %w", err))
	}
	end, hasEnding := readEnding(a.checkout, started)
	a.mu.Lock()
	if total, ok := manifestCost(a.runDir); ok {
		// The run's own record of what it cost, every process's rows:
		// what its report shows, unrounded.
		a.base, a.costs, a.spentBy = total, map[string]float64{}, 0
	} else if hasEnding && end.CostUSD > 0 {
		a.costs, a.spentBy = map[string]float64{}, end.CostUSD
	}
	a.mu.Unlock()
	a.storeProgress(ctx)
	if pushErr != nil {
		if errors.Is(pushErr, errLost) {
			return errLost
		}
		if errors.Is(pushErr, gitwork.ErrRejected) || errors.Is(pushErr, gitwork.ErrSecret) {
			return a.park(ctx, pushErr.Error())
		}
		// The work exists only in this checkout, and the run's state says
		// its steps are done: another worker would continue from the
		// branch without it and call the run finished. So it waits here,
		// parked, with where its work is.
		return a.park(ctx, fmt.Sprintf("its work could not be pushed to %s (%v); it is kept on worker %s in %s: push it from there, then `flower retry %s`",
			a.run.Branch, pushErr, w.o.Name, a.checkout, a.name()))
	}
	switch {
	case errors.Is(stopped, river.ErrJobCancelledRemotely) || errors.Is(ctx.Err(), river.ErrJobCancelledRemotely):
		if err := a.setState(ctx, Cancelled, "cancelled by a person; its work is on "+a.run.Branch, true); err != nil {
			return err
		}
		return river.JobCancel(errors.New("cancelled"))
	case errors.Is(stopped, errDrain):
		err := a.fenced(ctx, func(tx pgx.Tx) error {
			// Ahead of runs that wait for their first attempt.
			if _, err := tx.Exec(ctx, "update river_job set priority = $2 where id = $1", a.job.ID, priorityTakeover); err != nil {
				return err
			}
			return setStateTx(ctx, tx, a.run.ID, Queued, w.o.Name, "released by "+w.o.Name+" (the worker stopped); any worker continues it", false)
		})
		if err != nil {
			return err
		}
		return river.JobSnooze(0)
	}
	if _, _, settles := settledBy(end.Outcome, end.Reason); !hasEnding || !settles && end.Outcome != "taken_over" {
		if r, err := t.Run(ctx, a.run.ID); err == nil && r.Budget > 0 && r.Cost >= r.Budget {
			// Stopped by its budget: no other worker could do more.
			return a.setState(ctx, Stopped, fmt.Sprintf("its budget of $%.2f is spent ($%.4f); its work is on %s", r.Budget, r.Cost, a.run.Branch), true)
		}
	}
	if !hasEnding {
		return a.failed(ctx, fmt.Errorf("the run's process ended without an outcome (%v); its log: %s", exitErr, logFile.Name()))
	}
	if end.Outcome == "taken_over" {
		return errLost
	}
	if state, why, ok := settledBy(end.Outcome, end.Reason); ok {
		return a.setState(ctx, state, why, true)
	}
	return a.failed(ctx, fmt.Errorf("%s: %s", cmp.Or(end.Outcome, "failed"), cmp.Or(end.Reason, "no reason given")))
}

// settledBy is the state a run's flower leaves it in by the outcome its
// ending names (flower.Outcome*), and the reason shown with it; ok false
// for an outcome that settles nothing: failed, taken over (the ending's
// "taken_over": another process goes on), or one it does not know.
func settledBy(outcome, reason string) (state, why string, ok bool) {
	switch outcome {
	case flower.OutcomeAchieved, flower.OutcomeDone:
		return Achieved, reason, true
	case flower.OutcomeAchievedUnmeasured:
		// Finished, but on the judge's reading alone: said so wherever
		// the run's reason is shown.
		return Achieved, "achieved, not measured: " + cmp.Or(reason, "flower could not run the goal's commands"), true
	case flower.OutcomeAchievedExcept:
		// Finished, but for the items that cannot be verified on the
		// run's machine, which did not pass: named wherever it is shown.
		return Achieved, "achieved, except what cannot be verified here: " + strings.ReplaceAll(cmp.Or(reason, "items the goal marked unverifiable"), "\n", "; "), true
	case flower.OutcomeAccepted:
		// The person accepted the result as it stands: finished, in their
		// words, not the judge's.
		return Achieved, "accepted by the person: " + cmp.Or(reason, "no reason given"), true
	case flower.OutcomeNeedsLook:
		// The flags decide, not the judge: a person looks before anyone
		// calls it achieved.
		return Stopped, "needs your look: the judge ruled it achieved, but these changes can make a check pass without the work: " + strings.ReplaceAll(reason, "\n", "; "), true
	case flower.OutcomeNotAchieved, flower.OutcomeUnreachable, flower.OutcomeStopped:
		return Stopped, cmp.Or(reason, outcome), true
	}
	return "", "", false
}

// command is the run's flower process: the checkout as its workspace, its
// own HOME and temp folders, the database, the run's name and what is left
// of its budget.
func (a *attempt) command() (*exec.Cmd, *os.File, error) {
	w := a.w
	tmp := filepath.Join(filepath.Dir(a.home), "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(filepath.Dir(a.home), fmt.Sprintf("attempt-%d.log", a.job.Attempt)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{"go", "-w", a.checkout}, w.o.Args...)
	if a.continuing {
		// Carried on where it stopped: the request is the run's own, not
		// words to add to its brief, and finished steps stay finished.
		args = append(args, "--resume-run")
	}
	if a.run.Budget > 0 {
		args = append(args, "--budget", strconv.FormatFloat(max(a.run.Budget-a.run.Cost, 0.0001), 'f', 4, 64))
	}
	args = append(args, "--", a.run.Request)
	cmd := exec.Command(w.o.Flower, args...)
	cmd.Dir = a.checkout
	cmd.Stdout, cmd.Stderr = logFile, logFile
	set := map[string]string{
		"HOME":               a.home,
		"CLAUDE_CONFIG_DIR":  filepath.Join(a.home, ".claude"),
		"CLAUDE_CODE_TMPDIR": tmp,
		"TMPDIR":             tmp,
		human.StateDirEnv:    a.state,
		// flower's per-user files are the run's own: the worker's
		// (its .env with the key) are not for the run to read.
		"XDG_CONFIG_HOME": filepath.Join(a.home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(a.home, ".local", "state"),
		"XDG_DATA_HOME":   filepath.Join(a.home, ".local", "share"),
	}
	if a.confine.bwrap != "" {
		// The run's flower starts each CLI apart from itself: its
		// tools cannot signal it (flower.CLIApart).
		set[flower.CLIApartEnv] = a.confine.bwrap
	}
	if cli := w.cliPath(); cli != "" {
		// The CLI that started in a run's confinement (checkCLIConfined),
		// not whatever the run's own lookup would find.
		set["FLOWER_CLAUDE"] = cli
	}
	if w.proxy != nil {
		api, revoke := w.proxy.issue(a.name())
		if w.confine.apiSocket == "" {
			// Not confined: the run shares this machine's network
			// and reaches the proxy's address itself.
			delete(api, flower.APISocketEnv)
		}
		maps.Copy(set, api)
		a.revoke = revoke
	}
	var netSocket string
	if len(a.run.NetHosts) > 0 {
		if w.confine.apiSocket == "" {
			w.log.Warn("flower worker: this run shares the machine's network (no confinement or no key to proxy): its --net list is not enforced", "run", a.name(), "hosts", a.run.NetHosts)
		} else {
			uid := -1 // a worker run as an ordinary user: the run is that user
			if u, err := a.confine.uid(); err == nil {
				uid = u
			}
			eg, err := startEgress(a.name(), a.run.NetHosts, uid, w.log)
			if err != nil {
				logFile.Close()
				return nil, nil, err
			}
			maps.Copy(set, eg.env())
			netSocket = eg.socket
			revoke := a.revoke
			a.revoke = func() {
				eg.Close()
				if revoke != nil {
					revoke()
				}
			}
		}
	}
	cmd.Env = runEnv(w.o.Env, w.o.PassEnv, set, w.envSecrets()...)
	// Its own session and group (runProcAttr): stopped as one, gone with
	// the worker, and without the worker's terminal.
	cmd.SysProcAttr = runProcAttr()
	rw, ro, hide := a.confinedPaths(tmp)
	if netSocket != "" {
		ro = append(ro, netSocket)
	}
	for _, d := range rw {
		if err := os.MkdirAll(d, 0o700); err != nil {
			logFile.Close()
			return nil, nil, err
		}
	}
	cmd, a.info, err = a.confine.confined(cmd, rw, ro, hide)
	if err != nil {
		logFile.Close()
		return nil, nil, err
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, a.leash.r)
	cmd.Env = append(cmd.Env, flower.LeashFDEnv+"="+strconv.Itoa(2+len(cmd.ExtraFiles)), flower.LeashEnv+"="+w.o.Rescue.String())
	// The reply key down a pipe the process reads once: a pipe's 64 KiB
	// buffer holds it whole, so the write never waits for the reader.
	keyR, keyW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, nil, err
	}
	_, err = keyW.Write([]byte(hex.EncodeToString(a.replyKey)))
	keyW.Close()
	if err != nil {
		keyR.Close()
		logFile.Close()
		return nil, nil, err
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, keyR)
	cmd.Env = append(cmd.Env, flower.ReplyKeyFDEnv+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	return cmd, logFile, nil
}

// stopChild lets the tool calls in flight finish and the model answer
// their results (so that they are in its transcript), up to stopGrace,
// then asks the run to quit (as Ctrl-C does: the step in flight is recorded as
// resumable, the state written back), killing it after stopGrace more.
func (a *attempt) stopChild(cmd *exec.Cmd, exited <-chan error, tail *tailer) error {
	deadline := time.Now().Add(stopGrace)
	for {
		a.follow(context.Background(), tail)
		a.mu.Lock()
		busy := len(a.inFlight) > 0 || a.lastKind == event.ToolResult
		a.mu.Unlock()
		if !busy || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-exited:
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	a.interrupt(cmd)
	select {
	case err := <-exited:
		return err
	case <-time.After(stopGrace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return <-exited
	}
}

// confirm refreshes the job's attempted_at, the column River's rescuer
// reads, every quarter of the rescue interval; when the job is no longer
// this attempt's (River rescued it after this worker was not heard from)
// it stops the attempt with errLost.
func (a *attempt) confirm(ctx context.Context, stop context.CancelCauseFunc) {
	every := a.w.o.Rescue / 4
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, every)
		ours, err := a.refresh(cctx)
		cancel()
		switch {
		case err == nil && !ours:
			stop(errLost)
			return
		case err == nil:
			last = time.Now()
			a.leash.tug()
		case time.Since(last) > a.w.o.Rescue:
			// Unconfirmed for the whole interval (the database away, this
			// machine paused): River may have given the run away.
			stop(errLost)
			return
		}
	}
}

// refresh confirms the job; false when it is not this attempt's any more.
func (a *attempt) refresh(ctx context.Context) (bool, error) {
	tag, err := a.w.t.pool.Exec(ctx, `update river_job set attempted_at = now(), metadata = metadata || jsonb_build_object($4::text, $3::float8)
		where id = $1 and state = 'running' and attempt = $2 and attempted_at > now() - make_interval(secs => $3)`,
		a.job.ID, a.job.Attempt, a.w.o.Rescue.Seconds(), leaseKey)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// stillOurs reports whether the job is still this attempt's. A database
// that does not answer (a restart, a network blip) is waited for, up to
// the rescue interval: River cannot give the run away before that, and
// the answer that decides is the database's own (refresh asks whether the
// job was confirmed within the interval). Taken for a "no", a restart at a
// step's end handed a run on and had its step done twice.
func (a *attempt) stillOurs(ctx context.Context) bool {
	return askUntil(ctx, a.w.o.Rescue, a.refresh, func(err error) {
		a.log().Warn("flower worker: waiting for the database to confirm the run is still this worker's", "err", err)
	})
}

// askUntil calls ask until it answers, for at most wait, and returns the
// answer; false when none came. waiting is told of the first failure.
func askUntil(ctx context.Context, wait time.Duration, ask func(context.Context) (bool, error), waiting func(error)) bool {
	deadline := time.Now().Add(wait)
	pause := 250 * time.Millisecond
	for try := 0; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, max(time.Until(deadline), 5*time.Second))
		yes, err := ask(cctx)
		cancel()
		if err == nil {
			return yes
		}
		if time.Now().Add(pause).After(deadline) {
			return false
		}
		if try == 0 && waiting != nil {
			waiting(err)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// lost ends an attempt that is not ours any more. Its result names it
// (nameAttempt), so River does not write it over the new holder's job.
func (a *attempt) lost() error {
	a.log().Warn("flower worker: the run was taken over; this worker wrote nothing more")
	return errLost
}

// failed counts a failure of this attempt and parks the run once it failed
// on MaxFailures workers (or twice as many times in all); otherwise River
// retries it.
func (a *attempt) failed(ctx context.Context, cause error) error {
	ctx = context.WithoutCancel(ctx)
	if err := a.w.envFailure(ctx, a, cause); err != nil { // the worker's environment, not the run (health.go)
		return err
	}
	t, w := a.w.t, a.w
	f := Failure{Host: w.o.Name, At: time.Now(), Reason: cause.Error()}
	r, err := t.Run(ctx, a.run.ID)
	if err != nil {
		return err
	}
	failures := append(r.Failures, f)
	// Only the failures since the run's last retry (flower retry) count.
	counted := failures[min(r.FailuresBefore, len(r.Failures)):]
	hosts := map[string]bool{}
	for _, f := range counted {
		hosts[f.Host] = true
	}
	data, _ := json.Marshal(failures)
	if err := a.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "update team_runs set failures = $2 where id = $1", a.run.ID, data)
		return err
	}); err != nil {
		return err
	}
	if len(hosts) >= w.o.MaxFailures || len(counted) >= 2*w.o.MaxFailures {
		var reasons []string
		for _, f := range counted {
			reasons = append(reasons, f.Host+": "+f.Reason)
		}
		return a.park(ctx, fmt.Sprintf("failed %d times on %d workers:\n%s", len(counted), len(hosts), strings.Join(reasons, "\n")))
	}
	next := time.Now().Add(w.retry.after(len(a.job.Errors) + 1)).Local().Format("15:04:05")
	a.log().Warn("flower worker: the attempt failed; the run goes back to the queue", "retry_at", next, "err", cause)
	if err := a.setState(ctx, Queued, "attempt failed on "+w.o.Name+", to be retried at "+next+": "+cause.Error(), false); err != nil {
		return err
	}
	return cause
}

// park ends a run that cannot be worked (a foreign branch, a rejected
// push, too many failures) with its reason: it is not retried.
func (a *attempt) park(ctx context.Context, reason string) error {
	if err := a.setState(context.WithoutCancel(ctx), Failed, reason, true); err != nil {
		return err
	}
	return river.JobCancel(errors.New(reason))
}

// save commits the checkout's work to the run's branch and pushes it,
// only while the job is this attempt's. A rejected push keeps the work on
// a branch of its own, so nothing is lost.
func (a *attempt) save(ctx context.Context, what string) error {
	if !a.stillOurs(ctx) {
		return errLost
	}
	a.mu.Lock()
	step, round := a.step, a.round
	a.mu.Unlock()
	msg := fmt.Sprintf("flower %s: %s", a.name(), what)
	if step != "" {
		msg += fmt.Sprintf(" (%s, round %d)", step, max(round, 1))
	}
	head, changed, err := gitwork.Commit(ctx, a.checkout, msg)
	if err != nil {
		a.w.m.gitFailed(err)
		return err
	}
	r, err := a.w.t.Run(ctx, a.run.ID)
	if err != nil {
		return err
	}
	if !changed && head == r.Pushed {
		return nil
	}
	// Said before it is pushed: a push whose record is lost is still known
	// as this run's (see work).
	if err := a.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "update team_runs set pushing = $2, pushing_at = now(), pushing_by = $3 where id = $1", a.run.ID, head, a.w.o.Name)
		return err
	}); err != nil {
		return err
	}
	if err := gitwork.Push(ctx, a.checkout, a.run.Branch, r.Pushed, a.w.secrets); err != nil {
		a.w.m.gitFailed(err)
		if errors.Is(err, gitwork.ErrSecret) {
			// Nowhere else either: the work stays in this checkout.
			return fmt.Errorf("%w; the work stays on worker %s in %s: take the secret out of that commit there", err, a.w.o.Name, a.checkout)
		}
		if errors.Is(err, gitwork.ErrRejected) {
			keep := a.run.Branch + "-kept-" + head[:min(len(head), 12)]
			if kerr := gitwork.Push(ctx, a.checkout, keep, "", a.w.secrets); kerr == nil {
				return fmt.Errorf("%w; the run's work is kept on %s", err, keep)
			}
		}
		return err
	}
	err = a.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "update team_runs set pushed = $2, updated_at = now() where id = $1", a.run.ID, head)
		return err
	})
	if err != nil && !errors.Is(err, errLost) {
		// The push went through: the next one goes on from it (gitwork
		// tells this checkout's own commit from someone else's).
		return fmt.Errorf("%w: pushed %s to %s, but the run's record of it was not updated: %w", errRecordBehind, head[:min(len(head), 12)], a.run.Branch, err)
	}
	return err
}

// pushBound is how long an attempt's end keeps trying to push its work
// to a remote that does not take it.
func pushBound(rescue time.Duration) time.Duration { return max(2*time.Minute, 2*rescue) }

// saveWithin is save, tried again while the remote does not take the
// push (an outage, a hook refusing for a while), up to bound: the work of
// an ended attempt is only in this checkout.
func (a *attempt) saveWithin(ctx context.Context, what string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	pause := 2 * time.Second
	for {
		err := a.save(ctx, what)
		if err == nil || errors.Is(err, errLost) || errors.Is(err, errRecordBehind) ||
			errors.Is(err, gitwork.ErrRejected) || errors.Is(err, gitwork.ErrSecret) || time.Now().Add(pause).After(deadline) {
			if errors.Is(err, errRecordBehind) {
				return nil // pushed; the next attempt's push settles the record
			}
			return err
		}
		a.log().Warn("flower worker: the work was not pushed yet; trying again", "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 15*time.Second)
	}
}

// pushing is the commit the run's last push was of, recorded before it
// went ("" when none or unknown).
func (a *attempt) pushing(ctx context.Context) string {
	var head string
	_ = a.w.t.pool.QueryRow(ctx, "select pushing from team_runs where id = $1", a.run.ID).Scan(&head)
	return head
}

// lostWork stops the attempt when the run's last push (said before it
// went) is of a commit that is neither on the branch nor in this checkout:
// an earlier attempt committed work and its worker lost the run before the
// remote took it (it was paused mid-push, or killed while the remote
// refused). The run's state already records that work as done, so going
// on from the branch would skip it and end "achieved" without it. A paused
// worker's push still lands when it wakes, so the run waits for it for
// three of this worker's intervals after it was said (in the queue, the
// job snoozed); then it is parked with where the work may still be.
func (a *attempt) lostWork(ctx context.Context, head string) error {
	var pushing, by string
	var age float64
	_ = a.w.t.pool.QueryRow(ctx, "select pushing, pushing_by, coalesce(extract(epoch from now() - pushing_at), 0) from team_runs where id = $1",
		a.run.ID).Scan(&pushing, &by, &age)
	if pushing == "" || pushing == a.run.Pushed || gitwork.Holds(ctx, a.checkout, head, pushing) {
		return nil
	}
	last, commit := cmp.Or(by, "an earlier worker"), pushing[:min(len(pushing), 12)]
	if wait := 3*a.w.o.Rescue - time.Duration(age*float64(time.Second)); wait > 0 {
		why := fmt.Sprintf("waiting up to %s for worker %s's last push (commit %s) to reach %s; parked if it does not come",
			wait.Round(time.Second), last, commit, a.run.Branch)
		if err := a.setState(ctx, Queued, why, false); err != nil {
			return err
		}
		return river.JobSnooze(min(wait, max(a.w.o.Rescue/2, time.Second)))
	}
	return a.park(ctx, fmt.Sprintf("its last work (commit %s) never reached %s: worker %s lost the run before the remote took it, and the run's state records that work as done. "+
		"If %s still has its checkout (%s/work beneath its --dir), push it from there (git push origin HEAD:%s), then `flower retry %s`; if not, submit the request again",
		commit, a.run.Branch, last, last, a.name(), a.run.Branch, a.name()))
}

// errRecordBehind: the work was pushed and only the run's row does not
// say so yet.
var errRecordBehind = errors.New("pushed, record behind")

// follow reads the run's new events: they go to the database for anyone
// to follow, move the run's step, round, cost and waiting question, and a
// step's end or a handoff commits and pushes the work.
func (a *attempt) follow(ctx context.Context, tail *tailer) {
	lines := tail.next()
	if len(lines) == 0 {
		return
	}
	var evs []event.Event
	save := ""
	kick := false
	defer func() {
		if kick && a.rs != nil {
			a.rs.soon()
		}
	}()
	for _, line := range lines {
		// A run may print what it should not have (a key it wrote into
		// its work): what the team sees of it never shows the worker's
		// secrets.
		for _, s := range a.w.secrets {
			if len(s.Value) >= 8 {
				line = bytes.ReplaceAll(line, []byte(s.Value), []byte(redacted))
			}
		}
		var e struct {
			Step string `json:"step"`
			event.Event
		}
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		at := cmp.Or(e.Time, time.Now())
		a.traceEvent(e.Step, e.Event)
		if e.Kind == event.Step {
			a.stepEnded(at) // the step before it
		}
		a.mu.Lock()
		switch e.Kind {
		case event.Step:
			if a.step != "" && a.step != e.Step {
				save = "after " + a.step
			}
			// "rounds" is how many the step may take; a step starts at
			// its first (or the round it says it resumes at).
			a.step, a.round = e.Step, max(e.Int("round"), 1)
			a.stepSince, a.roundSince = at, at
		case event.Verdict:
			a.round = e.Int("round")
			save = "round " + strconv.Itoa(a.round) + " judged"
			if !a.roundSince.IsZero() {
				a.w.m.roundSeconds.WithLabelValues(stepLabel(a.step)).Observe(at.Sub(a.roundSince).Seconds())
			}
			a.roundSince = at
		case event.Handoff:
			if e.Str("phase") == "done" {
				save = "handoff"
			}
		case event.Result:
			sid := e.Str("session_id")
			c := e.Float("cost_usd")
			if old, ok := a.costs[sid]; ok && c < old {
				a.spentBy += old // a new process of the session counts from 0
			}
			a.costs[sid] = c
		case event.ToolCall:
			if id := e.Str("id"); id != "" {
				a.inFlight[id] = true
				a.calls[id] = e.Tool
			}
			a.w.m.toolCalls.WithLabelValues(cmp.Or(e.Tool, "?")).Inc()
		case event.ToolResult:
			id := e.Str("tool_use_id")
			delete(a.inFlight, id)
			if e.Bool("is_error") && !e.Subagent() && guard.Refused(e.Text) {
				a.w.m.refused.WithLabelValues(cmp.Or(a.calls[id], "?")).Inc()
			}
			delete(a.calls, id)
		}
		if !e.Subagent() {
			a.lastKind = e.Kind
		}
		a.mu.Unlock()
		switch e.Kind {
		case event.ToolCall, event.Step, event.Verdict, event.Handoff, event.Result, event.Ask:
			// What another worker needs to continue: written back now,
			// not at the next tick.
			kick = true
		}
		if e.Kind == event.Text || e.Kind == event.Thinking || e.Kind == event.ToolResult {
			continue // the transcripts are in the session store; the feed keeps what a dashboard shows
		}
		e.Payload = trimPayload(e.Payload)
		evs = append(evs, e.Event)
		switch e.Kind {
		case event.Step:
			a.log().Info("flower worker: step started")
		case event.Verdict:
			a.log().Info("flower worker: round judged", "verdict", e.Str("state"), "reason", e.Text)
		}
	}
	_ = a.fenced(ctx, func(tx pgx.Tx) error {
		for _, e := range evs {
			if err := recordEventBy(ctx, tx, a.run.ID, a.w.o.Name, e); err != nil {
				return err
			}
		}
		return nil
	})
	a.storeProgress(ctx)
	if save != "" {
		err := a.save(ctx, save)
		if (errors.Is(err, gitwork.ErrRejected) || errors.Is(err, gitwork.ErrSecret)) && a.stop != nil {
			// Someone else pushed to the run's branch, or the work holds a
			// secret: working on would only spend; the run stops and is
			// parked with its work kept.
			a.stop(err)
		}
		switch {
		case errors.Is(err, errRecordBehind):
			a.log().Warn("flower worker: the work was pushed; the run's record of it waits for the next push", "err", err)
		case err != nil && !errors.Is(err, errLost):
			a.log().Warn("flower worker: the work was not pushed", "err", err)
		}
	}
}

// humanDir is the run's human side as its process sees it.
func (a *attempt) humanDir() string { return human.DirIn(a.state, a.runDir) }

// markWaiting, deliver: see replies.go.

// storeProgress writes the run's step, round and cost.
func (a *attempt) storeProgress(ctx context.Context) {
	a.mu.Lock()
	cost := a.base + a.spentBy
	for _, c := range a.costs {
		cost += c
	}
	step, round := a.step, a.round
	a.mu.Unlock()
	cost = max(cost, a.transcriptsSpent()) // never below what the transcripts show (spend.go)
	a.mu.Lock()
	if cost > a.costCounted {
		a.w.m.cost.Add(cost - a.costCounted)
		a.costCounted = cost
	}
	a.mu.Unlock()
	_ = a.fenced(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `update team_runs set cost_usd = $2, step = coalesce(nullif($3, ''), step), round = greatest($4, 0), updated_at = now()
			where id = $1`, a.run.ID, cost, step, round)
		return err
	})
}

// trimPayload keeps a dashboard's share of an event's payload: no tool
// input of any size.
func trimPayload(p map[string]any) map[string]any {
	if len(p) == 0 {
		return p
	}
	out := make(map[string]any, len(p))
	for k, v := range p {
		if s, ok := v.(string); ok && len(s) > 500 {
			v = s[:500] + "…"
		}
		if k == "input" {
			continue
		}
		out[k] = v
	}
	return out
}

// tailer reads the lines appended to a file since the last call: name
// beneath dir, the run's checkout, which the run writes (beneath.Open: a
// folder it swaps for a link never leads the worker out of it).
type tailer struct {
	dir, name string
	offset    int64
	partial   []byte
}

func (t *tailer) next() [][]byte {
	f, err := beneath.OpenIn(t.dir, t.name)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < t.offset {
		t.offset, t.partial = 0, nil // replaced (laid out anew): read it again
	}
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	t.offset += int64(len(data))
	data = append(t.partial, data...)
	var lines [][]byte
	for {
		line, rest, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			break
		}
		lines, data = append(lines, line), rest
	}
	t.partial = append([]byte(nil), data...)
	return lines
}

// ending is what the run's process wrote of how it ended (app.Ending's
// fields the queue reads).
type ending struct {
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason"`
	CostUSD float64   `json:"cost_usd"`
	Ended   time.Time `json:"ended"`
}

// manifestCost is the sum of the run's manifest rows: every step of every
// process that worked it.
func manifestCost(runDir string) (float64, bool) {
	rows, err := flower.ReadManifest(filepath.Join(runDir, "manifest.json"))
	if err != nil || len(rows) == 0 {
		return 0, false
	}
	var total float64
	for _, r := range rows {
		total += r.CostUSD
	}
	return total, true
}

// readEnding reads the ending written since started (an older one is an
// earlier attempt's, laid out from the database), beneath the run's
// checkout.
func readEnding(checkout string, started time.Time) (ending, bool) {
	var e ending
	data, err := beneath.ReadFileIn(checkout, filepath.Join(runDirName, "ending.json"), 1<<20)
	if err != nil || json.Unmarshal(data, &e) != nil || e.Outcome == "" || e.Ended.Before(started) {
		return e, false
	}
	return e, true
}

// fenced runs fn in a transaction that found the run's job still this
// attempt's (holds): after a takeover this attempt writes no row.
func (a *attempt) fenced(ctx context.Context, fn func(pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, a.w.t.pool, func(tx pgx.Tx) error {
		if err := a.holds(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
	a.w.m.dbFailed(err)
	return err
}

// stepEnded observes the step in flight as ended at (when this attempt
// saw it begin).
func (a *attempt) stepEnded(at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.stepSince.IsZero() {
		a.w.m.stepSeconds.WithLabelValues(stepLabel(a.step)).Observe(max(at.Sub(a.stepSince), 0).Seconds())
	}
	a.stepSince, a.roundSince = time.Time{}, time.Time{}
}

// setState is Team.setState, fenced.
func (a *attempt) setState(ctx context.Context, state, reason string, end bool) error {
	err := a.fenced(ctx, func(tx pgx.Tx) error { return setStateTx(ctx, tx, a.run.ID, state, a.w.o.Name, reason, end) })
	if err == nil {
		a.mu.Lock()
		a.outcome = state
		a.mu.Unlock()
		if end {
			a.log().Info("flower worker: the run ended", "state", state, "reason", reason)
		}
	}
	return err
}
