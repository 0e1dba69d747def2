package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

func init() {
	fakeScripts["text"] = func(f *fake) {
		f.handshake()
		p := f.prompt()
		f.system("init", map[string]any{"cwd": "/x", "model": "fake", "tools": []string{"Bash"}})
		f.assistantText("echo: " + p)
		f.result("echo: "+p, false)
		f.waitEOF()
	}
	fakeScripts["hugeline"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.assistantText(strings.Repeat("x", 5<<20))
		f.result("done", false)
		f.waitEOF()
	}
	fakeScripts["garbage"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.raw("[SandboxDebug] not a message")
		f.raw("")
		f.raw(`{"type":"keep_alive"}`)
		f.raw(`{"type":"assistant","session_id":"s","message":{"id":"m","model":"x","content":[{"type":"brand_new_block","x":1},{"type":"text","text":"hi"}]}}`)
		f.raw(`{"type":"assistant", this is not json`)
		f.waitEOF()
	}
	fakeScripts["cancel"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		slow := f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PreToolUse"), "input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash"}})
		time.Sleep(100 * time.Millisecond)
		f.send(map[string]any{"type": "control_cancel_request", "request_id": slow})
		// A second, answered call proves the session goes on; the cancelled
		// one must get no reply at all before it.
		probe := f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PostToolUse"), "input": map[string]any{"hook_event_name": "PostToolUse"}})
		f.reply(probe)
		var got []string
		f.mu.Lock()
		for _, m := range f.stash {
			if m["type"] == "control_response" {
				got = append(got, fmt.Sprint(m["response"].(map[string]any)["request_id"]))
			}
		}
		f.mu.Unlock()
		f.result("replies to cancelled: "+strings.Join(got, ","), false)
		f.waitEOF()
	}
	fakeScripts["exit-mid-turn"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.assistantText("working")
		fmt.Fprintln(os.Stderr, "fatal: the fake CLI crashed")
		os.Exit(3)
	}
	fakeScripts["error-result"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.send(map[string]any{"type": "result", "subtype": "success", "is_error": true, "duration_ms": 1, "duration_api_ms": 1,
			"num_turns": 1, "result": "API Error: 500 boom", "session_id": "sess-1", "api_error_status": 500, "terminal_reason": "api_error"})
		f.waitEOF()
		os.Exit(1)
	}
	fakeScripts["exit-at-start"] = func(f *fake) {
		fmt.Fprintln(os.Stderr, "Error: unknown option --bogus")
		os.Exit(1)
	}
	fakeScripts["concurrent-hooks"] = func(f *fake) {
		f.handshake()
		f.prompt()
		var ids []string
		for i := 0; i < 50; i++ {
			ids = append(ids, f.call("hook_callback", map[string]any{"callback_id": "hook_0",
				"input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": fmt.Sprint(i)}}))
		}
		ok := 0
		for _, id := range ids {
			if r := f.reply(id); r["subtype"] == "success" {
				ok++
			}
		}
		f.result(fmt.Sprintf("answered %d", ok), false)
		f.waitEOF()
	}
	fakeScripts["bad-callbacks"] = func(f *fake) {
		f.handshake()
		f.prompt()
		var out []string
		for _, cb := range []string{"hook_0", "hook_1", "hook_9"} {
			r := f.reply(f.call("hook_callback", map[string]any{"callback_id": cb, "input": map[string]any{"hook_event_name": "PreToolUse"}}))
			out = append(out, fmt.Sprintf("%s=%s:%v", cb, r["subtype"], r["error"]))
		}
		r := f.reply(f.call("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{}}))
		out = append(out, fmt.Sprintf("perm=%s:%v", r["subtype"], r["error"]))
		r = f.reply(f.call("no_such_subtype", nil))
		out = append(out, fmt.Sprintf("other=%s:%v", r["subtype"], r["error"]))
		f.result(strings.Join(out, "\n"), false)
		f.waitEOF()
	}
	fakeScripts["stdin-rule"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.system("task_started", map[string]any{"task_id": "t1", "task_type": "local_agent"})
		f.result("first", false)
		// The background agent still needs the host: stdin must be open.
		r := f.reply(f.call("hook_callback", map[string]any{"callback_id": "hook_0", "input": map[string]any{"hook_event_name": "PostToolUse"}}))
		f.system("task_notification", map[string]any{"task_id": "t1", "status": "completed"})
		f.result(fmt.Sprint("second ", r["subtype"]), false)
		f.waitEOF()
	}
	fakeScripts["control"] = func(f *fake) {
		f.handshake()
		for {
			m := f.read()
			if m == nil {
				return
			}
			if m["type"] != "control_request" {
				continue
			}
			req := m["request"].(map[string]any)
			resp := map[string]any{"subtype": "success", "request_id": m["request_id"], "response": map[string]any{"echo": req}}
			switch req["subtype"] {
			case "set_permission_mode":
				if req["mode"] == "bogus" {
					resp = map[string]any{"subtype": "error", "request_id": m["request_id"], "error": "Invalid permission mode: bogus"}
				}
			case "mcp_status":
				resp["response"] = map[string]any{"mcpServers": []any{map[string]any{"name": "calc", "status": "connected"}}}
			case "stop_task":
				if req["task_id"] == "never" {
					continue // never answered: the host times out
				}
			}
			f.send(map[string]any{"type": "control_response", "response": resp})
		}
	}
	// A CLI slow to start on a busy machine: it works (uses CPU) for
	// FAKECLI_BUSY before it reads initialize, or forever when unset.
	fakeScripts["busy-start"] = func(f *fake) {
		busy, err := time.ParseDuration(os.Getenv("FAKECLI_BUSY"))
		if err != nil {
			busy = time.Hour
		}
		for start := time.Now(); time.Since(start) < busy; {
		}
		f.handshake()
		f.waitEOF()
	}
	// A CLI that sits at its start and never answers.
	fakeScripts["idle-start"] = func(f *fake) {
		time.Sleep(time.Hour)
	}
	fakeScripts["stubborn"] = func(f *fake) {
		signal.Ignore(syscall.SIGTERM)
		f.handshake()
		f.prompt()
		f.assistantText("ignoring everything")
		time.Sleep(time.Hour)
	}
	fakeScripts["bench-hooks"] = func(f *fake) {
		f.handshake()
		f.prompt()
		for i := 0; i < 200; i++ {
			f.reply(f.call("hook_callback", map[string]any{"callback_id": "hook_0",
				"input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "echo hi"}}}))
		}
		f.result("200 calls", false)
		f.waitEOF()
	}
}

// hookID finds the first callback id registered for event in initialize.
func hookID(init map[string]any, event string) string {
	hooks, _ := init["hooks"].(map[string]any)
	matchers, _ := hooks[event].([]any)
	if len(matchers) == 0 {
		return "missing"
	}
	ids, _ := matchers[0].(map[string]any)["hookCallbackIds"].([]any)
	if len(ids) == 0 {
		return "missing"
	}
	return fmt.Sprint(ids[0])
}

func collect(t *testing.T, ctx context.Context, prompt string, opts claude.Options) ([]claude.Message, error) {
	t.Helper()
	var msgs []claude.Message
	for m, err := range claude.Query(ctx, prompt, opts) {
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// resultTexts are the texts of the results among msgs, in order.
func resultTexts(msgs []claude.Message) []string {
	var texts []string
	for _, m := range msgs {
		if r, ok := m.(*claude.ResultMessage); ok {
			texts = append(texts, r.Result)
		}
	}
	return texts
}

// noopHook registers one callback for event that answers nothing: the
// session then has a hook host, as flower's sessions do.
func noopHook(event string) map[string][]claude.HookMatcher {
	return map[string][]claude.HookMatcher{event: {{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) { return nil, nil }}}}}
}

func lastResult(t *testing.T, msgs []claude.Message) *claude.ResultMessage {
	t.Helper()
	for i := len(msgs) - 1; i >= 0; i-- {
		if r, ok := msgs[i].(*claude.ResultMessage); ok {
			return r
		}
	}
	t.Fatalf("no result among %d messages", len(msgs))
	return nil
}

// testCtx bounds a scenario against a hang: generous, since the fake CLI
// is this race-instrumented binary and a loaded machine runs it slowly (a
// 5 MiB line took 40 s with the suite running side by side).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestFakeTextTurn(t *testing.T) {
	msgs, err := collect(t, testCtx(t), "hello", fakeOptions(t, "text"))
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(t, msgs); r.Result != "echo: hello" || r.IsError {
		t.Fatalf("result = %+v", r)
	}
	init, ok := msgs[0].(*claude.SystemMessage)
	if !ok || init.Init == nil || init.Init.Model != "fake" {
		t.Fatalf("first message = %#v, want system/init", msgs[0])
	}
}

func TestFakeLineOfFiveMiBPassesWithARaisedLimit(t *testing.T) {
	opts := fakeOptions(t, "hugeline")
	opts.MaxLineBytes = 8 << 20
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	a := msgs[0].(*claude.AssistantMessage)
	if got := len(a.Text()); got != 5<<20 {
		t.Fatalf("text length = %d, want %d", got, 5<<20)
	}
}

func TestFakeLineOverTheDefaultLimitIsAProtocolError(t *testing.T) {
	_, err := collect(t, testCtx(t), "go", fakeOptions(t, "hugeline"))
	var pe *claude.ProtocolError
	if !errors.As(err, &pe) || !errors.Is(err, claude.ErrLineTooLong) {
		t.Fatalf("err = %v, want a ProtocolError wrapping ErrLineTooLong", err)
	}
	if !strings.Contains(err.Error(), "MaxLineBytes") {
		t.Errorf("error %q does not say how to raise the limit", err)
	}
}

func TestFakeGarbageLines(t *testing.T) {
	msgs, err := collect(t, testCtx(t), "go", fakeOptions(t, "garbage"))
	var pe *claude.ProtocolError
	if !errors.As(err, &pe) || !strings.Contains(pe.Line, "this is not json") {
		t.Fatalf("err = %v, want a ProtocolError quoting the bad line", err)
	}
	if len(msgs) != 2 {
		t.Fatalf("got %d messages before the error, want keep_alive and assistant: %#v", len(msgs), msgs)
	}
	if u, ok := msgs[0].(*claude.UnknownMessage); !ok || u.Type != "keep_alive" {
		t.Errorf("first = %#v, want the unknown keep_alive kept raw", msgs[0])
	}
	a := msgs[1].(*claude.AssistantMessage)
	if ub, ok := a.Content[0].(*claude.UnknownBlock); !ok || ub.Type != "brand_new_block" || !strings.Contains(string(ub.Raw), `"x":1`) {
		t.Errorf("unknown block = %#v", a.Content[0])
	}
	if a.Text() != "hi" {
		t.Errorf("text = %q", a.Text())
	}
}

func TestFakeCancelRequestCancelsTheHookAndSendsNothing(t *testing.T) {
	cancelled := make(chan struct{})
	opts := fakeOptions(t, "cancel")
	opts.Hooks = map[string][]claude.HookMatcher{
		claude.PreToolUse: {{Hooks: []claude.HookFunc{func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			<-ctx.Done()
			close(cancelled)
			return claude.Deny("too late"), nil
		}}}},
		claude.PostToolUse: {{Hooks: []claude.HookFunc{func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			return nil, nil
		}}}},
	}
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("the hook's context was not cancelled")
	}
	if r := lastResult(t, msgs); r.Result != "replies to cancelled: " {
		t.Fatalf("the CLI saw replies it should not have: %q", r.Result)
	}
}

