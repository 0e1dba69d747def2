package flower

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

// End to end on the pinned CLI: the judge's API calls fail (an auth error,
// or server errors until resilience gives up). The step stops with the
// judge's error after one retry as a judge, and the fake API's request log
// shows no second work round.
func TestRealAFailedJudgeStopsTheStepAndNoWorkRoundRunsAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		fault  claudetest.Fault
		reason string
	}{
		{"an auth error", claudetest.Fault{Status: 401, Type: "authentication_error", Message: "Invalid API key"}, "Invalid API key"},
		{"server errors until resilience gives up", *claudetest.ServerError(), "500"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws, runDir := t.TempDir(), t.TempDir()
			script := demo.Script("zh", ws)
			srv := claudetest.NewServer(t, func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
				if r.HasText("判定这一轮") {
					f := tc.fault
					return claudetest.Reply{Fault: &f}
				}
				return script.Reply(r)
			})
			// A confirmed brief and goal: the run goes straight to work.
			notes := filepath.Join(ws, ".flower", "notes")
			if err := os.MkdirAll(notes, 0o755); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(notes, "需求.md"), []byte(fakeBrief+"\n"), 0o644)
			os.WriteFile(filepath.Join(notes, "目标.md"), []byte(fakeGoalDoc+"\n"), 0o644)
			o := StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir, NoBequest: true}
			wf, err := StarterFlow("", o)
			if err != nil {
				t.Fatal(err)
			}
			res := fastResilience
			res.MaxAttempts = 2
			rt := newTestRuntimeIn(t, ws, srv, WithRunDir(runDir), WithWorkbench(wf.Workbench), WithResilience(res),
				WithEnv(map[string]string{"CLAUDE_CODE_MAX_RETRIES": "0"}))
			c, err := wf.Run(runCtx(t), rt, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if at, failed := c.FailedAt(); !failed || at != "干活" {
				for _, r := range rt.Results() {
					t.Logf("%s ok=%v error=%q text=%q", r.Step, r.OK, r.Error, r.Text)
				}
				t.Fatalf("FailedAt = %q %v; the failed judge must stop the work step", at, failed)
			}
			why, _ := c.Aborted()
			if !strings.Contains(why, "判定者 干活·判定#1 两次都没跑成") || !strings.Contains(why, tc.reason) {
				t.Errorf("the abort reason %q does not give the judge's error (%q)", why, tc.reason)
			}
			if n := len(requestsWith(srv, "照这份需求做")); n == 0 {
				t.Fatal("the work round never reached the fake API")
			}
			if n := len(requestsWith(srv, "没有达成目标")); n != 0 {
				t.Errorf("%d requests of a second work round after the judge failed", n)
			}
			if n := len(requestsWith(srv, "判定这一轮")); n < 2 {
				t.Errorf("judge requests = %d; the judge is retried once", n)
			}
			if sid := OpenLineage(runDir, ws).Steps()["干活"]; sid == "" {
				t.Error("the work session is not in the lineage; the next run could not continue it")
			}
		})
	}
}
