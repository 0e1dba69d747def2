package guard

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/flowerrun/flower/claude"
)

// Chain folds the matchers of one hook event into one callback: the CLI
// makes a control-protocol round trip for every callback of every matching
// hook, and a coordinator's tool call met four of flower's (the wall and
// the loop guard before it, the loop guard and spill after), most of what
// the walls cost per call. The chain runs the hooks whose matcher fits the
// tool, in order, each on the call as the CLI sent it, and answers for all:
//   - the first deny (or ask, defer, or Continue false) answers at once, and
//     the hooks after it never see the call: a refused call runs nowhere;
//   - otherwise an allow with the updated input of the hook that gave one
//     (flower's guards never both rewrite one call: the wall a glance, the
//     isolate guard an Agent call), and the replaced tool output of a
//     PostToolUse hook, the last one given;
//   - additional context, system messages and reasons are joined.
//
// A hook's error is the chain's. The CLI-side timeout is the longest of
// the matchers'. Matchers follow claude.HookMatcher's rules; one that is
// not a valid regular expression is an error, never a hook that fires for
// everything.
func Chain(matchers ...claude.HookMatcher) (claude.HookMatcher, error) {
	type link struct {
		matches func(string) bool
		hooks   []claude.HookFunc
	}
	if len(matchers) == 0 {
		return claude.HookMatcher{}, nil
	}
	var links []link
	timeout := matchers[0].Timeout
	for _, m := range matchers {
		matches, err := toolMatcher(m.Matcher)
		if err != nil {
			return claude.HookMatcher{}, err
		}
		links = append(links, link{matches, m.Hooks})
		timeout = max(timeout, m.Timeout)
	}
	chain := func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		var acc *claude.HookOutput
		for _, l := range links {
			if !l.matches(in.ToolName) {
				continue
			}
			for _, h := range l.hooks {
				if h == nil {
					continue
				}
				call := *in // each hook gets the call as the CLI sent it
				out, err := h(ctx, &call)
				if err != nil {
					return nil, err
				}
				if out == nil {
					continue
				}
				acc = fold(acc, out)
				if stops(out) {
					return acc, nil
				}
			}
		}
		return acc, nil
	}
	return claude.HookMatcher{Hooks: []claude.HookFunc{chain}, Timeout: timeout}, nil
}

// stops reports an answer after which no later hook may see the call.
func stops(out *claude.HookOutput) bool {
	if out.Continue != nil && !*out.Continue {
		return true
	}
	s := out.HookSpecificOutput
	return s != nil && s.PermissionDecision != "" && s.PermissionDecision != claude.DecisionAllow
}

// fold adds out to acc (nil at first).
func fold(acc, out *claude.HookOutput) *claude.HookOutput {
	if acc == nil {
		c := *out
		if out.HookSpecificOutput != nil {
			s := *out.HookSpecificOutput
			c.HookSpecificOutput = &s
		}
		return &c
	}
	join := func(a, b string) string {
		switch {
		case a == "":
			return b
		case b == "":
			return a
		}
		return a + "\n\n" + b
	}
	acc.Continue = firstSet(acc.Continue, out.Continue)
	if acc.StopReason == "" {
		acc.StopReason = out.StopReason
	}
	acc.SuppressOutput = acc.SuppressOutput || out.SuppressOutput
	acc.SystemMessage = join(acc.SystemMessage, out.SystemMessage)
	if acc.Decision == "" {
		acc.Decision = out.Decision
	}
	acc.Reason = join(acc.Reason, out.Reason)
	s := out.HookSpecificOutput
	if s == nil {
		return acc
	}
	if acc.HookSpecificOutput == nil {
		acc.HookSpecificOutput = &claude.HookSpecificOutput{}
	}
	a := acc.HookSpecificOutput
	if a.HookEventName == "" {
		a.HookEventName = s.HookEventName
	}
	if s.PermissionDecision != "" && a.PermissionDecision != claude.DecisionDeny {
		a.PermissionDecision = s.PermissionDecision
		a.PermissionDecisionReason = join(a.PermissionDecisionReason, s.PermissionDecisionReason)
	}
	if s.UpdatedInput != nil {
		a.UpdatedInput = s.UpdatedInput
	}
	if s.UpdatedToolOutput != nil {
		a.UpdatedToolOutput = s.UpdatedToolOutput
	}
	if s.UpdatedMCPToolOutput != nil {
		a.UpdatedMCPToolOutput = s.UpdatedMCPToolOutput
	}
	if s.Decision != nil {
		a.Decision = s.Decision
	}
	a.AdditionalContext = join(a.AdditionalContext, s.AdditionalContext)
	return acc
}

func firstSet(a, b *bool) *bool {
	if a != nil {
		return a
	}
	return b
}

// simpleMatcher is an exact name or a '|'-separated list of names.
var simpleMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// toolMatcher is claude.HookMatcher's Matcher as a test of a tool name:
// "" or "*" every tool; an exact name or a '|'-list those names; anything
// else a regular expression, unanchored as the CLI reads it.
func toolMatcher(pattern string) (func(string) bool, error) {
	switch {
	case pattern == "" || pattern == "*":
		return func(string) bool { return true }, nil
	case simpleMatcher.MatchString(pattern):
		names := strings.Split(pattern, "|")
		return func(tool string) bool {
			for _, n := range names {
				if n == tool {
					return true
				}
			}
			return false
		}, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("guard: hook matcher %q is not a regular expression: %w", pattern, err)
	}
	return re.MatchString, nil
}
