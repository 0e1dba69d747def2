package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude/fakeapi"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/lang"
)

// conversation builds a request from messages; each is a prompt (a
// string), a call (an assistant's tool_use) or a result (a user's
// tool_result).
type call struct{ id, name string }
type result struct {
	id, content string
	isError     bool
}

func conversation(msgs ...any) *fakeapi.Request {
	req := &fakeapi.Request{}
	for _, m := range msgs {
		switch m := m.(type) {
		case string:
			req.Messages = append(req.Messages, fakeapi.Message{Role: "user", Content: []fakeapi.Block{
				{Type: "text", Text: "<system-reminder>\nDo as this brief says (a decoy)\n</system-reminder>"}, {Type: "text", Text: m}}})
		case call:
			req.Messages = append(req.Messages, fakeapi.Message{Role: "assistant", Content: []fakeapi.Block{{Type: "tool_use", ID: m.id, Name: m.name}}})
		case result:
			req.Messages = append(req.Messages, fakeapi.Message{Role: "user", Content: []fakeapi.Block{{Type: "tool_result", ToolUseID: m.id, Content: m.content, IsError: m.isError}}})
		}
	}
	return req
}

// said is the reply's text, or "tool NAME INPUT" for a tool call.
func said(r fakeapi.Reply) string {
	var out []string
	for _, b := range r.Blocks {
		if b.Type == "tool_use" {
			in, _ := json.Marshal(b.Input)
			out = append(out, "tool "+b.Name+" "+string(in))
		} else {
			out = append(out, b.Text)
		}
	}
	return strings.Join(out, "\n")
}

func TestTheBriefHoldsTheTypedAnswerOrSaysWhatItAssumed(t *testing.T) {
	ws := t.TempDir()
	for _, tag := range []lang.Lang{"en", "zh"} {
		tx, h := TextsFor(tag), human.TextsFor(tag)
		s := Script(tag, ws)
		ask := tx.Ask
		tests := []struct {
			name string
			req  *fakeapi.Request
			want []string
		}{
			{"first turn asks", conversation(ask), []string{"tool " + askTool, tx.Question}},
			{"an interrupted ask is asked again", conversation(ask, call{"a1", askTool}, result{"a1", "interrupted", true},
				"A human interrupted you here and said:\n\nwait\n\nAdjust to this and carry on."), []string{"tool " + askTool}},
			{"the typed answer", conversation(ask, call{"a1", askTool}, result{"a1", "hello, world", false}),
				[]string{markersFor(tag).briefLine + "hello, world\n", "hello.txt", "hello, world\n"}},
			{"nobody answered", conversation(ask, call{"a1", askTool}, result{"a1", h.Timeout, false}),
				[]string{markersFor(tag).briefLine + tx.Answer + "\n", fmt.Sprintf(tx.Assumed, tx.Answer)}},
			{"skipped", conversation(ask, call{"a1", askTool}, result{"a1", h.Declined + fmt.Sprintf(h.DeclinedReason, "later"), false}),
				[]string{fmt.Sprintf(tx.Assumed, tx.Answer)}},
		}
		for _, tt := range tests {
			got := said(s.Reply(tt.req))
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%s %s: reply lacks %q:\n%s", tag, tt.name, w, got)
				}
			}
		}
	}
}

func TestTheGoalsChecklistNamesTheTypedAnswer(t *testing.T) {
	for _, tag := range []lang.Lang{"en", "zh"} {
		m := markersFor(tag)
		req := conversation(m.setGoal + "\n\n## Goal\nA small tool that " + m.briefLine + "bonjour\n")
		got := said(Script(tag, t.TempDir()).Reply(req))
		if !strings.Contains(got, m.goalLine+"bonjour\n") {
			t.Errorf("%s: the checklist does not check the answer:\n%s", tag, got)
		}
	}
}