func TestFakeCLIExitingMidTurnIsAProcessError(t *testing.T) {
	msgs, err := collect(t, testCtx(t), "go", fakeOptions(t, "exit-mid-turn"))
	var pe *claude.ProcessError
	if !errors.As(err, &pe) || pe.ExitCode != 3 || !strings.Contains(pe.Stderr, "fake CLI crashed") {
		t.Fatalf("err = %#v, want exit code 3 with the stderr tail", err)
	}
	if len(msgs) != 1 {
		t.Errorf("messages before the crash = %d, want 1", len(msgs))
	}
}

func TestFakeErrorResultBecomesAResultError(t *testing.T) {
	msgs, err := collect(t, testCtx(t), "go", fakeOptions(t, "error-result"))
	var re *claude.ResultError
	if !errors.As(err, &re) || re.Result.APIErrorStatus != 500 || re.Result.TerminalReason != "api_error" {
		t.Fatalf("err = %#v, want a ResultError with status 500", err)
	}
	var pe *claude.ProcessError
	if !errors.As(err, &pe) || pe.ExitCode != 1 {
		t.Errorf("the ResultError should wrap the ProcessError; got %#v", pe)
	}
	if lastResult(t, msgs).IsError != true {
		t.Error("the consumer should have seen the error result first")
	}
}

