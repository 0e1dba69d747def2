package flower

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
)

// TestRealAWakeWhoseSessionHoldsNoConversationStartsTheStepAnew: the last
// run's process was killed before the CLI wrote the step's conversation
// (the store holds the session's first line, a queue entry, and nothing
// said), so the CLI finds no conversation to resume. The step starts a new
// session with its own prompt, once, and says so; before, it failed with
// "No conversation found" on this wake and on every later one (seen in
// CI: TestResumeRunCarriesTheRunOnWithoutAddingItsRequestToTheBrief).
func TestRealAWakeWhoseSessionHoldsNoConversationStartsTheStepAnew(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{
		"WORK-ON-IT": {claudetest.Always(claudetest.Say("worked"))},
		"CARRY-ON":   {claudetest.Always(claudetest.Say("carried"))},
	}.Handler())
	rt := newTestRuntime(t, srv, WithLanguage(English))
	sid := "6d1b0f1e-2a4c-4c39-9a53-7c1f2f0a9b11"
	line, _ := json.Marshal(map[string]any{"type": "queue-operation", "operation": "enqueue",
		"timestamp": "2026-12-01T10:00:00.000Z", "sessionId": sid, "content": "WORK-ON-IT"})
	if err := rt.Store().Append(runCtx(t), claude.SessionKey{ProjectKey: rt.ProjectKey(), SessionID: sid}, []json.RawMessage{line}); err != nil {
		t.Fatal(err)
	}
	if err := OpenLineage(rt.RunDir(), rt.Workspace()).Remember("work", sid); err != nil {
		t.Fatal(err)
	}
	var notices []string
	wf := &Workflow{Steps: []Step{{Name: "work", Spec: testSpec(), Prompt: Text("WORK-ON-IT"), ResumePrompt: Text("CARRY-ON")}}}
	c, err := wf.Run(runCtx(t), rt, func(e Event) {
		if e.Payload["lineage"] != nil {
			notices = append(notices, e.Text)
		}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if step, failed := c.FailedAt(); failed {
		r, _ := c.Result(step)
		t.Fatalf("the step failed: %s", r.Error)
	}
	if r, _ := c.Result("work"); r.Text != "worked" {
		t.Errorf("the step's reply %q, want the new session's %q", r.Text, "worked")
	}
	if !strings.Contains(strings.Join(notices, "\n"), "holds no conversation the CLI can continue") {
		t.Errorf("the person is not told the step starts anew: %q", notices)
	}
	if sid2, _ := OpenLineage(rt.RunDir(), rt.Workspace()).Session("work"); sid2 == "" || sid2 == sid {
		t.Errorf("the lineage keeps %q, want the new session", sid2)
	}
}
