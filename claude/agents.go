package claude

import "encoding/json"

// AgentDefinition declares a subagent, registered through initialize and
// dispatched by the Agent tool. Wire names are camelCase; empty fields are
// not sent.
type AgentDefinition struct {
	Description     string   `json:"description"`
	Prompt          string   `json:"prompt"`
	Tools           []string `json:"tools,omitempty"`
	DisallowedTools []string `json:"disallowedTools,omitempty"`
	// Model is "sonnet", "opus", "haiku", "inherit" or a full model id.
	Model  string   `json:"model,omitempty"`
	Skills []string `json:"skills,omitempty"`
	// Memory is "user", "project" or "local".
	Memory string `json:"memory,omitempty"`
	// MCPServers holds server names or {name: config} objects.
	MCPServers    []json.RawMessage `json:"mcpServers,omitempty"`
	InitialPrompt string            `json:"initialPrompt,omitempty"`
	MaxTurns      int               `json:"maxTurns,omitempty"`
	Background    bool              `json:"background,omitempty"`
	// Effort is a level ("low" … "max") or an integer.
	Effort         json.RawMessage `json:"effort,omitempty"`
	PermissionMode string          `json:"permissionMode,omitempty"`
	// Isolation is where the agent works: IsolationWorktree (its own git
	// worktree) or "remote"; "" means the session's checkout.
	Isolation string `json:"isolation,omitempty"`
}

// IsolationWorktree runs an agent in its own git worktree.
const IsolationWorktree = "worktree"