func TestFakeCLIExitingAtStartFailsConnect(t *testing.T) {
	_, err := claude.Connect(testCtx(t), fakeOptions(t, "exit-at-start"))
	var pe *claude.ProcessError
	if !errors.As(err, &pe) || !strings.Contains(pe.Stderr, "unknown option") {
		t.Fatalf("err = %v, want a ProcessError with the CLI's complaint", err)
	}
}

func TestMissingCLIIsCLINotFound(t *testing.T) {
	_, err := claude.Connect(testCtx(t), claude.Options{CLIPath: "/nonexistent/claude"})
	var nf *claude.CLINotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want CLINotFoundError", err)
	}
}

func TestMissingWorkingDirectoryIsAConnectionError(t *testing.T) {
	opts := fakeOptions(t, "text")
	opts.Cwd = "/nonexistent/dir"
	_, err := claude.Connect(testCtx(t), opts)
	var ce *claude.ConnectionError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("err = %v", err)
	}
}

func TestFakeFiftyConcurrentHookCallbacks(t *testing.T) {
	var running, peak atomic.Int32
	var seen sync.Map
	opts := fakeOptions(t, "concurrent-hooks")
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Matcher: "Bash", Hooks: []claude.HookFunc{
		func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			seen.Store(in.ToolUseID, true)
			time.Sleep(50 * time.Millisecond)
			return nil, nil
		}}}}}
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := lastResult(t, msgs); r.Result != "answered 50" {
		t.Fatalf("result = %q", r.Result)
	}
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	if n != 50 {
		t.Errorf("distinct hook inputs = %d, want 50", n)
	}
	if peak.Load() < 10 {
		t.Errorf("at most %d hooks ran at once; they should run concurrently", peak.Load())
	}
}