func TestTheJudgeReadsTheFileAndFailsItWhenItIsWrong(t *testing.T) {
	ws := t.TempDir()
	for _, tag := range []lang.Lang{"en", "zh"} {
		tx, m := TextsFor(tag), markersFor(tag)
		s := Script(tag, ws)
		verify := func(report string) string {
			return m.verify + "\n\n# Goal\n\n" + m.goalLine + "hello, world\n- run ls, see hello.txt\n\n# reply\n\n" + report
		}
		read := func(report, content string, isError bool) *fakeapi.Request {
			return conversation(verify(report), call{"r1", "Read"}, result{"r1", content, isError})
		}
		tests := []struct {
			name string
			req  *fakeapi.Request
			want string
		}{
			{"it reads the file first", conversation(verify(tx.Round2)), "tool Read " + fmt.Sprintf(`{"file_path":%q}`, filepath.Join(ws, "hello.txt"))},
			{"missing", read(tx.Round2, "File does not exist.", true), tx.Missing},
			{"wrong text", read(tx.Round2, "     1\thello\n", false), fmt.Sprintf(tx.Wrong, "hello", "hello, world")},
			{"empty", read(tx.Round2, "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>", false), fmt.Sprintf(tx.Wrong, "", "hello, world")},
			{"right, round 1", read(tx.Round1, "     1→hello, world\n", false), tx.NotYet},
			{"right, round 2", read(tx.Round2, "     1→hello, world\n", false), tx.Achieved},
			{"right, woken", read(tx.Woken, "     1\thello, world\n", false), tx.Achieved},
		}
		for _, tt := range tests {
			if got := said(s.Reply(tt.req)); !strings.Contains(got, tt.want) {
				t.Errorf("%s %s: %q, want %q", tag, tt.name, got, tt.want)
			}
		}
	}
}

func TestTheCoordinatorRedispatchesACutCoderAndNotesTheWords(t *testing.T) {
	ws := t.TempDir()
	for _, tag := range []lang.Lang{"en", "zh"} {
		tx, m := TextsFor(tag), markersFor(tag)
		s := Script(tag, ws)
		work := m.work + "\n\n## Goal\nx\n\n" + m.goalLine + "hello, world\n"
		interrupt := "A human interrupted you here and said:\n\nmake it shout\n\nAdjust to this and carry on."
		if tag == "zh" {
			interrupt = "人在这里打断了你,说:\n\nmake it shout\n\n按这句话调整,接着做。"
		}
		ok := result{"c1", "agent says\n" + tx.CoderDone, false}
		tests := []struct {
			name string
			req  *fakeapi.Request
			want string
		}{
			{"round 1 dispatches the coder with the answer", conversation(work), "tool Agent"},
			{"a coder cut by the interrupt is dispatched again", conversation(work, call{"c1", "Agent"},
				result{"c1", "[Request interrupted by user for tool use]", true}, interrupt), "tool Agent"},
			{"then the inbox", conversation(work, call{"c1", "Agent"}, ok), "tool " + inboxTool},
			{"then the report with the words", conversation(work, call{"c1", "Agent"}, ok, interrupt, call{"i1", inboxTool}, result{"i1", "empty", false}),
				tx.Round1 + fmt.Sprintf(tx.Heard, "make it shout")},
			{"round 2 reports when the judge wanted ls", conversation(work, call{"c1", "Agent"}, ok, call{"i1", inboxTool}, result{"i1", "empty", false},
				m.feedback+"\n\n"+tx.Reason), tx.Round2},
			{"round 2 dispatches again when the file was wrong", conversation(work, call{"c1", "Agent"}, ok,
				m.feedback+"\n\n"+fmt.Sprintf(tx.Wrong, "hello", "hello, world")), "tool Agent"},
			{"a wake after a killed coder dispatches it", conversation(work, call{"c1", "Agent"}, m.carryOn), "tool Agent"},
			{"a wake after the coder wrote reports", conversation(work, call{"c1", "Agent"}, ok, m.carryOn), tx.Woken},
		}
		for _, tt := range tests {
			if got := said(s.Reply(tt.req)); !strings.Contains(got, tt.want) {
				t.Errorf("%s %s: %q, want %q", tag, tt.name, got, tt.want)
			}
		}
		// The coder writes the line it was given.
		r := s.Reply(conversation(work))
		prompt, _ := r.Blocks[0].Input.(map[string]any)["prompt"].(string)
		got := said(s.Reply(conversation(prompt)))
		if want := fmt.Sprintf(`"content":%q`, "hello, world\n"); !strings.Contains(got, "tool Write") || !strings.Contains(got, want) {
			t.Errorf("%s coder: %s", tag, got)
		}
		if got := said(s.Reply(conversation(prompt, call{"w1", "Write"}, result{"w1", "ok", false}))); got != tx.CoderDone {
			t.Errorf("%s coder's report: %q", tag, got)
		}
	}
}

