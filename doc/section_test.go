package doc

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// names are the canonical headings of a Brief in each accepted language.
var briefNames = map[string][4]string{
	"zh": {"目标", "验收标准", "边界", "未知与假设"},
	"en": {"Goal", "Acceptance criteria", "Boundaries", "Unknowns and assumptions"},
	"ko": {"목표", "검수 기준", "경계", "미지와 가정"},
}

// headingForms are every heading form the parser accepts; %s is the
// heading, %b the body.
var headingForms = []struct{ name, form string }{
	{"atx heading", "## %s\n%b"},
	{"level-one heading", "# %s\n\n%b"},
	{"level-six heading without a space", "######%s\n%b"},
	{"heading with body on its line", "## %s %b"},
	{"heading with a colon and body on its line", "## %s: %b"},
	{"bold heading", "**%s**\n%b"},
	{"underscore bold heading", "__%s__\n%b"},
	{"bold heading with colon inside", "**%s:** %b"},
	{"bold heading with colon outside", "**%s**: %b"},
	{"bold heading with body on its line", "**%s** %b"},
	{"ascii colon on its own", "%s:\n%b"},
	{"ascii colon with body", "%s: %b"},
	{"full-width colon on its own", "%s：\n%b"},
	{"full-width colon with body", "%s：%b"},
	{"bare name on its own line", "%s\n%b"},
	{"numbered with dot", "3. %s\n%b"},
	{"numbered with ideographic comma", "3、%s\n%b"},
	{"numbered with parenthesis", "3) %s\n%b"},
	{"numbered with full-width parenthesis", "3）%s\n%b"},
	{"numbered bold", "1. **%s**\n%b"},
	{"numbered with colon and body", "2. %s: %b"},
	{"indented heading", "  ## %s\n%b"},
	{"indented with an ideographic space", "\u3000%s:\n%b"},
	{"heading with closing hashes", "## %s ##\n%b"},
}

func render(form, name, body string) string {
	return strings.NewReplacer("%s", name, "%b", body).Replace(form)
}

func TestEveryHeadingFormIsRecognisedInEveryLanguage(t *testing.T) {
	for lang, names := range briefNames {
		for _, f := range headingForms {
			t.Run(lang+"/"+f.name, func(t *testing.T) {
				var parts []string
				for i, n := range names {
					parts = append(parts, render(f.form, n, fmt.Sprintf("body %d", i)))
				}
				text := "preamble the parser ignores\n\n" + strings.Join(parts, "\n\n")
				got := ParseBrief(text)
				want := &Brief{Goal: "body 0", Accept: "body 1", Bounds: "body 2", Unknowns: "body 3"}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("ParseBrief(%q)\n got %+v\nwant %+v", text, got, want)
				}
			})
		}
	}
}

func TestEnglishHeadingsIgnoreCase(t *testing.T) {
	got := ParseBrief("## GOAL\na\n## acceptance CRITERIA\nb\n**boundaries**\nc\nunknowns and ASSUMPTIONS:\nd")
	want := &Brief{Goal: "a", Accept: "b", Bounds: "c", Unknowns: "d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestEverySectionOfEveryDocumentIsFoundInEveryLanguage(t *testing.T) {
	for _, l := range []*layout{briefLayout, handoffLayout, goalLayout, verdictLayout} {
		for _, s := range l.sections {
			for _, name := range append([]string{s.zh, s.en, s.ko}, s.aliases...) {
				p := l.parse("## " + name + "\nx")
				if p.bodies[s.key] != "x" {
					t.Errorf("heading %q: got sections %v, want %s=x", name, p.bodies, s.key)
				}
			}
		}
	}
}

func TestProseThatStartsWithASectionNameIsNotAHeading(t *testing.T) {
	cases := []struct{ name, text, wantDoing string }{
		{"chinese prose after a name", "## 现在在做什么\n写解析器\n进度很顺利\n## 下一步\n跑测试", "写解析器\n进度很顺利"},
		{"english prose after a name", "## Doing now\nwriting the parser\nProgress is fine today\n## Next step\nrun tests", "writing the parser\nProgress is fine today"},
		{"english word that only starts with a name", "## Doing now\nwriting\nProgressive enhancement: done\n## Next step\nx", "writing\nProgressive enhancement: done"},
		{"bold sentence that starts with a name", "## 现在在做什么\n写解析器\n**进度落后了一天**\n## 下一步\nx", "写解析器\n**进度落后了一天**"},
		{"list item that starts with a name", "## 现在在做什么\n- 进度: 一半\n## 下一步\nx", "- 进度: 一半"},
		{"chinese name running into prose", "## 现在在做什么\n写解析器\n下一步是跑测试\n## 下一步\nx", "写解析器\n下一步是跑测试"},
		{"english name, a blank, prose", "## Doing now\nwriting\nNext step is to run tests\n## Next step\nx", "writing\nNext step is to run tests"},
		{"numbered english name, a blank, prose", "## Doing now\nwriting\n1. Next step is to run tests\n## Next step\nx", "writing\n1. Next step is to run tests"},
		{"korean name, a blank, prose", "## 지금 하는 일\nwriting\n다음 단계 는 테스트\n## 다음 단계\nx", "writing\n다음 단계 는 테스트"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseHandoff(c.text).Doing; got != c.wantDoing {
				t.Errorf("Doing = %q, want %q", got, c.wantDoing)
			}
		})
	}
}

