package claudetest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Real-CLI tests of structured output (--json-schema): what the fake must
// answer and what the CLI then prints. STRUCTURED.md in package fakeapi
// records the same facts in prose.

// verdictSchema is a small schema of the judge's kind: items with a status
// enum, a conclusion, nothing else.
const verdictSchema = `{"type":"object","properties":{` +
	`"items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"status":{"type":"string","enum":["passed","failed","not_run"]}},"required":["id","status"],"additionalProperties":false}},` +
	`"conclusion":{"type":"string","enum":["achieved","not_yet","unreachable"]}},` +
	`"required":["items","conclusion"],"additionalProperties":false}`

// verdict is an object that passes verdictSchema.
var verdict = map[string]any{
	"items":      []any{map[string]any{"id": "c1", "status": "passed"}, map[string]any{"id": "c2", "status": "failed"}},
	"conclusion": "not_yet",
}

// runStructured runs the real CLI with --json-schema verdictSchema against
// a fake answering the prompt SCENARIO:structured with turns.
func runStructured(t *testing.T, turns ...Responder) (cliRun, *Server) {
	t.Helper()
	srv := NewServer(t, Script{"SCENARIO:structured": turns}.Handler())
	return runCLIExit(t, srv, t.TempDir(), "SCENARIO:structured", "--json-schema", verdictSchema), srv
}

