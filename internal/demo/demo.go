// Package demo is a scripted model for a whole starter flow, played by
// fakeapi's scripted Messages API to the real Claude Code CLI. It reads what
// each request holds instead of counting turns, so it follows what a person
// does: the clarifier asks what hello.txt should say and writes the answer
// it got into the brief; a judge turns the brief into a goal whose checklist
// names that text; the coordinator dispatches the coder (again, when an
// interrupt or a killed process cut the coder short, or the judge found the
// file wrong), checks the inbox and reports, noting words a human typed; the
// round judge reads hello.txt for real and says not yet when it is missing
// or says something else, and, in round 1, that nobody ran ls yet; the
// coordinator writes the bequest. Handler adds the side-question oracle and
// an in-character reply to anything else. The tests of the starter flow and
// the flower demo command share it.
//
// A request made under --json-schema (the CLI offers its StructuredOutput
// tool) is answered in structure: the goal step with a statement and a
// checklist of items with ids and commands, the round judge with a verdict
// on each item (goalAnswer, verdictAnswer); anything else in markdown.
package demo

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/lang"
)

// Texts are one language's lines of the demo.
type Texts struct {
	// Ask is the request the demo starts with; Question and Options the
	// clarifier's question; Answer the answer the simulated human gives,
	// and what the brief assumes when nobody answers.
	Ask, Question string
	Options       []string
	Answer        string
	// File is the file the coder writes into the workspace.
	File string
	// Round1, Round2 and Woken are the coordinator's reports (they open
	// it: a note on a human's words may follow).
	Round1, Round2, Woken string
	// NotYet and Achieved are the round judge's verdicts in markdown when
	// hello.txt is right; Reason is round 1's, Passed the achieved one's.
	NotYet, Achieved, Reason, Passed string
	// Evidence says what the judge read (first %s: the file, second: its
	// text quoted, or Missing); Matches is the reason of the item whose
	// text is right; Listed the evidence (%s: the file) that ls would
	// list it, Present that item's reason.
	Evidence, Matches, Listed, Present string
	// Missing and Wrong are the round judge's reasons when hello.txt is
	// not there, or says (first %q) something else than the checklist
	// wants (second %q).
	Missing, Wrong string
	// Bequest is the coordinator's hand-over.
	Bequest string
	// CoderDone is the coder's report.
	CoderDone string
	// Heard notes a human's words (%s) at the end of a report.
	Heard string
	// Assumed is the brief's assumption when the question got no answer.
	Assumed string
	// Aside answers a side question: the question, what the run did
	// lately.
	Aside, NothingYet string
	// NoLine is the reply to a request the demo has no line for.
	NoLine string
}