// The seed lets a heading carry its body on its line; in Chinese, with no
// spaces between words, a blank after the name is enough to tell it.
func TestAChineseHeadingTakesItsBodyAfterABlank(t *testing.T) {
	cases := []struct{ name, text, goal, bounds string }{
		{"numbered, ideographic comma", "1、目标 做X\n2、验收标准 跑通\n3、边界 不做X\n4、未知与假设 无", "做X", "不做X"},
		{"numbered, dot", "1. 目标 做X\n2. 验收标准 跑通\n3. 边界 不做X\n4. 未知与假设 无", "做X", "不做X"},
		{"bare", "目标 做X\n验收标准 跑通\n边界 不做X\n未知与假设 无", "做X", "不做X"},
		{"ideographic space", "目标\u3000做X\n验收标准 跑通\n边界\t不做X\n未知与假设 无", "做X", "不做X"},
		{"body continues below", "1. 目标 做X\n再做Y\n2. 验收标准 跑通\n3. 边界 不做X\n4. 未知与假设 无", "做X\n再做Y", "不做X"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := ParseBrief(c.text)
			if b.Goal != c.goal || b.Bounds != c.bounds || !b.Complete() {
				t.Errorf("brief = %+v, want goal %q, bounds %q, complete", b, c.goal, c.bounds)
			}
		})
	}
}

func TestAliasesAreMatchedLongestFirst(t *testing.T) {
	cases := []struct {
		name, text string
		want       *Brief
	}{
		{"未知与假设 is not 未知", "## 未知与假设\nX", &Brief{Unknowns: "X"}},
		{"未知项与假设 is not 未知项", "## 未知项与假设\nX", &Brief{Unknowns: "X"}},
		{"验收标准 is not 验收", "验收标准:X", &Brief{Accept: "X"}},
		{"范围边界 is bounds", "**范围边界**\nX", &Brief{Bounds: "X"}},
		{"short alias still works", "## 未知\nX", &Brief{Unknowns: "X"}},
		{"english long form", "## Unknowns and assumptions\nX", &Brief{Unknowns: "X"}},
		{"english short form", "## Unknowns\nX", &Brief{Unknowns: "X"}},
		{"acceptance criteria is not acceptance", "Acceptance criteria: X", &Brief{Accept: "X"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseBrief(c.text); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	if got := ParseHandoff("## Next steps\nrun it").Next; got != "run it" {
		t.Errorf("Next steps: Next = %q, want %q", got, "run it")
	}
	if got := ParseHandoff("## 现在在做什么\nX").Doing; got != "X" {
		t.Errorf("现在在做什么: Doing = %q, want X", got)
	}
}

// The seed kept the first body of a repeated heading; issue 21 asks that a
// repeated label append, so "Unknowns: …" then "Assumptions: …" keeps both.
func TestARepeatedHeadingAppendsItsBody(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"two with content", "## 目标\nA\n## 目标\nB", "A\n\nB"},
		{"an empty one adds nothing", "## 目标\n\n## 目标\nB\n## 目标\nC", "B\n\nC"},
		{"a placeholder adds nothing", "## 目标\n(未填)\n## Goal\nB", "B"},
		{"languages mixed", "## Goal\nA\n## 목표\nB", "A\n\nB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseBrief(c.text).Goal; got != c.want {
				t.Errorf("Goal = %q, want %q", got, c.want)
			}
		})
	}
}

func TestARestOfLineThatIsAHeadingStartsItsOwnSection(t *testing.T) {
	got := ParseBrief("## 目标 ## 边界 X\n## 目标\nG")
	if got.Goal != "G" || got.Bounds != "X" {
		t.Errorf("got %+v, want Goal=G Bounds=X", got)
	}
}

