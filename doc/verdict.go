package doc

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// State is a judge's conclusion about one round.
type State string

const (
	// Achieved: the goal is met; the workflow moves on.
	Achieved State = "achieved"
	// NotYet: gaps remain; the worker continues from where it is.
	NotYet State = "not_yet"
	// Unreachable: another round cannot help, because the goal cannot be
	// achieved or cannot be verified here; the workflow stops and asks the
	// human.
	Unreachable State = "unreachable"
)

// Verdict is a judge's ruling on one round: conclusion, reason, failed
// checks.
type Verdict struct {
	// State is empty when no conclusion could be read. Callers must treat
	// that as not achieved: "could not tell" is not "done".
	State  State
	Reason string   // 理由
	Failed []string // 未通过: the checks that did not pass
	// Unmeasured names the command items an achieved verdict passed on
	// the judge's reading alone, flower having run none of them (no
	// sandbox here): "achieved, not measured". Not a section of the
	// document (its reason says it); the run's outcome reads it.
	Unmeasured []string
	// UnmeasuredWhy says, in English, why flower ran none of them.
	UnmeasuredWhy string
	// Flags are the ways of gaming a check the change report found in an
	// achieved round ("[kind] where"): the judge's word does not end the
	// run, the person's look does. Not a section (the reason lists them).
	Flags []string
	// Except are the items the goal marked unverifiable on this machine
	// ("[id] text — why") that an achieved verdict leaves out: they did
	// not pass, and the run is "achieved, except" them. Not a section
	// (the reason lists them).
	Except []string
	// Path is the absolute file the verdict was loaded from or written to.
	Path string
}

var verdictLayout = newLayout(
	section{key: "state", zh: "结论", en: "Conclusion", ko: "결론",
		aliases: []string{"判定", "判定结果", "最终结论", "总结论", "Verdict", "Final verdict", "Overall verdict",
			"Final conclusion"}},
	section{key: "reason", zh: "理由", en: "Reason", ko: "이유",
		aliases: []string{"依据", "原因", "说明", "差距", "Reasons", "Rationale", "Reasoning", "Justification",
			"Explanation", "Gaps", "Why"}},
	section{key: "failed", zh: "未通过", en: "Not passed", ko: "미통과",
		aliases: []string{"未通过项", "未通过的判定项", "没通过的判定项", "没通过", "未通过的项", "失败项",
			"Failed", "Failed items", "Failed checks", "Failing checks", "Failures", "Not passing", "Did not pass",
			"Items not passed", "Unmet", "Unmet items"}},
)

// stateGroup is one tier of the state-word table.
type stateGroup struct {
	state State
	words []string
}

// stateWords is searched tier by tier, in this fixed order, longest word
// first within a tier. Unreachable comes first because "cannot verify" must
// never be read as a pass (a judge once passed a macOS-only goal on Linux by
// reading the source's Darwin branch). Not-yet comes before achieved and
// lists the negated forms ("未达成", "not achieved") so that the "达成" and
// "achieved" inside them are never read as achieved. Latin words match on word
// boundaries; other scripts match as substrings.
var stateWords = sortGroups([]stateGroup{
	{Unreachable, append(slices.Clone(verifyWords),
		"无法达成", "不可达成", "不能达成", "达不成", "达成不了", "做不到",
		"unreachable", "impossible", "unachievable", "not achievable", "cannot be achieved", "can't be achieved",
		"달성 불가", "달성할 수 없", "도달 불가", "불가능",
	)},
	{NotYet, []string{
		"未达成", "没达成", "尚未达成", "没有达成", "未能达成", "没能达成", "不算达成",
		"部分达成", "未完全达成", "没有完全达成", "未完成", "没完成", "没有完成",
		"not_yet", "not-yet", "not yet", "not achieved", "not been achieved", "not fully achieved",
		"partially achieved", "partly achieved", "unachieved", "not met", "not reached",
		"isn't achieved", "wasn't achieved", "hasn't been achieved", "haven't been achieved",
		"hasn't achieved", "haven't achieved",
		"미달성", "미달", "달성하지 못", "달성되지 않", "달성 못", "달성 안",
	}},
	{Achieved, []string{"已达成", "达成", "achieved", "달성"}},
})

