package flower

import (
	"strings"
	"testing"
)

// A judge that did not succeed is not a verdict: it is run once more, and
// a second failure stops the step with the judge's error; no text of a
// failed judge is read, and no work round is spent on it.
func TestFakeAFailedJudgeStopsTheStepWithItsErrorAndRunsNoWorkRound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// work is the work round's reply; the judge's prompt carries it,
		// which is how the scripted CLI is told to fail the judge.
		work   string
		opts   []Option
		judges int // judge calls that reach the CLI
		reason string
	}{
		// A failed judge whose partial text says achieved: today it passed.
		{"an error result with an achieved text", "第一轮:写好了 FAIL", nil, 2, "it failed"},
		// A failed judge with no text: today "not yet", and a whole work
		// round ran again.
		{"an exit before any message", "第一轮:写好了 NOSESSION", nil, 2, "干活·判定#1"},
		{"the judge's turn cap", "第一轮:写好了 MAXTURNS", nil, 2, "max_turns"},
		// Clarify, goal and the first round cost 0.01 each: nothing is
		// left for the judge, which never reaches the CLI.
		{"the run budget", "第一轮:写好了", []Option{WithBudget(0.03)}, 0, "$0.03"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeFlow(t)
			rules := starterRules(fakeDone)
			for i := range rules {
				if rules[i].Match == "照这份需求做" {
					rules[i].Replies = []string{tc.work}
				}
			}
			f.script(rules)
			wf, err := StarterFlow("帮我做一个 hello", StarterOptions{Lang: Chinese, Workspace: f.ws, RunDir: f.runDir, NoBequest: true})
			if err != nil {
				t.Fatal(err)
			}
			rt := f.runtime(append([]Option{WithWorkbench(wf.Workbench)}, tc.opts...)...)
			c, err := wf.Run(runCtx(t), rt, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if at, failed := c.FailedAt(); !failed || at != "干活" {
				t.Fatalf("FailedAt = %q %v; the failed judge must stop the work step", at, failed)
			}
			why, _ := c.Aborted()
			if !strings.Contains(why, "判定者 干活·判定#1 两次都没跑成") || !strings.Contains(why, tc.reason) {
				t.Errorf("the abort reason %q does not give the judge's error (%q)", why, tc.reason)
			}
			if n := len(f.callsMatching("判定这一轮")); n != tc.judges {
				t.Errorf("judge calls = %d, want %d (one retry as a judge)", n, tc.judges)
			}
			if n := len(f.callsMatching("没有达成目标")); n != 0 {
				t.Errorf("%d more work rounds ran after a failed judge", n)
			}
			if v, ok := c.Get(VerdictKey); ok {
				t.Errorf("a failed judge's text was read as a verdict: %+v", v)
			}
			// Resumable: the work session is in the lineage.
			if sid := OpenLineage(f.runDir, f.ws).Steps()["干活"]; sid == "" {
				t.Error("the work session is not in the lineage; the next run could not continue it")
			}
		})
	}
}
