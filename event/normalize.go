package event

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude"
	ilang "github.com/flowerrun/flower/internal/lang"
)

// Limits of the one-line texts, in characters (runes).
const (
	toolCallTextMax   = 200
	toolResultTextMax = 500
)

// Normalize turns one CLI message into zero or more events, stamped now:
//
//   - an assistant message gives one event per text, thinking and tool block
//     (Text, Thinking, ToolCall); a user message gives Prompt for its text
//     and ToolResult for its tool results. Both carry subagent (and
//     parent_tool_use_id) so a consumer can keep the main thread apart, and
//     context (input + cache read + cache creation tokens) when the message
//     reported usage: the one handoff criterion.
//   - a synthetic assistant message (an API error the CLI dressed up as the
//     model's reply) gives exactly one Error event and never Text, so an
//     error can never reach a step's text or the next step's prompt.
//   - a result gives Result; compact_boundary, microcompact_boundary and
//     conversation_reset give Reset; system/task_* give Task; any other
//     system message and rate_limit_event give System; anything else gives
//     Unknown with the type as its text.
//
// Unknown content blocks are skipped.
//
// The one text Normalize writes itself, the compaction label, is in the
// zero Lang's language, English; NormalizeIn chooses the language.
func Normalize(m claude.Message) []Event { return NormalizeIn("", m) }

// labels are the words Normalize writes itself.
type labels struct{ compact, micro string }

// NormalizeIn is Normalize with its own words in lang (flower.Lang):
// Chinese for "zh" ("压缩(auto) …"), English for anything else.
func NormalizeIn(lang ilang.Lang, m claude.Message) []Event {
	l := labels{compact: "compaction", micro: "micro-compaction"}
	if lang.IsChinese() {
		l = labels{compact: "压缩", micro: "微压缩"}
	}
	evs := normalize(m, l)
	now := time.Now()
	for i := range evs {
		evs[i].Time = now
	}
	return evs
}

func normalize(m claude.Message, l labels) []Event {
	switch m := m.(type) {
	case *claude.AssistantMessage:
		if m.Synthetic() {
			return []Event{syntheticError(m)}
		}
		meta := threadMeta(m.ParentToolUseID)
		if m.Usage != nil {
			meta["context"] = m.Usage.Context()
		}
		if m.Model != "" {
			meta["model"] = m.Model
		}
		if req := requestOf(m.Raw); req != nil {
			meta["request"] = req
		}
		return blockEvents(m.Content, Text, meta, m.Raw)
	case *claude.UserMessage:
		meta := threadMeta(m.ParentToolUseID)
		if m.Content == nil {
			return []Event{{Kind: Prompt, Text: m.Text, Payload: meta, Raw: m.Raw}}
		}
		return blockEvents(m.Content, Prompt, meta, m.Raw)
	case *claude.ResultMessage:
		return []Event{resultEvent(m)}
	case *claude.SystemMessage:
		return []Event{systemEvent(m, l)}
	case *claude.RateLimitEvent:
		return []Event{{Kind: System, Text: "rate_limit_event", Payload: map[string]any{
			"subtype":         "rate_limit_event",
			"status":          m.Info.Status,
			"resets_at":       m.Info.ResetsAt,
			"rate_limit_type": m.Info.RateLimitType,
			"utilization":     m.Info.Utilization,
			"session_id":      m.SessionID,
		}, Raw: m.Raw}}
	case *claude.StreamEvent:
		return []Event{{Kind: Unknown, Text: "stream_event", Raw: m.Raw}}
	case *claude.UnknownMessage:
		if m.Type == "conversation_reset" {
			return []Event{conversationReset(m.Raw)}
		}
		return []Event{{Kind: Unknown, Text: m.Type, Raw: m.Raw}}
	case nil:
		return nil
	}
	return []Event{{Kind: Unknown, Text: fmt.Sprintf("%T", m), Raw: m.RawJSON()}}
}