// TextsFor returns the demo's texts in a language tag (English or Chinese).
func TextsFor(tag lang.Lang) Texts {
	if tag.IsEnglish() {
		return Texts{
			Ask:      "Build me a hello.txt generator",
			Question: "What should hello.txt say?", Options: []string{"hello", "hello, world"}, Answer: "hello",
			File:   "hello.txt",
			Round1: "Round 1: the coder wrote hello.txt.", Round2: "Round 2: checked hello.txt against every item.",
			Woken:      "After the wake: carried on from where it stopped and checked hello.txt.",
			NotYet:     "## Conclusion\nnot yet\n\n## Reason\nnobody ran ls yet\n\n## Not passed\n- run ls, see hello.txt",
			Achieved:   "## Conclusion\nachieved\n\n## Reason\nboth checks pass\n\n## Not passed\n(none)",
			Reason:     "nobody ran ls yet",
			Passed:     "both checks pass",
			Evidence:   "read %s with Read: %s",
			Matches:    "it says what the checklist wants",
			Listed:     "Read found %s, so ls lists it",
			Present:    "hello.txt is in the workspace",
			Missing:    "hello.txt does not exist",
			Wrong:      "hello.txt says %q; the checklist wants %q",
			Bequest:    "## Hand-over\n\n- What: writes hello.txt.\n- Checks: cat hello.txt and ls pass.\n- Generated: hello.txt, by the coder.\n- Workbench: .flower/, read INDEX.md first.",
			CoderDone:  "Conclusion: wrote hello.txt\nEvidence: hello.txt:1\nOutput: hello.txt\nUnverified / risks: none",
			Heard:      " You said: %q. Noted; this demo's model is scripted, so it keeps to the brief.",
			Assumed:    "Nobody said what hello.txt should say; assumed %q.",
			Aside:      "You asked: %s\nWhat the run did lately:\n%s\n(This demo's model is scripted: it answers side questions from the run's recent events. A real model also reads the workbench.)",
			NothingYet: "  nothing yet",
			NoLine:     "(This demo's model is scripted and has no line for this, so it changes nothing. For a real model: `flower setup`, then flower \"your request\".)",
		}
	}
	return Texts{
		Ask:      "帮我做一个 hello.txt 生成器",
		Question: "hello.txt 里写什么?", Options: []string{"hello", "hello, world"}, Answer: "hello",
		File:   "hello.txt",
		Round1: "第一轮:coder 写好了 hello.txt。", Round2: "第二轮:逐条核对了 hello.txt。",
		Woken:      "唤醒后:从上次停下的地方接着做,核对了 hello.txt。",
		NotYet:     "## 结论\n未达成\n\n## 理由\n还没人跑过 ls\n\n## 未通过\n- 运行 ls,看到 hello.txt",
		Achieved:   "## 结论\n已达成\n\n## 理由\n两条都过了\n\n## 未通过\n(无)",
		Reason:     "还没人跑过 ls",
		Passed:     "两条都过了",
		Evidence:   "用 Read 读了 %s:%s",
		Matches:    "内容和判定清单要的一样",
		Listed:     "Read 读到了 %s,ls 会列出它",
		Present:    "hello.txt 在工作区里",
		Missing:    "hello.txt 不存在",
		Wrong:      "hello.txt 里是 %q,判定清单要的是 %q",
		Bequest:    "## 交代\n\n- 这是什么:生成 hello.txt。\n- 验收:cat hello.txt、ls 都过了。\n- 生成的文件:hello.txt,由 coder 写出。\n- 工作台:.flower/,先读 INDEX.md。",
		CoderDone:  "结论:写好了 hello.txt\n依据:hello.txt:1\n产出:hello.txt\n未验证·风险:无",
		Heard:      " 你说了:%q。记下了;演示的模型是脚本,所以仍按确认书做。",
		Assumed:    "没人说 hello.txt 写什么;假设是 %q。",
		Aside:      "你问:%s\n这次运行最近在做:\n%s\n(演示的模型是脚本:按运行最近的事件回答旁路问题。真模型还会去读工作台。)",
		NothingYet: "  还没有动静",
		NoLine:     "(演示的模型是脚本,这句没有台词,什么都没改。真跑:先 `flower setup`,再 flower \"你的请求\"。)",
	}
}

// markers are fragments of flower's fixed prompts that tell the sessions
// apart, in both languages.
type markers struct {
	setGoal, verify, work, feedback, bequest, rederived, carryOn string
	// said opens the words of a human in an interrupt's or a step's
	// prompt; the words end at the next blank line.
	said []string
	// goalLine and briefLine open the line of the goal's checklist and of
	// the brief that say what hello.txt must hold; checkText is the
	// checklist item's own text (goalLine without its bullet), lsText the
	// other item's.
	goalLine, briefLine, checkText, lsText string
	// oracle opens the side-question agent's rules (prompts/*/oracle.md);
	// noEvents stands for the events in its prompt when there are none
	// (app's Aside.Prompt).
	oracle, noEvents string
}

func markersFor(tag lang.Lang) markers {
	if tag.IsEnglish() {
		return markers{"into a goal that can be decided", "Judge this round", "Do as this brief says",
			"did not achieve the goal", "Write a short hand-over", "The checklist has been derived again",
			"Carry on. Pick up where you stopped",
			[]string{"interrupted you here and said:\n\n", "a human said:\n\n"},
			"- run cat hello.txt, see ", "writes hello.txt saying ", "run cat hello.txt, see ", "run ls, see hello.txt",
			"# Side questions", "(no events yet)"}
	}
	return markers{"变成一个可判定的目标", "判定这一轮", "照这份需求做", "没有达成目标", "给下一个接手这个仓库",
		"判定标准已经按这句话重新推导过", "接着做。上次干到哪",
		[]string{"打断了你,说:\n\n", "人说了:\n\n"},
		"- 运行 cat hello.txt,看到 ", "生成 hello.txt 的小工具,内容是 ", "运行 cat hello.txt,看到 ", "运行 ls,看到 hello.txt",
		"# 旁路问答", "(还没有事件)"}
}

// CoderMarker opens the coordinator's task for the coder; a test replaces
// the coder with script[CoderMarker].
const CoderMarker = "DEMO-CODER"

