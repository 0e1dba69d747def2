package human_test

// Real-CLI tests: the pinned claude binary against claudetest's fake
// Messages API, with the channel's in-process server. Tool search is left at
// the CLI's default (on): MCP tools are deferred, so the scripted model
// first loads them through ToolSearch, as a real model does.

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/human"
)

// loadTools is the model's first call: ToolSearch selecting both tools.
func loadTools() claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", "ToolSearch",
		map[string]any{"query": "select:" + human.AskTool + "," + human.InboxTool, "max_results": 5}))
}

func use(tool string, input map[string]any) claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", tool, input))
}

func realOptions(t *testing.T, srv *claudetest.Server, ch *human.Channel) claude.Options {
	t.Helper()
	env := claudetest.Env(t, srv)
	maps.Copy(env, ch.Env())
	// A failed test says how far the CLI got: what it wrote to stderr
	// and how many requests reached the fake API.
	var mu sync.Mutex
	var stderr []string
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%d requests reached the fake API; the CLI's stderr:\n%s", len(srv.Requests()), strings.Join(stderr, "\n"))
		}
	})
	return claude.Options{
		Stderr: func(line string) {
			mu.Lock()
			stderr = append(stderr, line)
			mu.Unlock()
		},
		CLIPath:        claudetest.CLIPath(t),
		Cwd:            t.TempDir(),
		BaseEnv:        claudetest.BaseEnv(),
		Env:            env,
		PermissionMode: "acceptEdits",
		SystemPrompt:   claude.PresetPrompt(""),
		MCPServers:     ch.MCPServers(),
		AllowedTools:   []string{human.AskTool, human.InboxTool},
	}
}

func runCLI(t *testing.T, prompt string, opts claude.Options) *claude.ResultMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var last *claude.ResultMessage
	for m, err := range claude.Query(ctx, prompt, opts) {
		if err != nil {
			t.Fatalf("%s: %v", prompt, err)
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			last = r
		}
	}
	if last == nil {
		t.Fatalf("%s: no result", prompt)
	}
	return last
}

// mainResults returns the tool results the model saw last on the main
// thread, in order, with ToolSearch's (tool references, no text) first.
func mainResults(t *testing.T, srv *claudetest.Server, want int) []claudetest.Block {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the fake API")
	}
	res := reqs[len(reqs)-1].ToolResults()
	if len(res) != want {
		t.Fatalf("%d tool results, want %d: %+v", len(res), want, res)
	}
	return res
}

// TestRealAskAnsweredWhileTheToolBlocksThenInbox: the model asks; the tool
// blocks while another goroutine sends two messages and answers; the model
// gets the answer, then the inbox with both messages, then the empty inbox.
func TestRealAskAnsweredWhileTheToolBlocksThenInbox(t *testing.T) {
	t.Parallel()
	ch := human.New(human.WithLang("zh"))
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:ask": {
		loadTools(),
		use(human.AskTool, map[string]any{"question": "Go or Rust?", "options": []string{"Go", "Rust"}}),
		use(human.InboxTool, map[string]any{}),
		use(human.InboxTool, map[string]any{}),
		claudetest.Say("done"),
	}}.Handler())
	wait := answerNext(t, ch, func(a human.Ask) {
		time.Sleep(300 * time.Millisecond) // the tool call is in flight meanwhile
		ch.Send("also count bytes")
		ch.Send("skip Windows")
		ch.Answer(a.ID, "Go, please")
	})
	if r := runCLI(t, "SCENARIO:ask", realOptions(t, srv, ch)); r.IsError || r.Result != "done" {
		t.Fatalf("result = %+v", r)
	}
	pulled := wait()
	if first := srv.Requests()[0]; slices.Contains(first.Tools, human.AskTool) {
		t.Logf("the CLI offered %s at once (not deferred)", human.AskTool)
	}
	res := mainResults(t, srv, 4)
	inbox := zhInboxHead + "\n\n1. also count bytes\n2. skip Windows\n\n" + human.ChineseTexts.InboxNotOnDisk
	for i, want := range []string{"Go, please", inbox, zhEmptyInbox} {
		if r := res[i+1]; r.IsError || r.Content != want {
			t.Errorf("result %d = %q (error %v), want %q", i+1, r.Content, r.IsError, want)
		}
	}
	asks := ch.Asks()
	if len(asks) != 1 || asks[0].State != human.Answered || pulled.Question != "Go or Rust?" ||
		strings.Join(pulled.Options, ",") != "Go,Rust" {
		t.Fatalf("asks = %+v, pulled %+v", asks, pulled)
	}
}

// TestRealAtOnceOverQuotaAndEmpty: with timeout 0 an ask settles at once,
// beyond the quota it is refused, and an empty question is sent back.
func TestRealAtOnceOverQuotaAndEmpty(t *testing.T) {
	t.Parallel()
	ch := human.New(human.WithLang("zh"), human.WithTimeout(0), human.WithMaxAsks(1))
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:quota": {
		loadTools(),
		use(human.AskTool, map[string]any{"question": "anyone there?"}),
		use(human.AskTool, map[string]any{"question": "and now?"}),
		use(human.AskTool, map[string]any{"question": "  "}),
		claudetest.Say("carried on"),
	}}.Handler())
	start := time.Now()
	if r := runCLI(t, "SCENARIO:quota", realOptions(t, srv, ch)); r.IsError || r.Result != "carried on" {
		t.Fatalf("result = %+v", r)
	}
	res := mainResults(t, srv, 4)
	// The general server (MCPServers) gives the plain no-answer texts,
	// which name no section of the brief.
	for i, want := range []string{zhTimeoutPlain, human.ChineseTexts.OverBudgetPlain, zhEmptyQ} {
		if r := res[i+1]; r.Content != want {
			t.Errorf("result %d = %q, want %q", i+1, r.Content, want)
		}
	}
	var states []human.State
	for _, a := range ch.Asks() {
		states = append(states, a.State)
		if a.Waited() > time.Since(start) {
			t.Errorf("%s waited %v", a.ID, a.Waited())
		}
	}
	if len(states) != 3 || states[0] != human.TimedOut || states[1] != human.OverBudget || states[2] != human.Invalid {
		t.Fatalf("states = %v", states)
	}
}

