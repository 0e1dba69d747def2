package flower

import (
	"errors"
	"io/fs"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"unicode"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/judge"
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
		"judge.md": {"结构化输出", "就此结束", "已达成,除了", "亲眼看到每一条都通过", "加了限定的达成就是未达成", "再做一轮", "干活能修好的问题", "停下来问人", "说法,不是证据", "没有 shell 不等于 无法达成", "改动报告", "|| true", "被跳过的测试算失败", "环境有关系的", "只判定", "不替它修", "`uname -a`", "没有 Bash", "A. 设定目标", "跑 X,看到 Y", "失败方式",
			"3 到 5 条", "15 条", "5 条", "边界", "不写进清单", "是不是非要不可", "B. 判定一轮",
			"只说差距", "不给修法", "产出物,不是源码", "Makefile", "Darwin",
			"Linux ELF", "平台", "加载", "不相信", "拿不出证据", "永远不能判成达成", "我已经说明了风险",
			"缺少外部条件", "自相矛盾", "说不清楚不等于做完了", "mcp__human__ask",
			"退出码", "工作区根目录", "沙箱", "工作台里的脚本", "不漏也不多", "和各项对不上的结论不算达成", "要写明缺的是什么",
			"go vet 报告了 unreachable code", "装上依赖之前验证不了", "由 flower 测得", "缺网络或缺缓存", "凭 flower 测到的结果判定", "artifacts/", "哪怕看起来再像检查的输出"},
		"oracle.md": {"正在跑的运行旁边", "只读", "不会进入", "丢弃", "收件箱", "打断", "最近的事件", "工作台",
			"先看", "引用", "看不出来", "简短", "只回答问到的问题"},
		"handoff.md": {"{used}/{window}", "快满了", "全新的会话", "恰好五段", "为什么", "最值钱", "最容易被忘掉",
			"一个小时", "编译", "(暂无)", "不要编", "直接动手", "路径", "自成一体", "不要粘贴输出", "不要复述需求和目标"},
		"set_goal.md":       {"{brief}", "变成一个可判定的目标", "A. 设定目标", "`statement`", "`checklist`", "`id`", "`text`", "`command`"},
		"verify.md":         {"判定这一轮", "# 设定目标以来改动了什么\n\n{changes}", "改动报告", "# 目标\n\n{goal}", "# 由 flower 测得\n\n", "{measured}", "# 干活的人这一轮的回话\n\n{report}", "B. 判定一轮", "逐条", "遗漏", "乐观", "拿不出证据", "artifacts/", "特判", "写死"},
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
		"judge.md": {"structured output", "the work stops here", "achieved, except", "you saw every item pass", "a qualified achieved is not yet", "one more round", "the work can fix", "stops and asks the person", "claims, not evidence", "lacking a shell is not \"unreachable\"", "change report", "|| true", "a skipped test counts as failed", "If the environment matters", "never do the work or fix it", "`uname -a`", "without Bash", "A. Set the goal", `"run X, see Y"`,
			"ways the work can fail", "3 to 5", "15 items", "only 5", "Boundaries", "never into the checklist",
			"needed at all", "B. Judge a round", "name the gaps, not the fixes",
			"the artifact, not the source", "Makefile", "Darwin", "Linux ELF", "platform", "loads",
			`Do not believe "done"`, "without evidence", "never achieved", "I disclosed the risk", "external condition",
			"contradicts itself", "Unclear is not done", "mcp__human__ask",
			"exit status", "workspace root", "sandbox", "never a script in the workbench", "none left out and none added", "a conclusion that contradicts them is not achieved", "Name what is missing",
			`"go vet reports unreachable code"`, `"cannot be verified until the dependency is installed"`, "measured by flower", "reads like a want of the network or a cache", "a test can print anything", "from flower's measurements", "artifacts/", "however much they look like a check's output"},
		"oracle.md": {"beside a run", "only read", "nothing you say enters", "discarded", "inbox", "interrupt",
			"recent events", "workbench", "Look first", "citing the files", "cannot tell", "Be brief", "only what was asked"},
		"handoff.md": {"{used}/{window}", "nearly full", "brand-new session", "exactly five sections", "**why**",
			"most valuable", "most often forgotten", "an hour", "compile problem", "(none yet)", "never invent",
			"right after reading", "paths", "self-sufficient", "do not paste output", "do not restate the brief or the goal"},
		"set_goal.md":       {"{brief}", "into a goal that can be decided", "A. Set the goal", "`statement`", "`checklist`", "`id`", "`text`", "`command`"},
		"verify.md":         {"Judge this round", "# What changed since the goal was set\n\n{changes}", "change report", "# Goal\n\n{goal}", "# Measured by flower\n\n", "{measured}", "# The worker's reply for this round\n\n{report}", "B. Judge a round", "every checklist item yourself", "leave things out", "optimistic", "without evidence", "artifacts/", "special-cases", "hard-codes"},
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
		"verify.md":   {"{goal}", "{measured}", "{report}", "{changes}"},
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
		v := p.VerifyPrompt("GOAL-BLOCK", "I did it {goal}", "CHANGE-REPORT", "MEASURED-BLOCK")
		for _, want := range []string{"GOAL-BLOCK", "I did it {goal}", "CHANGE-REPORT", "MEASURED-BLOCK"} {
			if !strings.Contains(v, want) {
				t.Errorf("%s verify prompt lacks %q: %q", lang, want, v)
			}
		}
		if m := placeholder.FindAllString(strings.Replace(v, "I did it {goal}", "", 1), -1); len(m) > 0 {
			t.Errorf("%s verify prompt keeps the placeholders %v", lang, m)
		}
		// flower's measurements come before anything the worker wrote, so a
		// reply that forges a "measured by flower" heading comes after the
		// real one, which the text says is the only one.
		goal, measured, reply := strings.Index(v, "GOAL-BLOCK"), strings.Index(v, "MEASURED-BLOCK"), strings.Index(v, "I did it")
		if !(goal < measured && measured < reply) {
			t.Errorf("%s verify prompt order: goal %d, measured %d, reply %d", lang, goal, measured, reply)
		}
	}
}

