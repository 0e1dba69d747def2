package fakeapi

import (
	"encoding/json"
	"testing"
)

// structuredRequest parses a request offering the tools named, the
// StructuredOutput one with schema, holding messages given as role, content
// pairs (as conv).
func structuredRequest(t *testing.T, schema string, tools []string, msgs ...any) *Request {
	t.Helper()
	var list []map[string]any
	for i := 0; i < len(msgs); i += 2 {
		list = append(list, map[string]any{"role": msgs[i], "content": msgs[i+1]})
	}
	var defs []map[string]any
	for _, name := range tools {
		d := map[string]any{"name": name, "input_schema": map[string]any{"type": "object"}}
		if name == StructuredOutputTool {
			d["input_schema"] = json.RawMessage(schema)
		}
		defs = append(defs, d)
	}
	b, err := json.Marshal(map[string]any{"model": "m", "tools": defs, "messages": list})
	if err != nil {
		t.Fatal(err)
	}
	req, err := parseRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func structuredCall(id string, input any) []map[string]any {
	return []map[string]any{{"type": "tool_use", "id": id, "name": StructuredOutputTool, "input": input}}
}

func errorResult(id, content string) []map[string]any {
	return []map[string]any{{"type": "tool_result", "tool_use_id": id, "content": content, "is_error": true}}
}

func TestStructuredOutputIsOneCallOfTheToolWithTheObject(t *testing.T) {
	r := StructuredOutput(map[string]any{"answer": "yes"})
	if len(r.Blocks) != 1 {
		t.Fatalf("blocks = %+v, want one", r.Blocks)
	}
	b := r.Blocks[0]
	in, err := marshalInput(b.Input)
	if b.Type != "tool_use" || b.Name != "StructuredOutput" || err != nil || string(in) != `{"answer":"yes"}` {
		t.Errorf("block = %+v (input %s, %v)", b, in, err)
	}
	raw := StructuredOutputBlock(json.RawMessage(`{"a": 1}`))
	if in, err := marshalInput(raw.Input); err != nil || string(in) != `{"a":1}` {
		t.Errorf("a raw object is sent as is: %s, %v", in, err)
	}
}

func TestWantsStructuredReadsTheOfferedToolAndItsSchema(t *testing.T) {
	const schema = `{"type":"object","required":["answer"]}`
	with := structuredRequest(t, schema, []string{"Bash", StructuredOutputTool}, "user", "hi")
	if !with.WantsStructured() || string(with.StructuredSchema) != schema {
		t.Errorf("with the tool: wants %v, schema %s", with.WantsStructured(), with.StructuredSchema)
	}
	without := structuredRequest(t, "", []string{"Bash"}, "user", "hi")
	if without.WantsStructured() || without.StructuredSchema != nil {
		t.Errorf("without the tool: wants %v, schema %s", without.WantsStructured(), without.StructuredSchema)
	}
}

func TestStructuredFollowUpsAreTold(t *testing.T) {
	tools := []string{StructuredOutputTool}
	const complaint = "Output does not match required schema: root: must have required property 'n'"
	nudge := []map[string]any{{"type": "text", "text": StructuredNudge + " You MUST call the StructuredOutput tool to complete this request. Call this tool now."}}
	tests := []struct {
		name          string
		req           *Request
		nudged        bool
		wantComplaint string // "" for no rejection
	}{
		{"first request", structuredRequest(t, "{}", tools, "user", "PROMPT"), false, ""},
		{"after text", structuredRequest(t, "{}", tools, "user", "PROMPT", "assistant", "plain text", "user", nudge), true, ""},
		{"after text, a system entry last", structuredRequest(t, "{}", tools, "user", "PROMPT", "assistant", "plain text", "user", nudge,
			"system", "mid-conversation note"), true, ""},
		{"after a schema failure", structuredRequest(t, "{}", tools, "user", "PROMPT",
			"assistant", structuredCall("toolu_1", map[string]any{"answer": 5}), "user", errorResult("toolu_1", complaint)), false, complaint},
		{"after another tool's error", structuredRequest(t, "{}", tools, "user", "PROMPT",
			"assistant", toolCall("toolu_1"), "user", errorResult("toolu_1", "bash failed")), false, ""},
		{"after another tool's success", structuredRequest(t, "{}", tools, "user", "PROMPT",
			"assistant", toolCall("toolu_1"), "user", toolResult("toolu_1", "ok")), false, ""},
		{"an old rejection, then a new prompt", structuredRequest(t, "{}", tools, "user", "PROMPT",
			"assistant", structuredCall("toolu_1", map[string]any{}), "user", errorResult("toolu_1", complaint),
			"assistant", "gave up", "user", "NEXT PROMPT"), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.req.StructuredNudged(); got != tc.nudged {
				t.Errorf("StructuredNudged = %v, want %v", got, tc.nudged)
			}
			got, ok := tc.req.StructuredRejection()
			if ok != (tc.wantComplaint != "") || got != tc.wantComplaint {
				t.Errorf("StructuredRejection = %q, %v; want %q", got, ok, tc.wantComplaint)
			}
		})
	}
}
