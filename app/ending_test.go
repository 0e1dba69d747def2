package app

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/screen"
)

// gitRepo makes a repository in a temporary directory with one commit of
// files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run("init", "-q")
	for name, body := range files {
		write(t, filepath.Join(ws, name), body)
	}
	run("add", ".")
	run("commit", "-qm", "start")
	return ws
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitIn(t *testing.T, ws string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", ws}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}

func TestTheEndingCountsOnlyTheRunsOwnChanges(t *testing.T) {
	t.Parallel()
	ws := gitRepo(t, map[string]string{"a.txt": "a\n", "dirty.txt": "d\n"})
	// Before the run: an uncommitted change and an untracked file, the
	// person's own work, not the run's.
	write(t, filepath.Join(ws, "dirty.txt"), "d2\n")
	write(t, filepath.Join(ws, "before.txt"), "b\n")
	ctx := context.Background()
	runDir, wb := filepath.Join(ws, "runs"), filepath.Join(ws, ".flower")
	g := startGit(ctx, ws, wb, runDir)
	// The run: an edit, a new file (its name hostile), a commit, and
	// flower's own files.
	write(t, filepath.Join(ws, "a.txt"), "a\nmore\n")
	evil := "evil\x1b]0;pwned\x07\x1b[2J.txt"
	write(t, filepath.Join(ws, evil), "x\n")
	write(t, filepath.Join(ws, "c.txt"), "c\n")
	gitIn(t, ws, "add", "c.txt")
	gitIn(t, ws, "commit", "-qm", "add c")
	write(t, filepath.Join(runDir, "manifest.json"), "[]")
	write(t, filepath.Join(wb, "notes", "brief.md"), "x")
	c := g.since(ctx, ws)
	stat := strings.Join(c.stat, "\n")
	for _, want := range []string{"a.txt", "c.txt", "2 files changed"} {
		if !strings.Contains(stat, want) {
			t.Errorf("diff --stat lacks %q:\n%s", want, stat)
		}
	}
	if strings.Contains(stat, "dirty.txt") {
		t.Errorf("a change made before the start counts as the run's:\n%s", stat)
	}
	if len(c.untracked) != 1 || c.untracked[0] != evil {
		t.Errorf("new files %q: want the hostile name alone (not before.txt, runs/ or .flower/)", c.untracked)
	}
	if len(c.commits) != 1 || !strings.HasSuffix(c.commits[0], " add c") {
		t.Errorf("commits %q", c.commits)
	}
	for _, lang := range []string{"en", "zh"} {
		e := Ending{Outcome: OutcomeAchieved, Round: 2, Rounds: 3, Started: time.Now().Add(-65 * time.Second), Ended: time.Now(),
			CostUSD: 0.0123, TokensIn: 12000, TokensOut: 800, changes: c}
		var b bytes.Buffer
		sc := screen.NewWriter(&b)
		sc.Block(screen.Plain, e.Block(flower.Lang(lang), endingPlace{runDir: runDir, workspace: ws, name: "flower", manifest: filepath.Join(runDir, "manifest.json")})...)
		out := b.String()
		if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "     evil.txt\n") {
			t.Errorf("%s: an escape of a file name reached the screen: %q", lang, out)
		}
		wants := map[string][]string{
			"en": {"== How it ended", "+ Goal achieved in round 2", "- rounds 2 of 3", "- files changed since the start (git diff --stat):",
				"a.txt", "1 new files (untracked):", "1 commits made:", "- time 1:05 · tokens 12.0K in / 800 out · cost $0.0123",
				"- report: flower report " + runDir + " · manifest " + filepath.Join(runDir, "manifest.json"), "- next: flower in " + ws + " starts something new"},
			"zh": {"== 结果", "+ 目标已达成(第 2 轮)", "- 轮次 2/3", "- 改动(相对开始时的提交,git diff --stat):", "新文件 1 个", "新提交 1 个",
				"- 用时 1:05 · token 读 12.0K / 写 800 · 花费 $0.0123", "- 报告:flower report " + runDir, "- 下一步:在 " + ws + " 里跑 flower 开始新的事"},
		}[lang]
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s ending lacks %q:\n%s", lang, w, out)
			}
		}
	}
	// Outside git the ending says so instead of inventing a list.
	plain := startGit(ctx, t.TempDir())
	if c := plain.since(ctx, t.TempDir()); c.git {
		t.Error("a plain directory taken for a git work tree")
	}
}

// The demo's ending names no way to continue: flower in the demo folder
// would ask for credentials; the demo's own closing line says what next.
func TestTheDemosEndingNamesNoWayToContinue(t *testing.T) {
	t.Parallel()
	for _, o := range []string{OutcomeAchieved, OutcomeStopped} {
		out := strings.Join(Ending{Outcome: o, Round: 2, Rounds: 2}.Block("en", endingPlace{runDir: "/r", workspace: "/w", name: "flower", demo: true}), "\n")
		if strings.Contains(out, "next:") || strings.Contains(out, "to continue") {
			t.Errorf("%v: the demo's ending says how to continue with flower:\n%s", o, out)
		}
	}
}

