package flower

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/flowerrun/flower/store"
)

// clearWindowEnv makes DefaultWindow see only what a test sets.
func clearWindowEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"FLOWER_WINDOW", "ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL"} {
		t.Setenv(k, "")
	}
}

func TestZeroHandoffPolicyBehavesAsTheDefaults(t *testing.T) {
	tests := []struct {
		name                     string
		model                    string
		window, at, warnAt       int
		headroom, maxGenerations int
	}{
		{"a 1M model", "claude-opus-5-5", 1_000_000, 750_000, 730_000, 250_000, 8},
		{"a haiku model", "claude-haiku-4-5", 200_000, 150_000, 130_000, 50_000, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearWindowEnv(t)
			t.Setenv("ANTHROPIC_MODEL", tt.model)
			var p HandoffPolicy
			if !p.Enabled() {
				t.Error("the zero policy is disabled")
			}
			if p.At() != tt.at || p.WarnAt() != tt.warnAt {
				t.Errorf("HandoffPolicy{}: At %d WarnAt %d, want %d %d", p.At(), p.WarnAt(), tt.at, tt.warnAt)
			}
			want := HandoffPolicy{Window: tt.window, Headroom: tt.headroom, MaxGenerations: tt.maxGenerations}
			if got := p.Resolved(); got != want {
				t.Errorf("Resolved() = %+v, want %+v", got, want)
			}
			if got := DefaultHandoffPolicy(); got != want || got.At() != p.At() || got.WarnAt() != p.WarnAt() {
				t.Errorf("DefaultHandoffPolicy() = %+v, not the zero value's behaviour", got)
			}
		})
	}
}

func TestHandoffThresholds(t *testing.T) {
	clearWindowEnv(t)
	tests := []struct {
		name       string
		p          HandoffPolicy
		at, warnAt int
	}{
		{"a 200k window keeps 50k", HandoffPolicy{Window: 200_000}, 150_000, 130_000},
		{"a 1M window keeps a quarter", HandoffPolicy{Window: 1_000_000}, 750_000, 730_000},
		{"a small window keeps at least 50k", HandoffPolicy{Window: 100_000}, 50_000, 30_000},
		{"an explicit headroom is kept", HandoffPolicy{Window: 1_000_000, Headroom: 50_000}, 950_000, 930_000},
		{"the threshold never drops below 10k", HandoffPolicy{Window: 40_000}, 10_000, 1_000},
		{"the warning never drops below 1k", HandoffPolicy{Window: 60_000, Headroom: 45_000}, 15_000, 1_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.p.At() != tt.at || tt.p.WarnAt() != tt.warnAt {
				t.Errorf("%+v: At %d WarnAt %d, want %d %d", tt.p, tt.p.At(), tt.p.WarnAt(), tt.at, tt.warnAt)
			}
		})
	}
}

func TestHandoffStopReasons(t *testing.T) {
	p := HandoffPolicy{Window: 200_000}
	if r := p.StopReason(Chinese, 7, 1); r != "" {
		t.Errorf("7 generations, 1 degraded: %q, want go on", r)
	}
	want := "换代 8 次仍然一开局就越线 —— 阈值 150000 很可能低于这个角色的启动地板。把 window 调大(现在 200000),或 --no-handoff。"
	if r := p.StopReason(Chinese, 8, 0); r != want {
		t.Errorf("8 generations:\n got %q\nwant %q", r, want)
	}
	if r := p.StopReason(Chinese, 3, MaxDegradedInARow); !strings.Contains(r, "连续 2 次降级") || !strings.Contains(r, "--no-handoff") {
		t.Errorf("two degraded in a row: %q", r)
	}
	if r := (HandoffPolicy{Window: 200_000, MaxGenerations: 2}).StopReason(Chinese, 2, 0); !strings.HasPrefix(r, "换代 2 次") {
		t.Errorf("MaxGenerations 2: %q", r)
	}
}

