package flower

import (
	"errors"
	"os"
	"path/filepath"
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
	targets := bequestTargets(ws)
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
	for _, want := range []string{"做一个 hello.txt", "目标已达成", "[过] 运行 cat hello.txt,看到 hello", rt.ManifestPath(),
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
