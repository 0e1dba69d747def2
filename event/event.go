// Package event defines Event, the one thing every flower layer emits and a
// UI reads, and Normalize, which turns a Claude Code CLI message into events.
// A UI depends on this package only, never on the driver's message types, so
// a new CLI version changes Normalize and nothing downstream.
package event

import (
	"encoding/json"
	"time"
)

// Kind says what an Event is. There are seventeen; a UI switches on the ones it
// shows and keeps a default branch for the rest (and for kinds added later).
type Kind string

// The seventeen kinds. Normalize makes Text through Unknown; the others come
// from the layers above: Ask from the human channel, Retry, Handoff and Loop
// from the runtime, Step from the workflow, Verdict and Task also from the
// goal guard and the goal step.
const (
	// Text is the model's prose. Payload: subagent, parent_tool_use_id (for
	// a subagent), context (when the message reported usage), model, and
	// request (when the message has an id and usage: the model request's
	// id, input, output, cache_read and cache_creation tokens as the stream
	// reported them; one request's blocks share it).
	Text Kind = "text"
	// Thinking is the model's thinking. Payload as for Text.
	Thinking Kind = "thinking"
	// Prompt is input: a user turn's text (your prompt, a task brief sent to
	// a subagent). Payload: subagent, parent_tool_use_id.
	Prompt Kind = "prompt"
	// ToolCall is a tool call; Tool is its name and Text the first of the
	// input's file_path, command or pattern (at most 200 characters).
	// Payload: id, input, plus the message's subagent fields.
	ToolCall Kind = "tool_call"
	// ToolResult is a tool's result; Text is its content when that was a
	// string (at most 500 characters), else "". Payload: tool_use_id,
	// is_error, plus the message's subagent fields.
	ToolResult Kind = "tool_result"
	// Result ends a turn; Text is the result subtype. Payload: session_id,
	// cost_usd, num_turns, is_error, and when set tokens_in (input, cache
	// read and cache creation tokens of the turn), tokens_out,
	// terminal_reason, api_error_status, errors, and (for an error result)
	// result.
	Result Kind = "result"
	// Error is an API error the CLI dressed up as an assistant message; Text
	// is its prose. It is never prose of the model. Payload: synthetic (true),
	// error (the CLI's error class, when given), subagent.
	Error Kind = "error"
	// Reset says the conversation was compacted or cleared: Text is
	// "压缩(<trigger>) <pre> → <post> tokens" ("微压缩" for a micro
	// compaction) or "conversation reset". Payload: trigger, pre_tokens,
	// post_tokens, micro, subtype.
	Reset Kind = "reset"
	// System is any other system message; Text is its subtype and Payload the
	// message's fields. The runtime adds step (the run's label, e.g.
	// work#round2) and role (the agent spec's name) to a session's init. A rate_limit_event is a System event too, with
	// Payload status, resets_at (Unix seconds), rate_limit_type, utilization.
	System Kind = "system"
	// Task is a subagent task's lifecycle frame, with no text; Payload kind
	// is the subtype (task_started, task_progress, …) plus the task's fields.
	Task Kind = "task"
	// Unknown is a message type Normalize does not know; Text is the type.
	Unknown Kind = "unknown"
	// Ask is a question or a mail from the human channel.
	Ask Kind = "ask"
	// Retry is the runtime's note about a retry, an interrupt or a network
	// wait. Payload: step, attempt, and reason (interrupt, usage_limit,
	// offline) when it is no plain retry; an interrupt's words, when the
	// human gave some, in words.
	Retry Kind = "retry"
	// Step marks a workflow step's start. Payload: index, total, resumed,
	// woke, rounds (the step's attempts, 1 + its retries), and the run's
	// budget (when set), window and handoff_at (when handoffs are on).
	Step Kind = "step"
	// Handoff is the runtime's handoff progress; Payload phase is near,
	// writing or done.
	Handoff Kind = "handoff"
	// Loop says the loop guard refused a call because a thread kept making
	// it with the same result; Tool is the tool. Payload: step, agent_id
	// ("" for the main thread), subagent, tool, count (the loop's calls,
	// the refused one included).
	Loop Kind = "loop"
	// Verdict is the goal guard's ruling on a round; Text is its reason.
	// Payload: step (the guarded step), round, rounds (the step's total),
	// state (achieved, not_yet, unreachable; "" when the judge gave
	// no clear conclusion).
	Verdict Kind = "verdict"
)

// Kinds lists the seventeen kinds in the order above.
func Kinds() []Kind {
	return []Kind{Text, Thinking, Prompt, ToolCall, ToolResult, Result, Error, Reset,
		System, Task, Unknown, Ask, Retry, Step, Handoff, Loop, Verdict}
}

// Event is one thing that happened, in the form a UI shows and events.jsonl
// stores. It marshals to JSON as is; after a round trip through JSON the
// payload's numbers are float64, which Int and Float accept.
type Event struct {
	Kind Kind `json:"kind"`
	// Text is the event's one line of meaning; see each Kind.
	Text string `json:"text,omitempty"`
	// Tool is the tool's name, for ToolCall and Loop.
	Tool string `json:"tool,omitempty"`
	// Payload holds the kind's structured fields (JSON values only).
	Payload map[string]any `json:"payload,omitempty"`
	// Raw is the CLI message the event came from, exactly as sent; the
	// events of one message share it. Empty for events flower makes itself.
	// A log may drop it to stay small.
	Raw json.RawMessage `json:"raw,omitempty"`
	// Time is when the event was made (Normalize and New stamp it).
	Time time.Time `json:"time,omitzero"`
}

// New makes an event of kind with text and payload, stamped now. The layers
// above Normalize (runtime, workflow, human channel) make theirs with it.
func New(kind Kind, text string, payload map[string]any) Event {
	return Event{Kind: kind, Text: text, Payload: payload, Time: time.Now()}
}

// String is the event's one-line form: "[tool] text" for a tool call, else
// the text, else "<kind>".
func (e Event) String() string {
	if e.Kind == ToolCall {
		return "[" + e.Tool + "] " + e.Text
	}
	if e.Text != "" {
		return e.Text
	}
	return "<" + string(e.Kind) + ">"
}

// Subagent reports whether a subagent, not the main thread, produced the
// event (payload subagent).
func (e Event) Subagent() bool { return e.Bool("subagent") }

// Str returns payload key as a string, "" when absent or not a string.
func (e Event) Str(key string) string {
	s, _ := e.Payload[key].(string)
	return s
}

// Bool returns payload key as a bool, false when absent or not a bool.
func (e Event) Bool(key string) bool {
	b, _ := e.Payload[key].(bool)
	return b
}

// Int returns payload key as an int, whether it holds an int (as Normalize
// puts it) or a float64 (as JSON decoding gives it); 0 otherwise.
func (e Event) Int(key string) int {
	switch v := e.Payload[key].(type) {
	case int:
		return v
	case int64:
		return int(v)
	case float64:
		return int(v)
	case json.Number:
		n, _ := v.Int64()
		return int(n)
	}
	return 0
}

// Float returns payload key as a float64 (from any number type); 0 otherwise.
func (e Event) Float(key string) float64 {
	switch v := e.Payload[key].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case json.Number:
		f, _ := v.Float64()
		return f
	}
	return 0
}