// sameJSON reports whether a and b decode to equal values.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	decode := func(v any) any {
		raw, ok := v.(string)
		if !ok {
			bs, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			raw = string(bs)
		}
		var out any
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return err
		}
		return out
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// toolResults are the tool_result blocks of the run's user lines.
func (r cliRun) toolResults() []map[string]any {
	var out []map[string]any
	for _, m := range r.lines {
		msg, _ := m["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			if b, ok := b.(map[string]any); ok && m["type"] == "user" && b["type"] == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

func TestCLIStructuredOutputEndsTheTurnOnTheFakesObject(t *testing.T) {
	t.Parallel()
	run, srv := runStructured(t, StructuredOutput(verdict))

	if run.exitErr != nil || run.result["subtype"] != "success" || run.result["is_error"] != false {
		t.Errorf("exit %v, subtype %v, is_error %v; want a success", run.exitErr, run.result["subtype"], run.result["is_error"])
	}
	if !sameJSON(t, run.result["structured_output"], verdict) {
		t.Errorf("structured_output = %v, want the fake's object %v", run.result["structured_output"], verdict)
	}
	// The result text is the object's JSON, not a text of the model's.
	if text, _ := run.result["result"].(string); !sameJSON(t, text, verdict) {
		t.Errorf("result = %q, want the object's JSON", text)
	}
	// The CLI accepts the call itself and asks the model nothing more.
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1: a valid call ends the turn", len(reqs))
	}
	r := reqs[0]
	if !r.WantsStructured() || !sameJSON(t, string(r.StructuredSchema), verdictSchema) {
		t.Errorf("request: WantsStructured %v, tool schema %s; want the --json-schema given", r.WantsStructured(), r.StructuredSchema)
	}
	if bytes.Contains(r.Body, []byte(`"output_format"`)) || r.StructuredNudged() {
		t.Error("the request carries output_format or a nudge; the CLI asks through the tool only")
	}
	if res := run.toolResults(); len(res) != 1 || res[0]["is_error"] == true {
		t.Errorf("tool results = %v; want the CLI's one acceptance", res)
	}
}

func TestCLIStructuredNudgesOnceWhenTheModelAnswersText(t *testing.T) {
	t.Parallel()
	t.Run("text twice ends without structured output", func(t *testing.T) {
		t.Parallel()
		run, srv := runStructured(t, Say("first text"), Say("second text"))
		reqs := srv.Requests()
		if len(reqs) != 2 || reqs[0].StructuredNudged() || !reqs[1].StructuredNudged() {
			t.Fatalf("want a first request and one nudged retry; got %d requests", len(reqs))
		}
		if _, ok := run.result["structured_output"]; ok || run.exitErr != nil {
			t.Errorf("structured_output present (%v) or exit %v; the CLI gives up quietly", run.result["structured_output"], run.exitErr)
		}
		if run.result["subtype"] != "success" || run.result["is_error"] != false || run.result["result"] != "second text" {
			t.Errorf("result: subtype %v is_error %v text %q; want a success carrying the last text",
				run.result["subtype"], run.result["is_error"], run.result["result"])
		}
	})
	t.Run("text then the call succeeds", func(t *testing.T) {
		t.Parallel()
		run, srv := runStructured(t, Say("first text"), StructuredOutput(verdict))
		if srv.Count() != 2 || !sameJSON(t, run.result["structured_output"], verdict) {
			t.Errorf("%d requests, structured_output %v; want the object after one nudge", srv.Count(), run.result["structured_output"])
		}
	})
}

func TestCLIStructuredRejectsInputFailingTheSchema(t *testing.T) {
	t.Parallel()
	bad := map[string]any{"items": []any{map[string]any{"id": "c1", "status": "done"}}}
	t.Run("five failures end in an error result", func(t *testing.T) {
		t.Parallel()
		run, srv := runStructured(t, Always(StructuredOutput(bad)))
		reqs := srv.Requests()
		if len(reqs) != 5 {
			t.Fatalf("server saw %d requests, want 5 attempts", len(reqs))
		}
		if _, ok := reqs[0].StructuredRejection(); ok {
			t.Error("the first request reads as a rejection")
		}
		for i, r := range reqs[1:] {
			if c, ok := r.StructuredRejection(); !ok || !strings.Contains(c, "does not match required schema") {
				t.Errorf("request %d: rejection %q, %v; want the CLI's schema complaint", i+2, c, ok)
			}
		}
		if run.exitErr == nil || run.result["subtype"] != "error_max_structured_output_retries" || run.result["is_error"] != true ||
			run.result["terminal_reason"] != "structured_output_retry_exhausted" {
			t.Errorf("exit %v, result %v; want the retries' error", run.exitErr, run.result)
		}
		if _, ok := run.result["structured_output"]; ok {
			t.Errorf("structured_output = %v after failed attempts", run.result["structured_output"])
		}
		if errs, _ := run.result["errors"].([]any); len(errs) != 1 || !strings.Contains(errs[0].(string), "5 attempts") {
			t.Errorf("errors = %v; want one naming the attempts", run.result["errors"])
		}
	})
	t.Run("a failure then a valid call", func(t *testing.T) {
		t.Parallel()
		run, srv := runStructured(t, StructuredOutput(bad), StructuredOutput(verdict))
		if srv.Count() != 2 || run.exitErr != nil || !sameJSON(t, run.result["structured_output"], verdict) {
			t.Errorf("%d requests, exit %v, structured_output %v; want the second call's object", srv.Count(), run.exitErr, run.result["structured_output"])
		}
	})
}

// Two calls in one reply are each answered, and no request follows: the
// result keeps the last one that passed the schema. So structured_output
// alone cannot tell a reader that the model gave two answers; the assistant
// lines can.
func TestCLIStructuredTwoCallsInOneReplyKeepTheLastValid(t *testing.T) {
	t.Parallel()
	other := map[string]any{"items": []any{}, "conclusion": "achieved"}
	invalid := map[string]any{"conclusion": "maybe"}
	for _, tc := range []struct {
		name        string
		first, then any
		want        any
	}{
		{"both valid", verdict, other, other},
		{"the second invalid", verdict, invalid, verdict},
		{"the first invalid", invalid, other, other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, srv := runStructured(t, NewReply(StructuredOutputBlock(tc.first), StructuredOutputBlock(tc.then)))
			if srv.Count() != 1 || run.exitErr != nil || !sameJSON(t, run.result["structured_output"], tc.want) {
				t.Errorf("%d requests, exit %v, structured_output %v; want %v", srv.Count(), run.exitErr, run.result["structured_output"], tc.want)
			}
			if res := run.toolResults(); len(res) != 2 {
				t.Errorf("tool results = %v; want both calls answered", res)
			}
		})
	}
}

// A PreToolUse hook sees StructuredOutput like any tool, and its deny
// blocks the answer: a guard that allows a role's tools by name must allow
// this one for a role that answers in structure.
func TestCLIStructuredOutputGoesThroughPreToolUseHooks(t *testing.T) {
	t.Parallel()
	hook := filepath.Join(t.TempDir(), "deny.sh")
	script := "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"NOT-ON-THE-LIST\"}}'\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"hooks":{"PreToolUse":[{"matcher":"","hooks":[{"type":"command","command":"` + hook + `"}]}]}}`
	srv := NewServer(t, Script{"SCENARIO:structured": {StructuredOutput(verdict), Always(Say("gave up"))}}.Handler())
	run := runCLIExit(t, srv, t.TempDir(), "SCENARIO:structured", "--json-schema", verdictSchema, "--settings", settings)

	res := run.toolResults()
	if len(res) == 0 || res[0]["is_error"] != true || !strings.Contains(res[0]["content"].(string), "NOT-ON-THE-LIST") {
		t.Errorf("first tool result = %v; want the hook's deny", res)
	}
	if _, ok := run.result["structured_output"]; ok {
		t.Errorf("structured_output = %v though the hook denied the call", run.result["structured_output"])
	}
}
