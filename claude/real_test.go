package claude_test

// The real-CLI tier: the pinned Claude Code CLI against claudetest's fake
// Messages API on 127.0.0.1. Assertions are on structure (event names, tool
// names, error flags, ids), not on CLI prose, which changes between versions.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
)

// realOptions runs the pinned CLI hermetically against srv in a fresh
// working directory.
func realOptions(t *testing.T, srv *claudetest.Server) claude.Options {
	t.Helper()
	return claude.Options{
		CLIPath:        claudetest.CLIPath(t),
		Cwd:            t.TempDir(),
		BaseEnv:        claudetest.BaseEnv(),
		Env:            claudetest.Env(t, srv),
		PermissionMode: "acceptEdits",
		SystemPrompt:   claude.PresetPrompt(""),
	}
}

// realCtx bounds a real-CLI test as a hang guard: several sessions of the
// real CLI on a loaded machine (the older CLI's pass beside the suite)
// took more than the 90 s it once was.
func realCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func bash(cmd string) claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": cmd, "description": "test step"}))
}

// echoToolResult answers with the text of the tool result the model got.
var echoToolResult = claudetest.Func(func(r *claudetest.Request) claudetest.Reply {
	res, ok := r.LastToolResult()
	if !ok {
		return claudetest.Say("no tool result")
	}
	return claudetest.Say("tool said: " + res.Content)
})

func TestRealTextTurn(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:hi": {claudetest.Say("hello from the fake")}}.Handler())
	msgs, err := collect(t, realCtx(t), "SCENARIO:hi please greet", realOptions(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	r := lastResult(t, msgs)
	if r.IsError || r.Result != "hello from the fake" || r.SessionID == "" {
		t.Fatalf("result = %+v", r)
	}
	if srv.Count() != 1 || srv.Requests()[0].LastUserText() != "SCENARIO:hi please greet" {
		t.Fatalf("the fake saw %d requests", srv.Count())
	}
}

func TestRealBashTurnCreatesTheFile(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:touch": {bash("touch MARKER && echo touched"), echoToolResult}}.Handler())
	opts := realOptions(t, srv)
	msgs, err := collect(t, realCtx(t), "SCENARIO:touch", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(opts.Cwd, "MARKER")); err != nil {
		t.Fatalf("the Bash tool did not create the file: %v", err)
	}
	if r := lastResult(t, msgs); r.Result != "tool said: touched" {
		t.Fatalf("result = %q", r.Result)
	}
	var sawToolUse, sawToolResult bool
	for _, m := range msgs {
		switch m := m.(type) {
		case *claude.AssistantMessage:
			for _, b := range m.Content {
				if tu, ok := b.(*claude.ToolUseBlock); ok && tu.Name == "Bash" {
					sawToolUse = true
				}
			}
		case *claude.UserMessage:
			for _, b := range m.Content {
				if tr, ok := b.(*claude.ToolResultBlock); ok && tr.ContentText() == "touched" && len(m.ToolUseResult) > 0 {
					sawToolResult = true
				}
			}
		}
	}
	if !sawToolUse || !sawToolResult {
		t.Errorf("typed messages: tool_use %v, tool_result with tool_use_result %v", sawToolUse, sawToolResult)
	}
}

func TestRealPreToolUseDeny(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:deny": {bash("touch DENIED && echo touched"), echoToolResult}}.Handler())
	opts := realOptions(t, srv)
	var calls []*claude.HookInput
	var mu sync.Mutex
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			mu.Lock()
			calls = append(calls, in)
			mu.Unlock()
			return claude.Deny("DENIED-BY-TEST-HOOK"), nil
		}}}}}
	if _, err := collect(t, realCtx(t), "SCENARIO:deny", opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(opts.Cwd, "DENIED")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the denied command ran: %v", err)
	}
	if len(calls) != 1 || calls[0].ToolName != "Bash" || calls[0].HookEventName != claude.PreToolUse || !strings.Contains(string(calls[0].ToolInput), "touch DENIED") {
		t.Fatalf("hook inputs = %+v", calls)
	}
	res, ok := srv.Requests()[srv.Count()-1].LastToolResult()
	if !ok || !res.IsError || !strings.Contains(res.Content, "DENIED-BY-TEST-HOOK") {
		t.Fatalf("the model got %+v, want an error tool_result with the reason", res)
	}
}

