package store

import (
	"bytes"
	"fmt"
	"testing"
)

func TestPolicyZeroValuesAreTheDefaults(t *testing.T) {
	if got, want := DefaultTrimPolicy(), (TrimPolicy{KeepRecent: 20, MinChars: 2000, SpillDirname: ".flower/spill",
		Stub: "[工具结果已归档:{chars} 字符。完整内容在 {path},需要时用 Read 读取]"}); got != want {
		t.Errorf("DefaultTrimPolicy() = %+v, want %+v", got, want)
	}
	if got, want := DefaultEphemeralPolicy(), (EphemeralPolicy{KeepRecent: 6, MaxChars: 2000,
		Text:        "[{cmd} 的结果已过期(第 {age} 轮前),当前状态可能已变。需要请重新执行]",
		PointerText: "(当时的完整输出仍在 {path},需要时用 Read 读取)"}); got != want {
		t.Errorf("DefaultEphemeralPolicy() = %+v, want %+v", got, want)
	}
	if got, want := DefaultPrunePolicy(), (PrunePolicy{
		InterruptText: "[上一轮在此处被中断,该工具结果未产生]",
		OrphanText:    "[这一步被打断了,没有结果。需要的话重做。]",
		KeepDenials:   1,
	}); got != want {
		t.Errorf("DefaultPrunePolicy() = %+v, want %+v", got, want)
	}
	// Every layer is on in the zero value.
	if (TrimPolicy{}).Disabled || (EphemeralPolicy{}).Disabled || (PrunePolicy{}).Disabled {
		t.Error("a zero policy is disabled")
	}
	// Resolving twice changes nothing, and explicit zeros survive.
	explicit := TrimPolicy{KeepRecent: -1, MinChars: -1}
	if explicit.withDefaults().withDefaults() != explicit.withDefaults() || explicit.withDefaults().KeepRecent != -1 {
		t.Errorf("withDefaults is not idempotent: %+v", explicit.withDefaults())
	}
	if p := (PrunePolicy{KeepDenials: -1}).withDefaults(); atLeastZero(p.KeepDenials) != 0 {
		t.Errorf("KeepDenials -1 resolved to %d, want an explicit 0", p.KeepDenials)
	}
}

func TestPolicyZeroValuesBehaveAsTheDefaults(t *testing.T) {
	// Enough ephemeral and bulky results to reach both keep_recent windows.
	f := fxFull()
	for i := range 25 {
		content := "clean"
		if i%2 == 0 {
			content = layerBigText("status", 2500)
		}
		f.bash(fmt.Sprintf("xa%d", i), fmt.Sprintf("toolu_x%d", i), "git status")
		f.result(fmt.Sprintf("xr%d", i), fmt.Sprintf("toolu_x%d", i), content, false)
	}
	rows := f.rows(t)
	zero := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	spelled := mustPruning(t, fxStore(t, rows), t.TempDir(), DefaultTrimPolicy(), DefaultPrunePolicy(), DefaultEphemeralPolicy())
	a, b := layerLoad(t, zero, fxKey), layerLoad(t, spelled, fxKey)
	if len(a) != len(b) {
		t.Fatalf("%d vs %d entries", len(a), len(b))
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Errorf("entry %d differs:\n%s\n%s", i, a[i], b[i])
		}
	}
	r := zero.LastReport()
	if r != spelled.LastReport() {
		t.Errorf("reports differ: %+v vs %+v", r, spelled.LastReport())
	}
	if r.Kept != 20 || r.Cleared == 0 || r.Expired == 0 || r.DenialsDropped != 2 || r.OrphansHealed != 1 {
		t.Errorf("zero policies did not act as the defaults: %+v", r)
	}
}
