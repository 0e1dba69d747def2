package claude

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Message is one message the CLI emitted: *SystemMessage, *AssistantMessage,
// *UserMessage, *ResultMessage, *StreamEvent, *RateLimitEvent, or
// *UnknownMessage for types this driver does not know (new ones appear
// often; skip them).
type Message interface {
	// RawJSON is the message exactly as the CLI sent it.
	RawJSON() json.RawMessage
}

// Usage counts the tokens of one API call (or a cumulative total).
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// Context is the size of the context the call read: input plus cache read
// plus cache creation tokens.
func (u Usage) Context() int {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
}

// SystemMessage is a system/<subtype> message. Exactly one of the typed
// fields is set for the subtypes the driver knows; Raw has everything.
type SystemMessage struct {
	Subtype   string
	SessionID string
	UUID      string

	Init        *SystemInit      // init
	Task        *TaskEvent       // task_started, task_progress, task_notification, task_updated
	Compact     *CompactBoundary // compact_boundary
	Status      *StatusUpdate    // status
	APIRetry    *APIRetry        // api_retry
	MirrorError *MirrorError     // mirror_error (made by the driver)

	Raw json.RawMessage
}

// SystemInit opens each session or batch of turns.
type SystemInit struct {
	Cwd               string   `json:"cwd"`
	SessionID         string   `json:"session_id"`
	Model             string   `json:"model"`
	PermissionMode    string   `json:"permissionMode"`
	APIKeySource      string   `json:"apiKeySource"`
	ClaudeCodeVersion string   `json:"claude_code_version"`
	Tools             []string `json:"tools"`
	Agents            []string `json:"agents"`
	MCPServers        []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	SlashCommands []string `json:"slash_commands"`
}

// TaskEvent is a subagent or workflow task's lifecycle frame.
type TaskEvent struct {
	TaskID      string          `json:"task_id"`
	TaskType    string          `json:"task_type"`
	Description string          `json:"description"`
	ToolUseID   string          `json:"tool_use_id"`
	Status      string          `json:"status"` // task_notification
	Summary     string          `json:"summary"`
	OutputFile  string          `json:"output_file"`
	Patch       json.RawMessage `json:"patch"` // task_updated
	Usage       json.RawMessage `json:"usage"`
	// Backgrounded is task_started's is_backgrounded (CLI 2.1.310 and
	// later): false for a subagent the model waits for; nil when the CLI
	// does not say.
	Backgrounded *bool `json:"is_backgrounded"`
}

// CompactBoundary marks a successful compaction.
type CompactBoundary struct {
	Trigger    string `json:"trigger"`
	PreTokens  int    `json:"pre_tokens"`
	PostTokens int    `json:"post_tokens"`
}

// StatusUpdate reports compaction progress (and "requesting" with partial
// messages). CompactResult "failed" means a compaction failed even when the
// turn's result says success.
type StatusUpdate struct {
	Status        *string `json:"status"`
	CompactResult string  `json:"compact_result"`
	CompactError  string  `json:"compact_error"`
}

// APIRetry reports one of the CLI's own API retries.
type APIRetry struct {
	Attempt      int    `json:"attempt"`
	MaxRetries   int    `json:"max_retries"`
	RetryDelayMS int    `json:"retry_delay_ms"`
	ErrorStatus  int    `json:"error_status"`
	Error        string `json:"error"`
}

// MirrorError reports transcript entries the session store did not take:
// refused at every attempt during the session and again when re-sent after
// the turn. It comes once per transcript, before the stream ends. The
// entries are not in the store (a later store-backed resume lacks them);
// the CLI's local transcript still has them, and on a store-backed resume
// the driver keeps that temporary directory (without its credentials).
type MirrorError struct {
	Error string     `json:"error"`
	Key   SessionKey `json:"key"`
	// Lost is the number of entries missing from the store.
	Lost int `json:"lost"`
	// Transcript is the CLI's local transcript file that holds them.
	Transcript string `json:"transcript"`
}

// AssistantMessage is one content block (or several) of a model reply.
type AssistantMessage struct {
	ID         string
	Model      string
	Content    []ContentBlock
	StopReason string
	Usage      *Usage
	// ParentToolUseID is the Agent tool_use id when a subagent produced it.
	ParentToolUseID string
	SessionID       string
	UUID            string
	// Error is set on synthetic API-error messages (rate_limit,
	// server_error, authentication_failed, …).
	Error string
	// Aborted marks a reply cut short by an interrupt.
	Aborted bool
	Raw     json.RawMessage
}

