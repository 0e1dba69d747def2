package store

import "testing"

func TestReportTexts(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		zh   string
		en   string
	}{
		{"nothing", Report{Kept: 20}, "未裁剪", "not trimmed"},
		{"expiry only", Report{Expired: 3}, "3 个时效性结果标记为过期", "3 time-sensitive results marked expired"},
		{"trim", Report{Cleared: 4, Kept: 20, CharsSaved: 10003},
			"裁掉 4 个工具结果(保留最近 20 个),省下 ~2500 tokens",
			"trimmed 4 tool results (kept the latest 20), saved ~2500 tokens"},
		{"trim and expiry", Report{Cleared: 1, Kept: 2, CharsSaved: 8, Expired: 1},
			"裁掉 1 个工具结果(保留最近 2 个),省下 ~2 tokens; 1 个时效性结果标记为过期",
			"trimmed 1 tool results (kept the latest 2), saved ~2 tokens; 1 time-sensitive results marked expired"},
		{"prune only", Report{APIErrorsDropped: 1, InterruptsNeutralized: 2, OrphansHealed: 3, DenialsDropped: 4},
			"删掉 1 条 API 错误消息; 2 个被中断的工具结果改为中性说明; 补上 3 个缺失的工具结果; 删掉 4 个旧的权限拒绝",
			"dropped 1 API-error messages; neutralized 2 interrupted tool results; filled in 3 missing tool results; dropped 4 old permission denials"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Text("zh"); got != tc.zh {
				t.Errorf("zh = %q, want %q", got, tc.zh)
			}
			if got := tc.r.String(); got != tc.zh {
				t.Errorf("String = %q, want %q", got, tc.zh)
			}
			if got := tc.r.Text("en"); got != tc.en {
				t.Errorf("en = %q, want %q", got, tc.en)
			}
		})
	}
	if got := (Report{OrphansHealed: 2, DenialsDropped: 1}).Pruned(); got != 3 {
		t.Errorf("Pruned = %d", got)
	}
}

func TestTrimReportFollowsTheLastLoad(t *testing.T) {
	ws := t.TempDir()
	var f fxTranscript
	f.read("a0", "toolu_0", "/work/ws/a.go")
	f.result("r0", "toolu_0", layerBigText("a", 3000), false)
	base := fxStore(t, f.rows(t))
	sub := fxKey
	sub.Subpath = "subagents/agent-1"
	var g fxTranscript
	g.prompt("s0", "sub task")
	if err := base.Append(t.Context(), sub, g.rows(t)); err != nil {
		t.Fatal(err)
	}
	s := mustPruning(t, base, ws, TrimPolicy{KeepRecent: -1}, PrunePolicy{}, EphemeralPolicy{})
	if got := s.TrimReport(); got != "未裁剪" {
		t.Errorf("before any load: %q", got)
	}
	layerLoad(t, s, fxKey)
	if got := s.LastReport().Cleared; got != 1 {
		t.Fatalf("main key: cleared %d", got)
	}
	if got := s.TrimReportIn("en"); got[:9] != "trimmed 1" {
		t.Errorf("TrimReportIn(en) = %q", got)
	}
	layerLoad(t, s, sub)
	if got := s.TrimReport(); got != "未裁剪" {
		t.Errorf("after loading the subkey: %q, want its own report", got)
	}
}
