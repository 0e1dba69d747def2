package flower

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flowerrun/flower/doc"
)

// RunOutcome is the one decider of how a run ended; each state from what
// the ctx, the error and the context's cause hold.
func TestRunOutcomeDecidesEachState(t *testing.T) {
	verdict := func(s doc.State, reason string) *doc.Verdict { return &doc.Verdict{State: s, Reason: reason} }
	for _, c := range []struct {
		name   string
		set    func(c *Ctx)
		err    error
		cause  error
		want   string
		reason string
	}{
		{name: "achieved", set: func(c *Ctx) { c.Set(VerdictKey, verdict(doc.Achieved, "all pass")) }, want: OutcomeAchieved},
		{name: "accepted by the person", set: func(c *Ctx) {
			c.Set(VerdictKey, verdict(doc.Unreachable, "no macOS here"))
			c.Set(AcceptedKey, true)
		}, want: OutcomeAccepted, reason: "no macOS here"},
		{name: "unreachable, nobody answered", set: func(c *Ctx) {
			c.Set(VerdictKey, verdict(doc.Unreachable, "no macOS here"))
			c.Set(KeyFailedAt, "work")
			c.Set(KeyAborted, "stopped")
			c.Set(KeyAbortedStep, "work")
			c.setResult("work", StepResult{Step: "work"})
		}, want: OutcomeUnreachable, reason: "no macOS here"},
		{name: "not achieved", set: func(c *Ctx) {
			c.Set(VerdictKey, verdict(doc.NotYet, "nobody ran ls"))
			c.Set(KeyFailedAt, "work")
			c.setResult("work", StepResult{Step: "work", OK: true})
		}, want: OutcomeNotAchieved, reason: "nobody ran ls"},
		{name: "stopped by Ctrl-C before any step failed", err: fmt.Errorf("flower: stopped before step work: %w", context.Canceled),
			cause: errors.New(QuitByHuman), want: OutcomeStopped},
		{name: "stopped: the step's error is the quit", set: func(c *Ctx) {
			c.Set(KeyFailedAt, "clarify")
			c.setResult("clarify", StepResult{Step: "clarify", Error: "context canceled: " + QuitByHuman})
		}, want: OutcomeStopped},
		{name: "failed", set: func(c *Ctx) {
			c.Set(KeyFailedAt, "work")
			c.setResult("work", StepResult{Step: "work", Error: "API Error: 400\nmore"})
		}, want: OutcomeFailed, reason: "API Error: 400"},
		{name: "failed to go on", err: errors.New("flower: step work: When: boom"), want: OutcomeFailed, reason: "flower: step work: When: boom"},
		{name: "done without a judge", want: OutcomeDone},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := NewCtx()
			ctx.ensureMaps()
			if c.set != nil {
				c.set(ctx)
			}
			o := RunOutcome(ctx, c.err, c.cause)
			if o.State != c.want || o.Reason != c.reason {
				t.Errorf("got %+v, want %s (%q)", o, c.want, c.reason)
			}
		})
	}
}
