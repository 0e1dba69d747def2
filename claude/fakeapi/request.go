package fakeapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Request is one POST /v1/messages as the server parsed it.
type Request struct {
	Model string
	// System holds the text of the system blocks (a string system prompt
	// gives one entry).
	System []string
	// Messages are the conversation so far, including the CLI's
	// mid-conversation role:"system" entries.
	Messages []Message
	// Tools are the names of the tools offered.
	Tools []string
	// StructuredSchema is the input schema of the StructuredOutput tool
	// when the request offers it: the schema given to --json-schema (see
	// WantsStructured).
	StructuredSchema json.RawMessage
	Stream           bool
	MaxTokens        int
	// Subagent reports a subagent's request: the CLI adds
	// cc_is_subagent=true to the first system block.
	Subagent bool
	Header   http.Header
	// Body is the raw request body.
	Body []byte
	// At is when the request arrived, on the prompt cache's clock when
	// the server prices with one (PriceWith).
	At time.Time
	// Usage is what the server reported for it (zero for a fault).
	Usage Usage
	// Err is why the body could not be parsed; the server then answered
	// 400 without calling the handler.
	Err error
}

// Message is one entry of the request's messages.
type Message struct {
	Role string
	// Content holds the blocks; a plain string content becomes one text block.
	Content []Block
}

// Block is one content block of a request message.
type Block struct {
	Type string
	// Text is a text block's text.
	Text string
	// ID, Name and Input describe a tool_use block.
	ID    string
	Name  string
	Input json.RawMessage
	// ToolUseID, Content and IsError describe a tool_result block. Content
	// is its text: a string content as is, a list of blocks as their
	// texts joined by newlines.
	ToolUseID string
	Content   string
	IsError   bool
	// Raw is the block as sent.
	Raw json.RawMessage
}

// parseRequest parses a request body. It always returns a Request holding
// the body, with the parts it could parse.
func parseRequest(body []byte) (*Request, error) {
	req := &Request{Body: body}
	var w struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Stream    bool `json:"stream"`
		MaxTokens int  `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		req.Err = fmt.Errorf("request body: %w", err)
		return req, req.Err
	}
	req.Model, req.Stream, req.MaxTokens = w.Model, w.Stream, w.MaxTokens
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, t.Name)
		if t.Name == StructuredOutputTool {
			req.StructuredSchema = t.InputSchema
		}
	}
	system, err := parseContent(w.System)
	if err != nil {
		req.Err = fmt.Errorf("system: %w", err)
		return req, req.Err
	}
	for _, b := range system {
		req.System = append(req.System, b.Text)
	}
	req.Subagent = len(req.System) > 0 && strings.Contains(req.System[0], "cc_is_subagent=true")
	for i, m := range w.Messages {
		blocks, err := parseContent(m.Content)
		if err != nil {
			req.Err = fmt.Errorf("messages[%d].content: %w", i, err)
			return req, req.Err
		}
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: blocks})
	}
	return req, nil
}

// parseContent parses a content field: absent, a string, or a list of blocks.
func parseContent(raw json.RawMessage) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Block{{Type: "text", Text: s, Raw: raw}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("want a string or a list of blocks")
	}
	blocks := make([]Block, 0, len(items))
	for i, item := range items {
		var w struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if err := json.Unmarshal(item, &w); err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
		b := Block{Type: w.Type, Text: w.Text, ID: w.ID, Name: w.Name, Input: w.Input,
			ToolUseID: w.ToolUseID, IsError: w.IsError, Raw: item}
		if w.Type == "tool_result" {
			inner, err := parseContent(w.Content)
			if err != nil {
				return nil, fmt.Errorf("block %d content: %w", i, err)
			}
			var texts []string
			for _, ib := range inner {
				if ib.Type == "text" {
					texts = append(texts, ib.Text)
				}
			}
			b.Content = strings.Join(texts, "\n")
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// isReminder reports a <system-reminder> block, which the CLI adds to user
// messages; it is never the user's prompt.
func isReminder(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

// promptText returns the prompt text of a user message: its text blocks
// other than system reminders, joined by newlines; ok is false when there
// are none (a message of tool results, say).
func promptText(m Message) (text string, ok bool) {
	if m.Role != "user" {
		return "", false
	}
	var texts []string
	for _, b := range m.Content {
		if b.Type == "text" && !isReminder(b.Text) {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), len(texts) > 0
}

// lastPrompt returns the index of the most recent user message whose prompt
// text satisfies match, and that text; -1 when there is none.
func (r *Request) lastPrompt(match func(string) bool) (int, string) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if text, ok := promptText(r.Messages[i]); ok && match(text) {
			return i, text
		}
	}
	return -1, ""
}

// assistantsAfter counts the assistant messages after index i.
func (r *Request) assistantsAfter(i int) int {
	n := 0
	for _, m := range r.Messages[i+1:] {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// LastUserText returns the prompt text of the most recent user message
// that has one: its text blocks other than tool results and
// <system-reminder> blocks, joined by newlines.
func (r *Request) LastUserText() string {
	_, text := r.lastPrompt(func(string) bool { return true })
	return text
}

// Turn returns the number of assistant messages after the last user
// prompt (see LastUserText): 0 for the model's first answer to a prompt,
// 1 after one tool round trip, and so on.
func (r *Request) Turn() int {
	i, _ := r.lastPrompt(func(string) bool { return true })
	return r.assistantsAfter(i)
}

// HasText reports whether substr occurs in any text block or tool_result
// content of any message.
func (r *Request) HasText(substr string) bool {
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if strings.Contains(b.Text, substr) || strings.Contains(b.Content, substr) {
				return true
			}
		}
	}
	return false
}

// ToolResults returns every tool_result block, in order.
func (r *Request) ToolResults() []Block {
	var out []Block
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
	}
	return out
}

// LastToolResult returns the last tool_result block, if any.
func (r *Request) LastToolResult() (Block, bool) {
	all := r.ToolResults()
	if len(all) == 0 {
		return Block{}, false
	}
	return all[len(all)-1], true
}
