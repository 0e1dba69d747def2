package flower

// Words that change the brief between runs, and during clarify, reach the
// work: the starter flow on the fake CLI.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/human"
)

// runWithMail runs a starter flow, sending mail when the step named at
// starts.
func (f *fakeFlow) runWithMail(ask, at, mail string) {
	f.t.Helper()
	wf, err := StarterFlow(ask, f.options())
	if err != nil {
		f.t.Fatal(err)
	}
	ch := wf.Channel.(*human.Channel)
	rt := f.runtime(WithWorkbench(wf.Workbench))
	onEvent := func(e Event) {
		if e.Kind == "step" && e.Text == at {
			ch.Send(mail)
		}
	}
	c, err := wf.Run(runCtx(f.t), rt, onEvent, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if step, failed := c.FailedAt(); failed {
		f.t.Fatalf("failed at %s", step)
	}
}

func TestFakeStarterMailOfTheLastRunReachesTheNextRunsWork(t *testing.T) {
	// Before: the mail lived in the brief and the dead run's memory; the
	// wake (no new words) did not derive the goal again and the
	// coordinator got only "接着做": no call of the next run had it.
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	const mail = "记得写一个 README"
	f.runWithMail("帮我做一个 hello", "干活", mail)
	before := f.count()
	f.runStarter("", f.options(), nil)
	var got []string
	for n := before + 1; n <= f.count(); n++ {
		if c := f.call(n); strings.Contains(c.Prompt, mail) {
			got = append(got, c.Prompt)
		}
	}
	sets := f.callsMatching("变成一个可判定的目标")
	if len(sets) != 2 || !strings.Contains(sets[1].Prompt, mail) {
		t.Errorf("the goal was not derived again from the amended brief (%d set-goal calls)", len(sets))
	}
	work := f.callsMatching("设定目标之后,需求确认书改过了")
	if len(work) != 1 || !strings.Contains(work[0].Prompt, mail) || !strings.Contains(work[0].Prompt, "以这份为准") {
		t.Fatalf("the coordinator was not told the change: %d calls; the wake's calls with the mail: %q", len(work), got)
	}
	// Once the goal is set from it, the brief is no change any more.
	before = f.count()
	f.runStarter("", f.options(), nil)
	for n := before + 1; n <= f.count(); n++ {
		if c := f.call(n); strings.Contains(c.Prompt, "需求确认书改过了") {
			t.Errorf("a brief already judged is sent again as a change: %q", c.Prompt)
		}
	}
}

func TestFakeStarterAHandEditOfTheBriefCountsAsAmended(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	f.runStarter("帮我做一个 hello", f.options(), nil)
	brief := filepath.Join(f.ws, ".flower", "notes", "需求.md")
	const edit = "\n## 人手改的\n界面要用深色\n"
	fh, err := os.OpenFile(brief, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(edit)
	fh.Close()
	f.runStarter("", f.options(), nil)
	work := f.callsMatching("设定目标之后,需求确认书改过了")
	if len(work) != 1 || !strings.Contains(work[0].Prompt, "界面要用深色") {
		t.Fatalf("the hand edit did not reach the coordinator: %d calls", len(work))
	}
}

func TestFakeStarterABriefEditedIntoAnInvalidStateSaysWhatToDo(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	f.runStarter("帮我做一个 hello", f.options(), nil)
	brief := filepath.Join(f.ws, ".flower", "notes", "需求.md")
	broken := "## 目标\n做一个 hello.txt\n"
	os.WriteFile(brief, []byte(broken), 0o644)
	for _, ask := range []string{"", "再加点东西"} {
		wf, err := StarterFlow(ask, f.options())
		if wf != nil || err == nil || !strings.Contains(err.Error(), brief) || !strings.Contains(err.Error(), "验收标准") ||
			!strings.Contains(err.Error(), "--new") {
			t.Errorf("ask %q: workflow built %v, error %v", ask, wf != nil, err)
		}
	}
	if _, err := WakeState(f.options()); err == nil || !strings.Contains(err.Error(), "验收标准") {
		t.Errorf("WakeState: %v", err)
	}
	if got := readText(t, brief); got != broken {
		t.Errorf("the broken brief was overwritten:\n%s", got)
	}
}

func TestFakeStarterMailSentDuringClarifySurvivesTheGate(t *testing.T) {
	// Before: the mail was appended to the brief file, then the gate
	// replaced the whole file: gone from disk, though the receipt said
	// "appended to the brief".
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	const mail = "数据库用 PostgreSQL"
	f.runWithMail("帮我做一个 hello", "确认需求", mail)
	brief := readText(t, filepath.Join(f.ws, ".flower", "notes", "需求.md"))
	if !strings.Contains(brief, "## 验收标准") || strings.Count(brief, mail) != 1 {
		t.Fatalf("the brief after clarify:\n%s", brief)
	}
	if sets := f.callsMatching("变成一个可判定的目标"); len(sets) != 1 || !strings.Contains(sets[0].Prompt, mail) {
		t.Errorf("the goal was set without the words sent during clarify")
	}
	if work := f.callsMatching("照这份需求做"); len(work) != 1 || !strings.Contains(work[0].Prompt, mail) {
		t.Errorf("the work started without the words sent during clarify")
	}
}