// Synthetic reports whether the CLI made this message up to carry an API
// error rather than the model writing it.
func (m *AssistantMessage) Synthetic() bool {
	return m.Error != "" || m.Model == "<synthetic>"
}

// Text joins the message's text blocks.
func (m *AssistantMessage) Text() string {
	var b bytes.Buffer
	for _, c := range m.Content {
		if t, ok := c.(*TextBlock); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// UserMessage is a user turn: a prompt, or tool results.
type UserMessage struct {
	// Text is set when the content was a plain string.
	Text string
	// Content holds the blocks when the content was a list.
	Content         []ContentBlock
	ParentToolUseID string
	SessionID       string
	UUID            string
	// ToolUseResult is the tool's structured output (Bash: stdout, stderr,
	// interrupted, …).
	ToolUseResult json.RawMessage
	Raw           json.RawMessage
}

// ResultMessage ends every turn. IsError is the failure flag: API failures
// come with Subtype "success" and IsError true.
type ResultMessage struct {
	Subtype       string
	IsError       bool
	DurationMS    int64
	DurationAPIMS int64
	NumTurns      int
	Result        string
	SessionID     string
	TotalCostUSD  float64
	Usage         *Usage
	// ModelUsage is cumulative per model; use it (or TotalCostUSD) for cost.
	ModelUsage        map[string]ModelUsage
	PermissionDenials []json.RawMessage
	StopReason        string
	// TerminalReason: completed, max_turns, aborted_streaming,
	// aborted_tools, prompt_too_long, blocking_limit, api_error,
	// budget_exhausted, …
	TerminalReason string
	// APIErrorStatus is the HTTP status of the failing call, 0 if none.
	APIErrorStatus   int
	Errors           []string
	StructuredOutput json.RawMessage
	UUID             string
	Raw              json.RawMessage
}

// Interrupted reports whether the turn was cut short by an interrupt.
func (r *ResultMessage) Interrupted() bool {
	return r.TerminalReason == "aborted_streaming" || r.TerminalReason == "aborted_tools"
}

// ModelUsage is one model's cumulative usage and cost.
type ModelUsage struct {
	InputTokens              int     `json:"inputTokens"`
	OutputTokens             int     `json:"outputTokens"`
	CacheReadInputTokens     int     `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int     `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int     `json:"contextWindow"`
	MaxOutputTokens          int     `json:"maxOutputTokens"`
}

// StreamEvent is a raw API stream event (with IncludePartialMessages).
type StreamEvent struct {
	UUID            string
	SessionID       string
	Event           json.RawMessage
	ParentToolUseID string
	Raw             json.RawMessage
}

// RateLimitEvent reports a rate-limit status change.
type RateLimitEvent struct {
	Info      RateLimitInfo
	UUID      string
	SessionID string
	Raw       json.RawMessage
}

// RateLimitInfo: Status is allowed, allowed_warning or rejected; ResetsAt is
// in Unix seconds.
type RateLimitInfo struct {
	Status        string  `json:"status"`
	ResetsAt      int64   `json:"resetsAt"`
	RateLimitType string  `json:"rateLimitType"`
	Utilization   float64 `json:"utilization"`
}

// UnknownMessage is a message type this driver does not know.
type UnknownMessage struct {
	Type string
	Raw  json.RawMessage
}

func (m *SystemMessage) RawJSON() json.RawMessage    { return m.Raw }
func (m *AssistantMessage) RawJSON() json.RawMessage { return m.Raw }
func (m *UserMessage) RawJSON() json.RawMessage      { return m.Raw }
func (m *ResultMessage) RawJSON() json.RawMessage    { return m.Raw }
func (m *StreamEvent) RawJSON() json.RawMessage      { return m.Raw }
func (m *RateLimitEvent) RawJSON() json.RawMessage   { return m.Raw }
func (m *UnknownMessage) RawJSON() json.RawMessage   { return m.Raw }

// ContentBlock is one block of message content: *TextBlock,
// *ThinkingBlock, *ToolUseBlock, *ToolResultBlock, *ServerToolUseBlock or
// *UnknownBlock.
type ContentBlock interface{ blockType() string }

type TextBlock struct {
	Text string `json:"text"`
}

type ThinkingBlock struct {
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type ToolUseBlock struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// ToolResultBlock's Content is a string or a list of blocks, kept raw;
// ContentText gives its text.
type ToolResultBlock struct {
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ServerToolUseBlock is a tool the API runs (web search, web fetch, …).
type ServerToolUseBlock struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// UnknownBlock keeps a block type this driver does not know.
type UnknownBlock struct {
	Type string
	Raw  json.RawMessage
}

func (*TextBlock) blockType() string          { return "text" }
func (*ThinkingBlock) blockType() string      { return "thinking" }
func (*ToolUseBlock) blockType() string       { return "tool_use" }
func (*ToolResultBlock) blockType() string    { return "tool_result" }
func (*ServerToolUseBlock) blockType() string { return "server_tool_use" }
func (b *UnknownBlock) blockType() string     { return b.Type }

// ContentText is the result's text: the string content, or its text
// blocks joined by newlines.
func (b *ToolResultBlock) ContentText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(b.Content, &blocks) != nil {
		return ""
	}
	var out bytes.Buffer
	for _, x := range blocks {
		if x.Type == "text" {
			if out.Len() > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(x.Text)
		}
	}
	return out.String()
}

// ParseMessage decodes one stdout line that is not a control or mirror
// frame. Unknown types give an *UnknownMessage; a known type missing its
// required fields is an error.
func ParseMessage(line []byte) (Message, error) {
	raw := json.RawMessage(bytes.Clone(line))
	var head struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch head.Type {
	case "system":
		return parseSystem(raw, head.Subtype)
	case "assistant":
		return parseAssistant(raw)
	case "user":
		return parseUser(raw)
	case "result":
		return parseResult(raw)
	case "stream_event":
		var w struct {
			UUID            string          `json:"uuid"`
			SessionID       string          `json:"session_id"`
			Event           json.RawMessage `json:"event"`
			ParentToolUseID *string         `json:"parent_tool_use_id"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		return &StreamEvent{UUID: w.UUID, SessionID: w.SessionID, Event: w.Event, ParentToolUseID: deref(w.ParentToolUseID), Raw: raw}, nil
	case "rate_limit_event":
		var w struct {
			Info      RateLimitInfo `json:"rate_limit_info"`
			UUID      string        `json:"uuid"`
			SessionID string        `json:"session_id"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, err
		}
		return &RateLimitEvent{Info: w.Info, UUID: w.UUID, SessionID: w.SessionID, Raw: raw}, nil
	}
	return &UnknownMessage{Type: head.Type, Raw: raw}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func parseSystem(raw json.RawMessage, subtype string) (*SystemMessage, error) {
	if subtype == "" {
		return nil, fmt.Errorf("system message without subtype")
	}
	var w struct {
		SessionID string `json:"session_id"`
		UUID      string `json:"uuid"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	m := &SystemMessage{Subtype: subtype, SessionID: w.SessionID, UUID: w.UUID, Raw: raw}
	var err error
	switch subtype {
	case "init":
		m.Init = new(SystemInit)
		err = json.Unmarshal(raw, m.Init)
	case "task_started", "task_progress", "task_notification", "task_updated":
		m.Task = new(TaskEvent)
		err = json.Unmarshal(raw, m.Task)
	case "compact_boundary":
		var w struct {
			Meta CompactBoundary `json:"compact_metadata"`
		}
		err = json.Unmarshal(raw, &w)
		m.Compact = &w.Meta
	case "status":
		m.Status = new(StatusUpdate)
		err = json.Unmarshal(raw, m.Status)
	case "api_retry":
		m.APIRetry = new(APIRetry)
		err = json.Unmarshal(raw, m.APIRetry)
	case "mirror_error":
		m.MirrorError = new(MirrorError)
		err = json.Unmarshal(raw, m.MirrorError)
	}
	if err != nil {
		return nil, fmt.Errorf("system/%s: %w", subtype, err)
	}
	return m, nil
}

type wireMessage struct {
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason"`
	Usage      *Usage          `json:"usage"`
}

func parseAssistant(raw json.RawMessage) (*AssistantMessage, error) {
	var w struct {
		Message         *wireMessage `json:"message"`
		ParentToolUseID *string      `json:"parent_tool_use_id"`
		SessionID       string       `json:"session_id"`
		UUID            string       `json:"uuid"`
		Error           string       `json:"error"`
		Aborted         bool         `json:"aborted"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.Message == nil {
		return nil, fmt.Errorf("assistant message without message")
	}
	blocks, _, err := parseContent(w.Message.Content)
	if err != nil {
		return nil, fmt.Errorf("assistant content: %w", err)
	}
	return &AssistantMessage{
		ID: w.Message.ID, Model: w.Message.Model, Content: blocks,
		StopReason: deref(w.Message.StopReason), Usage: w.Message.Usage,
		ParentToolUseID: deref(w.ParentToolUseID), SessionID: w.SessionID, UUID: w.UUID,
		Error: w.Error, Aborted: w.Aborted, Raw: raw,
	}, nil
}

func parseUser(raw json.RawMessage) (*UserMessage, error) {
	var w struct {
		Message *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		ParentToolUseID *string         `json:"parent_tool_use_id"`
		SessionID       string          `json:"session_id"`
		UUID            string          `json:"uuid"`
		ToolUseResult   json.RawMessage `json:"tool_use_result"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.Message == nil {
		return nil, fmt.Errorf("user message without message")
	}
	blocks, text, err := parseContent(w.Message.Content)
	if err != nil {
		return nil, fmt.Errorf("user content: %w", err)
	}
	return &UserMessage{
		Text: text, Content: blocks, ParentToolUseID: deref(w.ParentToolUseID),
		SessionID: w.SessionID, UUID: w.UUID, ToolUseResult: w.ToolUseResult, Raw: raw,
	}, nil
}

// parseContent decodes message content: a plain string (returned as text)
// or a list of blocks.
func parseContent(raw json.RawMessage) ([]ContentBlock, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return nil, s, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "", err
	}
	blocks := make([]ContentBlock, 0, len(items))
	for _, it := range items {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(it, &head); err != nil {
			return nil, "", err
		}
		var b ContentBlock
		switch head.Type {
		case "text":
			b = new(TextBlock)
		case "thinking":
			b = new(ThinkingBlock)
		case "tool_use":
			b = new(ToolUseBlock)
		case "tool_result":
			b = new(ToolResultBlock)
		case "server_tool_use":
			b = new(ServerToolUseBlock)
		default:
			blocks = append(blocks, &UnknownBlock{Type: head.Type, Raw: it})
			continue
		}
		if err := json.Unmarshal(it, b); err != nil {
			return nil, "", fmt.Errorf("%s block: %w", head.Type, err)
		}
		blocks = append(blocks, b)
	}
	return blocks, "", nil
}

func parseResult(raw json.RawMessage) (*ResultMessage, error) {
	var w struct {
		Subtype           *string               `json:"subtype"`
		IsError           *bool                 `json:"is_error"`
		DurationMS        int64                 `json:"duration_ms"`
		DurationAPIMS     int64                 `json:"duration_api_ms"`
		NumTurns          int                   `json:"num_turns"`
		Result            string                `json:"result"`
		SessionID         *string               `json:"session_id"`
		TotalCostUSD      float64               `json:"total_cost_usd"`
		Usage             *Usage                `json:"usage"`
		ModelUsage        map[string]ModelUsage `json:"modelUsage"`
		PermissionDenials []json.RawMessage     `json:"permission_denials"`
		StopReason        *string               `json:"stop_reason"`
		TerminalReason    string                `json:"terminal_reason"`
		APIErrorStatus    *int                  `json:"api_error_status"`
		Errors            []string              `json:"errors"`
		StructuredOutput  json.RawMessage       `json:"structured_output"`
		UUID              string                `json:"uuid"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.Subtype == nil || w.IsError == nil || w.SessionID == nil {
		return nil, fmt.Errorf("result message missing subtype, is_error or session_id")
	}
	r := &ResultMessage{
		Subtype: *w.Subtype, IsError: *w.IsError, DurationMS: w.DurationMS, DurationAPIMS: w.DurationAPIMS,
		NumTurns: w.NumTurns, Result: w.Result, SessionID: *w.SessionID, TotalCostUSD: w.TotalCostUSD,
		Usage: w.Usage, ModelUsage: w.ModelUsage, PermissionDenials: w.PermissionDenials,
		StopReason: deref(w.StopReason), TerminalReason: w.TerminalReason, Errors: w.Errors,
		StructuredOutput: w.StructuredOutput, UUID: w.UUID, Raw: raw,
	}
	if w.APIErrorStatus != nil {
		r.APIErrorStatus = *w.APIErrorStatus
	}
	return r, nil
}
