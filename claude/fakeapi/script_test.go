package fakeapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// conv builds a parsed request from messages given as role, content pairs
// (content is a string or blocks).
func conv(t *testing.T, msgs ...any) *Request {
	t.Helper()
	var list []map[string]any
	for i := 0; i < len(msgs); i += 2 {
		list = append(list, map[string]any{"role": msgs[i], "content": msgs[i+1]})
	}
	b, err := json.Marshal(map[string]any{"model": "m", "messages": list})
	if err != nil {
		t.Fatal(err)
	}
	req, err := parseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func reminderAnd(prompt string) []map[string]any {
	return []map[string]any{
		{"type": "text", "text": "<system-reminder>\nSCENARIO:decoy in a reminder\n</system-reminder>"},
		{"type": "text", "text": prompt},
	}
}

func toolResult(id, content string) []map[string]any {
	return []map[string]any{{"type": "tool_result", "tool_use_id": id, "content": content}}
}

func toolCall(id string) []map[string]any {
	return []map[string]any{{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{}}}
}

func replyText(r Reply) string {
	if len(r.Blocks) == 0 {
		return ""
	}
	return r.Blocks[0].Text
}

func TestScriptPicksTheRuleOfTheLatestMarkedPromptAndCountsTurns(t *testing.T) {
	s := Script{
		"SCENARIO:a":      {Say("a0"), Say("a1"), Say("a2")},
		"SCENARIO:b":      {Say("b0"), Say("b1")},
		"SCENARIO:b-long": {Say("long0")},
		"SCENARIO:decoy":  {Say("decoy")},
	}
	tests := []struct {
		name string
		req  *Request
		want string
	}{
		{"first prompt after reminders", conv(t, "user", reminderAnd("do SCENARIO:a")), "a0"},
		{"after one tool round trip", conv(t,
			"user", reminderAnd("SCENARIO:a"), "assistant", toolCall("t1"), "user", toolResult("t1", "SCENARIO:b")), "a1"},
		{"system messages are not turns", conv(t,
			"user", "SCENARIO:a", "assistant", toolCall("t1"), "system", "note", "user", toolResult("t1", "x"),
			"assistant", toolCall("t2"), "user", toolResult("t2", "y")), "a2"},
		{"resumed session with a new marker", conv(t,
			"user", "SCENARIO:a", "assistant", "done", "user", "now SCENARIO:b"), "b0"},
		{"an unmarked later prompt keeps the rule", conv(t,
			"user", "SCENARIO:b", "assistant", "done", "user", "and then?"), "b1"},
		{"the longest marker wins", conv(t, "user", "SCENARIO:b-long"), "long0"},
		{"no marker", conv(t, "user", "hello"), `fake: no rule for prompt "hello"`},
		{"past the last turn", conv(t, "user", "SCENARIO:b-long", "assistant", "x", "user", toolResult("t", "y")),
			"fake: no rule for SCENARIO:b-long turn 1 (the script has 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.Reply(tt.req)
			if got := replyText(r); got != tt.want || r.Fault != nil {
				t.Errorf("reply %q (fault %v), want %q", got, r.Fault, tt.want)
			}
		})
	}
}

func TestScriptFuncSeesTheRequest(t *testing.T) {
	s := Script{"SCENARIO:echo": {
		NewReply(ToolUse("", "Bash", map[string]any{"command": "echo hi"})),
		Func(func(r *Request) Reply {
			res, _ := r.LastToolResult()
			return Say("echo: " + res.Content)
		}),
	}}
	req := conv(t, "user", "SCENARIO:echo", "assistant", toolCall("t1"), "user", toolResult("t1", "hi"))
	if got := replyText(s.Reply(req)); got != "echo: hi" {
		t.Errorf("reply %q", got)
	}
}

func TestFailFirstFailsNTimesThenAnswers(t *testing.T) {
	srv := newServer(t, Script{"SCENARIO:flaky": {FailFirst(2, Overloaded(), Say("finally"))}}.Handler())
	var statuses []int
	for range 3 {
		status, _, _ := mustPost(t, srv, reqBody(t, true, "SCENARIO:flaky"))
		statuses = append(statuses, status)
	}
	if statuses[0] != 529 || statuses[1] != 529 || statuses[2] != 200 {
		t.Errorf("statuses %v, want 529 529 200", statuses)
	}
	_, _, body := mustPost(t, srv, reqBody(t, false, "SCENARIO:flaky"))
	if !strings.Contains(string(body), "finally") {
		t.Errorf("fourth reply %s", body)
	}
}

func TestNilHandlerAnswersNoRule(t *testing.T) {
	srv := newServer(t, nil)
	_, _, body := mustPost(t, srv, reqBody(t, false, "anything"))
	if !strings.Contains(string(body), "fake: no rule") {
		t.Errorf("reply %s", body)
	}
	if h := (Script{}).Handler(); replyText(h(context.Background(), conv(t, "user", "x"))) == "" {
		t.Error("empty script gave no reply")
	}
}

func TestAlwaysAnswersEveryLaterTurnAndReplyOrTheRest(t *testing.T) {
	s := Script{
		"SCENARIO:steady": {Say("first"), Always(Func(func(r *Request) Reply { return Say("steady " + r.LastUserText()) }))},
		"SCENARIO:fixed":  {Say("only")},
	}
	fallback := Say("in character")
	tests := []struct {
		name string
		req  *Request
		want string
	}{
		{"the turns before Always as listed", conv(t, "user", "SCENARIO:steady"), "first"},
		{"Always at its own turn", conv(t, "user", "SCENARIO:steady", "assistant", toolCall("t1"), "user", toolResult("t1", "x")), "steady SCENARIO:steady"},
		{"Always past the end, after an interrupt's unmarked prompt", conv(t,
			"user", "SCENARIO:steady", "assistant", toolCall("t1"), "user", toolResult("t1", "x"),
			"assistant", toolCall("t2"), "user", toolResult("t2", "y"), "assistant", "cut", "user", "a human said stop"), "steady a human said stop"},
		{"no marker gets the fallback", conv(t, "user", "hello"), "in character"},
		{"past the end without Always gets the fallback", conv(t, "user", "SCENARIO:fixed", "assistant", "x", "user", toolResult("t", "y")), "in character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replyText(s.ReplyOr(tt.req, fallback)); got != tt.want {
				t.Errorf("reply %q, want %q", got, tt.want)
			}
			if got := replyText(s.HandlerOr(fallback)(context.Background(), tt.req)); got != tt.want {
				t.Errorf("handler reply %q, want %q", got, tt.want)
			}
		})
	}
	// Reply without a fallback still names the missing rule, for tests.
	if got := replyText(s.Reply(conv(t, "user", "SCENARIO:fixed", "assistant", "x", "user", toolResult("t", "y")))); !strings.HasPrefix(got, "fake: no rule for SCENARIO:fixed turn 1") {
		t.Errorf("Reply past the end: %q", got)
	}
}
