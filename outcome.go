package flower

import (
	"errors"
	"fmt"
	"strings"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
)

// The states of a run's Outcome. They are the words ending.json, the
// outcome event in events.jsonl, the report and a team's queue read, so
// they never change.
const (
	// OutcomeAchieved: the judge ruled the goal achieved, and flower's own
	// run of every command item agreed.
	OutcomeAchieved = "achieved"
	// OutcomeAchievedUnmeasured: the judge ruled the goal achieved, but
	// flower could run none of its command items here (no sandbox on this
	// machine): they passed on the judge's reading alone. Finished, and
	// said as such on every surface; Reason names the items and why.
	OutcomeAchievedUnmeasured = "achieved_unmeasured"
	// OutcomeAchievedExcept: the judge ruled the goal achieved, and every
	// item passed but those the goal marked unverifiable on this machine,
	// which never pass: finished, except them. Reason lists them, one a
	// line ("[id] text — why").
	OutcomeAchievedExcept = "achieved_except"
	// OutcomeNeedsLook: the judge ruled the goal achieved, but the change
	// report flagged changes that can make a check pass without the work
	// (a test skipped, a failure silenced, a check rewritten): the flags
	// decide, not the judge. Not finished: the person looks; Reason lists
	// the flags, one a line.
	OutcomeNeedsLook = "needs_look"
	// OutcomeAccepted: the judge ruled the goal unreachable (or not yet),
	// and the person accepted the result as it stands. Not achieved, and
	// not the judge's word: the person's.
	OutcomeAccepted = "accepted"
	// OutcomeUnreachable: the judge ruled the goal unreachable and nobody
	// decided otherwise.
	OutcomeUnreachable = "unreachable"
	// OutcomeNotAchieved: the rounds ran out with the goal not yet achieved.
	OutcomeNotAchieved = "not_achieved"
	// OutcomeStopped: the person stopped the run (Ctrl-C to quit, a
	// signal), or its cost budget was spent.
	OutcomeStopped = "stopped"
	// OutcomeFailed: a step failed or could not start; Reason says why.
	OutcomeFailed = "failed"
	// OutcomeDone: every step passed and no judge ruled on a goal.
	OutcomeDone = "done"
)

// OutcomeKey holds the run's Outcome once Workflow.Run has decided it
// (before Finally runs, so the bequest says what the ending says).
const OutcomeKey = "_outcome"

// AcceptedKey holds true when the person accepted a goal the judge ruled
// unreachable (the goal guard's first choice).
const AcceptedKey = "_accepted"

// Outcome is how one run of a workflow ended: the one answer every
// surface shows (the terminal's ending, the bequest, the report, a team's
// queue). Workflow.Run decides it once, with RunOutcome.
type Outcome struct {
	// State is one of the Outcome* constants.
	State string `json:"outcome"`
	// Reason is why, when the state has one: the judge's reason, the
	// step's error, the budget's words.
	Reason string `json:"reason,omitempty"`
	// Step is the step the run stopped in, when it stopped in one.
	Step string `json:"step,omitempty"`
	// Round is the last judge round of this run (0 without a judge).
	Round int `json:"round,omitempty"`
	// Budget says a Stopped run was stopped by its cost budget, not by
	// the person.
	Budget bool `json:"budget,omitempty"`
}

// Finished reports whether the run's request is finished: the goal was
// achieved, the person accepted the result, or there was no goal and
// every step passed. Anything else is for a later run to continue.
func (o Outcome) Finished() bool {
	return o.Achieved() || o.State == OutcomeAccepted || o.State == OutcomeDone
}

// Achieved reports whether the judge ruled the goal achieved: measured or
// not, with items that cannot be verified here or without.
func (o Outcome) Achieved() bool {
	return o.State == OutcomeAchieved || o.State == OutcomeAchievedUnmeasured || o.State == OutcomeAchievedExcept
}

// stoppedByHuman reports whether a step's error is the mark of a stop by
// the person or a signal (the runtime's own markers and the cause a front
// end gives its context), not a failure of the work.
func stoppedByHuman(err string) bool {
	return err == KilledBySignal || err == ErrInterrupted || strings.HasSuffix(err, QuitByHuman)
}

// IsQuit reports whether cause (a context's cause) is the person's quit:
// an error whose text ends with QuitByHuman.
func IsQuit(cause error) bool {
	for e := cause; e != nil; e = errors.Unwrap(e) {
		if strings.HasSuffix(e.Error(), QuitByHuman) {
			return true
		}
	}
	return false
}