func TestHandoffPolicyRejectsNegativeValues(t *testing.T) {
	for _, p := range []HandoffPolicy{{Window: -1}, {Headroom: -5}, {MaxGenerations: -1}} {
		if err := p.Validate(); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%+v.Validate() = %v, want ErrInvalidPolicy", p, err)
		}
	}
	if err := (HandoffPolicy{}).Validate(); err != nil {
		t.Errorf("zero policy: %v", err)
	}
}

func TestCompactPolicyEnv(t *testing.T) {
	tests := []struct {
		name    string
		p       CompactPolicy
		want    map[string]string
		wantErr string
	}{
		{"the zero value is auto and sets nothing", CompactPolicy{}, map[string]string{}, ""},
		{"auto sets nothing", CompactPolicy{Mode: "auto"}, map[string]string{}, ""},
		{"no_summary disables auto-compact", CompactPolicy{Mode: "no_summary"}, map[string]string{"DISABLE_AUTO_COMPACT": "1"}, ""},
		{"off disables every compaction", CompactPolicy{Mode: "off"}, map[string]string{"DISABLE_COMPACT": "1"}, ""},
		{"a window is passed on", CompactPolicy{Mode: "no_summary", Window: 300_000}, map[string]string{"DISABLE_AUTO_COMPACT": "1", "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "300000"}, ""},
		{"an unknown mode names the valid ones", CompactPolicy{Mode: "summarize"}, nil, `unknown compact mode "summarize": use "auto", "no_summary" or "off"`},
		{"a mode is case-sensitive", CompactPolicy{Mode: "OFF"}, nil, `unknown compact mode "OFF"`},
		{"a negative window is refused", CompactPolicy{Window: -1}, nil, "compact window -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.Env()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidPolicy) {
					t.Fatalf("Env() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("Env() = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestDefaultWindowGuessesFromTheModelName(t *testing.T) {
	tests := []struct {
		name                string
		window, model, opus string
		want                int
	}{
		{"unset is 1M", "", "", "", 1_000_000},
		{"an unknown name is 1M, not an error", "", "some-gateway-model-x", "", 1_000_000},
		{"haiku is 200k", "", "claude-haiku-4-5", "", 200_000},
		{"case does not matter", "", "Claude-HAIKU-4-5", "", 200_000},
		{"a standalone 1m wins over haiku", "", "claude-haiku-5[1m]", "", 1_000_000},
		{"1m inside a word is not standalone", "", "haiku-x1m", "", 200_000},
		{"1m at the end after a dash", "", "haiku-1m", "", 1_000_000},
		{"the opus default is read when the model is unset", "", "", "claude-haiku-4-5", 200_000},
		{"the model wins over the opus default", "", "claude-opus-5", "claude-haiku-4-5", 1_000_000},
		{"FLOWER_WINDOW wins over the name", "300000", "claude-haiku-4-5", "", 300_000},
		{"FLOWER_WINDOW with spaces is read", " 400000 ", "", "", 400_000},
		{"a zero FLOWER_WINDOW is ignored", "0", "claude-haiku-4-5", "", 200_000},
		{"a negative FLOWER_WINDOW is ignored", "-5", "", "", 1_000_000},
		{"a non-number FLOWER_WINDOW is ignored", "big", "claude-haiku-4-5", "", 200_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FLOWER_WINDOW", tt.window)
			t.Setenv("ANTHROPIC_MODEL", tt.model)
			t.Setenv("ANTHROPIC_DEFAULT_OPUS_MODEL", tt.opus)
			if got := DefaultWindow(); got != tt.want {
				t.Errorf("DefaultWindow() = %d, want %d", got, tt.want)
			}
		})
	}
}

// The trim policy lives in store; the runtime takes it as is, so its zero
// value must be the documented defaults too.
func TestZeroTrimPolicyIsTheDocumentedDefault(t *testing.T) {
	want := store.TrimPolicy{KeepRecent: 20, MinChars: 2000, SpillDirname: ".flower/spill", Stub: store.DefaultTrimStub}
	if got := store.DefaultTrimPolicy(); got != want {
		t.Errorf("store.DefaultTrimPolicy() = %+v, want %+v", got, want)
	}
	if (store.TrimPolicy{}).Disabled {
		t.Error("TrimPolicy{} is disabled")
	}
}