// Tool names the scripted sessions call.
const (
	askTool   = "mcp__human__ask"
	inboxTool = "mcp__human__inbox"
)

// Script is the fake model of a starter flow in workspace (the coder
// writes File there), in a language tag. Every rule reads the request, so
// a rule answers every turn of its session (fakeapi.Always).
func Script(tag lang.Lang, workspace string) fakeapi.Script {
	d := newModel(tag, workspace)
	m := d.m
	coordinate := fakeapi.Always(fakeapi.Func(d.coordinate))
	return fakeapi.Script{
		d.t.Ask:     {fakeapi.Always(fakeapi.Func(d.clarify))},
		m.setGoal:   {fakeapi.Always(fakeapi.Func(d.goal))},
		m.work:      {coordinate},
		m.feedback:  {coordinate},
		m.rederived: {coordinate},
		m.carryOn:   {coordinate},
		CoderMarker: {fakeapi.Always(fakeapi.Func(d.code))},
		m.verify:    {fakeapi.Always(fakeapi.Func(d.judge))},
		m.bequest:   {fakeapi.Always(fakeapi.Say(d.t.Bequest))},
	}
}

// Handler is the demo's whole model: the side-question oracle (told apart
// by its rules, since its prompt quotes the run's events, markers and
// all), the Script, and an in-character line for anything else, so that
// no text of the fake reaches a person's screen.
func Handler(tag lang.Lang, workspace string) fakeapi.Handler {
	d := newModel(tag, workspace)
	script := Script(tag, workspace).HandlerOr(fakeapi.Say(d.t.NoLine))
	return func(ctx context.Context, req *fakeapi.Request) (reply fakeapi.Reply) {
		defer func() {
			// A request this model cannot read is still answered in
			// character, never with the server's "fakeapi: handler
			// panicked".
			if recover() != nil {
				reply = fakeapi.Say(d.t.NoLine)
			}
		}()
		for _, s := range req.System {
			if strings.Contains(s, d.m.oracle) {
				return d.aside(req)
			}
		}
		return script(ctx, req)
	}
}

// model holds one language's texts and markers and the workspace.
type model struct {
	t   Texts
	m   markers
	en  bool
	ws  string
	non []string // the channel's replies that are not an answer
}

func newModel(tag lang.Lang, workspace string) *model {
	h := human.TextsFor(tag)
	return &model{t: TextsFor(tag), m: markersFor(tag), en: tag.IsEnglish(), ws: workspace,
		non: []string{h.Timeout, h.Declined, h.OverBudget, h.EmptyQuestion}}
}

func (d *model) pick(zh, en string) string {
	if d.en {
		return en
	}
	return zh
}

func use(name string, input map[string]any) fakeapi.Reply {
	return fakeapi.NewReply(fakeapi.ToolUse("", name, input))
}

// clarify asks the question until it has a reply (an interrupted ask is
// asked again, at most three times), then writes the brief with the answer,
// or with the default and an assumption when the human gave none.
func (d *model) clarify(req *fakeapi.Request) fakeapi.Reply {
	i, _ := lastPrompt(req, d.t.Ask)
	results := toolResults(req, i, askTool)
	if n := len(results); n < 3 && (n == 0 || results[n-1].IsError) {
		return use(askTool, map[string]any{"question": d.t.Question, "options": d.t.Options})
	}
	answer, assumed := d.t.Answer, fmt.Sprintf(d.t.Assumed, d.t.Answer)
	if n := len(results); n > 0 && !results[n-1].IsError && d.isAnswer(results[n-1].Content) {
		answer, assumed = oneLine(results[n-1].Content), d.pick("无", "None")
	}
	return fakeapi.Say(d.pick(
		"## 目标\n做一个"+d.m.briefLine+answer+"\n\n## 验收标准\n- cat hello.txt 看到 "+answer+"\n- ls 看到 hello.txt\n\n## 边界\n不做界面\n\n## 未知与假设\n"+assumed,
		"## Goal\nA small tool that "+d.m.briefLine+answer+"\n\n## Acceptance criteria\n- cat hello.txt shows "+answer+"\n- ls shows hello.txt\n\n## Boundaries\nNo UI\n\n## Unknowns and assumptions\n"+assumed))
}

// isAnswer tells a human's answer from the channel's notes that nobody
// answered.
func (d *model) isAnswer(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, n := range d.non {
		if strings.HasPrefix(s, strings.TrimSpace(n)) {
			return false
		}
	}
	return true
}