// threadMeta is the payload every event of an assistant or user message
// carries: whether a subagent produced it, and which Agent call if so.
func threadMeta(parent string) map[string]any {
	meta := map[string]any{"subagent": parent != ""}
	if parent != "" {
		meta["parent_tool_use_id"] = parent
	}
	return meta
}

// requestOf is the model request an assistant message records, for a
// consumer that follows requests (a trace, metrics) and may only have
// events.jsonl, which drops Raw: its message id (the CLI writes one
// message's blocks as several messages sharing it, so count a request once
// per id) and its token counts as the stream reported them. The CLI sends
// a block before the request has ended, so its output count may fall
// short of the final one (no cost is derived from it): a turn's Result
// holds the turn's true totals. nil when the message carries no id or no
// usage.
func requestOf(raw json.RawMessage) map[string]any {
	r, ok := claude.ReadTranscriptRequest(raw)
	if !ok {
		return nil
	}
	u := r.Usage
	return map[string]any{
		"id": r.MessageID, "input": u.InputTokens, "output": u.OutputTokens,
		"cache_read": u.CacheReadInputTokens, "cache_creation": u.CacheCreationInputTokens,
	}
}

func syntheticError(m *claude.AssistantMessage) Event {
	text := m.Text()
	if text == "" {
		text = m.Error
	}
	p := threadMeta(m.ParentToolUseID)
	p["synthetic"] = true
	if m.Error != "" {
		p["error"] = m.Error
	}
	return Event{Kind: Error, Text: text, Payload: p, Raw: m.Raw}
}

// blockEvents makes one event per content block; text blocks become
// textKind (Text for the model, Prompt for a user turn).
func blockEvents(blocks []claude.ContentBlock, textKind Kind, meta map[string]any, raw json.RawMessage) []Event {
	var out []Event
	for _, b := range blocks {
		var e Event
		switch b := b.(type) {
		case *claude.TextBlock:
			e = Event{Kind: textKind, Text: b.Text}
		case *claude.ThinkingBlock:
			e = Event{Kind: Thinking, Text: b.Thinking}
		case *claude.ToolUseBlock:
			e = toolCall(b.ID, b.Name, b.Input)
		case *claude.ServerToolUseBlock:
			e = toolCall(b.ID, b.Name, b.Input)
			e.Payload["server"] = true
		case *claude.ToolResultBlock:
			var s string
			if json.Unmarshal(b.Content, &s) != nil {
				s = ""
			}
			e = Event{Kind: ToolResult, Text: truncate(s, toolResultTextMax), Payload: map[string]any{
				"tool_use_id": b.ToolUseID,
				"is_error":    b.IsError,
			}}
		default:
			continue
		}
		if e.Payload == nil {
			e.Payload = make(map[string]any, len(meta))
		}
		for k, v := range meta {
			e.Payload[k] = v
		}
		e.Raw = raw
		out = append(out, e)
	}
	return out
}

func toolCall(id, name string, input json.RawMessage) Event {
	var in any
	if len(input) > 0 && json.Unmarshal(input, &in) != nil {
		in = nil
	}
	summary := ""
	if obj, ok := in.(map[string]any); ok {
		for _, k := range []string{"file_path", "command", "pattern"} {
			if s := summaryOf(obj[k]); s != "" {
				summary = s
				break
			}
		}
	} else {
		in = map[string]any{}
	}
	return Event{Kind: ToolCall, Text: truncate(summary, toolCallTextMax), Tool: name,
		Payload: map[string]any{"id": id, "input": in}}
}

