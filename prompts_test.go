package flower

import (
	"errors"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"

	"github.com/flowerrun/flower/doc"
)

// langs are the languages every text is shipped in.
var langs = []Lang{Chinese, English}

// textsOf lists a Prompts' texts by file name.
func textsOf(p Prompts) map[string]string {
	return map[string]string{
		"coordinator.md":    p.CoordinatorRules,
		"worker.md":         p.WorkerRules,
		"clarifier.md":      p.ClarifierRules,
		"judge.md":          p.JudgeRules,
		"oracle.md":         p.OracleRules,
		"handoff.md":        p.Handoff,
		"set_goal.md":       p.SetGoal,
		"verify.md":         p.Verify,
		"clarify_resume.md": p.ClarifyResume,
		"interrupt_note.md": p.InterruptNote,
		"resume.md":         p.Resume,
	}
}

// headings returns the "## " (or "# ") headings of a rendered document, in
// order: the canonical section names of package doc.
func headings(markdown, prefix string) []string {
	var out []string
	for _, ln := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(ln, prefix) && !strings.HasPrefix(ln, prefix+"#") {
			out = append(out, strings.TrimSpace(strings.TrimPrefix(ln, prefix)))
		}
	}
	return out
}

func TestPromptFilesAreShippedInBothLanguages(t *testing.T) {
	for _, dir := range []string{"prompts/zh", "prompts/en"} {
		entries, err := fs.ReadDir(PromptFiles, dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(names) != len(promptFileNames) {
			t.Errorf("%s holds %v; want exactly the %d files LoadPrompts reads", dir, names, len(promptFileNames))
		}
		p, err := LoadPrompts(PromptFiles, dir)
		if err != nil {
			t.Fatal(err)
		}
		for name, text := range textsOf(p) {
			if text == "" || text != strings.TrimSpace(text) {
				t.Errorf("%s/%s: empty or not trimmed", dir, name)
			}
		}
	}
}

func TestPromptsForPicksTheLanguage(t *testing.T) {
	zh, en := PromptsFor(Chinese), PromptsFor(English)
	for _, c := range []struct {
		lang Lang
		want Prompts
	}{{"", en}, {"zh", zh}, {"zh-TW", zh}, {"en", en}, {"en-US", en}, {"EN_gb", en}} {
		if got := PromptsFor(c.lang); got != c.want {
			t.Errorf("PromptsFor(%q) is not the expected language", c.lang)
		}
	}
	for name, text := range textsOf(zh) {
		if textsOf(en)[name] == text {
			t.Errorf("%s is the same in both languages", name)
		}
	}
	// A copy: changing it changes nothing else.
	p := PromptsFor(Chinese)
	p.JudgeRules = "changed"
	if PromptsFor(Chinese).JudgeRules == "changed" {
		t.Error("PromptsFor returned shared state")
	}
}

func TestEnglishTextsHoldNoChineseAndChineseTextsAreChinese(t *testing.T) {
	for name, text := range textsOf(PromptsFor(English)) {
		for _, r := range text {
			if unicode.Is(unicode.Han, r) {
				t.Errorf("en/%s holds %q", name, r)
				break
			}
		}
	}
	for name, text := range textsOf(PromptsFor(Chinese)) {
		han := 0
		for _, r := range text {
			if unicode.Is(unicode.Han, r) {
				han++
			}
		}
		if han < 20 {
			t.Errorf("zh/%s holds only %d Chinese characters", name, han)
		}
	}
}

func TestResumePromptIsTheOriginalLiteral(t *testing.T) {
	const want = "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。"
	if got := PromptsFor(Chinese).Resume; got != want {
		t.Errorf("zh resume = %q, want the original's literal %q", got, want)
	}
	for _, lang := range langs {
		// One text, whichever way the runtime reaches it.
		if PromptsFor(lang).Resume != DefaultResumePrompt(lang) {
			t.Errorf("%s: resume.md and DefaultResumePrompt differ", lang)
		}
		// No error detail, on purpose: the model would chase it.
		low := strings.ToLower(PromptsFor(lang).Resume)
		for _, w := range []string{"error", "错误", "enotfound", "api"} {
			if strings.Contains(low, w) {
				t.Errorf("%s resume prompt mentions %q", lang, w)
			}
		}
	}
}

// points are the phrases each text must carry, from the supplement's §6.2,
// by language and file.
var points = map[Lang]map[string][]string{
	Chinese: {
		"coordinator.md": {"只有在 subagent 把判定清单每一条都跑过", "证据文件", "目标和需求归人和判定者", "协调者", "Agent", "不写文件", "不改代码", "不写测试", "有意", "全部工具",
			"Bash 只用来瞄一眼", "`git status`", "`ls`", "`cat`", "过时", "重新跑", "决策日志",
			"做什么", "边界", "怎样算做完", "不要复述", "4.8k", "看不到工作台索引", "工作台在哪里", "每个任务",
			"artifacts/", "路径和结论", "给路径", "要结论", "并行",
			"mcp__human__inbox", "里程碑", "不阻塞", "mcp__human__ask", "真正的岔路口", "超时", "自己判断",
			"notes/", "一个决策一个文件", "一次读一个文件", "简短"},
		"worker.md": {"绝不要为了让某一项通过去改判定项、测试", "判定者看得到", "只有你最后一条回话", "结论", "依据", "产出", "未验证·风险", "30 行", "最多 5 条", "`文件:行号`",
			"不要贴文件内容", "命令输出", "日志", "diff", "不要讲试错", "scripts/", "`# desc:"},
		"clarifier.md": {"只做一件事", "有意", "会改变", "一次只问一个问题", "mcp__human__ask", "options",
			"不设上限", "先自己看", "Glob", "Read", "Grep", "你没有 Bash", "自己做判断", "「未知与假设」", "不要重复问",
			"恰好四段", "一行一条", "不做什么", "约束的是怎么做", "不写代码", "不写实施方案", "不粘贴原文"},
		"judge.md": {"单独一行", "就此结束", "亲眼看到每一条都通过", "加了限定的达成就是未达成", "再做一轮", "干活能修好的问题", "停下来问人", "说法,不是证据", "没有 shell 不等于 无法达成", "改动报告", "|| true", "被跳过的测试算失败", "不要表格", "环境有关系的", "只判定", "不替它修", "`uname -a`", "没有 Bash", "A. 设定目标", "跑 X,看到 Y", "失败方式",
			"3 到 5 条", "15 条", "5 条", "边界", "不是判定项", "是不是非要不可", "B. 判定一轮",
			"达成 / 未达成 / 无法达成", "只说差距", "不给修法", "(无)", "产出物,不是源码", "Makefile", "Darwin",
			"Linux ELF", "平台", "加载", "不相信", "拿不出证据", "永远不能判成达成", "我已经说明了风险",
			"缺少外部条件", "自相矛盾", "说不清楚不等于做完了", "mcp__human__ask"},
		"oracle.md": {"正在跑的运行旁边", "只读", "不会进入", "丢弃", "收件箱", "打断", "最近的事件", "工作台",
			"先看", "引用", "看不出来", "简短", "只回答问到的问题"},
		"handoff.md": {"{used}/{window}", "快满了", "全新的会话", "恰好五段", "为什么", "最值钱", "最容易被忘掉",
			"一个小时", "编译", "(暂无)", "不要编", "直接动手", "路径", "自成一体", "不要粘贴输出", "不要复述需求和目标"},
		"set_goal.md":       {"{brief}", "A. 设定目标", "## 目标", "## 判定清单"},
		"verify.md":         {"# 设定目标以来改动了什么\n\n{changes}", "改动报告", "# 目标\n\n{goal}", "# 干活的人这一轮的回话\n\n{report}", "B. 判定一轮", "逐条", "遗漏", "乐观", "拿不出证据"},
		"clarify_resume.md": {"没做完", "不是从头再来", "上面的对话", "只补还缺的部分", "完整的四段确认书"},
		"interrupt_note.md": {"消息边界", "interrupted", "user doesn't want to take this action", "正常副作用",
			"不是故障", "不是人否决", "不要去调查", "不要为此给自己加规则", "重试", "都还在"},
		"resume.md": {"工作台", "不要重头来过"},
	},
	English: {
		"coordinator.md": {"End your turn only when", "evidence file", "no one else may write them", "coordinator", "Agent tool", "do not write files", "edit code", "write tests", "deliberate",
			"every tool", "Bash only to glance", "`git status`", "`ls`", "`cat`", "stale", "run it again", "decision log",
			"what to do", "boundaries", "what counts as done", "Do not restate", "4.8k", "do not see the workbench index",
			"when there is a workbench", "in every task where it is", "artifacts/", "path and the conclusion", "Give paths",
			"conclusions, not process", "parallel",
			"mcp__human__inbox", "milestone", "never blocks", "mcp__human__ask", "real fork", "in time", "decide yourself",
			"notes/", "one file per decision", "one file at a time", "Be brief"},
		"worker.md": {"Never change a check, a test", "judge sees every such change", "Only your last reply", "Conclusion", "Evidence", "Output", "Unverified / risks", "30 lines",
			"at most 5", "`file:line`", "Never paste file contents", "command output", "logs", "diffs",
			"No trial-and-error story", "scripts/", "`# desc:"},
		"clarifier.md": {"one thing", "on purpose", "changes what is done", "one question at a time", "mcp__human__ask",
			"options", "no limit", "look first", "Glob", "Read", "Grep", "You have no Bash", "decide yourself",
			`"Unknowns and assumptions"`, "do not ask the same question again", "exactly four sections", "one per line",
			"What is not done", "constrain how", "No code", "no implementation plan", "no pasted material"},
		"judge.md": {"One line holding only one of", "the work stops here", "you saw every item pass", "a qualified achieved is not yet", "one more round", "the work can fix", "stops and asks the person", "claims, not evidence", "lacking a shell is not \"unreachable\"", "change report", "|| true", "A skipped test counts as failed", "no tables", "If the environment matters", "never do the work or fix it", "`uname -a`", "without Bash", "A. Set the goal", `"run X, see Y"`,
			"ways the work can fail", "3 to 5", "15 items", "only 5", "Boundaries", "not checklist items",
			"needed at all", "B. Judge a round", "achieved / not yet / unreachable", "name the gaps, not the fixes",
			"(none)", "the artifact, not the source", "Makefile", "Darwin", "Linux ELF", "platform", "loads",
			`Do not believe "done"`, "without evidence", "never achieved", "I disclosed the risk", "external condition",
			"contradicts itself", "Unclear is not done", "mcp__human__ask"},
		"oracle.md": {"beside a run", "only read", "nothing you say enters", "discarded", "inbox", "interrupt",
			"recent events", "workbench", "Look first", "citing the files", "cannot tell", "Be brief", "only what was asked"},
		"handoff.md": {"{used}/{window}", "nearly full", "brand-new session", "exactly five sections", "**why**",
			"most valuable", "most often forgotten", "an hour", "compile problem", "(none yet)", "never invent",
			"right after reading", "paths", "self-sufficient", "do not paste output", "do not restate the brief or the goal"},
		"set_goal.md":       {"{brief}", "A. Set the goal", "## Goal", "## Checklist"},
		"verify.md":         {"# What changed since the goal was set\n\n{changes}", "change report", "# Goal\n\n{goal}", "# The worker's reply for this round\n\n{report}", "B. Judge a round", "every checklist item yourself", "leave things out", "optimistic", "without evidence"},
		"clarify_resume.md": {"not finished", "do not start over", "conversation above", "only what is still missing", "complete brief"},
		"interrupt_note.md": {"message boundary", "interrupted", "user doesn't want to take this action", "normal side effect",
			"not a fault", "not the human vetoing", "Do not investigate", "do not add rules", "retry", "intact"},
		"resume.md": {"workbench", "do not start over"},
	},
}

func TestEachTextCarriesItsPoints(t *testing.T) {
	for _, lang := range langs {
		texts := textsOf(PromptsFor(lang))
		for name, want := range points[lang] {
			for _, w := range want {
				if !strings.Contains(texts[name], w) {
					t.Errorf("%s/%s does not carry %q", lang, name, w)
				}
			}
		}
		if len(points[lang]) != len(texts) {
			t.Errorf("%s: points cover %d texts of %d", lang, len(points[lang]), len(texts))
		}
	}
}

func TestWorkerRulesNameNoArtifactsFolder(t *testing.T) {
	// Deliberately: the coordinator relays where long output goes, because
	// the workbench may lie outside the workspace.
	for _, lang := range langs {
		if strings.Contains(PromptsFor(lang).WorkerRules, "artifacts") {
			t.Errorf("%s worker rules name an artifacts folder", lang)
		}
	}
}

var placeholder = regexp.MustCompile(`\{[a-z_]+\}`)

func TestPlaceholdersAreExactlyTheDocumentedOnes(t *testing.T) {
	want := map[string][]string{
		"handoff.md":  {"{used}", "{window}"},
		"set_goal.md": {"{brief}"},
		"verify.md":   {"{goal}", "{report}", "{changes}"},
	}
	for _, lang := range langs {
		for name, text := range textsOf(PromptsFor(lang)) {
			got := placeholder.FindAllString(text, -1)
			if strings.Join(got, " ") != strings.Join(want[name], " ") {
				t.Errorf("%s/%s placeholders %v, want %v", lang, name, got, want[name])
			}
		}
	}
}

func TestFillMethods(t *testing.T) {
	for _, lang := range langs {
		p := PromptsFor(lang)
		h := p.HandoffPrompt("152.0K", "200K")
		if !strings.Contains(h, "152.0K/200K") || placeholder.MatchString(h) {
			t.Errorf("%s handoff prompt: %q", lang, h)
		}
		s := p.SetGoalPrompt("## 目标\nX")
		if !strings.HasSuffix(s, "## 目标\nX") || placeholder.MatchString(s) {
			t.Errorf("%s set-goal prompt: %q", lang, s)
		}
		// One pass: a report quoting "{goal}" keeps it.
		v := p.VerifyPrompt("GOAL-BLOCK", "I did it {goal}", "CHANGE-REPORT")
		if !strings.Contains(v, "GOAL-BLOCK") || !strings.Contains(v, "I did it {goal}") || strings.Contains(v, "{report}") ||
			!strings.Contains(v, "CHANGE-REPORT") || strings.Contains(v, "{changes}") {
			t.Errorf("%s verify prompt: %q", lang, v)
		}
		if strings.Index(v, "GOAL-BLOCK") > strings.Index(v, "I did it") {
			t.Errorf("%s verify prompt puts the report before the goal", lang)
		}
	}
}

func TestAVerifyTextWithoutTheChangesPlaceholderStillCarriesTheReport(t *testing.T) {
	p := Prompts{Verify: "judge {goal} after {report}"}
	if v := p.VerifyPrompt("G", "R", "CHANGES"); v != "judge G after R\n\nCHANGES" {
		t.Errorf("verify prompt = %q", v)
	}
}

func TestLoadPromptsNamesTheBadFile(t *testing.T) {
	full := fstest.MapFS{}
	for _, f := range promptFileNames {
		full["p/"+f.name] = &fstest.MapFile{Data: []byte(" text of " + f.name + "\n")}
	}
	p, err := LoadPrompts(full, "p")
	if err != nil {
		t.Fatal(err)
	}
	if p.JudgeRules != "text of judge.md" || p.Resume != "text of resume.md" {
		t.Errorf("fields mapped wrong: %+v", p)
	}
	missing := fstest.MapFS{}
	for k, v := range full {
		if k != "p/verify.md" {
			missing[k] = v
		}
	}
	if _, err := LoadPrompts(missing, "p"); err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "verify.md") {
		t.Errorf("missing file: %v", err)
	}
	empty := fstest.MapFS{}
	for k, v := range full {
		empty[k] = v
	}
	empty["p/oracle.md"] = &fstest.MapFile{Data: []byte("\n \n")}
	if _, err := LoadPrompts(empty, "p"); err == nil || !strings.Contains(err.Error(), "oracle.md") {
		t.Errorf("empty file: %v", err)
	}
}

