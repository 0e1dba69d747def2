// Package demo is a scripted model for a whole starter flow, played by
// fakeapi's scripted Messages API to the real Claude Code CLI: the clarifier
// asks one question on its first turn and writes the brief; a judge sets
// the goal; the coordinator dispatches the coder, who writes hello.txt,
// checks the inbox and reports; the round judge says not yet, the
// coordinator finishes in round 2, the judge says achieved; the coordinator
// writes the bequest. A wake with new words, or without, is scripted too.
// The tests of the starter flow and the flower demo command share it.
package demo

import (
	"path/filepath"
	"strings"

	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/internal/lang"
)

// Texts are one language's lines of the demo.
type Texts struct {
	// Ask is the request the demo starts with; Question and Options the
	// clarifier's question; Answer the answer a test gives.
	Ask, Question string
	Options       []string
	Answer        string
	// File is the file the coder writes into the workspace.
	File string
	// Round1, Round2 and Woken are the coordinator's reports.
	Round1, Round2, Woken string
	// NotYet and Achieved are the round judge's verdicts; Reason is
	// round 1's.
	NotYet, Achieved, Reason string
	// Bequest is the coordinator's hand-over.
	Bequest string
}

// TextsFor returns the demo's texts in a language tag (English or Chinese).
func TextsFor(tag string) Texts {
	if lang.IsEnglish(tag) {
		return Texts{
			Ask:      "Build me a hello.txt generator",
			Question: "What should hello.txt say?", Options: []string{"hello", "hello, world"}, Answer: "hello",
			File:   "hello.txt",
			Round1: "Round 1: the coder wrote hello.txt.", Round2: "Round 2: checked hello.txt against every item.",
			Woken:    "Round 2: done as the new words say.",
			NotYet:   "## Conclusion\nnot yet\n\n## Reason\nnobody ran ls yet\n\n## Not passed\n- run ls, see hello.txt",
			Achieved: "## Conclusion\nachieved\n\n## Reason\nboth checks pass\n\n## Not passed\n(none)",
			Reason:   "nobody ran ls yet",
			Bequest:  "## Hand-over\n\n- What: writes hello.txt.\n- Checks: cat hello.txt and ls pass.\n- Generated: hello.txt, by the coder.\n- Workbench: .flower/, read INDEX.md first.",
		}
	}
	return Texts{
		Ask:      "帮我做一个 hello.txt 生成器",
		Question: "hello.txt 里写什么?", Options: []string{"hello", "hello, world"}, Answer: "hello",
		File:   "hello.txt",
		Round1: "第一轮:coder 写好了 hello.txt。", Round2: "第二轮:逐条核对了 hello.txt。",
		Woken:    "第二轮:按新的话做完了。",
		NotYet:   "## 结论\n未达成\n\n## 理由\n还没人跑过 ls\n\n## 未通过\n- 运行 ls,看到 hello.txt",
		Achieved: "## 结论\n已达成\n\n## 理由\n两条都过了\n\n## 未通过\n(无)",
		Reason:   "还没人跑过 ls",
		Bequest:  "## 交代\n\n- 这是什么:生成 hello.txt。\n- 验收:cat hello.txt、ls 都过了。\n- 生成的文件:hello.txt,由 coder 写出。\n- 工作台:.flower/,先读 INDEX.md。",
	}
}

// markers are fragments of flower's fixed prompts that tell the sessions
// apart, in both languages.
type markers struct {
	setGoal, verify, work, feedback, bequest, rederived, carryOn string
}

func markersFor(tag string) markers {
	if lang.IsEnglish(tag) {
		return markers{"into a goal that can be decided", "Judge this round", "Do as this brief says",
			"did not achieve the goal", "Write a short hand-over", "The checklist has been derived again",
			"Carry on. Pick up where you stopped"}
	}
	return markers{"变成一个可判定的目标", "判定这一轮", "照这份需求做", "没有达成目标", "给下一个接手这个仓库",
		"判定标准已经按这句话重新推导过", "接着做。上次干到哪"}
}

// coderMarker opens the coordinator's task for the coder.
const coderMarker = "DEMO-CODER"

// Script is the fake model of a starter flow in workspace (the coder
// writes File there), in a language tag.
func Script(tag, workspace string) fakeapi.Script {
	t, m := TextsFor(tag), markersFor(tag)
	en := lang.IsEnglish(tag)
	pick := func(zh, e string) string {
		if en {
			return e
		}
		return zh
	}
	brief := fakeapi.Func(func(req *fakeapi.Request) fakeapi.Reply {
		answer := t.Answer
		if r, ok := req.LastToolResult(); ok && strings.TrimSpace(r.Content) != "" {
			answer = strings.TrimSpace(r.Content)
		}
		return fakeapi.Say(pick(
			"## 目标\n做一个生成 hello.txt 的小工具,内容是 "+answer+"\n\n## 验收标准\n- cat hello.txt 看到 "+answer+"\n- ls 看到 hello.txt\n\n## 边界\n不做界面\n\n## 未知与假设\n无",
			"## Goal\nA small tool that writes hello.txt saying "+answer+"\n\n## Acceptance criteria\n- cat hello.txt shows "+answer+"\n- ls shows hello.txt\n\n## Boundaries\nNo UI\n\n## Unknowns and assumptions\nNone"))
	})
	goal := fakeapi.Say(pick(
		"## 目标\nhello.txt 存在,内容正确\n\n## 判定清单\n- 运行 cat hello.txt,看到 hello\n- 运行 ls,看到 hello.txt",
		"## Goal\nhello.txt exists with the right text\n\n## Checklist\n- run cat hello.txt, see hello\n- run ls, see hello.txt"))
	verdict := fakeapi.Func(func(req *fakeapi.Request) fakeapi.Reply {
		if req.HasText(t.Round2) || req.HasText(t.Woken) {
			return fakeapi.Say(t.Achieved)
		}
		return fakeapi.Say(t.NotYet)
	})
	use := func(name string, input map[string]any) fakeapi.Reply {
		return fakeapi.NewReply(fakeapi.ToolUse("", name, input))
	}
	return fakeapi.Script{
		t.Ask: {
			use("mcp__human__ask", map[string]any{"question": t.Question, "options": t.Options}),
			brief,
		},
		m.setGoal: {goal},
		m.work: {
			use("Agent", map[string]any{"description": "hello.txt", "subagent_type": "coder", "run_in_background": false,
				"prompt": coderMarker + pick(": 写 hello.txt", ": write hello.txt")}),
			use("mcp__human__inbox", map[string]any{}),
			fakeapi.Say(t.Round1),
		},
		coderMarker: {
			use("Write", map[string]any{"file_path": filepath.Join(workspace, t.File), "content": t.Answer + "\n"}),
			fakeapi.Say(pick("结论:写好了 hello.txt\n依据:hello.txt:1\n产出:hello.txt\n未验证·风险:无",
				"Conclusion: wrote hello.txt\nEvidence: hello.txt:1\nOutput: hello.txt\nUnverified / risks: none")),
		},
		m.verify:    {verdict},
		m.feedback:  {fakeapi.Say(t.Round2)},
		m.rederived: {fakeapi.Say(t.Woken)},
		m.carryOn:   {fakeapi.Say(t.Woken)},
		m.bequest:   {fakeapi.Say(t.Bequest)},
	}
}
