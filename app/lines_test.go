package app

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/screen"
)

func TestWakeBannerInBothLanguages(t *testing.T) {
	t.Parallel()
	got := WakeBanner("zh", "/home/u/app", "/home/u", true, 15, 71400, 3)
	if want := "<- 在 ~/app 接上上次  需求已确认 · 目标 15 条 · 干活上下文 71.4K · 第 3 次唤醒"; got != want {
		t.Errorf("zh banner\n got %q\nwant %q", got, want)
	}
	got = WakeBanner("en", "/srv/app", "/home/u", true, 0, 0, 2)
	if want := "<- continuing in /srv/app  brief confirmed · wake #2"; got != want {
		t.Errorf("en banner\n got %q\nwant %q", got, want)
	}
}

func TestStepRule(t *testing.T) {
	t.Parallel()
	r := StepRule("zh", "干活", 3, 3, true, 2, 60)
	if !strings.HasPrefix(r, "== 干活 ====") || !strings.HasSuffix(r, "  3/3  <- 接上次 · 第 2 次唤醒") || screen.Columns(r) != 60 {
		t.Errorf("rule %q (%d columns)", r, screen.Columns(r))
	}
}

func TestOneRendererKeepsTheRunningTotalAndClock(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	ui := &UI{Screen: screen.NewWriter(&b), Lang: "zh"}
	r := NewRenderer(ui, false)
	r.start = time.Now().Add(-65 * time.Second)
	r.Event(event.New(event.Text, "working", map[string]any{"context": 36800}))
	call := event.New(event.ToolCall, "go test ./...", nil)
	call.Tool = "Bash"
	r.Event(call)
	r.Event(event.New(event.Result, "success", map[string]any{"cost_usd": 0.5, "num_turns": 3}))
	r.Event(event.New(event.Result, "success", map[string]any{"cost_usd": 0.44, "num_turns": 2}))
	r.Event(event.New(event.Text, "subagent prose", map[string]any{"subagent": true}))
	out := b.String()
	for _, want := range []string{"  working\n", "  * Bash go test ./...", "  + 完成,3 个回合 · $0.5000 · 用时 1:05", "  - 上下文 36.8K tokens · 累计 $0.5000 · 1:05", "  - 上下文 36.8K tokens · 累计 $0.9400 · 1:05"} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "subagent prose") {
		t.Error("subagent prose shown without -v")
	}
}

// Words given between turns stop a background worker, whose cut call is
// reported when the CLI gets to it: on a loaded machine after the main
// thread's answer to the words, which ends the cutting. It was then shown
// as the CLI words it for the model (red, "[Request interrupted by
// user…"); it is a call the interrupt cut, whenever it reports.
func TestACallCutByTheInterruptIsShownCutWhenItReportsLate(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	ui := &UI{Screen: screen.NewWriter(&b), Lang: "en"}
	r := NewRenderer(ui, false)
	call := event.New(event.ToolCall, "timeout 613 tail -f /dev/null", map[string]any{"id": "toolu_bash", "subagent": true})
	call.Tool = "Bash"
	r.Event(call)
	r.Interrupting(true)
	r.Event(event.New(event.Text, "heard you", nil))
	r.Event(event.New(event.Result, "heard you", map[string]any{"cost_usd": 0.01, "num_turns": 1}))
	debris := "[Request interrupted by user for tool use]"
	r.Event(event.New(event.ToolResult, debris, map[string]any{"tool_use_id": "toolu_bash", "is_error": true, "subagent": true}))
	// A later failure of a call made after the cutting ended is the
	// call's own.
	later := event.New(event.ToolCall, "go test ./...", map[string]any{"id": "toolu_later"})
	later.Tool = "Bash"
	r.Event(later)
	r.Event(event.New(event.ToolResult, "exit status 1", map[string]any{"tool_use_id": "toolu_later", "is_error": true}))
	out := b.String()
	if !strings.Contains(out, "  | "+text("en", "toolCut")) || strings.Contains(out, debris) {
		t.Errorf("the late cut call is not shown as cut:\n%s", out)
	}
	if !strings.Contains(out, "  x exit status 1") {
		t.Errorf("a later call's own failure is not shown as one:\n%s", out)
	}
}

