package claude

import (
	"context"
	"encoding/json"
)

// CanUseTool decides a permission prompt of the CLI. It is asked only when
// the CLI's own rules resolve to "ask": allow-listed tools, settings rules,
// bypassPermissions and PreToolUse hooks that allow all skip it.
type CanUseTool func(ctx context.Context, req *ToolPermissionRequest) (PermissionResult, error)

// ToolPermissionRequest is the CLI asking whether a tool may run.
type ToolPermissionRequest struct {
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	ToolUseID   string          `json:"tool_use_id"`
	Suggestions json.RawMessage `json:"permission_suggestions,omitempty"`
	BlockedPath string          `json:"blocked_path,omitempty"`
	// DecisionReason carries a PreToolUse hook's reason when it answered ask.
	DecisionReason string `json:"decision_reason,omitempty"`
	Title          string `json:"title,omitempty"`
	DisplayName    string `json:"display_name,omitempty"`
	Description    string `json:"description,omitempty"`
	// AgentID is set when a subagent asks.
	AgentID string          `json:"agent_id,omitempty"`
	Raw     json.RawMessage `json:"-"`
}

// PermissionResult answers a ToolPermissionRequest; build it with Allow,
// AllowInput or DenyTool.
type PermissionResult struct {
	allow bool
	// UpdatedInput replaces the tool input when allowing (nil: unchanged).
	UpdatedInput json.RawMessage
	// UpdatedPermissions are PermissionUpdate objects
	// ({"type":"addRules","rules":[{"toolName":…,"ruleContent":…}],…}).
	UpdatedPermissions []json.RawMessage
	// Message tells the model why it was denied.
	Message string
	// Interrupt stops the whole turn along with the denial.
	Interrupt bool
}

// Allow lets the tool run with its input unchanged.
func Allow() PermissionResult { return PermissionResult{allow: true} }

// AllowInput lets the tool run with a replaced input.
func AllowInput(input json.RawMessage) PermissionResult {
	return PermissionResult{allow: true, UpdatedInput: input}
}

// DenyTool refuses the tool; interrupt also stops the turn.
func DenyTool(message string, interrupt bool) PermissionResult {
	return PermissionResult{Message: message, Interrupt: interrupt}
}

// Allowed reports whether the result lets the tool run.
func (r PermissionResult) Allowed() bool { return r.allow }

// wire renders the reply; an allow always carries updatedInput (the
// original when unchanged), since some CLIs read a missing one as a deny.
func (r PermissionResult) wire(original json.RawMessage) map[string]any {
	if !r.allow {
		m := map[string]any{"behavior": "deny", "message": r.Message}
		if r.Interrupt {
			m["interrupt"] = true
		}
		return m
	}
	in := r.UpdatedInput
	if len(in) == 0 {
		in = original
	}
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	m := map[string]any{"behavior": "allow", "updatedInput": in}
	if len(r.UpdatedPermissions) > 0 {
		m["updatedPermissions"] = r.UpdatedPermissions
	}
	return m
}
