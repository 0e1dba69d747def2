package flower

// The round judge answers in structure (judge.VerdictSchema through the
// CLI's --json-schema), through the starter flow on the real *Runtime
// driving the scripted CLI: flower decides from the items, asks an
// unreadable answer again once, and renders the seed's verdict document.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/judge"
)

// verdictJSON is a judge's structured answer on the fake goal's two items.
func verdictJSON(c1, c2, conclusion, reason string, extra ...string) string {
	item := func(id, status string) string {
		if status == "" {
			return ""
		}
		evidence := "ran it: exit 0"
		if status == "evidenceless" {
			status, evidence = "passed", ""
		}
		return `{"id":"` + id + `","status":"` + status + `","evidence":"` + evidence + `","reason":"` + status + `"}`
	}
	var items []string
	for _, it := range []string{item("c1", c1), item("c2", c2)} {
		if it != "" {
			items = append(items, it)
		}
	}
	out := `{"items":[` + strings.Join(items, ",") + `],"conclusion":"` + conclusion + `","reason":"` + reason + `"`
	for _, e := range extra {
		out += "," + e
	}
	return out + "}"
}

func TestFakeStructuredVerdictOnlyItemsThatPassedEndTheWork(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, verdict string
		doubt         bool // the person is told why the conclusion was not taken
	}{
		{"achieved while an item failed", verdictJSON("passed", "failed", "achieved", "close enough"), true},
		{"achieved with an item missing", verdictJSON("passed", "", "achieved", "the first passed"), true},
		{"achieved with an item not run", verdictJSON("passed", "not_run", "achieved", "item 2 not run this round"), true},
		{"achieved with a pass that has no evidence", verdictJSON("passed", "evidenceless", "achieved", "trust me"), true},
		{"achieved naming an item the goal lacks", strings.Replace(verdictJSON("passed", "passed", "achieved", "all"), `"id":"c2"`, `"id":"c7"`, 1), true},
		{"unreachable without naming what is missing", verdictJSON("passed", "failed", "unreachable", "go vet reports unreachable code"), true},
		{"a plain not yet", verdictJSON("passed", "failed", "not_yet", "ls shows nothing"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeFlow(t)
			f.script(starterRules(tc.verdict, fakeDone))
			var ev events
			o := f.options()
			o.Timeout = -1 // unattended: an unreachable would stop the run
			_, rt, c := f.runStarter("帮我做一个 hello", o, ev.add)
			want := []string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活#round2", "干活·判定#2", "干活·交代"}
			if got := labels(t, rt); !slices.Equal(got, want) {
				t.Fatalf("labels = %v, want another round: %v", got, want)
			}
			if _, failed := c.FailedAt(); failed {
				t.Error("round 2 achieved, yet the flow failed")
			}
			r2 := f.callsMatching("没有达成目标")
			if len(r2) != 1 {
				t.Fatalf("round 2 calls: %d", len(r2))
			}
			doubts := ev.guard("doubt")
			if tc.doubt != (len(doubts) == 1) {
				t.Fatalf("doubt events = %v, want one: %v", doubts, tc.doubt)
			}
			for _, d := range doubts {
				if why := strings.Split(d.Text, "\n")[0]; !strings.Contains(r2[0].Prompt, why) {
					t.Errorf("the worker is not told why (%q):\n%s", why, r2[0].Prompt)
				}
			}
			// Each judge call asked for structure.
			for _, j := range f.callsMatching("判定这一轮") {
				if !slices.Contains(j.Args, "--json-schema") {
					t.Errorf("a judge was not asked for structure: %v", j.Args)
				}
			}
		})
	}
}

func TestFakeStructuredVerdictAnUnreadableAnswerIsAskedAgainOnceThenTheJudgeFailed(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"plain words":           "## 结论\n已达成\n\n## 理由\n都过了\n\n## 未通过\n(无)",
		"empty":                 replyEmpty,
		"refused by the CLI":    replyRejected + fakeDone,
		"cut off":               replyCutOff + fakeDone,
		"schema-invalid":        `{"conclusion":"achieved","reason":"all good"}`,
		"two answers":           replyTwoOutputs + fakeNotYet + "\n" + fakeDone,
		"a conclusion in words": strings.Replace(fakeDone, `"achieved"`, `"Achieved*"`, 1),
	}
	for name, reply := range bad {
		t.Run(name+", then readable", func(t *testing.T) {
			t.Parallel()
			f := newFakeFlow(t)
			f.script(starterRules(reply, fakeDone))
			_, rt, c := f.runStarter("帮我做一个 hello", f.options(), nil)
			want := []string{"确认需求", "设定目标", "干活", "干活·判定#1", "干活·判定#1", "干活·交代"}
			if got := labels(t, rt); !slices.Equal(got, want) {
				t.Fatalf("labels = %v, want the judge asked again in the same round: %v", got, want)
			}
			if _, failed := c.FailedAt(); failed {
				t.Error("the second answer was achieved, yet the flow failed")
			}
			judges := f.callsMatching("判定这一轮")
			told := reply != replyRejected+fakeDone // a judge whose session failed is asked the same again
			if len(judges) != 2 || strings.Contains(judges[1].Prompt, "你的回答读不了") != told || strings.Contains(judges[0].Prompt, "你的回答读不了") {
				t.Errorf("the second judge is not told why it is asked again: %d calls", len(judges))
			}
		})
		t.Run(name+", twice", func(t *testing.T) {
			t.Parallel()
			f := newFakeFlow(t)
			f.script(starterRules(reply, reply))
			_, rt, c := f.runStarter("帮我做一个 hello", f.options(), nil)
			at, failed := c.FailedAt()
			if !failed || at != "干活" {
				t.Fatalf("FailedAt = %q %v, want the work step stopped by the judge's failure", at, failed)
			}
			got := labels(t, rt)
			if slices.Contains(got, "干活#round2") {
				t.Errorf("a work round was spent on an unreadable judge: %v", got)
			}
			if n := len(f.callsMatching("判定这一轮")); n != 2 {
				t.Errorf("judge calls = %d, want 2", n)
			}
			if _, ok := c.Get(VerdictKey); ok {
				t.Error("an unreadable answer became a verdict")
			}
		})
	}
}