func TestTheDemoAnswersSideQuestionsAndNeverSpeaksAsTheFake(t *testing.T) {
	for _, tag := range []lang.Lang{"en", "zh"} {
		tx, m := TextsFor(tag), markersFor(tag)
		h := Handler(tag, t.TempDir())
		oracle := conversation("# Workbench .flower/\n\n(none yet)\n\nwhat is the plan?\n\n[tool_call/Agent·main] hello.txt\n[text·main] " + tx.Round1 + "\n\n.flower/ — it holds notes/")
		oracle.System = []string{"You are Claude Code", m.oracle + "\n\nYou answer a human's questions"}
		got := said(h(context.Background(), oracle))
		for _, w := range []string{"what is the plan?", "[text·main] " + tx.Round1} {
			if !strings.Contains(got, w) {
				t.Errorf("%s aside lacks %q:\n%s", tag, w, got)
			}
		}
		for _, req := range []*fakeapi.Request{conversation("tell me a joke"), conversation(m.bequest+" x", call{"x", "Bash"}, result{"x", "y", false})} {
			if got := said(h(context.Background(), req)); strings.Contains(got, "fake") || got == "" {
				t.Errorf("%s: %q", tag, got)
			}
		}
		if got := said(h(context.Background(), conversation("tell me a joke"))); got != tx.NoLine {
			t.Errorf("%s no line: %q", tag, got)
		}
	}
}

// structuredConversation is conversation made under --json-schema.
func structuredConversation(msgs ...any) *fakeapi.Request {
	req := conversation(msgs...)
	req.Tools = []string{"Read", fakeapi.StructuredOutputTool}
	return req
}

// structuredInput returns the input of the reply's one StructuredOutput
// call, decoded into v, and fails the test for any other reply.
func structuredInput(t *testing.T, r fakeapi.Reply, v any) {
	t.Helper()
	if len(r.Blocks) != 1 || r.Blocks[0].Type != "tool_use" || r.Blocks[0].Name != fakeapi.StructuredOutputTool {
		t.Fatalf("reply = %s; want one StructuredOutput call", said(r))
	}
	b, err := json.Marshal(r.Blocks[0].Input)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields() // the schema's names, no others
	if err := dec.Decode(v); err != nil {
		t.Fatalf("input %s: %v", b, err)
	}
}

// The wire names the structured answers must carry (the lead's schemas).
type wireGoal struct {
	Statement string `json:"statement"`
	Checklist []struct {
		ID      string `json:"id"`
		Text    string `json:"text"`
		Command string `json:"command"`
	} `json:"checklist"`
}

type wireVerdict struct {
	Items []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Evidence string `json:"evidence"`
		Reason   string `json:"reason"`
	} `json:"items"`
	Conclusion string  `json:"conclusion"`
	Reason     string  `json:"reason"`
	Missing    *string `json:"missing"`
	WhyNoWork  *string `json:"why_no_work"`
}

func TestTheGoalStepAnswersInStructureUnderJSONSchema(t *testing.T) {
	for _, tag := range []lang.Lang{"en", "zh"} {
		m := markersFor(tag)
		prompt := m.setGoal + "\n\n## Goal\nA small tool that " + m.briefLine + "bonjour\n"
		var g wireGoal
		structuredInput(t, Script(tag, t.TempDir()).Reply(structuredConversation(prompt)), &g)
		if !strings.Contains(g.Statement, "bonjour") || len(g.Checklist) != 2 {
			t.Fatalf("%s: goal = %+v", tag, g)
		}
		c1, c2 := g.Checklist[0], g.Checklist[1]
		if c1.ID != "c1" || c1.Text != m.checkText+"bonjour" || c1.Command != "cat hello.txt" {
			t.Errorf("%s: first item = %+v; want the typed answer and cat", tag, c1)
		}
		if c2.ID != "c2" || c2.Text != m.lsText || c2.Command != "ls" {
			t.Errorf("%s: second item = %+v", tag, c2)
		}
		// The markdown goal names the same two checks.
		md := said(Script(tag, t.TempDir()).Reply(conversation(prompt)))
		if !strings.Contains(md, m.goalLine+"bonjour\n") || !strings.Contains(md, "- "+m.lsText) || !strings.Contains(md, g.Statement) {
			t.Errorf("%s: the markdown goal says something else:\n%s", tag, md)
		}
	}
}

