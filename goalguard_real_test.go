package flower

// The change report on the pinned Claude Code CLI against the fake
// Messages API: a whole starter flow in a git workspace, where the judge's
// request to the API must carry what flower computed with git.

import (
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/internal/demo"
)

func TestRealStarterTheChangeReportReachesTheJudgesRequest(t *testing.T) {
	t.Parallel()
	ws, runDir := t.TempDir(), t.TempDir()
	gitWorkspace(t, ws)
	texts := demo.TextsFor("zh")
	srv := claudetest.NewServer(t, demo.Script("zh", ws).Handler())
	_, _, c := realStarter(t, srv, texts.Ask, StarterOptions{Lang: Chinese, Workspace: ws, RunDir: runDir}, []string{texts.Answer}, nil)
	if at, failed := c.FailedAt(); failed {
		r, _ := c.Result(at)
		t.Fatalf("failed at %s: %+v", at, r)
	}
	judges := requestsWith(srv, "判定这一轮")
	if len(judges) == 0 {
		t.Fatal("no judge's request reached the API")
	}
	got := judges[0].LastUserText()
	// The coder's Write of hello.txt, which the checklist names, seen by git
	// against the baseline taken when the goal was set.
	for _, want := range []string{"# 设定目标以来改动了什么", "由 flower 用 git 算出", "对照设定目标时的工作区",
		"- hello.txt (判定清单里点了名; +1 −0)", "+hello"} {
		if !strings.Contains(got, want) {
			t.Errorf("the judge's request lacks %q:\n%s", want, got)
		}
	}
}