// answerWords are the weakest evidence: "no" and "yes" occur in ordinary
// prose ("achieved, no gaps") far more often than as a verdict, so they are
// consulted only when no state word is present, and the one that comes first
// in the text is the answer. Like every Latin word they match on word
// boundaries, so "unknown" holds no "no".
var answerWords = []struct {
	word  string
	state State
}{{"no", NotYet}, {"yes", Achieved}}

func sortGroups(groups []stateGroup) []stateGroup {
	for _, g := range groups {
		slices.SortStableFunc(g.words, func(a, b string) int { return len(b) - len(a) })
	}
	return groups
}

// ParseVerdict reads a judge's reply. The conclusion is recognised in this
// order: the text of a 结论/判定/Conclusion section (or, when there is no such
// heading, the whole text without code fences); a bare 1/true (achieved) or
// 0/false (not yet); under a heading, a first line that is only a pass word
// ("PASS", "All checks pass.", "通过"); the state-word table, where "cannot
// verify" because of a fault the work can fix reads as not yet, and an
// achieved conclusion that hedges (mostly, almost, not verified, 基本…)
// is not yet; an isolated 1 (achieved) or 0 (not yet); otherwise the state
// stays empty and Ok is false. Two conclusion sections that disagree are no
// conclusion. It reads the verdict documents of runs older than the
// structured verdict (judge.Reply) and of a report on them.
func ParseVerdict(text string) *Verdict {
	v, _ := readVerdict(text)
	return v
}

// readVerdict is ParseVerdict; two reports conclusions that disagree.
func readVerdict(text string) (v *Verdict, two bool) {
	p := verdictLayout.parse(text)
	var state State
	if each := p.each["state"]; len(each) > 0 {
		state = recognise(stripFences(each[0]), true)
		for _, b := range each[1:] {
			if recognise(stripFences(b), true) != state {
				state, two = "", true
				break
			}
		}
	} else if !p.seen["state"] {
		// No conclusion heading at all: the judge may have answered with
		// nothing but the conclusion. A heading left empty is not that, and
		// reading its neighbours' words would invent a conclusion.
		state = recognise(strings.TrimSpace(stripFences(normalize(text))), false)
	}
	return &Verdict{State: state, Reason: p.bodies["reason"], Failed: bullets(p.bodies["failed"])}, two
}

// passLines are conclusions that say achieved in other words; they count
// only alone on the first line under a conclusion heading, where "passed"
// cannot be part of "3 of 5 passed".
var passLines = map[string]bool{
	"pass": true, "passed": true, "passes": true, "passing": true, "done": true, "complete": true, "completed": true,
	"met": true, "all met": true, "goal met": true, "satisfied": true, "success": true, "ok": true,
	"all checks pass": true, "all checks passed": true, "all checks passing": true, "all items pass": true,
	"all items passed": true, "all criteria met": true, "every check passed": true, "every item passed": true,
	"all pass": true, "all passed": true, "everything passes": true, "everything passed": true,
	"no gaps": true, "no gaps remain": true, "no gaps remaining": true, "nothing remains": true,
	"通过": true, "全部通过": true, "全都通过": true, "都通过了": true, "全部通过了": true, "完成": true, "已完成": true,
	"没有差距": true, "无差距": true, "통과": true,
}

// hedges turn an achieved conclusion into not yet: the seed's achieved is
// every item seen passing, and "mostly" says some were not.
var hedges = []string{
	"almost", "mostly", "nearly", "largely", "partially", "partly", "essentially", "basically", "substantially",
	"practically", "virtually", "more or less", "in principle", "mainly", "except", "apart from", "aside from",
	"not verified", "unverified", "not yet verified", "not been verified", "with caveats", "caveat", "caveats",
	"with exceptions", "pending", "conditionally", "provisionally", "tentatively", "for the most part",
	"基本", "大体", "大部分", "部分", "差不多", "几乎", "大致", "未验证", "没验证", "没有验证", "除了", "除外",
	"有条件", "暂时", "初步", "大概",
	"대부분", "거의", "부분", "미검증",
}