func TestFakeBadCallbacksGetErrorReplies(t *testing.T) {
	opts := fakeOptions(t, "bad-callbacks")
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			return nil, errors.New("disk on fire")
		},
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			panic("hook bug")
		},
	}}}}
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	got := lastResult(t, msgs).Result
	for _, want := range []string{
		"hook_0=error:hook hook_0 (PreToolUse): disk on fire",
		"hook_1=error:hook_callback callback panicked: hook bug",
		`hook_9=error:no hook callback with id "hook_9"`,
		"perm=error:canUseTool callback is not provided",
		"other=error:Unsupported control request subtype: no_such_subtype",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CLI saw\n%s\nwant a line %q", got, want)
		}
	}
}

func TestFakeStdinStaysOpenForBackgroundTasks(t *testing.T) {
	opts := fakeOptions(t, "stdin-rule")
	opts.Hooks = noopHook(claude.PostToolUse)
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	results := resultTexts(msgs)
	if strings.Join(results, "|") != "first|second success" {
		t.Fatalf("results = %q; stdin must stay open until the background task ends", results)
	}
}

func TestFakeOutboundControlRequests(t *testing.T) {
	ctx := testCtx(t)
	opts := fakeOptions(t, "control")
	opts.ControlTimeout = 300 * time.Millisecond
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Interrupt(ctx); err != nil {
		t.Errorf("interrupt: %v", err)
	}
	if err := cl.SetPermissionMode(ctx, "plan"); err != nil {
		t.Errorf("set_permission_mode: %v", err)
	}
	err = cl.SetPermissionMode(ctx, "bogus")
	var ce *claude.ControlError
	if !errors.As(err, &ce) || ce.Subtype != "set_permission_mode" || !strings.Contains(ce.Msg, "Invalid permission mode") {
		t.Errorf("bogus mode: err = %v", err)
	}
	if err := cl.SetModel(ctx, "sonnet"); err != nil {
		t.Errorf("set_model: %v", err)
	}
	usage, err := cl.ContextUsage(ctx)
	if err != nil || !strings.Contains(string(usage), "get_context_usage") {
		t.Errorf("get_context_usage: %s, %v", usage, err)
	}
	servers, err := cl.MCPStatus(ctx)
	if err != nil || len(servers) != 1 || servers[0].Name != "calc" || servers[0].Status != "connected" {
		t.Errorf("mcp_status: %+v, %v", servers, err)
	}
	if err := cl.StopTask(ctx, "t1"); err != nil {
		t.Errorf("stop_task: %v", err)
	}
	if err := cl.ReconnectMCPServer(ctx, "calc"); err != nil {
		t.Errorf("mcp_reconnect: %v", err)
	}
	if err := cl.ToggleMCPServer(ctx, "calc", false); err != nil {
		t.Errorf("mcp_toggle: %v", err)
	}
	var te *claude.ControlTimeoutError
	if err := cl.StopTask(ctx, "never"); !errors.As(err, &te) || te.Subtype != "stop_task" {
		t.Errorf("unanswered request: err = %v, want a ControlTimeoutError", err)
	}
	var echo struct {
		Echo struct {
			Hooks any `json:"hooks"`
		} `json:"echo"`
	}
	if err := json.Unmarshal(cl.ServerInfo(), &echo); err != nil || echo.Echo.Hooks != nil {
		t.Errorf("initialize without hooks should send hooks:null; server info %s", cl.ServerInfo())
	}
}