func TestRealPostToolUseReplacesTheOutput(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:replace": {bash("echo original"), echoToolResult}}.Handler())
	opts := realOptions(t, srv)
	var seen json.RawMessage
	opts.Hooks = map[string][]claude.HookMatcher{claude.PostToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			seen = in.ToolResponse
			return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
				HookEventName:     claude.PostToolUse,
				UpdatedToolOutput: json.RawMessage(`{"stdout":"REPLACED-OUTPUT","stderr":"","interrupted":false,"isImage":false}`),
			}}, nil
		}}}}}
	msgs, err := collect(t, realCtx(t), "SCENARIO:replace", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(seen), `"stdout":"original"`) {
		t.Errorf("tool_response = %s, want the original Bash output", seen)
	}
	res, _ := srv.Requests()[srv.Count()-1].LastToolResult()
	if res.Content != "REPLACED-OUTPUT" {
		t.Fatalf("the next API request carried %q, want the replacement", res.Content)
	}
	if r := lastResult(t, msgs); r.Result != "tool said: REPLACED-OUTPUT" {
		t.Errorf("result = %q", r.Result)
	}
}

func TestRealCanUseTool(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{true, false} {
		name := map[bool]string{true: "allow", false: "deny"}[allow]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:perm": {bash("touch PERM && echo touched"), echoToolResult}}.Handler())
			opts := realOptions(t, srv)
			opts.PermissionMode = "manual"
			var asked []*claude.ToolPermissionRequest
			opts.CanUseTool = func(ctx context.Context, req *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
				asked = append(asked, req)
				if allow {
					return claude.Allow(), nil
				}
				return claude.DenyTool("HOST-SAYS-NO", false), nil
			}
			msgs, err := collect(t, realCtx(t), "SCENARIO:perm", opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 || asked[0].ToolName != "Bash" || asked[0].ToolUseID == "" {
				t.Fatalf("permission requests = %+v", asked)
			}
			_, statErr := os.Stat(filepath.Join(opts.Cwd, "PERM"))
			res, _ := srv.Requests()[srv.Count()-1].LastToolResult()
			if allow {
				if statErr != nil || res.Content != "touched" {
					t.Fatalf("allowed tool: file %v, tool result %+v", statErr, res)
				}
			} else {
				if statErr == nil || !res.IsError || !strings.Contains(res.Content, "HOST-SAYS-NO") {
					t.Fatalf("denied tool: file %v, tool result %+v", statErr, res)
				}
				if d := lastResult(t, msgs).PermissionDenials; len(d) != 1 {
					t.Errorf("permission_denials = %s", d)
				}
			}
		})
	}
}

func TestRealResumeAndFork(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:first":  {bash("echo first-output"), claudetest.Say("first done")},
		"SCENARIO:second": {claudetest.Say("second done")},
		"SCENARIO:fork":   {claudetest.Say("fork done")},
	}.Handler())
	opts := realOptions(t, srv)
	ctx := realCtx(t)
	msgs, err := collect(t, ctx, "SCENARIO:first", opts)
	if err != nil {
		t.Fatal(err)
	}
	sid := lastResult(t, msgs).SessionID

	resume := opts
	resume.Resume = sid
	msgs, err = collect(t, ctx, "SCENARIO:second", resume)
	if err != nil {
		t.Fatal(err)
	}
	if got := lastResult(t, msgs).SessionID; got != sid {
		t.Errorf("resumed session id = %s, want %s", got, sid)
	}
	req := srv.Requests()[srv.Count()-1]
	if !req.HasText("SCENARIO:first") || !req.HasText("first-output") || !req.HasText("first done") {
		t.Fatalf("the resumed request lacks the earlier history: %d messages", len(req.Messages))
	}

	fork := opts
	fork.Resume, fork.ForkSession = sid, true
	msgs, err = collect(t, ctx, "SCENARIO:fork", fork)
	if err != nil {
		t.Fatal(err)
	}
	if got := lastResult(t, msgs).SessionID; got == sid || got == "" {
		t.Errorf("forked session id = %q, want a new one (old %s)", got, sid)
	}
	req = srv.Requests()[srv.Count()-1]
	if !req.HasText("SCENARIO:first") || !req.HasText("second done") {
		t.Fatal("the fork lacks the history it was forked from")
	}
}

