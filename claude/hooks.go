package claude

import (
	"context"
	"encoding/json"
	"time"
)

// Hook event names the CLI sends. The wire is a plain string and the CLI
// accepts more events than these; any string may be used as a key of
// Options.Hooks.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	UserPromptSubmit   = "UserPromptSubmit"
	Stop               = "Stop"
	SubagentStart      = "SubagentStart"
	SubagentStop       = "SubagentStop"
	PreCompact         = "PreCompact"
	Notification       = "Notification"
	PermissionRequest  = "PermissionRequest"
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
)

// HookInput is the input of one hook callback. Common fields come first, then
// the per-event fields (empty when the event does not carry them). Raw keeps
// the whole object as the CLI sent it, for fields not typed here.
type HookInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	PermissionMode string `json:"permission_mode,omitempty"`
	PromptID       string `json:"prompt_id,omitempty"`

	// AgentID is set only when the hook fires inside a subagent: the main
	// thread is the caller without an AgentID.
	AgentID   string `json:"agent_id,omitempty"`
	AgentType string `json:"agent_type,omitempty"`

	// Tool events: PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest.
	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	// PostToolUseFailure.
	Error       string `json:"error,omitempty"`
	IsInterrupt bool   `json:"is_interrupt,omitempty"`
	// PermissionRequest.
	PermissionSuggestions json.RawMessage `json:"permission_suggestions,omitempty"`

	// UserPromptSubmit.
	Prompt string `json:"prompt,omitempty"`
	// Stop and SubagentStop.
	StopHookActive       bool   `json:"stop_hook_active,omitempty"`
	LastAssistantMessage string `json:"last_assistant_message,omitempty"`
	AgentTranscriptPath  string `json:"agent_transcript_path,omitempty"`
	// PreCompact.
	Trigger            string  `json:"trigger,omitempty"`
	CustomInstructions *string `json:"custom_instructions,omitempty"`
	// Notification.
	Message          string `json:"message,omitempty"`
	Title            string `json:"title,omitempty"`
	NotificationType string `json:"notification_type,omitempty"`
	// SessionStart.
	Source string `json:"source,omitempty"`

	Raw json.RawMessage `json:"-"`

	secrets *secrets
}

// IsMainThread reports whether the hook fired on the session's main thread
// rather than inside a subagent.
func (in *HookInput) IsMainThread() bool { return in.AgentID == "" }

// ToolInputMap decodes ToolInput into a map, keeping numbers as json.Number
// so that a map echoed back as UpdatedInput keeps their exact text.
func (in *HookInput) ToolInputMap() (map[string]any, error) {
	return decodeObject(in.ToolInput)
}

// HookOutput is a hook's answer. The zero value (or a nil *HookOutput) means
// "no opinion". Absent fields are not sent.
type HookOutput struct {
	// Continue false stops the whole run, with StopReason shown.
	Continue       *bool  `json:"continue,omitempty"`
	StopReason     string `json:"stopReason,omitempty"`
	SuppressOutput bool   `json:"suppressOutput,omitempty"`
	SystemMessage  string `json:"systemMessage,omitempty"`
	// Decision "block" with Reason is feedback to the model (for Stop it
	// forces the agent to continue; for PostToolUse Reason reaches the model).
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Async declares a fire-and-forget hook that gates nothing.
	Async        bool `json:"async,omitempty"`
	AsyncTimeout int  `json:"asyncTimeout,omitempty"`

	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// Permission decisions of a PreToolUse hook.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionAsk   = "ask"
	DecisionDefer = "defer"
)

// HookSpecificOutput carries the event-specific part of a hook's answer.
// HookEventName names the event the hook answers; left empty, the driver
// fills in the event of the call (the CLI ignores an answer without it).
type HookSpecificOutput struct {
	HookEventName string `json:"hookEventName"`
	// PreToolUse.
	PermissionDecision       string          `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
	// PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit,
	// SessionStart, SubagentStart, Notification.
	AdditionalContext string `json:"additionalContext,omitempty"`
	// PostToolUse: replaces the tool's output before the model sees it. For
	// built-in tools it must match the tool's output shape (Bash:
	// {stdout, stderr, interrupted}); a mismatch is ignored by the CLI.
	UpdatedToolOutput    json.RawMessage `json:"updatedToolOutput,omitempty"`
	UpdatedMCPToolOutput json.RawMessage `json:"updatedMCPToolOutput,omitempty"`
	// PermissionRequest: {"behavior":"allow"|"deny", ...}.
	Decision json.RawMessage `json:"decision,omitempty"`
}

// Deny is the PreToolUse answer that refuses a tool call; the model receives
// reason as an error tool result.
func Deny(reason string) *HookOutput {
	return &HookOutput{HookSpecificOutput: &HookSpecificOutput{
		HookEventName:            PreToolUse,
		PermissionDecision:       DecisionDeny,
		PermissionDecisionReason: reason,
	}}
}

// AllowWithInput is the PreToolUse answer that lets a tool call run with a
// replaced input (a JSON object of the tool's input shape).
func AllowWithInput(input json.RawMessage) *HookOutput {
	return &HookOutput{HookSpecificOutput: &HookSpecificOutput{
		HookEventName:      PreToolUse,
		PermissionDecision: DecisionAllow,
		UpdatedInput:       input,
	}}
}

// ReplaceToolOutput is the PostToolUse answer that replaces a built-in
// tool's output before the model sees it; output must have the tool's
// output shape (Bash: {stdout, stderr, interrupted}). For an MCP tool set
// UpdatedMCPToolOutput instead.
func ReplaceToolOutput(output json.RawMessage) *HookOutput {
	return &HookOutput{HookSpecificOutput: &HookSpecificOutput{
		HookEventName:     PostToolUse,
		UpdatedToolOutput: output,
	}}
}

// AddContext is the answer that adds text to the model's context, for any
// event that takes additionalContext (PreToolUse, PostToolUse,
// PostToolUseFailure, UserPromptSubmit, SessionStart, SubagentStart,
// Notification); the driver fills in the event's name.
func AddContext(text string) *HookOutput {
	return &HookOutput{HookSpecificOutput: &HookSpecificOutput{AdditionalContext: text}}
}

// HookFunc answers one hook callback. Returning a nil output means "no
// opinion"; returning an error sends an error control response whose message
// is the error's text. The context is cancelled when the CLI cancels the
// callback or the session ends.
type HookFunc func(ctx context.Context, in *HookInput) (*HookOutput, error)

// HookMatcher registers callbacks for one event. Matcher selects what they
// fire for: "" or "*" matches everything; letters, digits, '_' and '|' form
// an exact name or a '|'-separated list ("Write|Edit"); anything else is a
// regular expression. What is matched depends on the event (the tool name for
// tool events, the agent type for SubagentStart/Stop).
type HookMatcher struct {
	Matcher string
	Hooks   []HookFunc
	// Timeout is the CLI-side timeout of each callback; zero keeps the CLI's
	// default (60 s).
	Timeout time.Duration
}
