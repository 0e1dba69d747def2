package doc

import (
	"reflect"
	"strings"
	"testing"
)

func TestVerdictRecognitionOrder(t *testing.T) {
	cases := []struct {
		name, text string
		want       State
	}{
		// 1. a headed conclusion is read before anything else
		{"headed conclusion beats the rest of the text", "## 结论\n未达成\n## 理由\n其实已达成了一部分, yes", NotYet},
		{"判定 heading", "判定:已达成", Achieved},
		{"english heading", "**Conclusion:** not yet\n**Reason:** achieved nothing", NotYet},
		{"korean heading", "## 결론\n달성\n## 이유\nx", Achieved},
		{"empty conclusion heading reads nothing from its neighbours", "## 结论\n\n## 理由\n已达成", ""},
		{"placeholder conclusion reads nothing", "## 结论\n(空)\n## 理由\nachieved", ""},
		// 2. a bare 1/true/0/false
		{"bare 1", "1", Achieved},
		{"bare true in any case", "  TRUE\n", Achieved},
		{"bare 0", "\n0\n", NotYet},
		{"bare false", "False", NotYet},
		{"bare true inside a conclusion", "结论: true", Achieved},
		{"bare answer after a fence", "```\nlog\n```\n1", Achieved},
		// 3. the state-word table, unreachable first
		{"cannot verify beats achieved", "已达成,但此环境无法验证", Unreachable},
		{"english cannot verify beats achieved", "Achieved as far as I can see, but I cannot verify it on Linux", Unreachable},
		{"can't be verified", "The GUI can’t be verified here.", Unreachable},
		{"unverifiable", "unverifiable", Unreachable},
		{"impossible", "this is impossible without a key", Unreachable},
		{"验证不了", "验证不了,容器里没有 macOS", Unreachable},
		{"做不到", "做不到", Unreachable},
		{"无法达成 is not 达成", "无法达成", Unreachable},
		{"不能达成 is not 达成", "不能达成", Unreachable},
		{"unreachable beats not yet", "not yet, and likely unreachable", Unreachable},
		// not yet before achieved; negations are not achieved
		{"未达成 is not 达成", "未达成", NotYet},
		{"没有达成 is not 达成", "目标没有达成", NotYet},
		{"尚未达成", "尚未达成", NotYet},
		{"部分达成", "部分达成", NotYet},
		{"not achieved is not achieved", "The goal is not achieved.", NotYet},
		{"not yet achieved", "Not yet achieved", NotYet},
		{"hasn't been achieved", "It hasn't been achieved", NotYet},
		{"partially achieved", "partially achieved", NotYet},
		{"not_yet token", "state: not_yet", NotYet},
		{"korean negation", "미달성", NotYet},
		{"achieved", "achieved", Achieved},
		{"已达成", "已达成", Achieved},
		{"bold achieved", "**Achieved**", Achieved},
		{"underscore emphasis achieved", "__achieved__", Achieved},
		// Latin words on word boundaries; yes/no are the weakest words
		{"achieved with no gaps", "achieved, no gaps", Achieved},
		{"no gaps then achieved", "No gaps remain: achieved.", Achieved},
		{"no alone", "no", NotYet},
		{"no with punctuation", "No.", NotYet},
		{"yes alone", "Yes", Achieved},
		{"the first answer word decides", "yes, no gaps remain", Achieved},
		{"no before yes", "no, yes-men aside", NotYet},
		{"no inside a word is not no", "unknown", ""},
		{"yes inside a word is not yes", "eyes only", ""},
		{"achieved inside a word is not achieved", "overachievedness", ""},
		{"unachievable is not achieved", "unachievable", Unreachable},
		// 4. an isolated 1 or 0
		{"isolated 1", "score: 1 of 1", Achieved},
		{"isolated 0", "score 0", NotYet},
		{"1 before 0", "0 failed, 1 passed", Achieved},
		{"digits inside numbers are not isolated", "10 tests, 201 lines", ""},
		{"a digit glued to chinese is not isolated", "第1项", ""},
		// 5. nothing
		{"nothing recognisable", "I looked at the code.", ""},
		{"empty", "", ""},
		{"junk", "\x00\xff\xfe", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := ParseVerdict(c.text)
			if v.State != c.want {
				t.Errorf("ParseVerdict(%q).State = %q, want %q", c.text, v.State, c.want)
			}
			if v.Ok() != (c.want != "") || v.Complete() != v.Ok() {
				t.Errorf("Ok = %v, Complete = %v for state %q", v.Ok(), v.Complete(), v.State)
			}
		})
	}
}