func TestAVerifyTextWithoutTheNewPlaceholdersStillCarriesTheirBlocks(t *testing.T) {
	p := Prompts{Verify: "judge {goal} after {report}"}
	if v := p.VerifyPrompt("G", "R", "CHANGES", "MEASURED"); v != "judge G after R\n\nCHANGES\n\nMEASURED" {
		t.Errorf("verify prompt = %q", v)
	}
	p = Prompts{Verify: "judge {goal} after {report}; {changes}"}
	if v := p.VerifyPrompt("G", "R", "CHANGES", "MEASURED"); v != "judge G after R; CHANGES\n\nMEASURED" {
		t.Errorf("verify prompt = %q", v)
	}
	// Nothing to add, nothing added.
	if v := p.VerifyPrompt("G", "R", "CHANGES", " "); v != "judge G after R; CHANGES" {
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

// jsonFields are the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// The judge answers through structured output: its rules and the two
// prompts name every field of the schemas flower validates the answers
// against, and every value an enumerated field takes, in both languages
// alike (the names are the wire's, never translated).
func TestJudgeTextsNameEveryFieldOfTheStructuredAnswers(t *testing.T) {
	// The goal step: the statement and the checklist of judge.Items.
	goalFields := append([]string{"statement", "checklist"}, jsonFields(judge.Item{})...)
	if !slices.Contains(goalFields, "command") || !slices.Contains(goalFields, "unverifiable") {
		t.Fatalf("judge.Item's fields %v: the rules below describe command and unverifiable", goalFields)
	}
	// The round's verdict.
	verdictFields := []string{"items", "id", "status", "evidence", "reason", "conclusion", "missing", "why_no_work"}
	values := []string{"passed", "failed", "not_run", "achieved", "not_yet", "unreachable"}
	for _, lang := range langs {
		p := PromptsFor(lang)
		for _, f := range append(append(goalFields, verdictFields...), values...) {
			if !strings.Contains(p.JudgeRules, "`"+f+"`") {
				t.Errorf("%s judge rules do not name `%s`", lang, f)
			}
		}
		for _, f := range []string{"statement", "checklist", "id", "command"} {
			if !strings.Contains(p.SetGoal, "`"+f+"`") {
				t.Errorf("%s set-goal prompt does not name `%s`", lang, f)
			}
		}
		for _, f := range []string{"items", "conclusion", "reason", "missing", "why_no_work"} {
			if !strings.Contains(p.Verify, "`"+f+"`") {
				t.Errorf("%s verify prompt does not name `%s`", lang, f)
			}
		}
		// No markdown answer is asked for any more: the headings of the
		// older goal and verdict files appear in neither text as headings
		// to write.
		for _, n := range append(headings((&doc.Goal{}).ToMarkdown(lang), "# "), headings((&doc.Verdict{}).ToMarkdown(lang), "## ")...) {
			for name, text := range map[string]string{"judge.md": p.JudgeRules, "set_goal.md": p.SetGoal, "verify.md": p.Verify} {
				if strings.Contains(text, "## "+n+"\n") {
					t.Errorf("%s %s still asks for the markdown heading %q", lang, name, n)
				}
			}
		}
	}
}

// invariant is the sentence the goal step ends every goal's statement
// with: the checks, tests, CI and the goal are not weakened, skipped or
// edited to pass.
var invariant = map[Lang]string{
	English: `"The checks, the tests, the CI configuration and this goal stay as they are: none of them is weakened, skipped or edited to make something pass."`,
	Chinese: `"判定项、测试、CI 配置和这个目标都保持原样:哪一样都不许为了通过而被削弱、跳过或改动。"`,
}

// rulePoints are the rules of issue 32 that every language must carry, each
// as its phrase in English and in Chinese, by file: the same rule in both,
// checked side by side so that one language cannot drop it alone.
var rulePoints = []struct {
	file, what, en, zh string
}{
	// The goal step writes the invariants into every goal.
	{"judge.md", "every statement ends with the invariant", "End every statement with this sentence, word for word", "每个 statement 都以这句话结尾,一字不改"},
	{"judge.md", "boundaries go into the statement", "Boundaries of the request (what must not be done) go here too", "需求里的边界(不许做什么)也写在这里"},
	{"judge.md", "ids", "`c1`, `c2`, … in order", "按顺序写 `c1`、`c2`……"},
	{"judge.md", "a command's exit status decides", "the shell command whose exit status decides it (0 passes, anything else fails), run from the workspace root", "由它的退出码决定(0 算通过,其余算失败),在工作区根目录下运行"},
	{"judge.md", "no command the worker can change", "never a script in the workbench or one the work will write", "绝不用工作台里的脚本,也不用干活时才会写出来的脚本"},
	// The judge's evidence.
	{"judge.md", "flower's measurements are evidence", "in the section of the prompt marked as measured by flower, are evidence", "提示里标明由 flower 测得的那一节是证据"},
	{"judge.md", "without Bash, judge from measurements", "Without Bash, judge command items from flower's measurements, and the other items from files you read yourself", "没有 Bash,命令类的判定项凭 flower 测到的结果判定,其余的凭你自己读到的文件判定"},
	{"judge.md", "the worker's artifacts are claims", "every file a worker wrote under the workbench's artifacts/ are claims, not evidence", "干活的人写进工作台 artifacts/ 的每一个文件,都是说法,不是证据"},
	{"judge.md", "every item, by its id", "one entry for every checklist item, by its `id`, none left out and none added", "判定清单的每一条都有一项,按它的 `id`,不漏也不多"},
	{"judge.md", "the items decide", "flower decides from the items: a conclusion that contradicts them is not achieved", "flower 按各项来定:和各项对不上的结论不算达成"},
	{"judge.md", "unreachable names what is missing", "Name what is missing; without it, unreachable is read as not yet", "要写明缺的是什么;没写,无法达成就当作未达成"},
	{"judge.md", "what work can fix is not unreachable", "Not unreachable: \"go vet reports unreachable code\" (the work can fix the code), \"cannot be verified until the dependency is installed\" (installing it is work)", "这些不是无法达成:\"go vet 报告了 unreachable code\"(干活能修好代码)、\"装上依赖之前验证不了\"(装依赖就是干活)"},
	// The judge names gaming, and gaming fails.
	{"judge.md", "a gamed check fails", "A check made to pass by gaming it has failed, whatever its exit status", "靠钻空子才通过的一条,不管退出码是多少,都算失败"},
	{"judge.md", "special-casing", "special-casing the test's inputs", "对测试输入做特判"},
	{"judge.md", "hard-coded outputs", "hard-coded outputs", "把输出写死"},
	{"judge.md", "patching the harness", "patching the harness or the checker", "改测试框架或检查程序"},
	{"judge.md", "settings that change checks", "`go env -w`, `GOFLAGS`, npm or pip configuration", "`go env -w`、`GOFLAGS`、npm 或 pip 的配置"},
	{"judge.md", "silencing", "silencing failures: `|| true`, `; true`, a `-` before a make recipe line, `| tee` that hides the exit status, `set +e`", "让失败不出声:`|| true`、`; true`、make 规则行前的 `-`、吞掉退出码的 `| tee`、`set +e`"},
	{"judge.md", "skipping or renaming tests", "skipping or renaming tests", "跳过测试或给测试改名"},
	{"judge.md", "forged artifacts", "forged artifacts", "伪造产出"},
	// The workers' and the coordinator's honest exit.
	{"worker.md", "no gaming", "never game one: no special-casing of the test's inputs, no hard-coded answers, no silenced failures, no skipped or renamed tests", "也不许钻判定的空子:不对测试输入做特判,不把答案写死,不让失败不出声,不跳过、不改名测试"},
	{"worker.md", "flower runs the checks", "flower runs the checks itself after the round", "flower 在一轮结束后还会自己跑检查"},
	{"worker.md", "the honest exit", "When a check looks wrong, or impossible on this machine, saying so is an honest result", "判定项看起来有错,或在这台机器上根本做不到,直说就是诚实的结果"},
	{"worker.md", "leave it as it is", "leave the check as it is, do not work around it", "让它保持原样,不要绕过去"},
	{"worker.md", "the person decides", "The coordinator takes it to the person, who decides", "协调者会把它交给人,由人来决定"},
	{"coordinator.md", "never weakened or skipped", "Never have a worker change, weaken or skip a check", "绝不要让 subagent 为了通过去改、削弱或跳过判定项"},
	{"coordinator.md", "no gaming", "special-casing the test's inputs, hard-coding its answer, silencing a failure", "对测试输入做特判、把答案写死、让失败不出声"},
	{"coordinator.md", "the honest exit through the channel", "When a check looks wrong or impossible (a worker says so, or you see it), do not have it changed: ask the person with mcp__human__ask", "判定项看起来有错或根本做不到(subagent 这么说,或你自己看出来),不要让人去改它:用 mcp__human__ask 问人"},
	{"coordinator.md", "without the channel", "Without that tool, or with no answer in time, leave the check as it is and say so plainly", "没有这个工具,或超时没人答,就让判定项保持原样,在最后一条消息里直说"},
	{"coordinator.md", "a wrong check is a real fork", "such as a check that looks wrong", "判定项看起来有错就是这样的岔路口"},
	{"coordinator.md", "artifacts are claims", "what workers write into artifacts/ is their claim", "subagent 写进 artifacts/ 的东西只是它们的说法"},
}

func TestTheRulesOfIssue32AreInBothLanguages(t *testing.T) {
	for _, p := range rulePoints {
		for lang, phrase := range map[Lang]string{English: p.en, Chinese: p.zh} {
			if !strings.Contains(textsOf(PromptsFor(lang))[p.file], phrase) {
				t.Errorf("%s/%s does not carry %q (%s)", lang, p.file, phrase, p.what)
			}
		}
	}
	for lang, sentence := range invariant {
		if !strings.Contains(PromptsFor(lang).JudgeRules, sentence) {
			t.Errorf("%s judge rules lack the invariant sentence %s", lang, sentence)
		}
	}
	// The old rule that left boundaries out of the goal is gone in both:
	// it dropped the invariants with them.
	for lang, old := range map[Lang]string{English: "leave them out", Chinese: "不是判定项"} {
		if strings.Contains(PromptsFor(lang).JudgeRules, old) {
			t.Errorf("%s judge rules still say %q", lang, old)
		}
	}
	// A judge without a shell is no longer told to pass on files a check
	// script wrote into the workbench.
	for lang, old := range map[Lang]string{English: "on output files you can read that a check script wrote", Chinese: "由检查脚本写下的输出文件"} {
		if strings.Contains(PromptsFor(lang).JudgeRules, old) {
			t.Errorf("%s judge rules still pass on the workbench's files: %q", lang, old)
		}
	}
}