// TestRealEnvKeepsABlockingAskWhole: two CLI settings end a blocking MCP
// call before the human answers. MCP_TOOL_TIMEOUT cuts it (default
// 100 000 000 ms, 27.8 hours, longer than a test can wait; here at its 1 s
// floor), and with CLAUDE_AUTO_BACKGROUND_TASKS set the CLI moves it to the
// background after CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS (default 120 s; here
// 1 s) and the model goes on without the answer. Each control run shows the
// variable reaches the CLI; with the channel's Env() laid over both, an ask
// answered after 3 s reaches the model.
func TestRealEnvKeepsABlockingAskWhole(t *testing.T) {
	t.Parallel()
	const answerAfter = 3 * time.Second
	cut := map[string]string{human.ToolTimeoutEnv: "1000"}
	background := map[string]string{"CLAUDE_AUTO_BACKGROUND_TASKS": "1", human.AutoBackgroundEnv: "1000"}
	both := maps.Clone(cut)
	maps.Copy(both, background)
	for _, tc := range []struct {
		name    string
		userEnv map[string]string
		withEnv bool
		// settled is the cut ask's end: the CLI gives up a call it cut
		// when the run ends (Cancelled); a backgrounded call is a
		// background task the driver keeps the session open for, so the
		// late answer still reaches the CLI (Answered).
		settled human.State
	}{
		{"timeout cuts", cut, false, human.Cancelled},
		{"moved to the background", background, false, human.Answered},
		{"Env keeps it whole", both, true, human.Answered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ch := human.New(human.WithLang("zh"), human.WithTimeout(30*time.Second))
			srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:slow": {
				loadTools(),
				use(human.AskTool, map[string]any{"question": "slow?"}),
				// Later turns (a background task's notice) end the run too.
				claudetest.Say("over"), claudetest.Say("over"), claudetest.Say("over"),
			}}.Handler())
			opts := realOptions(t, srv, ch)
			maps.Copy(opts.Env, tc.userEnv)
			if tc.withEnv {
				maps.Copy(opts.Env, ch.Env())
			}
			wait := answerNext(t, ch, func(a human.Ask) {
				time.Sleep(answerAfter)
				ch.Answer(a.ID, "slow but sure")
			})
			runCLI(t, "SCENARIO:slow", opts)
			wait()
			var got []string
			for _, r := range srv.Requests() {
				if b, ok := r.LastToolResult(); ok && b.Content != "" {
					got = append(got, b.Content)
				}
			}
			answered := slices.Contains(got, "slow but sure")
			if answered != tc.withEnv {
				t.Fatalf("the model got the answer: %v, want %v; its tool results: %.300q", answered, tc.withEnv, got)
			}
			a := ch.Asks()[0]
			if tc.withEnv && a.State != human.Answered {
				t.Fatalf("ask = %+v", a)
			}
			// Either way the ask settles rather than waiting on.
			if !tc.withEnv && a.State != tc.settled {
				t.Errorf("the cut ask is %s, want %s", a.State, tc.settled)
			}
			t.Logf("tool results the model saw: %.300q", got)
		})
	}
}

// TestRealAskOnTheFirstTurn: with tool search at the CLI's default (on), a
// model that calls ask on its very first turn, without ToolSearch, gets the
// tool: the channel's server is always loaded, so the ask tool is offered
// in the first request itself.
func TestRealAskOnTheFirstTurn(t *testing.T) {
	t.Parallel()
	ch := human.New(human.WithLang("zh"))
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:first": {
		use(human.AskTool, map[string]any{"question": "Which name?", "options": []string{"hello", "world"}}),
		claudetest.Say("done"),
	}}.Handler())
	wait := answerNext(t, ch, func(a human.Ask) { ch.Answer(a.ID, "hello") })
	opts := realOptions(t, srv, ch)
	if _, set := opts.Env["ENABLE_TOOL_SEARCH"]; set {
		t.Fatal("the test must leave tool search at the CLI's default")
	}
	if r := runCLI(t, "SCENARIO:first", opts); r.IsError || r.Result != "done" {
		t.Fatalf("result = %+v", r)
	}
	wait()
	if first := srv.Requests()[0]; !slices.Contains(first.Tools, human.AskTool) || !slices.Contains(first.Tools, human.InboxTool) {
		t.Errorf("the first request offers %v; the channel's tools must be loaded from the start", first.Tools)
	}
	res := mainResults(t, srv, 1)
	if r := res[0]; r.IsError || r.Content != "hello" {
		t.Errorf("the first-turn ask returned %q (error %v), want the answer", r.Content, r.IsError)
	}
}
