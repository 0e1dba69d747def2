package flower

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReplaceBequestKeepsAPersonsTextByteForByte(t *testing.T) {
	block := BequestBegin + "\nnew\n" + BequestEnd
	old := BequestBegin + "\nold\nlines\n" + BequestEnd
	above, below := "# My notes\r\n\nkeep  this\n", "\n\ntrailing text without newline"
	cases := []struct{ name, file, want string }{
		{"empty file", "", block + "\n"},
		{"appended after a newline", above, above + "\n" + block + "\n"},
		{"appended with no final newline", "x", "x\n\n" + block + "\n"},
		{"replaced in place", above + old + below, above + block + below},
		{"replaced at the very end", above + old, above + block},
		{"CRLF markers", above + BequestBegin + "\r\nold\r\n" + BequestEnd + "\r\n" + below, above + block + "\r\n" + below},
	}
	for _, tc := range cases {
		got, err := replaceBequest(tc.file, block)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		above + BequestBegin + "\nno end\n" + below,
		above + "x\n" + BequestEnd + "\n",
		BequestEnd + "\n" + BequestBegin + "\n",
		old + "\n" + old + "\n",
	} {
		if got, err := replaceBequest(bad, block); err == nil {
			t.Errorf("a damaged block was replaced: %q → %q", bad, got)
		}
	}
}