func TestFakeStructuredVerdictIsWrittenAsTheSeedsDocument(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		verdict string
		want    []string
	}{
		{fakeNotYet, []string{"## 结论\n\n未达成", "## 理由\n\n缺一个测试", "## 未通过\n\n- [c2] 运行 ls,看到 hello.txt — 缺一个测试"}},
		{fakeDone, []string{"## 结论\n\n已达成", "## 理由\n\n都过了", "## 未通过\n\n(空)"}},
	} {
		f := newFakeFlow(t)
		f.script(starterRules(tc.verdict, fakeDone))
		f.runStarter("帮我做一个 hello", f.options(), nil)
		// The last round's document; the first round's is in the events.
		if tc.verdict == fakeNotYet {
			continue
		}
		md := readText(t, filepath.Join(f.runDir, VerdictName))
		for _, w := range tc.want {
			if !strings.Contains(md, w) {
				t.Errorf("the verdict document lacks %q:\n%s", w, md)
			}
		}
		if v, err := doc.LoadVerdict(filepath.Join(f.runDir, VerdictName)); err != nil || v.State != doc.Achieved {
			t.Errorf("the document reads back as %+v (%v)", v, err)
		}
	}
}

func TestFakeStructuredGoalAnUnreadableGoalIsAskedAgainOnce(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rules := starterRules(fakeDone)
	rules[6].Replies = []string{"## 目标\nhello\n\n## 判定清单\n- 运行 ls"}
	// Asked again in its session, the goal step answers in structure.
	rules = slices.Insert(rules, len(rules)-1, fakeRule{Match: "你的回答读不了", Replies: []string{fakeGoal}})
	f.script(rules)
	_, rt, c := f.runStarter("帮我做一个 hello", f.options(), nil)
	if _, failed := c.FailedAt(); failed {
		t.Fatal("the second goal was readable, yet the flow failed")
	}
	if got := labels(t, rt); !slices.Equal(got[:3], []string{"确认需求", "设定目标", "设定目标#round2"}) {
		t.Fatalf("labels = %v", got)
	}
	again := f.callsMatching("你的回答读不了")
	if len(again) != 1 || !slices.Contains(again[0].Args, "--json-schema") {
		t.Fatalf("the goal step was not asked again, told why: %d calls", len(again))
	}
	if sid, _ := again[0].resumed(); sid == "" {
		t.Error("the goal step was asked again in a new session, without its first answer")
	}
	g := readText(t, filepath.Join(f.ws, ".flower", "notes", "目标.md"))
	if !strings.Contains(g, "- [c1] 运行 cat hello.txt,看到 hello") {
		t.Errorf("the goal file:\n%s", g)
	}
}

func TestFakeStructuredGoalWithoutCommandsSaysNothingIsMeasured(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	f.script(starterRules(fakeDone))
	var ev events
	f.runStarter("帮我做一个 hello", f.options(), ev.add)
	if got := ev.guard("no_commands"); len(got) != 1 || !strings.Contains(got[0].Text, "没有一条是 flower 能自己运行的命令") {
		t.Fatalf("no_commands events = %v", got)
	}
	if _, err := os.Stat(filepath.Join(f.runDir, VerdictName)); err != nil {
		t.Errorf("no verdict document: %v", err)
	}
}

// The sentence the judge's rules ask for word for word is the one flower
// adds itself when the judge left it out.
func TestTheJudgesRulesAskForTheInvariantFlowerAdds(t *testing.T) {
	for _, lang := range []Lang{English, Chinese} {
		if !strings.Contains(PromptsFor(lang).JudgeRules, judge.Invariant(lang)) {
			t.Errorf("%s: the judge's rules do not hold %q", lang, judge.Invariant(lang))
		}
	}
}
