package team

import (
	"strings"
	"testing"

	"github.com/flowerrun/flower"
)

// Every outcome a run's flower can end with leaves the run in the state a
// person expects, its reason saying how: finished ones Achieved, the rest
// Stopped; a failure settles nothing (the attempt fails, and is retried).
func TestEachOutcomeSettlesTheRun(t *testing.T) {
	for _, c := range []struct {
		outcome, reason string
		state           string // "" for none
		says            string
	}{
		{flower.OutcomeAchieved, "", Achieved, ""},
		{flower.OutcomeDone, "", Achieved, ""},
		{flower.OutcomeAchievedUnmeasured, "c1: no sandbox", Achieved, "achieved, not measured: c1: no sandbox"},
		{flower.OutcomeAchievedExcept, "[c3] runs on macOS — this is Linux\n[c4] signs — no key", Achieved,
			"achieved, except what cannot be verified here: [c3] runs on macOS — this is Linux; [c4] signs — no key"},
		{flower.OutcomeAccepted, "no Mac here", Achieved, "accepted by the person: no Mac here"},
		{flower.OutcomeNeedsLook, "[silenced] check.sh:2", Stopped, "needs your look"},
		{flower.OutcomeNotAchieved, "rounds spent", Stopped, "rounds spent"},
		{flower.OutcomeUnreachable, "", Stopped, "unreachable"},
		{flower.OutcomeStopped, "", Stopped, "stopped"},
		{flower.OutcomeFailed, "boom", "", ""},
		{"taken_over", "", "", ""},
		{"a word from a newer flower", "", "", ""},
	} {
		state, why, ok := settledBy(c.outcome, c.reason)
		if ok != (c.state != "") || state != c.state || !strings.Contains(why, c.says) {
			t.Errorf("%s: %q, %q, %v; want %q saying %q", c.outcome, state, why, ok, c.state, c.says)
		}
	}
}