func TestQuestionStatesOnScreen(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	ui := &UI{Screen: screen.NewWriter(&b), Lang: "zh"}
	r := NewRenderer(ui, false)
	ask := func(state string, extra map[string]any) {
		p := map[string]any{"id": "q1", "state": state, "options": []string{"A", "B"}, "remaining": 2}
		for k, v := range extra {
			p[k] = v
		}
		r.Event(event.New(event.Ask, "Which?", p))
	}
	ask("asked", nil)
	ask("answered", map[string]any{"answer": "A"})
	ask("timeout", nil)
	ask("over_budget", nil)
	ask("declined", nil)
	want := "  ? Which?\n     1) A\n     2) B\n     (还能问 2 次)\n  + A\n  ! 无人应答 —— 它会自己判断,把假设记进「未知与假设」\n  ! 提问额度用完\n  . 已跳过\n"
	if b.String() != want {
		t.Errorf("question states:\n%s\nwant\n%s", b.String(), want)
	}
}

func TestBadCredentialsAreRecognized(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"API Error: 401 {\"type\":\"authentication_error\"}": true,
		"Invalid API key · Please run /login":                true,
		"invalid_api_key":                                    true,
		"token 无效,请检查 key":                                   true,
		"API Error: 529 overloaded":                          false,
		"":                                                   false,
	} {
		if got := looksLikeBadCredentials(s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
}

func TestEveryVerdictIsLabelledWithItsRound(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lang, want string }{
		{"en", "  ! Round 1/3 verdict: not yet — nobody ran ls\n  x Round 2/3 verdict: unreachable — no macOS here\n  ! Round 2/3 verdict: no clear conclusion, taken as not yet\n  + Round 3/3 verdict: achieved\n"},
		{"zh", "  ! 第 1/3 轮判定:未达成 —— nobody ran ls\n  x 第 2/3 轮判定:无法达成 —— no macOS here\n  ! 第 2/3 轮判定:没有明确结论,按未达成处理\n  + 第 3/3 轮判定:已达成\n"},
	} {
		var b bytes.Buffer
		r := NewRenderer(&UI{Screen: screen.NewWriter(&b), Lang: flower.Lang(c.lang)}, false)
		for _, v := range []struct {
			round         int
			state, reason string
		}{{1, "not_yet", "nobody ran ls\nmore"}, {2, "unreachable", "no macOS here"}, {2, "", "ambiguous"}, {3, "achieved", "all pass"}} {
			r.Event(event.New(event.Verdict, v.reason, map[string]any{"round": v.round, "rounds": 3, "state": v.state, "step": "work"}))
		}
		if b.String() != c.want {
			t.Errorf("%s verdicts:\n%s\nwant\n%s", c.lang, b.String(), c.want)
		}
	}
}

// At 80 columns a long command was cut at the line's end, its time with
// it: the command's label gives up its end instead, and the time stays.
func TestANarrowStatusLineKeepsHowLongTheCommandRuns(t *testing.T) {
	t.Parallel()
	for _, lang := range []flower.Lang{"en", "zh"} {
		s := NewStatus(lang, 0)
		s.Event(event.New(event.Step, "work", map[string]any{"rounds": 3}))
		s.Event(event.New(event.System, "init", map[string]any{"model": "claude-opus-5", "role": "coordinator", "step": "work"}))
		call := event.New(event.ToolCall, "go test -race -count=1 -run 'TestEverythingThatIsSlowAndLong|TestTheOtherOne' ./internal/... ./cmd/...", map[string]any{"id": "b1"})
		call.Tool = "Bash"
		s.Event(call)
		for _, cols := range []int{79, 159} {
			line := s.LineFor(cols)
			if screen.Columns(line) > cols || !strings.Contains(line, "go test -race") || !strings.Contains(line, " (0:00)") || strings.HasSuffix(line, "...") {
				t.Errorf("%s at %d columns: %q (%d columns), want the command and its time whole", lang, cols, line, screen.Columns(line))
			}
		}
	}
}