// goalAnswer is the goal step's structured answer.
type goalAnswer struct {
	Statement string      `json:"statement"`
	Checklist []checkItem `json:"checklist"`
}

// checkItem is one item of the goal's checklist; Command is what flower
// runs to check it.
type checkItem struct {
	ID      string `json:"id"`
	Text    string `json:"text"`
	Command string `json:"command"`
}

// The ids of the demo goal's two checklist items.
const (
	catItem = "c1" // hello.txt says what the brief wants
	lsItem  = "c2" // hello.txt exists
)

// goal turns the brief in the request into a goal whose checklist names
// the text hello.txt must hold: in structure when the request asks for it
// (goalAnswer), else in markdown.
func (d *model) goal(req *fakeapi.Request) fakeapi.Reply {
	want := d.wanted(req)
	statement := d.pick("hello.txt 存在,内容是 ", "hello.txt exists and says ") + want
	if req.WantsStructured() {
		return fakeapi.StructuredOutput(goalAnswer{Statement: statement, Checklist: []checkItem{
			{ID: catItem, Text: d.m.checkText + want, Command: "cat " + d.t.File},
			{ID: lsItem, Text: d.m.lsText, Command: "ls"},
		}})
	}
	return fakeapi.Say(d.pick(
		"## 目标\n"+statement+"\n\n## 判定清单\n"+d.m.goalLine+want+"\n- "+d.m.lsText,
		"## Goal\n"+statement+"\n\n## Checklist\n"+d.m.goalLine+want+"\n- "+d.m.lsText))
}

// wanted is what hello.txt must hold: the goal's checklist item in the
// request, else the brief's line, else the default answer. flower renders
// the goal into later prompts as it likes (markdown, quoted JSON), so the
// text ends at the first quote, bracket, bar or " — " (the goal file's
// command) after the item's words.
func (d *model) wanted(req *fakeapi.Request) string {
	for _, open := range []string{d.m.checkText, d.m.briefLine} {
		if w, ok := lineAfter(req, open); ok {
			if end := strings.IndexAny(w, "\"`|(（"); end >= 0 {
				w = strings.TrimSpace(w[:end])
			}
			// The goal file's line carries the item's command after a dash.
			w, _, _ = strings.Cut(w, " — ")
			if w != "" {
				return w
			}
		}
	}
	return d.t.Answer
}

// coordinate is the coordinator of every work round. It dispatches the
// coder unless the coder already reported in this round, or (a later round
// that the judge did not send back for the file) earlier in the session;
// in round 1 it checks the inbox once the coder is done; then it reports,
// noting the words a human typed into this round.
func (d *model) coordinate(req *fakeapi.Request) fakeapi.Reply {
	m := d.m
	i, prompt := lastPrompt(req, m.work, m.feedback, m.rederived, m.carryOn)
	first := !strings.Contains(prompt, m.feedback) && !strings.Contains(prompt, m.rederived) &&
		!strings.Contains(prompt, m.carryOn)
	done := func(from int) bool {
		for _, r := range toolResults(req, from, "Agent", "Task") {
			if !r.IsError && strings.Contains(r.Content, firstLine(d.t.CoderDone)) {
				return true
			}
		}
		return false
	}
	fileFailed := strings.Contains(prompt, d.t.Missing) || strings.Contains(prompt, strings.SplitN(d.t.Wrong, "%q", 2)[0])
	if !done(i) && (first || fileFailed || !done(-1)) {
		return use("Agent", map[string]any{"description": d.t.File, "subagent_type": "coder", "run_in_background": false,
			"prompt": CoderMarker + d.pick(": 写 hello.txt,只写这一行:\n", ": write hello.txt with exactly this line:\n") + d.wanted(req)})
	}
	if first && len(toolResults(req, i, inboxTool)) == 0 {
		return use(inboxTool, map[string]any{})
	}
	report := d.t.Round1
	switch {
	case strings.Contains(prompt, m.rederived) || strings.Contains(prompt, m.carryOn):
		report = d.t.Woken
	case !first:
		report = d.t.Round2
	}
	for _, w := range d.words(req, i) {
		report += fmt.Sprintf(d.t.Heard, w)
	}
	return fakeapi.Say(report)
}

