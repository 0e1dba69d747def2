package guard

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// recorder is a hook that notes its calls and answers out.
func recorder(name string, calls *[]string, out *claude.HookOutput) claude.HookFunc {
	return func(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		*calls = append(*calls, name+":"+string(in.ToolInput))
		return out, nil
	}
}

func chained(t *testing.T, ms ...claude.HookMatcher) claude.HookFunc {
	t.Helper()
	m, err := Chain(ms...)
	if err != nil {
		t.Fatal(err)
	}
	if m.Matcher != "" || len(m.Hooks) != 1 {
		t.Fatalf("Chain = matcher %q with %d callbacks, want one for every tool", m.Matcher, len(m.Hooks))
	}
	return m.Hooks[0]
}

func callTool(t *testing.T, h claude.HookFunc, tool, input string) *claude.HookOutput {
	t.Helper()
	out, err := h(context.Background(), &claude.HookInput{HookEventName: claude.PreToolUse, ToolName: tool, ToolInput: json.RawMessage(input)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChainStopsAtTheFirstRefusal(t *testing.T) {
	var calls []string
	h := chained(t,
		claude.HookMatcher{Hooks: []claude.HookFunc{recorder("wall", &calls, claude.Deny("no"))}},
		claude.HookMatcher{Hooks: []claude.HookFunc{recorder("loop", &calls, claude.Deny("again"))}},
	)
	out := callTool(t, h, "Write", `{"a":1}`)
	if out == nil || out.HookSpecificOutput.PermissionDecision != claude.DecisionDeny || out.HookSpecificOutput.PermissionDecisionReason != "no" {
		t.Fatalf("answer %+v, want the first refusal", out)
	}
	if !slices.Equal(calls, []string{`wall:{"a":1}`}) {
		t.Errorf("calls %v: a refused call must reach no later hook", calls)
	}
}

func TestChainRunsOnlyTheMatchersThatFitAndKeepsEachHooksInput(t *testing.T) {
	var calls []string
	h := chained(t,
		claude.HookMatcher{Hooks: []claude.HookFunc{recorder("wall", &calls, claude.AllowWithInput(json.RawMessage(`{"command":"timeout 30 ls"}`)))}},
		claude.HookMatcher{Matcher: "Write|Edit", Hooks: []claude.HookFunc{recorder("index", &calls, nil)}},
		claude.HookMatcher{Matcher: "^Ba", Hooks: []claude.HookFunc{recorder("regexp", &calls, claude.AddContext("one"))}},
		claude.HookMatcher{Matcher: "*", Hooks: []claude.HookFunc{nil, recorder("loop", &calls, claude.AddContext("two"))}},
	)
	out := callTool(t, h, "Bash", `{"command":"ls"}`)
	want := []string{`wall:{"command":"ls"}`, `regexp:{"command":"ls"}`, `loop:{"command":"ls"}`}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v (index matches Write and Edit only; each hook sees the call as sent)", calls, want)
	}
	s := out.HookSpecificOutput
	if s.PermissionDecision != claude.DecisionAllow || string(s.UpdatedInput) != `{"command":"timeout 30 ls"}` || s.AdditionalContext != "one\n\ntwo" {
		t.Errorf("answer %+v, want the allow with the wall's input and both contexts", s)
	}
	calls = nil
	if out := callTool(t, h, "Edit", `{}`); out == nil || out.HookSpecificOutput.AdditionalContext != "two" {
		t.Errorf("Edit: answer %+v", out)
	}
	if !slices.Equal(calls, []string{"wall:{}", "index:{}", "loop:{}"}) {
		t.Errorf("Edit calls %v", calls)
	}
}

func TestChainKeepsTheLastReplacedOutputAndNilWhenNobodyAnswers(t *testing.T) {
	var calls []string
	h := chained(t,
		claude.HookMatcher{Hooks: []claude.HookFunc{recorder("loop", &calls, nil)}},
		claude.HookMatcher{Matcher: "Bash", Hooks: []claude.HookFunc{recorder("spill", &calls, claude.ReplaceToolOutput(json.RawMessage(`{"stdout":"pointer"}`)))}},
	)
	if out := callTool(t, h, "Read", `{}`); out != nil {
		t.Errorf("no hook answered, the chain answered %+v", out)
	}
	out := callTool(t, h, "Bash", `{}`)
	if out == nil || string(out.HookSpecificOutput.UpdatedToolOutput) != `{"stdout":"pointer"}` {
		t.Errorf("answer %+v, want spill's output", out)
	}
}

func TestChainPassesAnErrorAndRefusesABadMatcher(t *testing.T) {
	boom := errors.New("boom")
	h := chained(t, claude.HookMatcher{Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { return nil, boom }}})
	if _, err := h(context.Background(), &claude.HookInput{ToolName: "Bash"}); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the hook's", err)
	}
	if _, err := Chain(claude.HookMatcher{Matcher: "Bash("}); err == nil {
		t.Error("a matcher that is no regular expression was taken")
	}
	m, err := Chain(claude.HookMatcher{Timeout: time.Second}, claude.HookMatcher{Matcher: "Bash", Timeout: 3 * time.Second})
	if err != nil || m.Timeout != 3*time.Second {
		t.Errorf("timeout %v (%v), want the longest", m.Timeout, err)
	}
}