func TestFencedCodeStaysInItsBodyHidesHeadingsAndAnUnclosedFenceDropsTheRest(t *testing.T) {
	cases := []struct {
		name, text string
		want       *Brief
	}{
		{"closed backtick fence hides a fake heading",
			"## 目标\nA\n```\n## 边界\nfake\n```\nmore\n## 边界\nB",
			&Brief{Goal: "A\n```\n## 边界\nfake\n```\nmore", Bounds: "B"}},
		{"closed tilde fence hides a fake heading",
			"## 目标\nA\n~~~python\n## 边界\nfake\n~~~\n## 边界\nB",
			&Brief{Goal: "A\n~~~python\n## 边界\nfake\n~~~", Bounds: "B"}},
		{"a fence inside a line is text", "## 目标\nrun ```x``` now", &Brief{Goal: "run ```x``` now"}},
		{"unclosed backtick fence drops the rest",
			"## 目标\nA\n```go\npackage main\n## 边界\nB", &Brief{Goal: "A"}},
		{"unclosed tilde fence drops the rest",
			"## 目标\nA\n~~~\n## 边界\nB\n## 验收标准\nC", &Brief{Goal: "A"}},
		{"a tilde run inside a backtick fence does not close it",
			"## 目标\nA\n```\n~~~\n```\n## 边界\nB", &Brief{Goal: "A\n```\n~~~\n```", Bounds: "B"}},
		{"four backticks are an unclosed fence", "## 目标\nA\n````\n## 边界\nB", &Brief{Goal: "A"}},
		{"rules and blank lines inside a fence are code", "## 目标\nA\n```yaml\n---\n\n\nx: 1\n```",
			&Brief{Goal: "A\n```yaml\n---\n\n\nx: 1\n```"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseBrief(c.text); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestBodiesLoseRulesBlankRunsAndSurroundingSpace(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"leading blank lines", "\n\n\n  A", "A"},
		{"dash rule", "A\n---\nB", "A\nB"},
		{"star rule with spaces", "A\n  ***  \nB", "A\nB"},
		{"underscore rule", "A\n_____\nB", "A\nB"},
		{"two dashes are text", "A\n--\nB", "A\n--\nB"},
		{"three newlines collapse", "A\n\n\n\nB", "A\n\nB"},
		{"blank lines of spaces collapse", "A\n  \n\t\n \nB", "A\n\nB"},
		{"trailing spaces go", "A  \nB\t", "A\nB"},
		{"rule between blanks collapses", "A\n\n---\n\nB", "A\n\nB"},
		{"crlf", "A\r\nB\r\n\r\n\r\n\r\nC", "A\nB\n\nC"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseBrief("## 目标\n" + c.body).Goal; got != c.want {
				t.Errorf("Goal = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPlaceholdersCountAsMissing(t *testing.T) {
	for _, ph := range []string{"(未填)", "(空)", "(not filled in)", "(empty)", "(EMPTY)", "（空）"} {
		t.Run(ph, func(t *testing.T) {
			b := ParseBrief("## 目标\n" + ph + "\n## 验收标准\n" + ph + "\n## 边界\nB\n## 未知与假设\nU")
			if b.Goal != "" || b.Accept != "" || b.Complete() {
				t.Errorf("brief %+v: placeholder kept as content", b)
			}
			h := ParseHandoff("## 现在在做什么\n" + ph + "\n## 下一步\nN")
			if h.Doing != "" || h.Complete() {
				t.Errorf("handoff %+v: placeholder kept as content", h)
			}
			g := ParseGoal("# 目标\n" + ph + "\n# 判定清单\n" + ph)
			if g.Statement != "" || len(g.Checks) != 0 || g.Complete() {
				t.Errorf("goal %+v: placeholder kept as content", g)
			}
			v := ParseVerdict("## 结论\n已达成\n## 理由\n" + ph + "\n## 未通过\n" + ph)
			if v.Reason != "" || len(v.Failed) != 0 {
				t.Errorf("verdict %+v: placeholder kept as content", v)
			}
		})
	}
}

func TestTextWithoutHeadingsGivesIncompleteDocuments(t *testing.T) {
	inputs := map[string]string{
		"empty":         "",
		"prose":         "I think the goal is clear and the next step is obvious.",
		"only a fence":  "```\n## 目标\nA\n```",
		"binary junk":   "\x00\xff\xfe## \x80\x81目标\x00\n\xc3\x28",
		"invalid utf-8": "## \xe7\x9b\xae\n\xff",
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			if b := ParseBrief(in); b.Complete() || len(b.Missing(Chinese)) != 4 {
				t.Errorf("brief %+v complete, missing %v", b, b.Missing(Chinese))
			}
			if h := ParseHandoff(in); h.Complete() {
				t.Errorf("handoff %+v complete", h)
			}
			if g := ParseGoal(in); g.Complete() {
				t.Errorf("goal %+v complete", g)
			}
		})
	}
}

func TestHugeInputsParseInLinearTime(t *testing.T) {
	// Each input is built to hit one loop that could go quadratic. An
	// absolute bound (5 s for 1.2 MB) failed a linear parser on a loaded
	// machine under -race (ci12: 6.3 s); what tells linear from quadratic
	// is how the time grows with the input: eight times the input takes
	// about 8 times as long when linear, 64 times when quadratic.
	big := map[string]func(n int) string{
		"one long line of headings":           func(n int) string { return strings.Repeat("## 目标 ", n) },
		"nested headings then closing hashes": func(n int) string { return strings.Repeat("## 目标 ", n) + strings.Repeat("# ", n) },
		"many closed fences then an open one": func(n int) string { return strings.Repeat("```a```~", n) + "~~~" },
		"fence characters that never fence":   func(n int) string { return strings.Repeat("~`", n) },
		"answer words glued together":         func(n int) string { return strings.Repeat("no", n) },
		"blank lines":                         func(n int) string { return strings.Repeat("\n", n) },
		"one long number":                     func(n int) string { return strings.Repeat("1", n) + "." },
	}
	// The thread's CPU time, not the wall clock: load from other
	// processes stretches the wall time of one run and not another's
	// (ci24: 73 times for a linear parser).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	parse := func(in string) time.Duration {
		runtime.GC() // no run pays for the garbage of the one before
		start := threadCPU()
		ParseBrief(in)
		ParseHandoff(in)
		ParseGoal(in)
		ParseVerdict(in)
		return threadCPU() - start
	}
	const n = 40_000
	for name, gen := range big {
		small, large := gen(n/8), gen(n)
		// The fastest of three runs of each size, taken in turn, so
		// load on the machine weighs on both alike.
		var fastSmall, fastLarge time.Duration
		for i := range 3 {
			s, l := parse(small), parse(large)
			if i == 0 || s < fastSmall {
				fastSmall = s
			}
			if i == 0 || l < fastLarge {
				fastLarge = l
			}
		}
		// Below a few milliseconds the clock and the collector are the
		// noise: quadratic at this size is far above that.
		fastSmall = max(fastSmall, time.Millisecond)
		// Linear parsing measured up to 28 under -race beside a busy CI
		// (the collector's share grows with the heap): 40 still tells it
		// from quadratic's 64.
		if growth := float64(fastLarge) / float64(fastSmall); growth > 40 && fastLarge > 100*time.Millisecond {
			t.Errorf("%s: %d bytes took %v, %.0f times the %v of an eighth of it (linear: about 8)", name, len(large), fastLarge, growth, fastSmall)
		}
	}
}

func TestListMarkersAreStrippedOncePerLine(t *testing.T) {
	cases := []struct{ body string }{
		{"- a"}, {"* a"}, {"+ a"}, {"1. a"}, {"1、a"}, {"1) a"}, {"12）a"}, {"  - a  "}, {"\t3. a"},
	}
	for _, c := range cases {
		if got := bullets(c.body); !reflect.DeepEqual(got, []string{"a"}) {
			t.Errorf("bullets(%q) = %q, want [a]", c.body, got)
		}
	}
	kept := []string{"**bold** item", "1.5 秒内响应", "-flag", "a - b"}
	for _, k := range kept {
		if got := bullets(k); !reflect.DeepEqual(got, []string{k}) {
			t.Errorf("bullets(%q) = %q, want the line unchanged", k, got)
		}
	}
	if got := bullets("- - nested\n\n\n- x"); !reflect.DeepEqual(got, []string{"- nested", "x"}) {
		t.Errorf("bullets strips one marker per line and skips blanks: got %q", got)
	}
}

func TestNoHeadingBelongsToTwoSectionsOfOneDocument(t *testing.T) {
	for _, l := range []*layout{briefLayout, handoffLayout, goalLayout, verdictLayout} {
		owner := map[string]string{}
		for _, a := range l.heads {
			name := strings.ToLower(a.name)
			if k, dup := owner[name]; dup {
				t.Errorf("heading %q belongs to %s and %s", a.name, k, a.key)
			}
			owner[name] = a.key
		}
	}
}
