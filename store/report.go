package store

import (
	"fmt"
	"strings"
)

// Report counts what one Load did to the history it handed out. The stored
// rows are never changed; these are the differences the CLI saw.
type Report struct {
	// Expired: ephemeral results replaced by the expiry text.
	Expired int `json:"expired"`
	// Cleared: results spilled to a file and replaced by a pointer.
	Cleared int `json:"cleared"`
	// Kept: the newest sites exempt from trimming (at most KeepRecent).
	Kept int `json:"kept"`
	// CharsSaved: characters removed by trimming (original minus pointer).
	CharsSaved int `json:"chars_saved"`
	// SpillFailed: results that should have been trimmed but stayed whole
	// because their spill file could not be written.
	SpillFailed int `json:"spill_failed,omitempty"`

	// APIErrorsDropped: synthetic API-error entries removed.
	APIErrorsDropped int `json:"api_errors_dropped"`
	// InterruptsNeutralized: interrupted results given the neutral text.
	InterruptsNeutralized int `json:"interrupts_neutralized"`
	// OrphansHealed: tool_use blocks given an inserted tool_result.
	OrphansHealed int `json:"orphans_healed"`
	// DenialsDropped: old permission denials removed with their tool_use.
	DenialsDropped int `json:"denials_dropped"`
}

// Pruned is the number of prune actions in the report.
func (r Report) Pruned() int {
	return r.APIErrorsDropped + r.InterruptsNeutralized + r.OrphansHealed + r.DenialsDropped
}

// String is the Chinese summary, as Text("zh").
func (r Report) String() string { return r.Text("zh") }

// Text summarizes the report in lang: "en" for English, anything else for
// Chinese (the seed's literals). Parts are joined with "; ".
//
// Chinese: 未裁剪 (nothing) · N 个时效性结果标记为过期 · 裁掉 N 个工具结果(保留最近 M 个),省下 ~X tokens
// (X = chars_saved / 4), then the prune counts in the same style.
func (r Report) Text(lang string) string {
	en := lang == "en" || strings.HasPrefix(lang, "en-") || strings.HasPrefix(lang, "en_")
	var parts []string
	add := func(n int, zh, enText string) {
		if n == 0 {
			return
		}
		if en {
			parts = append(parts, enText)
		} else {
			parts = append(parts, zh)
		}
	}
	add(r.Cleared,
		fmt.Sprintf("裁掉 %d 个工具结果(保留最近 %d 个),省下 ~%d tokens", r.Cleared, r.Kept, r.CharsSaved/4),
		fmt.Sprintf("trimmed %d tool results (kept the latest %d), saved ~%d tokens", r.Cleared, r.Kept, r.CharsSaved/4))
	add(r.Expired,
		fmt.Sprintf("%d 个时效性结果标记为过期", r.Expired),
		fmt.Sprintf("%d time-sensitive results marked expired", r.Expired))
	add(r.SpillFailed,
		fmt.Sprintf("%d 个结果归档失败,原样保留", r.SpillFailed),
		fmt.Sprintf("%d results could not be archived and were kept whole", r.SpillFailed))
	add(r.APIErrorsDropped,
		fmt.Sprintf("删掉 %d 条 API 错误消息", r.APIErrorsDropped),
		fmt.Sprintf("dropped %d API-error messages", r.APIErrorsDropped))
	add(r.InterruptsNeutralized,
		fmt.Sprintf("%d 个被中断的工具结果改为中性说明", r.InterruptsNeutralized),
		fmt.Sprintf("neutralized %d interrupted tool results", r.InterruptsNeutralized))
	add(r.OrphansHealed,
		fmt.Sprintf("补上 %d 个缺失的工具结果", r.OrphansHealed),
		fmt.Sprintf("filled in %d missing tool results", r.OrphansHealed))
	add(r.DenialsDropped,
		fmt.Sprintf("删掉 %d 个旧的权限拒绝", r.DenialsDropped),
		fmt.Sprintf("dropped %d old permission denials", r.DenialsDropped))
	if len(parts) == 0 {
		if en {
			return "not trimmed"
		}
		return "未裁剪"
	}
	return strings.Join(parts, "; ")
}