// words are what a human said into the round that starts at message i:
// in the round's prompt (words given between steps) and in the prompts of
// its interrupts.
func (d *model) words(req *fakeapi.Request, i int) []string {
	var out []string
	for _, msg := range req.Messages[max(i, 0):] {
		text, ok := promptText(msg)
		if !ok {
			continue
		}
		for _, open := range d.m.said {
			if _, rest, ok := strings.Cut(text, open); ok {
				w, _, _ := strings.Cut(rest, "\n\n")
				if w = strings.TrimSpace(w); w != "" {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// code is the coder: it writes the line its task gives into File, then
// reports.
func (d *model) code(req *fakeapi.Request) fakeapi.Reply {
	i, prompt := lastPrompt(req, CoderMarker)
	for _, r := range toolResults(req, i, "Write") {
		if !r.IsError {
			return fakeapi.Say(d.t.CoderDone)
		}
	}
	_, rest, _ := strings.Cut(prompt, CoderMarker)
	_, line, _ := strings.Cut(rest, "\n")
	if line = oneLine(line); line == "" {
		line = d.t.Answer
	}
	return use("Write", map[string]any{"file_path": filepath.Join(d.ws, d.t.File), "content": line + "\n"})
}

// lineNumber is the CLI's prefix of each line Read returns.
var lineNumber = regexp.MustCompile(`(?m)^\s*\d+(\t|→)`)

// verdictAnswer is the round judge's structured answer: a ruling on each
// checklist item, then the conclusion.
type verdictAnswer struct {
	Items      []verdictItem `json:"items"`
	Conclusion string        `json:"conclusion"` // achieved, not_yet or unreachable
	Reason     string        `json:"reason"`
	// Missing and WhyNoWork are for unreachable, which the demo never
	// says.
	Missing   string `json:"missing"`
	WhyNoWork string `json:"why_no_work"`
}

// verdictItem is the ruling on one checklist item.
type verdictItem struct {
	ID       string `json:"id"`
	Status   string `json:"status"` // passed, failed or not_run
	Evidence string `json:"evidence"`
	Reason   string `json:"reason"`
}

// judge rules on a round: it reads File (the real file, through the CLI's
// Read), says not yet when it is missing or holds something else than the
// checklist names, not yet in round 1 (nobody ran ls), else achieved; in
// structure when the request asks for it, else in markdown.
func (d *model) judge(req *fakeapi.Request) fakeapi.Reply {
	i, prompt := lastPrompt(req, d.m.verify)
	reads := toolResults(req, i, "Read")
	if len(reads) == 0 {
		return use("Read", map[string]any{"file_path": filepath.Join(d.ws, d.t.File)})
	}
	want := d.wanted(req)
	v := d.rule(prompt, reads[len(reads)-1], want)
	switch {
	case req.WantsStructured():
		return fakeapi.StructuredOutput(v)
	case v.Conclusion == "achieved":
		return fakeapi.Say(d.t.Achieved)
	case v.Reason == d.t.Reason:
		return fakeapi.Say(d.t.NotYet)
	}
	return fakeapi.Say(d.pick(
		"## 结论\n未达成\n\n## 理由\n"+v.Reason+"\n\n## 未通过\n"+d.m.goalLine+want,
		"## Conclusion\nnot yet\n\n## Reason\n"+v.Reason+"\n\n## Not passed\n"+d.m.goalLine+want))
}

// rule is the judge's ruling on the round whose prompt is given, from the
// judge's Read of File and the text the checklist wants.
func (d *model) rule(prompt string, read fakeapi.Block, want string) verdictAnswer {
	path := filepath.Join(d.ws, d.t.File)
	if read.IsError {
		seen := fmt.Sprintf(d.t.Evidence, path, d.t.Missing)
		return verdictAnswer{Conclusion: "not_yet", Reason: d.t.Missing, Items: []verdictItem{
			{ID: catItem, Status: "failed", Evidence: seen, Reason: d.t.Missing},
			{ID: lsItem, Status: "failed", Evidence: seen, Reason: d.t.Missing},
		}}
	}
	got := strings.TrimSpace(lineNumber.ReplaceAllString(read.Content, ""))
	if strings.Contains(got, "<system-reminder>") {
		got, _, _ = strings.Cut(got, "<system-reminder>") // the CLI's note on an empty file
		got = strings.TrimSpace(got)
	}
	cat := verdictItem{ID: catItem, Status: "passed", Evidence: fmt.Sprintf(d.t.Evidence, path, fmt.Sprintf("%q", got)), Reason: d.t.Matches}
	ls := verdictItem{ID: lsItem, Status: "passed", Evidence: fmt.Sprintf(d.t.Listed, path), Reason: d.t.Present}
	// Round 1's report does not say it listed the workspace, so the judge
	// holds that item back: the demo needs a second round.
	round1 := !strings.Contains(prompt, d.t.Round2) && !strings.Contains(prompt, d.t.Woken)
	if round1 {
		ls = verdictItem{ID: lsItem, Status: "not_run", Reason: d.t.Reason}
	}
	v := verdictAnswer{Items: []verdictItem{cat, ls}, Conclusion: "achieved", Reason: d.t.Passed}
	switch {
	case got != want:
		wrong := fmt.Sprintf(d.t.Wrong, got, want)
		v.Items[0].Status, v.Items[0].Reason = "failed", wrong
		v.Conclusion, v.Reason = "not_yet", wrong
	case round1:
		v.Conclusion, v.Reason = "not_yet", d.t.Reason
	}
	return v
}

// eventLine opens a line of the run's events in a side question's prompt
// (app's Aside.Prompt): "[kind·who] text" or "[kind/Tool·who] text".
var eventLine = regexp.MustCompile(`^\[[a-z_]+(/[^\]·]+)?·[^\]]+\] `)

// aside answers a side question from the events its prompt quotes: the
// question is the line before them.
func (d *model) aside(req *fakeapi.Request) fakeapi.Reply {
	paras := strings.Split(req.LastUserText(), "\n\n")
	question, lately := "", []string{}
	for k, p := range paras {
		first := strings.TrimSpace(p)
		if !eventLine.MatchString(first) && first != d.m.noEvents {
			continue
		}
		if k > 0 {
			lines := strings.Split(strings.TrimSpace(paras[k-1]), "\n")
			question = strings.TrimSpace(lines[len(lines)-1])
		}
		for _, q := range paras[k:] {
			for _, l := range strings.Split(q, "\n") {
				// The lines that say what happened; the CLI's init and a
				// bare result say nothing to a person.
				if m := eventLine.FindString(l); m != "" && !strings.HasPrefix(m, "[system") && !strings.HasPrefix(m, "[result") &&
					strings.TrimSpace(l[len(m):]) != "" {
					lately = append(lately, "  "+strings.TrimSpace(l))
				}
			}
		}
		break
	}
	lately = lately[max(0, len(lately)-3):]
	if len(lately) == 0 {
		lately = []string{d.t.NothingYet}
	}
	return fakeapi.Say(fmt.Sprintf(d.t.Aside, question, strings.Join(lately, "\n")))
}

// lastPrompt returns the index and text of the request's most recent user
// prompt holding one of markers; -1 and "" when none does.
func lastPrompt(req *fakeapi.Request, markers ...string) (int, string) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		text, ok := promptText(req.Messages[i])
		if !ok {
			continue
		}
		for _, m := range markers {
			if strings.Contains(text, m) {
				return i, text
			}
		}
	}
	return -1, ""
}

// promptText is a user message's text blocks other than the CLI's system
// reminders; ok is false when it has none (a message of tool results).
func promptText(m fakeapi.Message) (string, bool) {
	if m.Role != "user" {
		return "", false
	}
	var texts []string
	for _, b := range m.Content {
		if b.Type == "text" && !strings.HasPrefix(strings.TrimSpace(b.Text), "<system-reminder>") {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}

// toolResults are the results, after message from, of the calls of the
// named tools, in order.
func toolResults(req *fakeapi.Request, from int, tools ...string) []fakeapi.Block {
	names := map[string]string{}
	var out []fakeapi.Block
	for _, msg := range req.Messages[max(from, 0):] {
		for _, b := range msg.Content {
			switch b.Type {
			case "tool_use":
				names[b.ID] = b.Name
			case "tool_result":
				for _, t := range tools {
					if names[b.ToolUseID] == t {
						out = append(out, b)
					}
				}
			}
		}
	}
	return out
}

// lineAfter finds, in any text of the request, a line holding open and
// returns the rest of that line.
func lineAfter(req *fakeapi.Request, open string) (string, bool) {
	for k := len(req.Messages) - 1; k >= 0; k-- {
		for _, b := range req.Messages[k].Content {
			for _, s := range []string{b.Text, b.Content} {
				if _, rest, ok := strings.Cut(s, open); ok {
					if w := oneLine(rest); w != "" {
						return w, true
					}
				}
			}
		}
	}
	return "", false
}

func oneLine(s string) string { return strings.TrimSpace(firstLine(strings.TrimSpace(s))) }

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