func TestEveryOutcomeHasItsLines(t *testing.T) {
	t.Parallel()
	p := endingPlace{runDir: "/r", workspace: "/w", name: "flower"}
	for _, c := range []struct {
		e    Ending
		want []string
	}{
		{Ending{Outcome: OutcomeNotAchieved, Round: 3, Rounds: 3, Reason: "no tests"}, []string{"x Goal not achieved after 3 rounds: no tests", "--rounds N", "- to continue: run flower again in /w"}},
		{Ending{Outcome: OutcomeUnreachable, Reason: "no macOS here"}, []string{"x Goal ruled unreachable: no macOS here", "amend the goal"}},
		{Ending{Outcome: OutcomeStopped}, []string{"! Stopped by you (Ctrl-C)", "- to continue: run flower again in /w"}},
		{Ending{Outcome: OutcomeFailed, Step: "clarify", Reason: "the brief lacks these sections: Boundaries"}, []string{"x Failed: stopped at step 'clarify': the brief lacks these sections: Boundaries", "fix the cause above"}},
		{Ending{Outcome: OutcomeDone}, []string{"+ Every step done", "- files: not a git work tree", "- next: flower in /w starts something new"}},
	} {
		out := strings.Join(c.e.Block("en", p), "\n")
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s ending lacks %q:\n%s", c.e.Outcome, w, out)
			}
		}
	}
}

func TestAWakeSaysWhatItWouldContinue(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	brief := filepath.Join(ws, "brief.md")
	write(t, brief, "## Goal\nA hello.txt writer\n\n## Acceptance criteria\n- ls\n\n## Boundaries\nnone\n\n## Unknowns and assumptions\nnone\n")
	wake := flower.Wake{Waking: true, Brief: brief}
	now := time.Date(2026, 12, 1, 18, 0, 0, 0, time.Local)
	ended := time.Date(2026, 12, 1, 15, 55, 0, 0, time.Local)
	for _, c := range []struct {
		lang string
		e    Ending
		ok   bool
		want []string
	}{
		{"en", Ending{Request: "build it", Outcome: OutcomeAchieved, Round: 2, Rounds: 3, CostUSD: 0.0321, Ended: ended}, true,
			[]string{"<- last request: build it", "   goal achieved · ended 2026-12-01 15:55 (2h5m ago) · cost $0.0321 · round 2 of 3"}},
		{"en", Ending{Outcome: OutcomeNotAchieved, Round: 3, Rounds: 3, Reason: "no tests", Ended: ended}, true,
			[]string{"<- last request: A hello.txt writer", "   not achieved after 3 rounds: no tests · ended "}},
		{"en", Ending{Outcome: OutcomeFailed, Reason: "API Error: 400", Ended: ended}, true, []string{"   failed: API Error: 400 · "}},
		{"en", Ending{Outcome: OutcomeStopped, Ended: ended}, true, []string{"   stopped by you (Ctrl-C) · "}},
		{"en", Ending{Outcome: OutcomeUnreachable, Reason: "no macOS", Ended: ended}, true, []string{"   ruled unreachable: no macOS · "}},
		{"en", Ending{}, false, []string{"<- last request: A hello.txt writer", "   how it ended was not recorded"}},
		{"zh", Ending{Request: "做一个", Outcome: OutcomeAchieved, Round: 1, Rounds: 3, CostUSD: 0.5, Ended: ended}, true,
			[]string{"<- 上次的请求:做一个", "   目标已达成 · 结束于 2026-12-01 15:55(2h5m 前) · 花费 $0.5000 · 第 1/3 轮"}},
		{"zh", Ending{}, false, []string{"   没有记录它怎么结束的"}},
	} {
		got := strings.Join(LastRun(flower.Lang(c.lang), wake, c.e, c.ok, now), "\n")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s: lacks %q:\n%s", c.lang, c.e.Outcome, w, got)
			}
		}
	}
}

// The ending names the files a tool wrote and the goal guard put back, in
// the person's language: what a tool wrote there was not theirs.
func TestTheEndingNamesWhatAToolWroteAndWasPutBack(t *testing.T) {
	t.Parallel()
	c := flower.NewCtx()
	c.Set(flower.RestoredKey, []string{"/w/.flower/notes/qa-log.md", "/w/.flower/notes/brief.md"})
	e := outcomeOf(c, nil, false, "en")
	if !slices.Equal(e.Restored, []string{"/w/.flower/notes/qa-log.md", "/w/.flower/notes/brief.md"}) {
		t.Fatalf("restored: %v", e.Restored)
	}
	p := endingPlace{runDir: "/r", workspace: "/w", name: "flower"}
	for lang, want := range map[flower.Lang]string{
		"en": "- written by a tool and put back (neither the person's nor flower's words): /w/.flower/notes/qa-log.md, /w/.flower/notes/brief.md",
		"zh": "- 工具改写过、已放回原样的文件(不是人写的,也不是 flower 写的):/w/.flower/notes/qa-log.md",
	} {
		if out := strings.Join(e.Block(lang, p), "\n"); !strings.Contains(out, want) {
			t.Errorf("%s ending lacks %q:\n%s", lang, want, out)
		}
	}
	if out := strings.Join(Ending{Outcome: OutcomeDone}.Block("en", p), "\n"); strings.Contains(out, "put back") {
		t.Errorf("an ending with nothing put back says something was:\n%s", out)
	}
}