func TestVerdictSectionsParse(t *testing.T) {
	text := "判定者回话:\n\n## 结论\n未达成\n\n## 依据\n测试只跑了一半\n\n## 未通过\n- go test ./... 通过\n- README 有用法\n"
	want := &Verdict{State: NotYet, Reason: "测试只跑了一半", Failed: []string{"go test ./... 通过", "README 有用法"}}
	if got := ParseVerdict(text); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	en := "Conclusion: not yet\nReason: half the tests ran\nNot passed:\n1. tests pass"
	want = &Verdict{State: NotYet, Reason: "half the tests ran", Failed: []string{"tests pass"}}
	if got := ParseVerdict(en); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := (&Verdict{}).Missing(Chinese); !reflect.DeepEqual(got, []string{"结论"}) {
		t.Errorf("Missing(Chinese) = %q", got)
	}
	if got := (&Verdict{State: Achieved}).Missing(English); got != nil {
		t.Errorf("Missing(English) of a verdict with a state = %q", got)
	}
}

func TestFeedbackReproducesTheChineseTextVerbatim(t *testing.T) {
	v := &Verdict{State: NotYet, Reason: "测试只跑了一半", Failed: []string{"go test 通过", "README"}}
	want := "上一轮的产出**没有达成目标**。判定者给的理由:\n\n测试只跑了一半\n\n" +
		"没通过的判定项:\n- go test 通过\n- README\n\n" +
		"接着做 —— 只处理上面这些差距,不要重头开始,也不要扩大范围。" +
		"\n\n" + NoGamingChinese // issue 21: the seed's text, then the rule against gaming the checks
	if got := v.Feedback(Chinese); got != want {
		t.Errorf("Feedback(Chinese) =\n%s\nwant\n%s", got, want)
	}
	bare := "上一轮的产出**没有达成目标**。判定者给的理由:\n\n(没给理由)\n\n" +
		"接着做 —— 只处理上面这些差距,不要重头开始,也不要扩大范围。" + "\n\n" + NoGamingChinese
	if got := (&Verdict{State: NotYet}).Feedback(Chinese); got != bare {
		t.Errorf("Feedback(Chinese) without reason =\n%s\nwant\n%s", got, bare)
	}
}

func TestFeedbackSaysWhatIsMissingAndNotHowToFixIt(t *testing.T) {
	v := &Verdict{State: NotYet, Reason: "half the tests ran", Failed: []string{"tests pass"}}
	got := v.Feedback(English)
	for _, s := range []string{"did not achieve the goal", "half the tests ran", "- tests pass", "do not start over", "do not widen the scope", "Never change a check, a test"} {
		if !strings.Contains(got, s) {
			t.Errorf("Feedback(English) lacks %q:\n%s", s, got)
		}
	}
	// Everything beyond the judge's own words is the fixed frame; it
	// must not grow advice of its own.
	frame := strings.NewReplacer("half the tests ran", "", "tests pass", "").Replace(got)
	for _, advice := range []string{"should", "try", "fix", "run ", "add ", "instead"} {
		if strings.Contains(strings.ToLower(frame), advice) {
			t.Errorf("Feedback frame gives advice (%q):\n%s", advice, frame)
		}
	}
	if !strings.Contains((&Verdict{}).Feedback(English), "(no reason given)") {
		t.Error("English feedback without a reason lacks the placeholder")
	}
}