func TestWriteBequestTwiceAndThroughALink(t *testing.T) {
	ws := t.TempDir()
	agents := filepath.Join(ws, "AGENTS.md")
	person := "# Project rules\n\nUse tabs.\n"
	if err := os.WriteFile(agents, []byte(person), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("AGENTS.md", filepath.Join(ws, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	targets, _ := bequestTargets(ws)
	if len(targets) != 1 {
		t.Fatalf("targets = %v; a link to AGENTS.md is the same file", targets)
	}
	for _, text := range []string{"first", "second"} {
		if err := writeBequest(targets[0], text); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(agents, append(mustRead(t, agents), []byte("person below "+text+"\n")...), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	want := person + "\n" + BequestBegin + "\nsecond\n" + BequestEnd + "\nperson below first\nperson below second\n"
	if got := string(mustRead(t, agents)); got != want {
		t.Errorf("AGENTS.md = %q, want %q", got, want)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "CLAUDE.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if fi, _ := os.Stat(agents); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode changed to %v", fi.Mode().Perm())
	}
	damaged := filepath.Join(ws, "D.md")
	os.WriteFile(damaged, []byte(BequestBegin+"\n"), 0o644)
	if err := writeBequest(damaged, "x"); !errors.Is(err, ErrBequestBlock) {
		t.Errorf("damaged: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUsableBequest(t *testing.T) {
	if usableBequest("  \n ") != "" || usableBequest(strings.Repeat("l\n", bequestMaxLines+1)) != "" ||
		usableBequest("x "+BequestEnd) != "" || usableBequest(" ok \n") != "ok" {
		t.Error("usableBequest")
	}
}

func TestFakeBequestSecondRunReplacesItsBlockAndAFailedOneIsMechanical(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	above, below := "# 我的规矩\n\n别动 vendor/\n", "\n## 我后来加的\n也别动 docs/\n"
	claude := filepath.Join(f.ws, "CLAUDE.md")
	if err := os.WriteFile(claude, []byte(above), 0o644); err != nil {
		t.Fatal(err)
	}
	f.runStarter("帮我做一个 hello", f.options(), nil)
	if err := os.WriteFile(claude, append(mustRead(t, claude), below...), 0o644); err != nil {
		t.Fatal(err)
	}
	// The second run's coordinator fails to write a hand-over: an empty
	// reply gives the mechanical version, from the brief, goal, verdict
	// and manifest.
	rules := starterRules(fakeDone)
	rules[1].Replies = []string{""}
	f.script(rules)
	var events []Event
	_, rt, _ := f.runStarter("", f.options(), func(e Event) { events = append(events, e) })
	got := string(mustRead(t, claude))
	if !strings.HasPrefix(got, above+"\n"+BequestBegin+"\n## flower 交代(机械版本)") || !strings.HasSuffix(got, BequestEnd+"\n"+below) {
		t.Fatalf("CLAUDE.md = %q", got)
	}
	if strings.Count(got, BequestBegin) != 1 || strings.Contains(got, fakeBequest) {
		t.Errorf("the old block must be replaced, not added to:\n%s", got)
	}
	for _, want := range []string{"做一个 hello.txt", "目标已达成", "[过] [c1] 运行 cat hello.txt,看到 hello", rt.ManifestPath(),
		filepath.Join(f.ws, ".flower"), "INDEX.md", "干活·交代 $"} {
		if !strings.Contains(got, want) {
			t.Errorf("the mechanical bequest lacks %q:\n%s", want, got)
		}
	}
	agents := string(mustRead(t, filepath.Join(f.ws, "AGENTS.md")))
	if !strings.HasPrefix(agents, BequestBegin+"\n## flower 交代(机械版本)") {
		t.Errorf("AGENTS.md = %q", agents)
	}
	var said bool
	for _, e := range events {
		if m, _ := e.Payload["mechanical"].(bool); m && strings.Contains(e.Text, "CLAUDE.md") {
			said = true
		}
	}
	if !said {
		t.Error("no event says the bequest was written mechanically")
	}
}

func TestFakeStarterNoBequestWritesNone(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	o := f.options()
	o.NoBequest = true
	_, rt, _ := f.runStarter("帮我做一个 hello", o, nil)
	for _, name := range BequestFiles {
		if _, err := os.Stat(filepath.Join(f.ws, name)); err == nil {
			t.Errorf("%s written with NoBequest", name)
		}
	}
	if got := labels(t, rt); strings.Contains(strings.Join(got, " "), "交代") {
		t.Errorf("labels = %v", got)
	}
}

func TestFakeAsideRunLeavesTheWordsForTheNextStep(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	if rt.Interrupt("pending words") {
		t.Fatal("no step runs, yet Interrupt says one took the words")
	}
	if _, err := rt.Run(runCtx(t), wfSpec(), "aside", RunOptions{Aside: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(runCtx(t), wfSpec(), "work", RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := f.call(1).Prompt; strings.Contains(p, "pending words") {
		t.Errorf("the aside run took the words: %q", p)
	}
	if p := f.call(2).Prompt; !strings.Contains(p, "pending words") {
		t.Errorf("the next step lacks the words: %q", p)
	}
}

// TestBequestTargetsNeverLeaveTheWorkspace: a CLAUDE.md or AGENTS.md that
// is a link to a file outside the workspace (git stores links), or to
// nothing, is no target; a link inside the workspace still is.
func TestBequestTargetsNeverLeaveTheWorkspace(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "victim.md")
	if err := os.WriteFile(outside, []byte("the user's own file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../victim.md", filepath.Join(ws, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "missing.md"), filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	targets, out := bequestTargets(ws)
	if len(targets) != 0 || len(out) != 2 {
		t.Errorf("targets %v, outside %v; want none and both", targets, out)
	}
	os.Remove(filepath.Join(ws, "AGENTS.md"))
	if err := os.Symlink("docs/AGENTS.md", filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	targets, out = bequestTargets(ws)
	if len(targets) != 0 || len(out) != 2 {
		t.Errorf("a link to a file not there yet: targets %v, outside %v", targets, out)
	}
	if err := os.WriteFile(filepath.Join(ws, "docs", "AGENTS.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	targets, out = bequestTargets(ws)
	if len(targets) != 1 || targets[0] != filepath.Join(ws, "docs", "AGENTS.md") || len(out) != 1 {
		t.Errorf("a link inside: targets %v, outside %v", targets, out)
	}
}

// TestFakeBequestStaysInTheWorkspaceAndInItsBlock: a run whose CLAUDE.md
// links to a file outside writes nothing there and says so; a workbench
// file whose name carries the end marker and a newline, listed by the
// mechanical bequest, leaves one whole block in AGENTS.md, which the next
// bequest replaces.
func TestFakeBequestStaysInTheWorkspaceAndInItsBlock(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	victim := filepath.Join(t.TempDir(), "victim.md")
	before := "the user's own notes\n"
	if err := os.WriteFile(victim, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(f.ws, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(f.ws, ".flower", "artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	evil := "x\n" + BequestEnd + "\n" + BequestBegin + "\n"
	if err := os.WriteFile(filepath.Join(artifacts, evil), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(f.ws, "AGENTS.md")
	for run := range 2 {
		rules := starterRules(fakeDone)
		rules[1].Replies = []string{""} // no hand-over: the mechanical one lists the workbench
		f.script(rules)
		var events []Event
		request := "帮我做一个 hello"
		if run > 0 {
			request = ""
		}
		f.runStarter(request, f.options(), func(e Event) { events = append(events, e) })
		if got := string(mustRead(t, victim)); got != before {
			t.Fatalf("run %d wrote the file outside the workspace: %q", run, got)
		}
		got := string(mustRead(t, agents))
		if strings.Count(got, BequestBegin) != 1 || strings.Count(got, BequestEnd) != 1 || !strings.Contains(got, "## flower 交代(机械版本)") {
			t.Fatalf("run %d: AGENTS.md is not one whole block:\n%s", run, got)
		}
		said := false
		for _, e := range events {
			if strings.Contains(e.Text, "CLAUDE.md") && strings.Contains(e.Text, "工作区外面") {
				said = true
			}
		}
		if !said {
			t.Errorf("run %d: no event says CLAUDE.md leads outside", run)
		}
	}
}

// TestTheNewHandOverIsKeptOutOfGit: the bequest files flower creates are
// listed in the repository's info/exclude (the person's lines kept, no
// line twice), so git status shows only what the work changed; a file the
// repository tracks is never listed; outside a git work tree nothing is
// done.
func TestTheNewHandOverIsKeptOutOfGit(t *testing.T) {
	gitIn := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	ws := t.TempDir()
	gitIn(ws, "init", "-q")
	os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("# the project's own\n"), 0o644)
	gitIn(ws, "add", "AGENTS.md")
	gitIn(ws, "commit", "-qm", "init")
	exclude := filepath.Join(ws, ".git", "info", "exclude")
	os.WriteFile(exclude, []byte("*.swp"), 0o644) // the person's, without a final newline
	for _, name := range BequestFiles {
		if err := writeBequest(filepath.Join(ws, name), "hand-over"); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		got := keepOutOfGit(t.Context(), ws, []string{filepath.Join(ws, "CLAUDE.md")})
		if !slices.Equal(got, []string{"CLAUDE.md"}) {
			t.Errorf("keepOutOfGit = %q, want CLAUDE.md", got)
		}
	}
	if st := gitIn(ws, "status", "--porcelain"); st != " M AGENTS.md\n" {
		t.Errorf("git status:\n%s\nwant only the tracked AGENTS.md, changed", st)
	}
	data, _ := os.ReadFile(exclude)
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); lines[0] != "*.swp" || strings.Count(string(data), "/CLAUDE.md") != 1 || strings.Contains(string(data), "AGENTS") {
		t.Errorf("info/exclude:\n%s", data)
	}
	// A subfolder of the work tree as the workspace: the pattern is the
	// file's path from the top.
	sub := filepath.Join(ws, "svc")
	os.Mkdir(sub, 0o755)
	writeBequest(filepath.Join(sub, "CLAUDE.md"), "hand-over")
	keepOutOfGit(t.Context(), sub, []string{filepath.Join(sub, "CLAUDE.md")})
	if st := gitIn(ws, "status", "--porcelain"); st != " M AGENTS.md\n" {
		t.Errorf("git status with a subfolder's hand-over:\n%s", st)
	}
	plain := t.TempDir()
	if got := keepOutOfGit(t.Context(), plain, []string{filepath.Join(plain, "CLAUDE.md")}); got != nil {
		t.Errorf("outside git: %q", got)
	}
}
