package event

import (
	"encoding/json"
	ilang "github.com/flowerrun/flower/internal/lang"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

func parse(t *testing.T, line string) claude.Message {
	t.Helper()
	m, err := claude.ParseMessage([]byte(line))
	if err != nil {
		t.Fatalf("ParseMessage(%s): %v", line, err)
	}
	return m
}

// strip drops what every event has but a table need not spell out: the
// time and the raw message.
func strip(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, e := range evs {
		e.Time, e.Raw = time.Time{}, nil
		out[i] = e
	}
	return out
}

func TestNormalizeFollowsTheEventTable(t *testing.T) {
	long := strings.Repeat("é", 600)
	main := map[string]any{"subagent": false}
	tests := []struct {
		name string
		line string
		want []Event
	}{
		{
			name: "main-thread text carries its context, model and request",
			line: `{"type":"assistant","message":{"id":"msg_1","model":"claude-opus-5-5","content":[{"type":"text","text":"FINAL: touch turn done."}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":28000,"cache_creation_input_tokens":700}},"parent_tool_use_id":null,"session_id":"s1","uuid":"u1"}`,
			want: []Event{{Kind: Text, Text: "FINAL: touch turn done.", Payload: map[string]any{"subagent": false, "context": 28703, "model": "claude-opus-5-5",
				"request": map[string]any{"id": "msg_1", "input": 3, "output": 9, "cache_read": 28000, "cache_creation": 700}}}},
		},
		{
			name: "subagent text names the Agent call",
			line: `{"type":"assistant","message":{"id":"msg_2","model":"claude-opus-5-5","content":[{"type":"text","text":"sub says"}]},"parent_tool_use_id":"toolu_agent","session_id":"s1","uuid":"u2"}`,
			want: []Event{{Kind: Text, Text: "sub says", Payload: map[string]any{"subagent": true, "parent_tool_use_id": "toolu_agent", "model": "claude-opus-5-5"}}},
		},
		{
			name: "thinking and a Bash call become two events",
			line: `{"type":"assistant","message":{"id":"msg_3","model":"m","content":[{"type":"thinking","thinking":"hmm","signature":"x"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"touch MARKER && echo touched","description":"Create marker"}}]},"parent_tool_use_id":null,"session_id":"s1","uuid":"u3"}`,
			want: []Event{
				{Kind: Thinking, Text: "hmm", Payload: map[string]any{"subagent": false, "model": "m"}},
				{Kind: ToolCall, Tool: "Bash", Text: "touch MARKER && echo touched", Payload: map[string]any{
					"id": "toolu_1", "input": map[string]any{"command": "touch MARKER && echo touched", "description": "Create marker"},
					"subagent": false, "model": "m"}},
			},
		},
		{
			name: "a tool call's text prefers file_path, then command, then pattern, cut at 200",
			line: `{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"Grep","input":{"pattern":"` + long + `","command":""}},{"type":"tool_use","id":"t2","name":"Read","input":{"command":"no","file_path":"/a/b.go"}},{"type":"tool_use","id":"t3","name":"TodoWrite","input":{"todos":[]}}]},"session_id":"s1"}`,
			want: []Event{
				{Kind: ToolCall, Tool: "Grep", Text: strings.Repeat("é", 200), Payload: map[string]any{"id": "t1", "input": map[string]any{"pattern": long, "command": ""}, "subagent": false, "model": "m"}},
				{Kind: ToolCall, Tool: "Read", Text: "/a/b.go", Payload: map[string]any{"id": "t2", "input": map[string]any{"command": "no", "file_path": "/a/b.go"}, "subagent": false, "model": "m"}},
				{Kind: ToolCall, Tool: "TodoWrite", Text: "", Payload: map[string]any{"id": "t3", "input": map[string]any{"todos": []any{}}, "subagent": false, "model": "m"}},
			},
		},
		{
			name: "a string tool result is kept up to 500 characters",
			line: `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"` + long + `","is_error":false}]},"parent_tool_use_id":null,"session_id":"s1","uuid":"u4","tool_use_result":{"stdout":"touched"}}`,
			want: []Event{{Kind: ToolResult, Text: strings.Repeat("é", 500), Payload: map[string]any{"tool_use_id": "toolu_1", "is_error": false, "subagent": false}}},
		},
		{
			name: "a block-list tool result has no text",
			line: `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_a","type":"tool_result","content":[{"type":"text","text":"[Subagent hand-back] done"}],"is_error":true}]},"parent_tool_use_id":"toolu_agent","session_id":"s1"}`,
			want: []Event{{Kind: ToolResult, Text: "", Payload: map[string]any{"tool_use_id": "toolu_a", "is_error": true, "subagent": true, "parent_tool_use_id": "toolu_agent"}}},
		},
		{
			name: "a user's string content is a prompt",
			line: `{"type":"user","message":{"role":"user","content":"SUBAGENT: build it"},"parent_tool_use_id":"toolu_agent","session_id":"s1"}`,
			want: []Event{{Kind: Prompt, Text: "SUBAGENT: build it", Payload: map[string]any{"subagent": true, "parent_tool_use_id": "toolu_agent"}}},
		},
		{
			name: "a user's text block is a prompt, never text",
			line: `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"do X"}]},"parent_tool_use_id":null,"session_id":"s1"}`,
			want: []Event{{Kind: Prompt, Text: "do X", Payload: main}},
		},
		{
			name: "a synthetic API error is one error event, never text",
			line: `{"type":"assistant","message":{"id":"m9","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: Can't reach the API server (ENOTFOUND)"}],"usage":{"input_tokens":0,"output_tokens":0}},"parent_tool_use_id":null,"session_id":"s1","error":"unknown"}`,
			want: []Event{{Kind: Error, Text: "API Error: Can't reach the API server (ENOTFOUND)", Payload: map[string]any{"synthetic": true, "error": "unknown", "subagent": false}}},
		},
		{
			name: "an error field alone marks a message synthetic",
			line: `{"type":"assistant","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"API Error: 429 rate limited"},{"type":"text","text":"again"}]},"parent_tool_use_id":null,"session_id":"s1","error":"rate_limit"}`,
			want: []Event{{Kind: Error, Text: "API Error: 429 rate limited\nagain", Payload: map[string]any{"synthetic": true, "error": "rate_limit", "subagent": false}}},
		},
		{
			name: "a result carries the books and the structured failure",
			line: `{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"terminal_reason":"api_error","result":"API Error: 500 fake error.","num_turns":2,"session_id":"s1","total_cost_usd":0.099988,"duration_ms":1,"duration_api_ms":1}`,
			want: []Event{{Kind: Result, Text: "success", Payload: map[string]any{
				"session_id": "s1", "cost_usd": 0.099988, "num_turns": 2, "is_error": true,
				"terminal_reason": "api_error", "api_error_status": 500, "result": "API Error: 500 fake error."}}},
		},
		{
			name: "a successful result does not repeat the text",
			line: `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Hello","session_id":"s1","total_cost_usd":0.01,"terminal_reason":"completed"}`,
			want: []Event{{Kind: Result, Text: "success", Payload: map[string]any{"session_id": "s1", "cost_usd": 0.01, "num_turns": 1, "is_error": false, "terminal_reason": "completed"}}},
		},
		{
			name: "a result with usage carries the turn's tokens in and out",
			line: `{"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"Hi","session_id":"s1","total_cost_usd":0.02,"usage":{"input_tokens":10,"output_tokens":42,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200}}`,
			want: []Event{{Kind: Result, Text: "success", Payload: map[string]any{"session_id": "s1", "cost_usd": 0.02, "num_turns": 1, "is_error": false, "tokens_in": 1210, "tokens_out": 42}}},
		},
		{
			name: "a turn-limit result lists its errors",
			line: `{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":5,"session_id":"s1","total_cost_usd":1.5,"terminal_reason":"max_turns","errors":["max turns reached"]}`,
			want: []Event{{Kind: Result, Text: "error_max_turns", Payload: map[string]any{"session_id": "s1", "cost_usd": 1.5, "num_turns": 5, "is_error": true, "terminal_reason": "max_turns", "errors": []string{"max turns reached"}}}},
		},
		{
			name: "a compaction is a reset with its numbers",
			line: `{"type":"system","subtype":"compact_boundary","session_id":"s1","compact_metadata":{"trigger":"auto","pre_tokens":167000,"post_tokens":12000}}`,
			want: []Event{{Kind: Reset, Text: "compaction(auto) 167000 → 12000 tokens", Payload: map[string]any{"trigger": "auto", "pre_tokens": 167000, "post_tokens": 12000, "micro": false, "subtype": "compact_boundary"}}},
		},
		{
			name: "a micro compaction says so, and unknown numbers show as ?",
			line: `{"type":"system","subtype":"microcompact_boundary","session_id":"s1","microcompactMetadata":{"trigger":"auto","preTokens":90000}}`,
			want: []Event{{Kind: Reset, Text: "micro-compaction(auto) 90000 → ? tokens", Payload: map[string]any{"trigger": "auto", "pre_tokens": 90000, "post_tokens": nil, "micro": true, "subtype": "microcompact_boundary"}}},
		},
		{
			name: "a conversation reset is a reset",
			line: `{"type":"conversation_reset","new_conversation_id":"c2","uuid":"u","session_id":"s1"}`,
			want: []Event{{Kind: Reset, Text: "conversation reset", Payload: map[string]any{"subtype": "conversation_reset", "new_conversation_id": "c2"}}},
		},
		{
			name: "a task frame is a task with no text",
			line: `{"type":"system","subtype":"task_started","task_id":"a5d4","description":"run tests","tool_use_id":"toolu_agent","task_type":"local_agent","session_id":"s1"}`,
			want: []Event{{Kind: Task, Payload: map[string]any{"kind": "task_started", "task_id": "a5d4", "description": "run tests", "tool_use_id": "toolu_agent", "task_type": "local_agent"}}},
		},
		{
			name: "a task notification is a task too",
			line: `{"type":"system","subtype":"task_notification","task_id":"a5d4","status":"completed","summary":"ok","output_file":"/tmp/o","session_id":"s1"}`,
			want: []Event{{Kind: Task, Payload: map[string]any{"kind": "task_notification", "task_id": "a5d4", "status": "completed", "summary": "ok", "output_file": "/tmp/o"}}},
		},
		{
			name: "another system message keeps its data",
			line: `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":600,"error_status":529,"error":"overloaded","session_id":"s1"}`,
			want: []Event{{Kind: System, Text: "api_retry", Payload: map[string]any{"type": "system", "subtype": "api_retry", "attempt": 1.0, "max_retries": 10.0, "retry_delay_ms": 600.0, "error_status": 529.0, "error": "overloaded", "session_id": "s1"}}},
		},
		{
			name: "a rate-limit event is a system event with its reset time",
			line: `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1790000000,"rateLimitType":"five_hour","utilization":1},"uuid":"u","session_id":"s1"}`,
			want: []Event{{Kind: System, Text: "rate_limit_event", Payload: map[string]any{"subtype": "rate_limit_event", "status": "rejected", "resets_at": int64(1790000000), "rate_limit_type": "five_hour", "utilization": 1.0, "session_id": "s1"}}},
		},
		{
			name: "an unknown type is unknown, named",
			line: `{"type":"brand_new_thing","x":1}`,
			want: []Event{{Kind: Unknown, Text: "brand_new_thing"}},
		},
		{
			name: "an unknown block is skipped",
			line: `{"type":"assistant","message":{"model":"m","content":[{"type":"advisor_tool_result","tool_use_id":"x","content":"y"},{"type":"text","text":"kept"}]},"session_id":"s1"}`,
			want: []Event{{Kind: Text, Text: "kept", Payload: map[string]any{"subagent": false, "model": "m"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parse(t, tt.line)
			got := Normalize(m)
			for _, e := range got {
				if e.Time.IsZero() {
					t.Errorf("%s event has no time", e.Kind)
				}
				if string(e.Raw) != string(m.RawJSON()) {
					t.Errorf("%s event's raw is not the message", e.Kind)
				}
			}
			if got := strip(got); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Normalize:\n got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestNormalizeMarksASyntheticMessageOnlyAsError(t *testing.T) {
	m := parse(t, `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: 500"},{"type":"tool_use","id":"t","name":"Bash","input":{}}]},"session_id":"s1"}`)
	evs := Normalize(m)
	if len(evs) != 1 || evs[0].Kind != Error || !evs[0].Bool("synthetic") {
		t.Fatalf("Normalize(synthetic) = %v, want exactly one synthetic error event", evs)
	}
}

func TestNormalizeOfNilIsNothing(t *testing.T) {
	if evs := Normalize(nil); len(evs) != 0 {
		t.Errorf("Normalize(nil) = %v", evs)
	}
}

func TestEventStringIsItsOneLineForm(t *testing.T) {
	tests := []struct {
		e    Event
		want string
	}{
		{Event{Kind: ToolCall, Tool: "Bash", Text: "ls"}, "[Bash] ls"},
		{Event{Kind: ToolCall, Tool: "TodoWrite"}, "[TodoWrite] "},
		{Event{Kind: Text, Text: "hello"}, "hello"},
		{Event{Kind: Task}, "<task>"},
		{Event{Kind: Result, Text: "success"}, "success"},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func TestEventsSurviveAJSONRoundTrip(t *testing.T) {
	m := parse(t, `{"type":"assistant","message":{"model":"m","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x"}}],"usage":{"input_tokens":10,"cache_read_input_tokens":5}},"parent_tool_use_id":null,"session_id":"s1"}`)
	e := Normalize(m)[0]
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	if back.Kind != ToolCall || back.Tool != "Read" || back.Text != "/x" || !back.Time.Equal(e.Time) {
		t.Errorf("round trip lost fields: %#v", back)
	}
	if back.Int("context") != 15 || e.Int("context") != 15 {
		t.Errorf("context = %d after, %d before; want 15", back.Int("context"), e.Int("context"))
	}
	if back.Subagent() || back.Str("id") != "t1" {
		t.Errorf("payload accessors: subagent %v id %q", back.Subagent(), back.Str("id"))
	}
	if string(back.Raw) != string(m.RawJSON()) {
		t.Errorf("raw changed: %s", back.Raw)
	}
}

func TestPayloadAccessorsAcceptEveryNumberForm(t *testing.T) {
	e := Event{Payload: map[string]any{"a": 3, "b": 3.9, "c": int64(7), "d": json.Number("12"), "s": "x", "t": true}}
	if e.Int("a") != 3 || e.Int("b") != 3 || e.Int("c") != 7 || e.Int("d") != 12 || e.Int("s") != 0 || e.Int("missing") != 0 {
		t.Error("Int accessor")
	}
	if e.Float("a") != 3 || e.Float("b") != 3.9 || e.Float("c") != 7 || e.Float("d") != 12 || e.Float("s") != 0 {
		t.Error("Float accessor")
	}
	if e.Str("s") != "x" || e.Str("a") != "" || !e.Bool("t") || e.Bool("s") {
		t.Error("Str/Bool accessors")
	}
}

func TestThereAreSixteenDistinctKinds(t *testing.T) {
	seen := map[Kind]bool{}
	for _, k := range Kinds() {
		seen[k] = true
	}
	if len(Kinds()) != 17 || len(seen) != 17 {
		t.Errorf("Kinds() = %v, want 17 distinct kinds", Kinds())
	}
}

func TestNewStampsTheTime(t *testing.T) {
	before := time.Now()
	e := New(Retry, "第 1 次失败(transient),准备重试", map[string]any{"step": "干活", "attempt": 1})
	if e.Time.Before(before) || e.Kind != Retry || e.Int("attempt") != 1 {
		t.Errorf("New = %#v", e)
	}
}

func TestNormalizeInWritesItsOwnWordsInTheLanguage(t *testing.T) {
	m := parse(t, `{"type":"system","subtype":"compact_boundary","session_id":"s1","compact_metadata":{"trigger":"manual","pre_tokens":5000,"post_tokens":900}}`)
	for lang, want := range map[ilang.Lang]string{
		"":      "compaction(manual) 5000 → 900 tokens",
		"zh":    "压缩(manual) 5000 → 900 tokens",
		"en":    "compaction(manual) 5000 → 900 tokens",
		"en-US": "compaction(manual) 5000 → 900 tokens",
	} {
		if evs := NormalizeIn(lang, m); len(evs) != 1 || evs[0].Text != want {
			t.Errorf("NormalizeIn(%q) = %+v, want %q", lang, evs, want)
		}
	}
	micro := parse(t, `{"type":"system","subtype":"microcompact_boundary","session_id":"s1","microcompactMetadata":{"trigger":"auto","preTokens":90000}}`)
	if evs := NormalizeIn("en", micro); len(evs) != 1 || evs[0].Text != "micro-compaction(auto) 90000 → ? tokens" {
		t.Errorf("micro: %+v", evs)
	}
}