func TestVerdictMarkdownWritesAStateThatReadsBack(t *testing.T) {
	for _, lang := range []Lang{Chinese, English} {
		for _, s := range []State{Achieved, NotYet, Unreachable} {
			v := &Verdict{State: s}
			if got := ParseVerdict(v.ToMarkdown(lang)).State; got != s {
				t.Errorf("%s %s: read back %q\n%s", lang, s, got, v.ToMarkdown(lang))
			}
		}
	}
	if got, want := (&Verdict{State: NotYet, Reason: "r"}).PromptBlock(Chinese), "## 结论\n未达成\n\n## 理由\nr"; got != want {
		t.Errorf("PromptBlock(Chinese) = %q, want %q", got, want)
	}
}

func TestVerdictReadsANoneMarkerAsNoFailedChecks(t *testing.T) {
	for _, none := range []string{"(无)", "（无）", "无", "(none)", "None", "(없음)"} {
		v := ParseVerdict("## 结论\n达成\n## 理由\n都过了\n## 未通过\n" + none)
		if v.State != Achieved || len(v.Failed) != 0 {
			t.Errorf("%q: state %q, failed %q", none, v.State, v.Failed)
		}
	}
	if v := ParseVerdict("## 结论\n未达成\n## 未通过\n- (无) 的测试没跑\n"); len(v.Failed) != 1 {
		t.Errorf("a real item that mentions (无) must stay: %q", v.Failed)
	}
}

func TestAConclusionThatIsNotAPlainAchievedIsNotAchieved(t *testing.T) {
	cases := []struct {
		name, text string
		want       State
	}{
		{"mostly achieved with a failed item", "## Conclusion\nMostly achieved: item 4 fails\n## Not passed\n- item 4", NotYet},
		{"almost achieved", "## Conclusion\nAlmost achieved\n## Not passed\n- item 2", NotYet},
		{"achieved but not verified", "## Conclusion\nachieved — item 3 not verified\n## Not passed\n- item 3", NotYet},
		{"基本达成", "## 结论\n基本达成\n## 未通过\n- 第 2 条", NotYet},
		{"achieved with an item listed", "## Conclusion\nachieved\n## Not passed\n- item 4", Achieved},
		{"not yet because the build fails", "## Conclusion\nNot yet: I could not verify item 2 because the build fails", NotYet},
		{"not verifiable because the build fails", "## Conclusion\nNot verifiable: the build fails", NotYet},
		{"unverifiable because the build fails", "## Conclusion\nUnverifiable, the build fails", NotYet},
		{"could not verify because tests crash", "## Conclusion\nCould not verify: the tests crash on start.", NotYet},
		{"无法验证 because 编译失败", "## 结论\n无法验证第 2 条,因为编译失败", NotYet},
		{"a real unreachable", "## Conclusion\nunreachable\n## Reason\nthis needs macOS and the machine is Linux", Unreachable},
		{"cannot verify without a fault", "## Conclusion\nCannot verify here: needs a GPU", Unreachable},
		{"all checks pass", "## Conclusion\nAll checks pass.\n## Not passed\nNone.", Achieved},
		{"no gaps remain", "## Conclusion\nNo gaps remain\n## Not passed\n(none)", Achieved},
		{"pass alone", "## Verdict\n**PASS**", Achieved},
		{"3 of 5 passed is not a pass", "## Conclusion\n3 of 5 passed", ""},
		{"two conclusions", "## Conclusion\nachieved\n## Reason\nx\n## Conclusion\nnot yet", ""},
		{"two conclusions that agree", "## Conclusion\nachieved\n## Conclusion\n**Achieved**", Achieved},
		{"empty", "  \n", ""},
		{"only a code block", "```\n## Conclusion\nachieved\n```", ""},
		{"huge", "## Conclusion\nachieved\n## Reason\n" + strings.Repeat("log line\n", 8000), Achieved},
		{"none under reasons heading", "## Conclusion\nachieved\n## Reasons\nall five ran\n## Not passed\n_none_", Achieved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if v := ParseVerdict(c.text); v.State != c.want {
				t.Errorf("state %q, want %q", v.State, c.want)
			}
		})
	}
}
