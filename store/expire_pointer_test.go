package store

import (
	"strings"
	"testing"
)

func TestExpiryKeepsTheFileASpilledGlanceNamed(t *testing.T) {
	guardZH := "[输出 5000 字符,已落盘到 .flower/spill/0123456789abcdef.txt —— 需要全文用 Read 读它,需要找东西用 Grep 搜它]\n开头 400 字符:a b c"
	guardEN := "[Output of 5000 chars saved to /w/.flower/spill/fedcba9876543210.txt: Read it for all, Grep to search]\nFirst 400 chars: a b"
	cli := "<persisted-output>\nOutput too large (42.9KB). Full output saved to: /c/projects/k/s/tool-results/b1.txt\n\nPreview (first 2KB):\n1\n2\n</persisted-output>"
	var f fxTranscript
	f.prompt("u0", "look")
	for i, c := range []struct{ cmd, content string }{
		{"cat big.log", guardZH}, {"head -c 9000 x", guardEN}, {"seq 1 9000", cli}, {"ls", "a\nb"},
	} {
		id := "toolu_" + string(rune('a'+i))
		f.bash("a"+id, id, c.cmd)
		f.result("r"+id, id, c.content, false)
	}
	s := mustTrimming(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{Disabled: true}, EphemeralPolicy{KeepRecent: -1})
	es := layerDecode(t, layerLoad(t, s, fxKey))
	for id, file := range map[string]string{
		"rtoolu_a": ".flower/spill/0123456789abcdef.txt",
		"rtoolu_b": "/w/.flower/spill/fedcba9876543210.txt",
		"rtoolu_c": "/c/projects/k/s/tool-results/b1.txt",
	} {
		got, _ := layerResult(t, es, id)["content"].(string)
		if !strings.Contains(got, "的结果已过期") || !strings.Contains(got, file) {
			t.Errorf("%s = %q, want the expiry text still naming %s", id, got, file)
		}
	}
	if got := layerResult(t, es, "rtoolu_d")["content"]; got != "[`ls` 的结果已过期(第 1 轮前),当前状态可能已变。需要请重新执行]" {
		t.Errorf("a glance that was no pointer gets the plain text: %q", got)
	}
	if s.LastReport().Expired != 4 {
		t.Errorf("report = %+v", s.LastReport())
	}
}

func TestTrimLeavesTheCLIsPersistedPointer(t *testing.T) {
	// The CLI's <persisted-output> block is already a pointer (with a 2 KB
	// preview): archiving it would put its path one file further away.
	cli := "<persisted-output>\nOutput too large (42.9KB). Full output saved to: /c/projects/k/s/tool-results/b1.txt\n\nPreview (first 2KB):\n" +
		strings.Repeat("line\n", 500) + "</persisted-output>"
	var f fxTranscript
	f.call("a0", "toolu_0", "Bash", map[string]any{"command": "make"})
	f.result("r0", "toolu_0", cli, false)
	s := mustTrimming(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{KeepRecent: -1}, EphemeralPolicy{})
	es := layerDecode(t, layerLoad(t, s, fxKey))
	if got := layerResult(t, es, "r0")["content"]; got != cli {
		t.Errorf("content = %.200q, want the CLI's pointer unchanged", got)
	}
}