// The sections a text names are the doc package's canonical headings, and
// an answer written in the format the text asks for reads back.

func TestClarifierFormatIsTheBrief(t *testing.T) {
	for _, lang := range langs {
		rules := PromptsFor(lang).ClarifierRules
		names := headings((&doc.Brief{}).ToMarkdown(lang), "## ")
		if len(names) != 4 {
			t.Fatalf("%s brief headings %v", lang, names)
		}
		var answer strings.Builder
		for _, n := range names {
			if !strings.Contains(rules, "## "+n+"\n") {
				t.Errorf("%s clarifier rules lack the heading %q", lang, n)
			}
			answer.WriteString("## " + n + "\n" + "content of " + n + "\n\n")
		}
		if !strings.Contains(PromptsFor(lang).ClarifyResume, strings.Join(names, lang2sep(lang))) {
			t.Errorf("%s clarify-resume prompt does not name the four sections %v", lang, names)
		}
		b := doc.ParseBrief(answer.String())
		if !b.Complete() {
			t.Errorf("%s: a brief in the clarifier's format misses %v", lang, b.Missing(lang))
		}
	}
}

// lang2sep is how the clarify-resume prompt lists the four sections.
func lang2sep(lang Lang) string {
	if lang == English {
		return ", "
	}
	return "、"
}

