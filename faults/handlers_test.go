package faults

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/human"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolThenDone answers a step's first model call with a call of tool (after
// loading it through ToolSearch when deferred, as MCP tools are), then
// reports the tool result it got, so the case can see it.
func toolThenDone(marker, tool string, input map[string]any, deferred bool) (claudetest.Handler, *atomic.Value) {
	var seen atomic.Value
	seen.Store("")
	return func(ctx context.Context, r *claudetest.Request) claudetest.Reply {
		if !r.HasText(marker) || len(r.Tools) == 0 {
			return claudetest.Say("ok")
		}
		calls := len(r.ToolResults())
		switch {
		case deferred && calls == 0:
			return claudetest.NewReply(claudetest.ToolUse("", "ToolSearch", map[string]any{"query": "select:" + tool, "max_results": 5}))
		case deferred && calls == 1, !deferred && calls == 0:
			return claudetest.NewReply(claudetest.ToolUse("", tool, input))
		}
		res, _ := r.LastToolResult()
		seen.Store(res.Content)
		return claudetest.Say("carried on after: " + res.Content)
	}, &seen
}

func TestFaultHookPanics(t *testing.T) {
	t.Parallel()
	fault(t, "a PreToolUse hook that panics does not take the process down, and the step goes on to its end")
	h, _ := toolThenDone("FAULT:hookpanic", "Bash", map[string]any{"command": "echo hi", "description": "echo"}, false)
	sc := newScene(t, h, fastResilience())
	s := spec()
	s.Hooks = map[string][]claude.HookMatcher{"PreToolUse": {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { panic("the hook's own bug") },
	}}}}
	r, _, err := sc.run(s, "FAULT:hookpanic")
	if err != nil || !r.OK || !strings.Contains(r.Text, "carried on") {
		t.Fatalf("step: ok %v text %q err %v (%s)", r.OK, r.Text, err, r.Error)
	}
	sc.afterwards(1)
}

func TestFaultHookBlocks(t *testing.T) {
	t.Parallel()
	fault(t, "a PreToolUse hook that never answers is given up after its timeout (2 s here) and the step goes on to its end")
	h, _ := toolThenDone("FAULT:hookblock", "Bash", map[string]any{"command": "echo hi", "description": "echo"}, false)
	sc := newScene(t, h, fastResilience())
	s := spec()
	var cancelled atomic.Bool
	s.Hooks = map[string][]claude.HookMatcher{"PreToolUse": {{Matcher: "Bash", Timeout: 2 * time.Second, Hooks: []claude.HookFunc{
		func(ctx context.Context, _ *claude.HookInput) (*claude.HookOutput, error) {
			select {
			case <-ctx.Done():
				cancelled.Store(true)
			case <-time.After(90 * time.Second):
			}
			return nil, ctx.Err()
		},
	}}}}
	begin := time.Now()
	r, _, err := sc.run(s, "FAULT:hookblock")
	if err != nil || !r.OK || !strings.Contains(r.Text, "carried on") {
		t.Fatalf("step: ok %v text %q err %v (%s)", r.OK, r.Text, err, r.Error)
	}
	if d := time.Since(begin); d > 60*time.Second {
		t.Errorf("the step took %s behind a hook with a 2 s timeout", d)
	}
	if !cancelled.Load() {
		t.Error("the blocked hook's context was never cancelled")
	}
	sc.afterwards(1)
}

func TestFaultMCPHandlerBlocks(t *testing.T) {
	t.Parallel()
	fault(t, "an in-process MCP tool whose handler never returns is timed out by the CLI (MCP_TOOL_TIMEOUT, 2 s here): the model gets an error result and the step goes on")
	srv := mcp.NewServer(&mcp.Implementation{Name: "stuck", Version: "1.0.0"}, nil)
	var cancelled atomic.Bool
	srv.AddTool(&mcp.Tool{Name: "wait", Description: "Waits.", InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				cancelled.Store(true)
			case <-time.After(90 * time.Second):
			}
			return nil, ctx.Err()
		})
	const tool = "mcp__stuck__wait"
	h, seen := toolThenDone("FAULT:mcp", tool, map[string]any{}, true)
	sc := newScene(t, h, fastResilience(), flower.WithEnv(map[string]string{"MCP_TOOL_TIMEOUT": "2000"}))
	s := spec()
	s.AllowedTools = append(s.AllowedTools, tool, "ToolSearch")
	s.MCPServers = map[string]claude.MCPServer{"stuck": claude.SDKServer{Server: srv}}
	begin := time.Now()
	r, _, err := sc.run(s, "FAULT:mcp")
	if err != nil || !r.OK || !strings.Contains(r.Text, "carried on") {
		t.Fatalf("step: ok %v text %q err %v (%s)", r.OK, r.Text, err, r.Error)
	}
	if d := time.Since(begin); d > 60*time.Second {
		t.Errorf("the step took %s behind a tool with a 2 s timeout", d)
	}
	if got := seen.Load().(string); got == "" {
		t.Error("the model saw no result of the blocked tool")
	} else {
		t.Logf("the model saw: %s", got)
	}
	sc.afterwards(1)
}

func TestFaultHumanNeverAnswers(t *testing.T) {
	t.Parallel()
	fault(t, "an ask nobody answers ends after the channel's timeout (1 s here) with the text telling the model to carry on with its own judgement, and the step goes on")
	ch := human.New(human.WithTimeout(time.Second), human.WithLang("en"))
	h, seen := toolThenDone("FAULT:human", human.AskTool, map[string]any{"question": "anyone there?"}, true)
	sc := newScene(t, h, fastResilience(), flower.WithEnv(ch.Env()))
	s := spec()
	s.AllowedTools = append(s.AllowedTools, human.AskTool, "ToolSearch")
	s.MCPServers = ch.MCPServers()
	r, _, err := sc.run(s, "FAULT:human")
	if err != nil || !r.OK {
		t.Fatalf("step: ok %v err %v (%s)", r.OK, err, r.Error)
	}
	if got := seen.Load().(string); !strings.Contains(got, "Nobody answered. Carry on") {
		t.Errorf("the model saw %q, want the timeout's text", got)
	}
	sc.afterwards(1)
}