func TestFakeShutdownEscalatesToSIGKILL(t *testing.T) {
	ctx := testCtx(t)
	opts := fakeOptions(t, "stubborn")
	opts.ShutdownGrace = 200 * time.Millisecond
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cl.Close()
	// Interrupt (1 s), EOF, SIGTERM and SIGKILL each 200 ms apart: about
	// 1.5 s. The bound only tells escalation from waiting on the stubborn
	// CLI forever, with room for a loaded machine.
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("Close took %s", d)
	}
	if _, err := cl.Receive(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("after Close, Receive = %v, want io.EOF", err)
	}
}

func TestFakeCancellingTheContextStopsTheQuery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := fakeOptions(t, "stubborn")
	opts.ShutdownGrace = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() {
		for m, err := range claude.Query(ctx, "go", opts) {
			if m != nil {
				cancel()
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Query did not stop after cancellation")
	}
}

func TestFakeCloseInputWhenIdleWaitsForBackgroundTasks(t *testing.T) {
	ctx := testCtx(t)
	opts := fakeOptions(t, "stdin-rule")
	opts.Hooks = noopHook(claude.PostToolUse)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	cl.CloseInputWhenIdle()
	var results []string
	for m, err := range cl.Messages(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			results = append(results, r.Result)
		}
	}
	if strings.Join(results, "|") != "first|second success" {
		t.Fatalf("results = %q", results)
	}
}

// The initialize wait is a window (here 500 ms, 60 s by default) that grows
// while the CLI works at its start, as on a machine too busy to start it in
// a window, and ends after one window for a CLI that sits idle. (With a
// window of 200 ms a CLI that spun all along was once seen idle on a loaded
// machine, ci27: its CPU is read in 10 ms ticks.)
func TestFakeInitializeWaitsForACLIThatIsStillStarting(t *testing.T) {
	const window = 500 * time.Millisecond
	t.Run("working for four windows", func(t *testing.T) {
		opts := fakeOptions(t, "busy-start")
		opts.BaseEnv = append(opts.BaseEnv, "FAKECLI_BUSY=2s")
		opts.InitializeTimeout = window
		cl, err := claude.Connect(testCtx(t), opts)
		if err != nil {
			t.Fatalf("a CLI working at its start for four windows: %v", err)
		}
		cl.Close()
	})
	t.Run("working forever", func(t *testing.T) {
		opts := fakeOptions(t, "busy-start")
		opts.InitializeTimeout = window
		_, err := claude.Connect(testCtx(t), opts)
		var te *claude.ControlTimeoutError
		if !errors.As(err, &te) || te.Subtype != "initialize" {
			t.Fatalf("err = %v, want a ControlTimeoutError for initialize", err)
		}
		// Ten windows at most, then it gives up.
		if te.After < 10*window {
			t.Errorf("gave up after %s, want ten windows (%s)", te.After, 10*window)
		}
		if !strings.Contains(err.Error(), "did not answer initialize in") {
			t.Errorf("err = %q, want it to say what the CLI did not answer and for how long", err)
		}
	})
	t.Run("idle", func(t *testing.T) {
		opts := fakeOptions(t, "idle-start")
		opts.InitializeTimeout = window
		_, err := claude.Connect(testCtx(t), opts)
		var te *claude.ControlTimeoutError
		if !errors.As(err, &te) || te.Subtype != "initialize" {
			t.Fatalf("err = %v, want a ControlTimeoutError for initialize", err)
		}
	})
}
