package fakeapi

import "strings"

// How the Claude Code CLI takes structured output (--json-schema), as
// measured on CLI 2.1.332 (STRUCTURED.md has the whole record): it sends no
// output_format; it offers the model a tool, StructuredOutput, whose input
// schema is the schema given. The model answers by calling it. The CLI
// checks the input against the schema itself: a valid input ends the turn
// (no further request) with the result's structured_output set to it; an
// invalid one is answered with an error tool_result and the model is asked
// again, up to 5 attempts in all; a turn that ends in text without the call
// gets one nudge, a user message starting with StructuredNudge.

// StructuredOutputTool is the name of the tool through which the CLI takes
// structured output.
const StructuredOutputTool = "StructuredOutput"

// StructuredNudge starts the user message the CLI sends when the model ended
// its turn in text without calling StructuredOutputTool. The CLI nudges once:
// a second text answer ends the run without structured output.
const StructuredNudge = "[structured-output-enforce]"

// StructuredOutput returns the reply of a model that gives v (marshalled to
// JSON; a json.RawMessage as is) as its structured output: one call of
// StructuredOutputTool with v as its input. When v passes the schema, the
// CLI ends the turn on it without another request, and its result carries
// v as structured_output (and, as result text, v's compact JSON); when v
// fails the schema, the CLI's next request carries its complaint (see
// Request.StructuredRejection).
func StructuredOutput(v any) Reply { return NewReply(StructuredOutputBlock(v)) }

// StructuredOutputBlock is the tool_use block of StructuredOutput, to put
// beside text or a second call in one reply.
func StructuredOutputBlock(v any) ReplyBlock { return ToolUse("", StructuredOutputTool, v) }

// WantsStructured reports whether the request was made under --json-schema:
// it offers StructuredOutputTool. (The CLI sends output_format only in side
// queries of its own, never for --json-schema, so that field is no sign.)
func (r *Request) WantsStructured() bool {
	for _, t := range r.Tools {
		if t == StructuredOutputTool {
			return true
		}
	}
	return false
}

// StructuredNudged reports whether the request is the CLI asking again for
// structured output after the model answered in text: its last user message
// is the CLI's nudge (StructuredNudge).
func (r *Request) StructuredNudged() bool {
	m, ok := r.lastUser()
	if !ok {
		return false
	}
	for _, b := range m.Content {
		if b.Type == "text" && strings.HasPrefix(b.Text, StructuredNudge) {
			return true
		}
	}
	return false
}

// StructuredRejection returns the CLI's complaint when the request is the
// CLI asking again because the model's last StructuredOutputTool call failed
// the schema: the last user message holds an error tool_result answering
// that call ("Output does not match required schema: …" on CLI 2.1.332).
func (r *Request) StructuredRejection() (complaint string, ok bool) {
	m, ok := r.lastUser()
	if !ok {
		return "", false
	}
	calls := r.structuredCallIDs()
	for i := len(m.Content) - 1; i >= 0; i-- {
		b := m.Content[i]
		if b.Type == "tool_result" && calls[b.ToolUseID] {
			if b.IsError {
				return b.Content, true
			}
			return "", false
		}
	}
	return "", false
}

// lastUser returns the last message whose role is user (the CLI's
// mid-conversation role:"system" entries are skipped).
func (r *Request) lastUser() (Message, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i], true
		}
	}
	return Message{}, false
}

// structuredCallIDs are the ids of every StructuredOutputTool call the
// model made in the conversation.
func (r *Request) structuredCallIDs() map[string]bool {
	ids := map[string]bool{}
	for _, m := range r.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" && b.Name == StructuredOutputTool {
				ids[b.ID] = true
			}
		}
	}
	return ids
}