// RunOutcome decides how a workflow's run ended from its ctx, the error
// Workflow.Run returned and the cause of the context it ran under (nil
// while it lives). It is the one decider: Workflow.Run calls it and keeps
// the answer under OutcomeKey; a front end reads that (OutcomeOf) rather
// than deciding again.
func RunOutcome(c *Ctx, err error, cause error) Outcome {
	var o Outcome
	var v *doc.Verdict
	if c != nil {
		if x, ok := c.Get(VerdictKey); ok {
			v, _ = x.(*doc.Verdict)
		}
		if x, ok := c.Get(RoundKey); ok {
			o.Round, _ = x.(int)
		}
	}
	step, failed := "", false
	var res StepResult
	if c != nil {
		step, failed = c.FailedAt()
		res, _ = c.Result(step)
	}
	if IsQuit(cause) || (failed && stoppedByHuman(res.Error)) {
		o.State, o.Step = OutcomeStopped, step
		return o
	}
	if failed {
		if rt := c.Runtime(); rt != nil && rt.budget > 0 && rt.TotalCost() >= rt.budget {
			o.State, o.Step, o.Budget, o.Reason = OutcomeStopped, step, true, firstLine(res.Error)
			return o
		}
	}
	if err != nil {
		o.State, o.Reason = OutcomeFailed, firstLine(err.Error())
		return o
	}
	if c == nil {
		o.State = OutcomeDone
		return o
	}
	if !failed {
		accepted, _ := c.Get(AcceptedKey)
		switch {
		case v != nil && v.State == doc.Achieved && len(v.Flags) > 0:
			o.State, o.Reason = OutcomeNeedsLook, strings.Join(v.Flags, "\n")
		case v != nil && v.State == doc.Achieved && len(v.Except) > 0:
			o.State, o.Reason = OutcomeAchievedExcept, strings.Join(v.Except, "\n")
		case v != nil && v.State == doc.Achieved && len(v.Unmeasured) > 0:
			o.State, o.Reason = OutcomeAchievedUnmeasured, unmeasuredReason(v)
		case v != nil && v.State == doc.Achieved:
			o.State = OutcomeAchieved
		case v != nil && accepted == true:
			o.State, o.Reason = OutcomeAccepted, strings.TrimSpace(v.Reason)
		default:
			o.State = OutcomeDone
		}
		return o
	}
	o.Step = step
	aborted, isAbort := c.AbortedIn(step)
	switch {
	case v != nil && v.State == doc.Unreachable && isAbort:
		o.State, o.Reason = OutcomeUnreachable, strings.TrimSpace(v.Reason)
	case v != nil && res.OK && !isAbort:
		o.State, o.Reason = OutcomeNotAchieved, strings.TrimSpace(v.Reason)
	default:
		o.State = OutcomeFailed
		if x, ok := c.Get(MissingKey); ok && res.OK {
			if missing, _ := x.([]string); len(missing) > 0 {
				lang := English
				if rt := c.Runtime(); rt != nil {
					lang = rt.Language()
				}
				o.Reason = fmt.Sprintf(starterTextsFor(lang).briefMissing, strings.Join(missing, ", "))
			}
		}
		if o.Reason == "" && isAbort {
			o.Reason = aborted
		}
		if o.Reason == "" {
			o.Reason = firstLine(res.Error)
		}
	}
	return o
}

// OutcomeOf is the outcome Workflow.Run decided for the run c holds; ok
// false when none was decided (the workflow never ran).
func OutcomeOf(c *Ctx) (Outcome, bool) {
	if c == nil {
		return Outcome{}, false
	}
	x, ok := c.Get(OutcomeKey)
	o, isOutcome := x.(Outcome)
	return o, ok && isOutcome
}

// outcomeEvent is the run's outcome as events.jsonl keeps it: a system
// event whose payload names the outcome, for the report (which shows the
// same outcome the terminal did) and a team's follower.
func outcomeEvent(o Outcome) Event {
	p := map[string]any{"outcome": o.State}
	if o.Reason != "" {
		p["reason"] = o.Reason
	}
	if o.Step != "" {
		p["step"] = o.Step
	}
	if o.Round > 0 {
		p["round"] = o.Round
	}
	if o.Budget {
		p["budget"] = true
	}
	return event.New(event.System, "outcome", p)
}

// unmeasuredReason is an unmeasured achievement's reason: the items and
// why flower could not run their commands.
func unmeasuredReason(v *doc.Verdict) string {
	return strings.Join(v.Unmeasured, ", ") + ": " + v.UnmeasuredWhy
}
