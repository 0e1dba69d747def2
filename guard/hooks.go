package guard

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/workbench"
)

// Index keeps INDEX.md fresh. This PostToolUse guard, matching Write and
// Edit, refreshes the workbench when the written file_path (a relative one
// taken from the hook's cwd, else the workspace) lies inside the workbench
// root, so the next agent knows the file from its first turn. It never
// answers anything; a failed refresh is logged.
func Index(wb *workbench.Workbench) claude.HookMatcher {
	hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		if in == nil || wb == nil || len(in.ToolInput) == 0 {
			return nil, nil
		}
		var input struct {
			FilePath string `json:"file_path"`
		}
		if err := json.Unmarshal(in.ToolInput, &input); err != nil {
			logger().Warn("guard: index: tool input unreadable, index not refreshed", "tool", in.ToolName, "err", err)
			return nil, nil
		}
		p := input.FilePath
		if p == "" {
			return nil, nil
		}
		if !filepath.IsAbs(p) && in.Cwd != "" {
			p = filepath.Join(in.Cwd, p)
		}
		if !wb.Contains(p) {
			return nil, nil
		}
		if _, err := wb.Refresh(); err != nil {
			logger().Warn("guard: index: refresh failed", "path", p, "err", err)
		}
		return nil, nil
	}
	return claude.HookMatcher{Matcher: "Write|Edit", Hooks: []claude.HookFunc{hook}}
}

// Isolate gives the agents whose definition asks for a worktree
// (Isolation claude.IsolationWorktree) their own git worktree. This
// PreToolUse guard, matching the Agent tool (named Task by older CLIs),
// allows a dispatch with "isolation": "worktree" added to its input when the
// input sets neither cwd nor isolation (the model's explicit choice wins;
// the two exclude each other) and its subagent_type names an agent of agents
// so marked; every other field, numbers included, is sent back as it
// came. onInject, if not nil, is then called with the subagent type and the
// task's description; it may be called from several goroutines at once.
// Which agents are marked is read once, when Isolate is called. The
// worktree needs a git workspace, and an isolated agent cannot write into
// the shared checkout: put the workbench outside (Workbench.Home).
func Isolate(agents map[string]claude.AgentDefinition, onInject func(agentType, description string)) claude.HookMatcher {
	marked := map[string]bool{}
	for name, a := range agents {
		if a.Isolation == claude.IsolationWorktree {
			marked[name] = true
		}
	}
	hook := func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		if in == nil || (in.ToolName != "Agent" && in.ToolName != "Task") || len(marked) == 0 {
			return nil, nil
		}
		input, err := in.ToolInputMap()
		if err != nil {
			logger().Warn("guard: isolate: tool input unreadable, not isolated", "tool", in.ToolName, "err", err)
			return nil, nil
		}
		if isSet(input["cwd"]) || isSet(input["isolation"]) {
			return nil, nil
		}
		typ, _ := input["subagent_type"].(string)
		if !marked[typ] {
			return nil, nil
		}
		input["isolation"] = "worktree"
		raw, err := encodeJSON(input)
		if err != nil {
			logger().Warn("guard: isolate: cannot encode the new input, not isolated", "err", err)
			return nil, nil
		}
		if onInject != nil {
			desc, _ := input["description"].(string)
			onInject(typ, desc)
		}
		return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
			HookEventName:      claude.PreToolUse,
			PermissionDecision: claude.DecisionAllow,
			UpdatedInput:       raw,
		}}, nil
	}
	return claude.HookMatcher{Matcher: "Agent|Task", Hooks: []claude.HookFunc{hook}}
}

// isSet reports whether an input field holds a choice: present, not null
// and not an empty string.
func isSet(v any) bool {
	s, isString := v.(string)
	return v != nil && (!isString || s != "")
}

// WorkbenchHooks installs the guards a workbench run needs: with the default
// texts it is ChineseTexts.WorkbenchHooks.
func WorkbenchHooks(wb *workbench.Workbench, spillThreshold int, agents map[string]claude.AgentDefinition) map[string][]claude.HookMatcher {
	return Texts{}.WorkbenchHooks(wb, spillThreshold, agents)
}

// WorkbenchHooks installs the guards a workbench run needs, by event:
//
//   - PreToolUse: Isolate(agents, nil) when any agent's Isolation is a
//     worktree;
//   - PostToolUse: Index always; then Spill (Bulky, subagents too) when
//     spillThreshold > 0.
//
// Events without a guard are left out. With a nil wb, Index and Spill are
// left out. Unlike the seed's workbench_hooks it installs no delegate
// guard: the coordinator's wall is an allow-list of the role's own tools,
// which only the caller knows (Texts.Delegate, Texts.Wall).
func (t Texts) WorkbenchHooks(wb *workbench.Workbench, spillThreshold int, agents map[string]claude.AgentDefinition) map[string][]claude.HookMatcher {
	var pre, post []claude.HookMatcher
	for _, a := range agents {
		if a.Isolation == claude.IsolationWorktree {
			pre = append(pre, Isolate(agents, nil))
			break
		}
	}
	if wb != nil {
		post = append(post, Index(wb))
		if spillThreshold > 0 {
			post = append(post, t.Spill(wb, spillThreshold, Bulky, false))
		}
	}
	out := map[string][]claude.HookMatcher{}
	if len(pre) > 0 {
		out[claude.PreToolUse] = pre
	}
	if len(post) > 0 {
		out[claude.PostToolUse] = post
	}
	return out
}

// MergeHooks concatenates hook maps event by event, in argument order,
// skipping nil maps. It removes no duplicate: the same guard given twice is
// installed twice. The result shares no slice with its arguments.
func MergeHooks(groups ...map[string][]claude.HookMatcher) map[string][]claude.HookMatcher {
	out := map[string][]claude.HookMatcher{}
	for _, g := range groups {
		for event, matchers := range g {
			out[event] = append(out[event], matchers...)
		}
	}
	return out
}
