package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/screen"
)

func TestWakeBannerInBothLanguages(t *testing.T) {
	got := WakeBanner("zh", "/home/u/app", "/home/u", true, 15, 71400, 3)
	if want := "<- 在 ~/app 接上上次  需求已确认 · 目标 15 条 · 干活上下文 71.4K · 第 3 次唤醒"; got != want {
		t.Errorf("zh banner\n got %q\nwant %q", got, want)
	}
	got = WakeBanner("en", "/srv/app", "/home/u", true, 0, 0, 2)
	if want := "<- continuing in /srv/app  brief confirmed · wake #2"; got != want {
		t.Errorf("en banner\n got %q\nwant %q", got, want)
	}
}

func TestStepRuleAndClosing(t *testing.T) {
	r := StepRule("zh", "干活", 3, 3, true, 2, 60)
	if !strings.HasPrefix(r, "== 干活 ====") || !strings.HasSuffix(r, "  3/3  <- 接上次 · 第 2 次唤醒") || screen.Columns(r) != 60 {
		t.Errorf("rule %q (%d columns)", r, screen.Columns(r))
	}
	if got := Closing("zh", 1.5, "/r/manifest.json", 80); got != "总花费 $1.5000 · 清单 /r/manifest.json" {
		t.Errorf("closing %q", got)
	}
	long := "/tmp/" + strings.Repeat("d", 90) + "/runs/manifest.json"
	if got := Closing("en", 0.25, long, 110); got != "Total cost $0.2500\nmanifest "+long {
		t.Errorf("a long manifest path must stay whole, on its own line: %q", got)
	}
}

func TestOneRendererKeepsTheRunningTotalAndClock(t *testing.T) {
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
	for _, want := range []string{"  working\n", "  * Bash go test ./...", "  + 完成 3 轮 · $0.5000 · 用时 1:05", "  - 上下文 36.8K · 累计 $0.50 · 1:05", "  - 上下文 36.8K · 累计 $0.94 · 1:05"} {
		if !strings.Contains(out, want) {
			t.Errorf("screen lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "subagent prose") {
		t.Error("subagent prose shown without -v")
	}
}

func TestQuestionStatesOnScreen(t *testing.T) {
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
