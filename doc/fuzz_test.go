package doc

import (
	"reflect"
	"strings"
	"testing"
)

// seeds are texts shaped like what models write, to start the fuzzers near
// the interesting paths.
var seeds = []string{
	"",
	"## 目标\nA\n## 验收标准\nB\n## 边界\nC\n## 未知与假设\nD",
	"**Goal:** a\n3. Boundaries\nb\n```\n## Goal\n```\n~~~",
	"# 交接书(干活)\n## 现在在做什么\nd\n## 下一步\nn\n## 现场\n> x",
	"# 目标\ns\n# 判定清单\n- a [此环境无法验证:b]\n1、c",
	"## 结论\n未达成\n## 理由\nr\n## 未通过\n- x",
	"achieved, no gaps",
	"## 目标 ## 边界 x\r\n---\r\n\r\n\r\n\r\ny",
	"\ufeff\x00\xff\xfe## \x80目标:\xc3\x28",
	"## 目标 \u00a0边界: X\n\u3000- 1.5\n**Goal:** 1、x",
}

// FuzzParse feeds arbitrary text to every parser. Nothing may panic, and
// a parsed document read back from its own markdown must not change: a
// parsed body holds no heading, fence or placeholder, so ToMarkdown then
// Parse is the identity on anything Parse returns.
func FuzzParse(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		b, h, g, v := ParseBrief(text), ParseHandoff(text), ParseGoal(text), ParseVerdict(text)
		for _, lang := range langs {
			if got := ParseBrief(b.ToMarkdown(lang)); !reflect.DeepEqual(got, b) {
				t.Errorf("%s brief changed:\n got %q\nwant %q", lang, got, b)
			}
			if got := ParseHandoff(h.ToMarkdown(lang)); !reflect.DeepEqual(got, h) {
				t.Errorf("%s handoff changed:\n got %q\nwant %q", lang, got, h)
			}
			if got := ParseGoal(g.ToMarkdown(lang)); !reflect.DeepEqual(got, g) {
				t.Errorf("%s goal changed:\n got %q\nwant %q", lang, got, g)
			}
			if got := ParseVerdict(v.ToMarkdown(lang)); !reflect.DeepEqual(got, v) {
				t.Errorf("%s verdict changed:\n got %q\nwant %q", lang, got, v)
			}
			b.PromptBlock(lang)
			h.PromptBlock(lang)
			g.PromptBlock(lang)
			v.PromptBlock(lang)
			v.Feedback(lang)
			Degraded(lang, text, text, text)
		}
		g.Unverifiable()
		IsOverflow(text)
	})
}

// body turns fuzzed bytes into a valid section body for layout l: no fence,
// no line that is a heading, no placeholder, tidied as the parser tidies.
// It returns "" when nothing valid is left.
func body(l *layout, s string) string {
	s = strings.NewReplacer("`", "", "~", "", "\r", "\n").Replace(s)
	lines := strings.Split(s, "\n")
	for i, ln := range lines {
		if _, _, ok := l.heading(ln); ok || headingLevel(ln) == 1 {
			lines[i] = "> " + ln
		}
	}
	s = clean(strings.Join(lines, "\n"))
	if isPlaceholder(s) {
		return ""
	}
	return s
}

// item turns fuzzed bytes into a valid list item: one line, no fence, not
// empty.
func item(s string) string {
	return oneLine(strings.NewReplacer("`", "", "~", "").Replace(s))
}

// items splits fuzzed bytes on "|" into list items, dropping empty ones and
// a lone "none", which reads as no item at all.
func items(s string) []string {
	var out []string
	for _, part := range strings.Split(s, "|") {
		it := item(part)
		for cutCheckbox(it) != it {
			it = cutCheckbox(it)
		}
		if it != "" && !strings.HasPrefix(it, "|") && headingLevel(it) == 0 {
			out = append(out, it)
		}
	}
	if len(out) == 1 && isNone(out[0]) {
		return nil
	}
	return out
}

// FuzzBriefRoundTrip builds a complete brief from fuzzed bodies and checks
// that its markdown reads back as the same brief in both languages.
func FuzzBriefRoundTrip(f *testing.F) {
	f.Add("目标", "验收", "边界", "未知")
	f.Add("a\n## 目标\nb", "**x**", "1. y\n---\n\n\n\nz", "未知:\n")
	f.Fuzz(func(t *testing.T, goal, accept, bounds, unknowns string) {
		b := &Brief{Goal: body(briefLayout, goal), Accept: body(briefLayout, accept),
			Bounds: body(briefLayout, bounds), Unknowns: body(briefLayout, unknowns)}
		if !b.Complete() {
			return
		}
		for _, lang := range langs {
			if got := ParseBrief(b.ToMarkdown(lang)); !reflect.DeepEqual(got, b) {
				t.Errorf("%s:\n got %q\nwant %q", lang, got, b)
			}
		}
	})
}

// FuzzHandoffRoundTrip does the same for a handoff, step included.
func FuzzHandoffRoundTrip(f *testing.F) {
	f.Add("doing", "decided", "dead ends", "next", "scene", "step")
	f.Add("进度: x", "", "(暂无)", "下一步是跑", "文件", "干活#round1 (x)")
	f.Fuzz(func(t *testing.T, doing, decided, deadends, next, scene, step string) {
		h := &Handoff{Doing: body(handoffLayout, doing), Decided: body(handoffLayout, decided),
			Deadends: body(handoffLayout, deadends), Next: body(handoffLayout, next),
			Scene: body(handoffLayout, scene), Step: titleStep(step)}
		if !h.Complete() {
			return
		}
		for _, lang := range langs {
			if got := ParseHandoff(h.ToMarkdown(lang)); !reflect.DeepEqual(got, h) {
				t.Errorf("%s:\n got %q\nwant %q", lang, got, h)
			}
		}
	})
}

// FuzzGoalRoundTrip does the same for a goal; checks are "|"-separated.
func FuzzGoalRoundTrip(f *testing.F) {
	f.Add("statement", "a|b|c")
	f.Add("目标\n判定", "- x|1. y|[此环境无法验证:z]|(空)")
	f.Fuzz(func(t *testing.T, statement, checks string) {
		g := &Goal{Statement: body(goalLayout, statement), Checks: items(checks)}
		if !g.Complete() {
			return
		}
		for _, lang := range langs {
			if got := ParseGoal(g.ToMarkdown(lang)); !reflect.DeepEqual(got, g) {
				t.Errorf("%s:\n got %q\nwant %q", lang, got, g)
			}
		}
	})
}

// FuzzVerdictRoundTrip does the same for a verdict of each state.
func FuzzVerdictRoundTrip(f *testing.F) {
	f.Add(uint8(0), "reason", "a|b")
	f.Add(uint8(2), "结论: 已达成\nno", "")
	f.Fuzz(func(t *testing.T, state uint8, reason, failed string) {
		v := &Verdict{State: []State{Achieved, NotYet, Unreachable}[state%3],
			Reason: body(verdictLayout, reason), Failed: items(failed)}
		for _, lang := range langs {
			if got := ParseVerdict(v.ToMarkdown(lang)); !reflect.DeepEqual(got, v) {
				t.Errorf("%s:\n got %q\nwant %q", lang, got, v)
			}
		}
	})
}
