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
	{Unreachable, []string{
		"无法验证", "没法验证", "验证不了", "无法判定", "不能验证", "不可验证",
		"无法达成", "不可达成", "不能达成", "达不成", "达成不了", "做不到",
		"unverifiable", "unreachable", "impossible", "unachievable", "not achievable",
		"cannot verify", "can't verify", "could not verify", "couldn't verify", "unable to verify",
		"cannot be verified", "can't be verified", "could not be verified", "couldn't be verified",
		"not verifiable", "cannot be achieved", "can't be achieved",
		"검증 불가", "검증할 수 없", "확인할 수 없", "달성 불가", "달성할 수 없", "도달 불가", "불가능",
	}},
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
// 0/false (not yet); the state-word table; an isolated 1 (achieved) or 0 (not
// yet); otherwise the state stays empty and Ok is false.
func ParseVerdict(text string) *Verdict {
	p := verdictLayout.parse(text)
	raw := p.bodies["state"]
	if raw == "" && !p.seen["state"] {
		// No conclusion heading at all: the judge may have answered with
		// nothing but the conclusion. A heading left empty is not that, and
		// reading its neighbours' words would invent a conclusion.
		raw = strings.TrimSpace(stripFences(normalize(text)))
	}
	return &Verdict{
		State:  recognise(raw),
		Reason: p.bodies["reason"],
		Failed: failedChecks(p.bodies["failed"]),
	}
}

// noneWritten are the ways a judge says every check passed; the judge's
// rules ask for "(无)" / "(none)" rather than an empty section.
var noneWritten = map[string]bool{
	"无": true, "(无)": true, "（无）": true, "没有": true, "(空)": true, "（空）": true,
	"none": true, "(none)": true, "n/a": true, "(empty)": true, "없음": true, "(없음)": true,
}

// failedChecks lists the checks under 未通过, reading a lone "(无)" as none.
func failedChecks(body string) []string {
	items := bullets(body)
	if len(items) == 1 && noneWritten[strings.ToLower(strings.TrimSpace(items[0]))] {
		return nil
	}
	return items
}

// recognise reads a state from a conclusion text.
func recognise(raw string) State {
	switch s := strings.TrimSpace(raw); {
	case s == "1" || strings.EqualFold(s, "true"):
		return Achieved
	case s == "0" || strings.EqualFold(s, "false"):
		return NotYet
	}
	low := strings.Join(strings.Fields(strings.ReplaceAll(strings.ToLower(raw), "’", "'")), " ")
	for _, g := range stateWords {
		for _, w := range g.words {
			if findWord(low, w) >= 0 {
				return g.state
			}
		}
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
		return lang.pick("已达成", "achieved")
	case NotYet:
		return lang.pick("未达成", "not yet")
	case Unreachable:
		return lang.pick("无法达成", "unreachable")
	}
	return string(s)
}

// ToMarkdown renders the verdict for humans: a title and the three sections,
// "(空)" / "(empty)" standing for an empty one.
func (v *Verdict) ToMarkdown(lang Lang) string {
	var sb strings.Builder
	sb.WriteString(lang.pick("# 本轮裁决\n", "# Round verdict\n"))
	writeSections(&sb, verdictLayout, lang, v.fields(lang), lang.pick(emptyZh, emptyEn))
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

// Feedback is what a worker is told when the round fell short: the judge's
// reason and the failed checks, then one fixed sentence to continue. It says
// where the gaps are and never how to close them; that is the worker's job.
func (v *Verdict) Feedback(lang Lang) string {
	reason := strings.TrimSpace(v.Reason)
	var sb strings.Builder
	if lang.isEnglish() {
		if reason == "" {
			reason = "(no reason given)"
		}
		sb.WriteString("The last round's output **did not achieve the goal**. The judge's reason:\n\n" + reason)
		if len(v.Failed) > 0 {
			sb.WriteString("\n\nChecks that did not pass:\n" + list(v.Failed))
		}
		sb.WriteString("\n\nCarry on — deal only with the gaps above; do not start over and do not widen the scope.")
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