func TestHandoffPromptFormatIsTheHandoff(t *testing.T) {
	for _, lang := range langs {
		text := PromptsFor(lang).Handoff
		names := headings((&doc.Handoff{}).ToMarkdown(lang), "## ")
		if len(names) != 5 {
			t.Fatalf("%s handoff headings %v", lang, names)
		}
		var answer strings.Builder
		last := -1
		for _, n := range names {
			i := strings.Index(text, "## "+n+"\n")
			if i < 0 {
				t.Errorf("%s handoff prompt lacks the heading %q", lang, n)
			} else if i < last {
				t.Errorf("%s handoff prompt puts %q out of order", lang, n)
			}
			last = i
			answer.WriteString("## " + n + "\n" + "about " + n + "\n\n")
		}
		h := doc.ParseHandoff(answer.String())
		if !h.Complete() || h.Decided == "" || h.Deadends == "" || h.Scene == "" {
			t.Errorf("%s: a handoff in the prompt's format reads back as %+v", lang, h)
		}
	}
}

func TestJudgeFormatsAreTheGoalAndTheVerdict(t *testing.T) {
	reason := map[Lang]string{Chinese: "原因", English: "reason"}
	for _, lang := range langs {
		rules := PromptsFor(lang).JudgeRules

		// A. The goal: its two headings and the unverifiable tag exactly as
		// package doc writes and reads it.
		goalNames := headings((&doc.Goal{}).ToMarkdown(lang), "# ")
		if len(goalNames) != 2 {
			t.Fatalf("%s goal headings %v", lang, goalNames)
		}
		for _, n := range goalNames {
			if !strings.Contains(rules, "## "+n+"\n") {
				t.Errorf("%s judge rules lack the goal heading %q", lang, n)
			}
			if !strings.Contains(PromptsFor(lang).SetGoal, "## "+n) {
				t.Errorf("%s set-goal prompt lacks %q", lang, n)
			}
		}
		marker := doc.UnverifiableMarker(lang, reason[lang])
		if !strings.Contains(rules, "`"+marker+"`") {
			t.Errorf("%s judge rules lack the marker %q", lang, marker)
		}
		goal := doc.ParseGoal("## " + goalNames[0] + "\nIt runs.\n\n## " + goalNames[1] +
			"\n- run ./app, see a window\n- run file ./app, see Mach-O " + doc.UnverifiableMarker(lang, "Linux host") + "\n")
		if !goal.Complete() || len(goal.Checks) != 2 || len(goal.Unverifiable()) != 1 {
			t.Errorf("%s: a goal in the judge's format reads back as %+v (unverifiable %v)", lang, goal, goal.Unverifiable())
		}

		// B. The verdict: its three headings, and each of the three
		// conclusion words the rules offer reads back as its state.
		verdictNames := headings((&doc.Verdict{}).ToMarkdown(lang), "## ")
		if len(verdictNames) != 3 {
			t.Fatalf("%s verdict headings %v", lang, verdictNames)
		}
		for _, n := range verdictNames {
			if !strings.Contains(rules, "## "+n+"\n") {
				t.Errorf("%s judge rules lack the verdict heading %q", lang, n)
			}
			if !strings.Contains(PromptsFor(lang).Verify, "## "+n) {
				t.Errorf("%s verify prompt lacks %q", lang, n)
			}
		}
		words := map[Lang][]string{Chinese: {"达成", "未达成", "无法达成"}, English: {"achieved", "not yet", "unreachable"}}[lang]
		if !strings.Contains(rules, strings.Join(words, " / ")) {
			t.Errorf("%s judge rules do not offer %v", lang, words)
		}
		for i, state := range []doc.State{doc.Achieved, doc.NotYet, doc.Unreachable} {
			answer := "## " + verdictNames[0] + "\n" + words[i] + "\n\n## " + verdictNames[1] +
				"\nthe window opens; no gaps\n\n## " + verdictNames[2] + "\n- run file ./app, see Mach-O\n"
			v := doc.ParseVerdict(answer)
			if v.State != state || v.Reason == "" || len(v.Failed) != 1 {
				t.Errorf("%s: verdict %q reads back as %+v, want %s", lang, words[i], v, state)
			}
		}
		// Copying the format line verbatim must never pass.
		if v := doc.ParseVerdict("## " + verdictNames[0] + "\n" + strings.Join(words, " / ")); v.State != doc.Unreachable {
			t.Errorf("%s: the bare format line reads as %q", lang, v.State)
		}
	}
}