// verifyWords are the unreachable words that say "could not check" rather
// than "cannot be done": they read as not yet when the same sentence blames
// a fault the work can fix ("could not verify item 2 because the build
// fails"), which another round can mend.
// They are the first of the unreachable words (stateWords), one list, so
// the two never drift apart.
var verifyWords = []string{
	"无法验证", "没法验证", "验证不了", "无法判定", "不能验证", "不可验证",
	"unverifiable", "not verifiable",
	"cannot verify", "can't verify", "could not verify", "couldn't verify", "unable to verify",
	"cannot be verified", "can't be verified", "could not be verified", "couldn't be verified",
	"검증할 수 없", "확인할 수 없", "검증 불가",
}

// faults are what the work can fix.
var faults = []string{
	"fail", "fails", "failed", "failing", "failure", "broken", "breaks", "error", "errors", "crash", "crashes",
	"crashed", "panic", "panics", "does not compile", "doesn't compile", "won't compile", "does not build",
	"doesn't build", "won't build", "does not start", "doesn't start", "won't start", "not implemented",
	"unimplemented", "bug",
	"失败", "报错", "出错", "编译不过", "崩溃", "坏了", "没实现", "未实现", "跑不起来", "起不来", "错误",
	"실패", "오류", "에러",
}

// recognise reads a state from a conclusion text; headed says it came from
// under a conclusion heading.
func recognise(raw string, headed bool) State {
	switch s := strings.TrimSpace(raw); {
	case s == "1" || strings.EqualFold(s, "true"):
		return Achieved
	case s == "0" || strings.EqualFold(s, "false"):
		return NotYet
	}
	low := strings.Join(strings.Fields(strings.ReplaceAll(strings.ToLower(raw), "’", "'")), " ")
	if headed {
		first, _, _ := strings.Cut(strings.TrimSpace(strings.ToLower(raw)), "\n")
		if passLines[strings.Trim(first, "*_`.。!！ \t:：✅✔")] {
			return Achieved
		}
	}
	found := map[State]bool{}
	for _, g := range stateWords {
		for _, w := range g.words {
			at := findWord(low, w)
			switch {
			case at < 0:
			case g.state == Unreachable && slices.Contains(verifyWords, w) && blamesAFault(low, at):
				found[NotYet] = true
			default:
				found[g.state] = true
			}
		}
	}
	switch {
	case found[Unreachable]:
		return Unreachable
	case found[NotYet]:
		return NotYet
	case found[Achieved]:
		for _, h := range hedges {
			if findWord(low, h) >= 0 {
				return NotYet
			}
		}
		return Achieved
	}
	state, at := State(""), len(low)
	for _, a := range answerWords {
		if i := findWord(low, a.word); i >= 0 && i < at {
			state, at = a.state, i
		}
	}
	if state != "" {
		return state
	}
	if findWord(raw, "1") >= 0 {
		return Achieved
	}
	if findWord(raw, "0") >= 0 {
		return NotYet
	}
	return ""
}

// blamesAFault reports whether the sentence of low around index at names a
// fault the work can fix.
func blamesAFault(low string, at int) bool {
	// A full stop ends a sentence only before a blank: "./..." and "v1.2"
	// do not.
	low = strings.ReplaceAll(low, ". ", "; ")
	const stops = "。;；!！?？\n"
	start := strings.LastIndexAny(low[:at], stops) + 1
	end := strings.IndexAny(low[at:], stops)
	if end < 0 {
		end = len(low)
	} else {
		end += at
	}
	sentence := low[start:end]
	for _, f := range faults {
		if findWord(sentence, f) >= 0 {
			return true
		}
	}
	return false
}

// findWord returns the index of the first occurrence of w in s, or -1. A
// Latin or numeric word must stand alone: the runes on either side must not
// be letters or digits.
func findWord(s, w string) int {
	if !isLatin(w) && !isDigits(w) {
		return strings.Index(s, w)
	}
	for from := 0; from <= len(s); {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return -1
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(w):])
		if (i == 0 || !isWordRune(before)) && (i+len(w) == len(s) || !isWordRune(after)) {
			return i
		}
		from = i + 1
	}
	return -1
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// LoadVerdict reads a verdict file. An absent file gives an error wrapping
// fs.ErrNotExist.
func LoadVerdict(path string) (*Verdict, error) {
	text, abs, err := readFile(path)
	if err != nil {
		return nil, err
	}
	v := ParseVerdict(text)
	v.Path = abs
	return v, nil
}