func TestRealSubagentHooksCarryAgentID(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:dispatch": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "run a check", "prompt": "SUBAGENT:check run echo", "subagent_type": "tester", "run_in_background": false})),
			echoToolResult,
		},
		"SUBAGENT:check": {bash("echo from-subagent"), claudetest.Say("subagent finished")},
	}.Handler())
	opts := realOptions(t, srv)
	opts.Agents = map[string]claude.AgentDefinition{"tester": {
		Description: "Runs shell checks", Prompt: "You are the tester.", Tools: []string{"Bash"}}}
	type call struct{ event, tool, agentID, agentType string }
	var mu sync.Mutex
	var calls []call
	record := func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		mu.Lock()
		calls = append(calls, call{in.HookEventName, in.ToolName, in.AgentID, in.AgentType})
		mu.Unlock()
		return nil, nil
	}
	opts.Hooks = map[string][]claude.HookMatcher{
		claude.PreToolUse:  {{Hooks: []claude.HookFunc{record}}},
		claude.PostToolUse: {{Hooks: []claude.HookFunc{record}}},
	}
	if _, err := collect(t, realCtx(t), "SCENARIO:dispatch", opts); err != nil {
		t.Fatal(err)
	}
	var sub int
	for _, r := range srv.Requests() {
		if r.Subagent {
			sub++
			if strings.Join(r.Tools, ",") != "Bash" {
				t.Errorf("subagent tools = %v, want the definition's [Bash]", r.Tools)
			}
		}
	}
	if sub < 2 {
		t.Fatalf("subagent requests = %d, want its two turns", sub)
	}
	var mainAgent, subBash bool
	for _, c := range calls {
		switch {
		case c.tool == "Agent" && c.event == claude.PreToolUse:
			mainAgent = c.agentID == "" && c.agentType == ""
		case c.tool == "Bash" && c.event == claude.PreToolUse:
			subBash = c.agentID != "" && c.agentType == "tester"
		}
	}
	if !mainAgent || !subBash {
		t.Fatalf("hook calls = %+v; the main thread's Agent call must have no agent_id, the subagent's Bash must", calls)
	}
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func TestRealInProcessMCPTool(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"}, nil)
	var called int
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "Adds two integers"},
		func(ctx context.Context, req *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			called++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sum=" + itoa(in.A+in.B)}}}, nil, nil
		})
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:mcp": {
		claudetest.NewReply(claudetest.ToolUse("", "mcp__calc__add", map[string]any{"a": 2, "b": 40})),
		echoToolResult,
	}}.Handler())
	opts := realOptions(t, srv)
	// MCP tools are otherwise deferred behind ToolSearch, which a scripted
	// model does not drive.
	opts.Env["ENABLE_TOOL_SEARCH"] = "false"
	opts.MCPServers = map[string]claude.MCPServer{"calc": claude.SDKServer{Server: server}}
	opts.AllowedTools = []string{"mcp__calc__add"}
	msgs, err := collect(t, realCtx(t), "SCENARIO:mcp", opts)
	if err != nil {
		t.Fatal(err)
	}
	first := srv.Requests()[0]
	if !strings.Contains(strings.Join(first.Tools, ","), "mcp__calc__add") {
		t.Fatalf("the model was not offered the MCP tool: %v", first.Tools)
	}
	res, _ := srv.Requests()[srv.Count()-1].LastToolResult()
	if called != 1 || !strings.Contains(res.Content, "sum=42") {
		t.Fatalf("tool called %d times; the model got %+v", called, res)
	}
	if r := lastResult(t, msgs); !strings.Contains(r.Result, "sum=42") {
		t.Errorf("result = %q", r.Result)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestRealOverloadedTwiceThenSuccess(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:flaky": {
		claudetest.FailFirst(2, claudetest.Overloaded(), claudetest.Say("made it"))}}.Handler())
	msgs, err := collect(t, realCtx(t), "SCENARIO:flaky", realOptions(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(t, msgs); r.IsError || r.Result != "made it" {
		t.Fatalf("result = %+v", r)
	}
	var retries int
	for _, m := range msgs {
		if s, ok := m.(*claude.SystemMessage); ok && s.APIRetry != nil && s.APIRetry.ErrorStatus == 529 {
			retries++
		}
	}
	if srv.Count() != 3 || retries != 2 {
		t.Errorf("requests = %d, api_retry(529) messages = %d; want 3 and 2", srv.Count(), retries)
	}
}

func TestRealServerErrorIsATypedResultError(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, func(context.Context, *claudetest.Request) claudetest.Reply {
		return claudetest.Reply{Fault: claudetest.ServerError()}
	})
	opts := realOptions(t, srv)
	opts.Env["CLAUDE_CODE_MAX_RETRIES"] = "1"
	msgs, err := collect(t, realCtx(t), "SCENARIO:doomed", opts)
	var re *claude.ResultError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *claude.ResultError", err)
	}
	if re.Result.APIErrorStatus != 500 || !re.Result.IsError || re.Result.TerminalReason != "api_error" {
		t.Fatalf("result = %+v", re.Result)
	}
	var synthetic bool
	for _, m := range msgs {
		if a, ok := m.(*claude.AssistantMessage); ok && a.Synthetic() {
			synthetic = true
		}
	}
	if !synthetic {
		t.Error("the API error should arrive as a synthetic assistant message first")
	}
}