func TestTheStatusLineSaysWhereTheRunIs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lang string
		want []string
	}{
		{"en", []string{"- work · round 2/3 · 1:05 · now: worker coder hello.txt (", ") · coordinator · claude-opus-5 · $0.5000 / $5.0000",
			"context 36.8K of 150.0K tokens (handoff)", "tokens 12.0K in / 800 out"}},
		{"zh", []string{"- work · 第 2/3 轮 · 1:05 · 正在:派出的 coder hello.txt (", ") · coordinator · claude-opus-5 · $0.5000 / $5.0000",
			"上下文 36.8K/150.0K tokens(到线交接)", "token 读 12.0K / 写 800"}},
	} {
		s := NewStatus(flower.Lang(c.lang), 0)
		s.start = time.Now().Add(-65 * time.Second)
		s.Event(event.New(event.Step, "work", map[string]any{"rounds": 3, "budget": 5.0, "handoff_at": 150000}))
		s.Event(event.New(event.System, "init", map[string]any{"model": "claude-opus-5", "role": "coordinator", "step": "work"}))
		s.Event(event.New(event.Text, "hi", map[string]any{"context": 36800}))
		s.Event(event.New(event.Result, "success", map[string]any{"cost_usd": 0.5, "tokens_in": 12000, "tokens_out": 800}))
		s.Event(event.New(event.Verdict, "no", map[string]any{"round": 1, "rounds": 3, "state": "not_yet"}))
		agent := event.New(event.ToolCall, "", map[string]any{"id": "a1", "input": map[string]any{"subagent_type": "coder", "description": "hello.txt"}})
		agent.Tool = "Agent"
		s.Event(agent)
		line := s.Line()
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s status lacks %q: %s", c.lang, w, line)
			}
		}
		// On a narrow terminal the tail goes, where the run is stays.
		if short := s.LineFor(50); screen.Columns(short) > 50 || !strings.HasPrefix(short, c.want[0][:30]) {
			t.Errorf("%s status for 60 columns: %q (%d columns)", c.lang, short, screen.Columns(short))
		}
		// The worker's answer ends it; a question makes it wait for the human.
		s.Event(event.New(event.ToolResult, "", map[string]any{"tool_use_id": "a1"}))
		s.Event(event.New(event.Ask, "Which?", map[string]any{"state": "asked"}))
		if line := s.Line(); strings.Contains(line, "coder") || !strings.Contains(line, text(flower.Lang(c.lang), "nowHuman")) {
			t.Errorf("%s after the worker, a question: %s", c.lang, line)
		}
		s.Event(event.New(event.Ask, "Which?", map[string]any{"state": "answered"}))
		s.Event(event.New(event.Retry, "waiting", map[string]any{"reason": "usage_limit"}))
		if line := s.Line(); !strings.Contains(line, text(flower.Lang(c.lang), "nowUsageLimit")) {
			t.Errorf("%s a usage-limit wait: %s", c.lang, line)
		}
		s.Event(event.New(event.Retry, "offline", map[string]any{"reason": "offline"}))
		if line := s.Line(); !strings.Contains(line, text(flower.Lang(c.lang), "nowOffline")) {
			t.Errorf("%s a network wait: %s", c.lang, line)
		}
	}
}