// summaryOf renders an input value for the one-line summary: strings as
// they are, other non-empty values as JSON.
func summaryOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if !v {
			return ""
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

func resultEvent(m *claude.ResultMessage) Event {
	p := map[string]any{
		"session_id": m.SessionID,
		"cost_usd":   m.TotalCostUSD,
		"num_turns":  m.NumTurns,
		"is_error":   m.IsError,
	}
	if u := m.Usage; u != nil {
		p["tokens_in"], p["tokens_out"] = u.Context(), u.OutputTokens
	}
	if m.TerminalReason != "" {
		p["terminal_reason"] = m.TerminalReason
	}
	if m.APIErrorStatus != 0 {
		p["api_error_status"] = m.APIErrorStatus
	}
	if len(m.Errors) > 0 {
		p["errors"] = append([]string(nil), m.Errors...)
	}
	if m.IsError && m.Result != "" {
		p["result"] = m.Result
	}
	return Event{Kind: Result, Text: m.Subtype, Payload: p, Raw: m.Raw}
}

func systemEvent(m *claude.SystemMessage, l labels) Event {
	switch {
	case m.Subtype == "compact_boundary" || m.Subtype == "microcompact_boundary":
		return compactReset(m, l)
	case m.Subtype == "conversation_reset":
		return conversationReset(m.Raw)
	case strings.HasPrefix(m.Subtype, "task_"):
		p := map[string]any{"kind": m.Subtype}
		if t := m.Task; t != nil {
			for k, v := range map[string]string{
				"task_id": t.TaskID, "task_type": t.TaskType, "description": t.Description,
				"tool_use_id": t.ToolUseID, "status": t.Status, "summary": t.Summary,
				"output_file": t.OutputFile,
			} {
				if v != "" {
					p[k] = v
				}
			}
		}
		return Event{Kind: Task, Payload: p, Raw: m.Raw}
	}
	var data map[string]any
	if json.Unmarshal(m.Raw, &data) != nil || data == nil {
		data = map[string]any{"subtype": m.Subtype}
	}
	return Event{Kind: System, Text: m.Subtype, Payload: data, Raw: m.Raw}
}

// compactReset reads the compaction's metadata from the raw message, under
// the snake_case or camelCase names the CLI has used.
func compactReset(m *claude.SystemMessage, l labels) Event {
	var w map[string]json.RawMessage
	_ = json.Unmarshal(m.Raw, &w)
	var meta map[string]any
	for _, k := range []string{"compact_metadata", "compactMetadata", "microcompact_metadata", "microcompactMetadata"} {
		if json.Unmarshal(w[k], &meta) == nil && meta != nil {
			break
		}
	}
	pick := func(keys ...string) any {
		for _, k := range keys {
			if v, ok := meta[k]; ok && v != nil {
				return v
			}
		}
		return nil
	}
	trigger, _ := pick("trigger").(string)
	if trigger == "" {
		trigger = "?"
	}
	pre, post := tokens(pick("pre_tokens", "preTokens")), tokens(pick("post_tokens", "postTokens"))
	micro := strings.HasPrefix(m.Subtype, "micro")
	word := l.compact
	if micro {
		word = l.micro
	}
	return Event{
		Kind: Reset,
		Text: fmt.Sprintf("%s(%s) %s → %s tokens", word, trigger, tokenText(pre), tokenText(post)),
		Payload: map[string]any{
			"trigger": trigger, "pre_tokens": pre, "post_tokens": post,
			"micro": micro, "subtype": m.Subtype,
		},
		Raw: m.Raw,
	}
}

// tokens turns a decoded JSON number into an int; anything else is nil
// (unknown).
func tokens(v any) any {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	return nil
}

func tokenText(v any) string {
	if n, ok := v.(int); ok {
		return fmt.Sprint(n)
	}
	return "?"
}

func conversationReset(raw json.RawMessage) Event {
	var w struct {
		NewConversationID string `json:"new_conversation_id"`
	}
	_ = json.Unmarshal(raw, &w)
	p := map[string]any{"subtype": "conversation_reset"}
	if w.NewConversationID != "" {
		p["new_conversation_id"] = w.NewConversationID
	}
	return Event{Kind: Reset, Text: "conversation reset", Payload: p, Raw: raw}
}

// truncate keeps the first n characters of s.
func truncate(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