func TestRealInterruptDuringASlowTool(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:slow": {bash("timeout 30 tail -f /dev/null; echo woke"), claudetest.Say("never")}}.Handler())
	opts := realOptions(t, srv)
	started := make(chan struct{}, 1)
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			started <- struct{}{}
			// Allow explicitly: acceptEdits alone would refuse this command
			// with no one to ask.
			return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
				HookEventName: claude.PreToolUse, PermissionDecision: claude.DecisionAllow}}, nil
		}}}}}
	ctx := realCtx(t)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, "SCENARIO:slow"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatalf("the tool never started; the fake saw %d requests", srv.Count())
	}
	time.Sleep(300 * time.Millisecond) // let the sleep begin
	begin := time.Now()
	if err := cl.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	var result *claude.ResultMessage
	for m, err := range cl.ReceiveResponse(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			result = r
		}
	}
	if result == nil || !result.Interrupted() {
		t.Fatalf("result = %s, want an interrupted turn", result.Raw)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("the interrupt took %s; the tool was not stopped", d)
	}
}

func TestRealAcceptsThinkingEffortAndTaskBudgetFlags(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:think": {claudetest.Say("thought")}}.Handler())
	opts := realOptions(t, srv)
	opts.Thinking = "disabled"
	opts.TaskBudget = 50000
	opts.Effort = "high"
	msgs, err := collect(t, realCtx(t), "SCENARIO:think", opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(t, msgs); r.IsError || r.Result != "thought" {
		t.Fatalf("result = %s", r.Raw)
	}
	body := string(srv.Requests()[0].Body)
	for _, want := range []string{`"effort":"high"`, `"task_budget":{"type":"tokens","total":50000}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the API request lacks %s", want)
		}
	}
	// CLI 2.1.332 accepts --thinking but keeps adaptive thinking for its
	// default model, so only the acceptance is asserted for it.
}

// Options.Launcher starts the CLI through another program: here env(1),
// which adds a variable the model's Bash then reads.
func TestRealLauncherStartsTheCLIThroughIt(t *testing.T) {
	t.Parallel()
	env, err := exec.LookPath("env")
	if err != nil {
		t.Fatal(err)
	}
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:launched": {bash("printenv LAUNCHED_BY"), echoToolResult}}.Handler())
	opts := realOptions(t, srv)
	opts.Launcher = []string{env, "LAUNCHED_BY=the-launcher"}
	opts.AllowedTools = []string{"Bash"}
	msgs, err := collect(t, realCtx(t), "SCENARIO:launched", opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(t, msgs); r.IsError || r.Result != "tool said: the-launcher" {
		t.Fatalf("result = %+v", r)
	}
}

// A background agent in a long Bash after the main thread's turn ended:
// WaitingOn names its task (an older CLI streams the agent's messages
// after the result, which must not count as a turn an interrupt could
// cut); a prompt sent then starts a turn at once, and StopTask ends the
// agent, after which the session closes its input and ends.
func TestRealWaitingOnABackgroundAgent(t *testing.T) {
	t.Parallel()
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:background": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{
				"description": "a long job", "prompt": "SUBAGENT:long run it", "subagent_type": "runner", "run_in_background": true})),
			claudetest.Say("dispatched; waiting"),
		},
		"SUBAGENT:long":  {slowly(bash("timeout 611.5 tail -f /dev/null")), claudetest.Say("long job over")},
		"SCENARIO:words": {claudetest.Say("heard the words")},
	}.Handler())
	opts := realOptions(t, srv)
	opts.Agents = map[string]claude.AgentDefinition{"runner": {
		Description: "Runs long jobs", Prompt: "You run jobs.", Tools: []string{"Bash"}}}
	opts.AllowedTools = []string{"Bash"}
	ctx := realCtx(t)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	msgs := make(chan claude.Message, 1000)
	go func() {
		defer close(msgs)
		for m, err := range cl.Messages(ctx) {
			if err != nil {
				return
			}
			msgs <- m
		}
	}()
	untilResult := func(what string) {
		t.Helper()
		for m := range msgs {
			if _, ok := m.(*claude.ResultMessage); ok {
				return
			}
		}
		t.Fatalf("the session ended before %s", what)
	}
	if err := cl.Send(ctx, "SCENARIO:background"); err != nil {
		t.Fatal(err)
	}
	cl.CloseInputWhenIdle()
	untilResult("the dispatch's result")
	var tasks []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if ids, waiting := cl.WaitingOn(); waiting && hasProcess("611.5") {
			tasks = ids
			break
		}
		if time.Now().After(deadline) {
			ids, w := cl.WaitingOn()
			t.Logf("waiting %v %v process %v err %v", ids, w, hasProcess("611.5"), cl.Err())
			for _, r := range srv.Requests() {
				t.Logf("request subagent=%v last=%q", r.Subagent, r.LastUserText())
			}
			t.Fatal("never waiting on the agent in its Bash")
		}
	}
	// What the agent says meanwhile starts no turn.
	time.Sleep(time.Second)
	if ids, waiting := cl.WaitingOn(); !waiting || !slices.Equal(ids, tasks) || len(tasks) != 1 {
		t.Fatalf("waiting on %v, then %v (%v): want the one agent", tasks, ids, waiting)
	}
	if err := cl.Send(ctx, "SCENARIO:words"); err != nil {
		t.Fatalf("a prompt between turns: %v", err)
	}
	if _, waiting := cl.WaitingOn(); waiting {
		t.Error("waiting between turns after a prompt was sent")
	}
	if err := cl.StopTask(ctx, tasks[0]); err != nil {
		t.Fatalf("stop_task: %v", err)
	}
	untilResult("the words' turn")
	heard := false
	for _, r := range srv.Requests() {
		heard = heard || (!r.Subagent && r.HasText("SCENARIO:words"))
	}
	if !heard {
		t.Error("the words never reached the model")
	}
	// Nothing runs: the input closes and the session ends.
	for range msgs {
	}
	for deadline := time.Now().Add(30 * time.Second); hasProcess("611.5"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stopped agent's Bash still runs")
		}
	}
}

// slowly is r two seconds late: a subagent's call comes after its
// launcher's turn ended.
func slowly(r claudetest.Reply) claudetest.Reply {
	r.Fault = &claudetest.Fault{Delay: 2 * time.Second}
	return r
}

// hasProcess reports a process whose command line holds s.
func hasProcess(s string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			return true
		}
	}
	return false
}
