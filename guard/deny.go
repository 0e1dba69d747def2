package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/ephemeral"
)

// handsOnTools are the tools Whitelist may ban, in matcher order.
var handsOnTools = []string{"Bash", "Write", "Edit", "NotebookEdit"}

// Whitelist makes allowed exclusive for the hands-on tools: with the default
// texts it is ChineseTexts.Whitelist.
func Whitelist(allowed []string, role string) *claude.HookMatcher {
	return Texts{}.Whitelist(allowed, role)
}

// Whitelist makes allowed exclusive for the hands-on tools. The CLI's
// allowed tools only skip the approval prompt; the model can still call the
// others. This PreToolUse guard denies, on the main thread only, each of
// Bash, Write, Edit and NotebookEdit that allowed lacks, saying the lack is
// deliberate; subagents keep the tools their definitions give them. role
// names the agent in the refusal ("" means DefaultRole). It returns nil when
// allowed holds all four tools.
func (t Texts) Whitelist(allowed []string, role string) *claude.HookMatcher {
	t = t.withDefaults()
	if role == "" {
		role = t.DefaultRole
	}
	have := map[string]bool{}
	for _, a := range allowed {
		have[a] = true
	}
	banned := map[string]bool{}
	var names []string
	for _, tool := range handsOnTools {
		if !have[tool] {
			banned[tool] = true
			names = append(names, tool)
		}
	}
	if len(names) == 0 {
		return nil
	}
	hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		if in == nil || !in.IsMainThread() || !banned[in.ToolName] {
			return nil, nil
		}
		return claude.Deny(fmt.Sprintf(t.WhitelistDeny, role, in.ToolName)), nil
	}
	return &claude.HookMatcher{Matcher: strings.Join(names, "|"), Hooks: []claude.HookFunc{hook}}
}

// Delegate keeps the coordinator's hands off the tools: with the default
// texts it is ChineseTexts.Delegate.
func Delegate(tools string, allowGlance bool) claude.HookMatcher {
	return Texts{}.Delegate(tools, allowGlance)
}

// Delegate keeps the coordinator's hands off the tools. This PreToolUse
// guard denies the tools matched by tools ("" means HandsOn) on the main
// thread, telling the model to dispatch a subagent instead and to have it
// write long output into DefaultArtifacts; subagents always pass. With
// allowGlance, a Bash command for which ephemeral.Is holds passes too: a
// worker costs thousands of tokens to start, a glance a few dozen characters.
//
// It fails closed: a Bash call whose input cannot be read is denied.
func (t Texts) Delegate(tools string, allowGlance bool) claude.HookMatcher {
	return t.delegate(tools, allowGlance, DefaultArtifacts)
}

// delegate is Delegate naming the artifacts folder.
func (t Texts) delegate(tools string, allowGlance bool, artifacts string) claude.HookMatcher {
	t = t.withDefaults()
	if tools == "" {
		tools = HandsOn
	}
	hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		if in == nil || !in.IsMainThread() {
			return nil, nil
		}
		name := in.ToolName
		if name == "" {
			name = "?"
		}
		if allowGlance && name == "Bash" {
			var input struct {
				Command string `json:"command"`
			}
			if err := json.Unmarshal(in.ToolInput, &input); err != nil {
				logger().Warn("guard: delegate: Bash input unreadable, denied", "err", err)
			} else if ephemeral.Is(input.Command) {
				return nil, nil
			}
		}
		return claude.Deny(fmt.Sprintf(t.DelegateDeny, name, artifacts)), nil
	}
	return claude.HookMatcher{Matcher: tools, Hooks: []claude.HookFunc{hook}}
}