// The structured verdict rules item by item and gives the reasons the
// markdown verdict gives, so a person sees the same words either way.
func TestTheJudgeAnswersInStructureUnderJSONSchema(t *testing.T) {
	ws := t.TempDir()
	for _, tag := range []lang.Lang{"en", "zh"} {
		tx, m := TextsFor(tag), markersFor(tag)
		s := Script(tag, ws)
		verify := func(report string) string {
			return m.verify + "\n\n# Goal\n\n" + m.goalLine + "hello, world\n- " + m.lsText + "\n\n# reply\n\n" + report
		}
		read := func(report, content string, isError bool) []any {
			return []any{verify(report), call{"r1", "Read"}, result{"r1", content, isError}}
		}
		wrong := fmt.Sprintf(tx.Wrong, "hello", "hello, world")
		tests := []struct {
			name               string
			msgs               []any
			conclusion, reason string
			c1, c2             string // the items' statuses
		}{
			{"missing", read(tx.Round2, "File does not exist.", true), "not_yet", tx.Missing, "failed", "failed"},
			{"wrong text, round 2", read(tx.Round2, "     1\thello\n", false), "not_yet", wrong, "failed", "passed"},
			{"wrong text, round 1", read(tx.Round1, "     1\thello\n", false), "not_yet", wrong, "failed", "not_run"},
			{"right, round 1", read(tx.Round1, "     1→hello, world\n", false), "not_yet", tx.Reason, "passed", "not_run"},
			{"right, round 2", read(tx.Round2, "     1→hello, world\n", false), "achieved", tx.Passed, "passed", "passed"},
			{"right, woken", read(tx.Woken, "     1\thello, world\n", false), "achieved", tx.Passed, "passed", "passed"},
		}
		for _, tt := range tests {
			var v wireVerdict
			structuredInput(t, s.Reply(structuredConversation(tt.msgs...)), &v)
			if v.Conclusion != tt.conclusion || v.Reason != tt.reason || v.Missing == nil || *v.Missing != "" || v.WhyNoWork == nil || *v.WhyNoWork != "" {
				t.Errorf("%s %s: conclusion %q reason %q (missing %v, why_no_work %v); want %q, %q", tag, tt.name, v.Conclusion, v.Reason, v.Missing, v.WhyNoWork, tt.conclusion, tt.reason)
			}
			if len(v.Items) != 2 || v.Items[0].ID != "c1" || v.Items[1].ID != "c2" || v.Items[0].Status != tt.c1 || v.Items[1].Status != tt.c2 {
				t.Errorf("%s %s: items %+v; want c1 %s, c2 %s", tag, tt.name, v.Items, tt.c1, tt.c2)
				continue
			}
			for _, it := range v.Items {
				// Every ruling says why; every ruling on something looked at
				// says what was looked at.
				if it.Reason == "" || (it.Status != "not_run") != (it.Evidence != "") {
					t.Errorf("%s %s: item %+v lacks a reason or has evidence that does not fit its status", tag, tt.name, it)
				}
			}
			if c1 := v.Items[0]; c1.Status == "failed" && c1.Reason != tt.reason {
				t.Errorf("%s %s: the failed item's reason %q is not the verdict's %q", tag, tt.name, c1.Reason, tt.reason)
			}
			// The markdown verdict on the same round gives the same reason.
			if md := said(s.Reply(conversation(tt.msgs...))); tt.conclusion == "not_yet" && !strings.Contains(md, tt.reason) {
				t.Errorf("%s %s: the markdown verdict %q lacks the reason %q", tag, tt.name, md, tt.reason)
			}
		}
		// Before it has read the file, the judge reads it, asked in
		// structure or not.
		if got := said(s.Reply(structuredConversation(verify(tx.Round2)))); !strings.HasPrefix(got, "tool Read ") {
			t.Errorf("%s: the structured judge's first turn = %q, want a Read", tag, got)
		}
	}
}

// However flower renders the goal into the judge's prompt, the judge finds
// the text the checklist wants.
func TestTheJudgeFindsTheWantedTextInAnyRenderingOfTheGoal(t *testing.T) {
	ws := t.TempDir()
	for _, tag := range []lang.Lang{"en", "zh"} {
		tx, m := TextsFor(tag), markersFor(tag)
		s := Script(tag, ws)
		for _, goal := range []string{
			m.goalLine + "hello, world\n",
			"- [c1] " + m.checkText + "hello, world (`cat hello.txt`)\n",
			"| c1 | " + m.checkText + "hello, world | cat hello.txt |\n",
			`{"checklist":[{"id":"c1","text":"` + m.checkText + `hello, world","command":"cat hello.txt"}]}` + "\n",
		} {
			req := structuredConversation(m.verify+"\n\n# Goal\n\n"+goal+"\n# reply\n\n"+tx.Round2, call{"r1", "Read"}, result{"r1", "     1\thello, world\n", false})
			var v wireVerdict
			structuredInput(t, s.Reply(req), &v)
			if v.Conclusion != "achieved" {
				t.Errorf("%s: with the goal rendered as %q the judge ruled %s: %s", tag, goal, v.Conclusion, v.Reason)
			}
		}
	}
}