// Ok reports whether a conclusion was read. False means not achieved.
func (v *Verdict) Ok() bool { return v.State != "" }

// Missing returns the canonical name, in lang, of the conclusion when none
// was read; reason and failed checks are optional.
func (v *Verdict) Missing(lang Lang) []string {
	if v.Ok() {
		return nil
	}
	return []string{verdictLayout.name("state", lang)}
}

// Complete reports whether a conclusion was read; it is the same as Ok.
func (v *Verdict) Complete() bool { return v.Ok() }

// stateText is how ToMarkdown writes a state; each reads back as itself.
func stateText(s State, lang Lang) string {
	switch s {
	case Achieved:
		return lang.Pick("已达成", "achieved")
	case NotYet:
		return lang.Pick("未达成", "not yet")
	case Unreachable:
		return lang.Pick("无法达成", "unreachable")
	}
	return string(s)
}

// ToMarkdown renders the verdict for humans: a title and the three sections,
// "(空)" / "(empty)" standing for an empty one.
func (v *Verdict) ToMarkdown(lang Lang) string {
	var sb strings.Builder
	sb.WriteString(lang.Pick("# 本轮裁决\n", "# Round verdict\n"))
	writeSections(&sb, verdictLayout, lang, v.fields(lang), lang.Pick(emptyZh, emptyEn))
	return sb.String()
}

// PromptBlock renders the verdict's non-empty sections for a model. To send a
// worker back to work, use Feedback.
func (v *Verdict) PromptBlock(lang Lang) string {
	return promptSections(verdictLayout, lang, v.fields(lang))
}

func (v *Verdict) fields(lang Lang) []field {
	return []field{{"state", stateText(v.State, lang)}, {"reason", v.Reason}, {"failed", list(v.Failed)}}
}

// NoGamingChinese and NoGamingEnglish follow the seed's feedback: the
// judge sees what changed, and a check made to pass by changing it fails.
const (
	NoGamingChinese = "绝不要为了通过去改判定项、测试、检查脚本或目标:判定者看得到这些改动,这样通过的一项算没通过。"
	NoGamingEnglish = "Never change a check, a test, a check script or the goal to make it pass: the judge sees such changes, and an item passed that way counts as failed."
)

// Feedback is what a worker is told when the round fell short: the judge's
// reason and the failed checks, then one fixed sentence to continue and one
// against gaming the checks. It says where the gaps are and never how to
// close them; that is the worker's job.
func (v *Verdict) Feedback(lang Lang) string {
	reason := strings.TrimSpace(v.Reason)
	var sb strings.Builder
	if lang.IsEnglish() {
		if reason == "" {
			reason = "(no reason given)"
		}
		sb.WriteString("The last round's output **did not achieve the goal**. The judge's reason:\n\n" + reason)
		if len(v.Failed) > 0 {
			sb.WriteString("\n\nChecks that did not pass:\n" + list(v.Failed))
		}
		sb.WriteString("\n\nCarry on — deal only with the gaps above; do not start over and do not widen the scope.")
		sb.WriteString("\n\n" + NoGamingEnglish)
		return sb.String()
	}
	if reason == "" {
		reason = "(没给理由)"
	}
	sb.WriteString("上一轮的产出**没有达成目标**。判定者给的理由:\n\n" + reason)
	if len(v.Failed) > 0 {
		sb.WriteString("\n\n没通过的判定项:\n" + list(v.Failed))
	}
	sb.WriteString("\n\n接着做 —— 只处理上面这些差距,不要重头开始,也不要扩大范围。")
	sb.WriteString("\n\n" + NoGamingChinese)
	return sb.String()
}

// Write stores the verdict's markdown at path atomically and sets Path.
func (v *Verdict) Write(lang Lang, path string) error {
	abs, err := writeFile(path, []byte(v.ToMarkdown(lang)))
	if err != nil {
		return err
	}
	v.Path = abs
	return nil
}