// The role is the step's from the step's first moment (it was the last
// step's until the new session's init came), and a worker dispatched in
// the background is what runs once the main thread's turn ended (the line
// said "waiting for the model" while its Bash ran).
func TestTheStatusLineNamesWhoWorksNow(t *testing.T) {
	t.Parallel()
	for _, lang := range []flower.Lang{"en", "zh"} {
		s := NewStatus(lang, 0)
		s.Event(event.New(event.Step, "plan", map[string]any{"role": "planner"}))
		s.Event(event.New(event.System, "init", map[string]any{"role": "planner", "step": "plan"}))
		s.Event(event.New(event.Step, "work", map[string]any{"role": "coordinator"}))
		if line := s.Line(); !strings.Contains(line, "coordinator") || strings.Contains(line, "planner") {
			t.Errorf("%s: the work step's line before its session started: %s", lang, line)
		}
		agent := event.New(event.ToolCall, "", map[string]any{"id": "a1", "input": map[string]any{"subagent_type": "coder", "description": "tests", "run_in_background": true}})
		agent.Tool = "Agent"
		s.Event(agent)
		s.Event(event.New(event.ToolResult, "started in the background", map[string]any{"tool_use_id": "a1"}))
		bash := event.New(event.ToolCall, "go test ./...", map[string]any{"id": "b1", "subagent": true})
		bash.Tool = "Bash"
		s.Event(bash)
		s.Event(event.New(event.Result, "success", map[string]any{"cost_usd": 0.1}))
		want := fmt.Sprintf(text(lang, "nowSubTool"), "Bash") + " go test ./..."
		if line := s.Line(); !strings.Contains(line, want) || strings.Contains(line, text(lang, "nowModel")) {
			t.Errorf("%s: while the background worker's Bash runs: %s (want %q)", lang, line, want)
		}
		s.Event(event.New(event.ToolResult, "ok", map[string]any{"tool_use_id": "b1", "subagent": true}))
		if line := s.Line(); strings.Contains(line, "go test") {
			t.Errorf("%s: the Bash that ended still shows: %s", lang, line)
		}
	}
}

func TestAPipedRunPrintsAHeartbeatAfterSilence(t *testing.T) {
	old := heartbeatAfter
	heartbeatAfter = 1500 * time.Millisecond
	defer func() { heartbeatAfter = old }()
	var b syncBuffer
	sc := screen.NewWriter(&b)
	s := NewStatus("en", 0)
	s.Event(event.New(event.Step, "work", nil))
	bash := event.New(event.ToolCall, "sleep 100", map[string]any{"id": "t1"})
	bash.Tool = "Bash"
	s.Event(bash)
	ctx, cancel := context.WithTimeout(context.Background(), 4500*time.Millisecond)
	defer cancel()
	s.Show(ctx, sc)
	out := b.String()
	if n := strings.Count(out, "(still running)"); n < 1 || n > 3 {
		t.Errorf("%d heartbeats in 4.5 s with one due after 1.5 s of silence:\n%s", n, out)
	}
	if !strings.Contains(out, "now: Bash sleep 100 (") {
		t.Errorf("the heartbeat does not say what runs:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A question wider than the terminal is written whole above the prompt,
// which keeps only its answer marker: the footer's one row cut the CLI
// install question to "… with npm (ab...]".
func TestAQuestionWiderThanTheTerminalIsWrittenWhole(t *testing.T) {
	t.Parallel()
	q := "Install the Claude Code CLI 2.1.332 into that cache directory with npm (about 200 MB, once)? [Y/n] "
	for _, c := range []struct {
		prompt           string
		width            int
		question, marker string
	}{
		{q, 80, strings.TrimSuffix(q, " [Y/n] "), "[Y/n] "},
		{"What should hello.txt say? Give the exact words you want in it, please: ", 40, "What should hello.txt say? Give the exact words you want in it, please:", "> "},
		{q, 160, "", q},
		{q, 0, "", q}, // not a terminal: nothing is cut, so nothing moves
		{"Key: ", 80, "", "Key: "},
	} {
		question, marker := splitPrompt(c.prompt, c.width)
		if question != c.question || marker != c.marker {
			t.Errorf("splitPrompt(%q, %d) = %q, %q; want %q, %q", c.prompt, c.width, question, marker, c.question, c.marker)
		}
	}
}
