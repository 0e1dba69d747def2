package readback

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	ws := t.TempDir()
	big := strings.Repeat("0123456789\n", 4000) // 44,000 bytes with its newline
	write(t, filepath.Join(ws, ".flower/spill/aaaaaaaaaaaaaaaa.txt"), strings.TrimSuffix(big, "\n"))
	write(t, filepath.Join(ws, ".flower/spill/bbbbbbbbbbbbbbbb.txt"), big[:30000])
	cli := filepath.Join(ws, "cfg/tool-results/c1.txt")
	write(t, cli, big)
	// A trimmed stub whose file is a pointer to the CLI's file.
	write(t, filepath.Join(ws, ".flower/spill/dddddddddddddddd.txt"),
		"<persisted-output>\nOutput too large (43KB). Full output saved to: "+cli+"\n\nPreview (first 2KB):\n0123\n</persisted-output>")
	sent := map[string]string{
		"inline":  "short\n",
		"spilled": "[输出 43999 字符,已落盘到 .flower/spill/aaaaaaaaaaaaaaaa.txt —— 需要全文用 Read 读它]\n开头 400 字符:0",
		"cut":     "[Output partial: .flower/spill/bbbbbbbbbbbbbbbb.txt holds only the first 30000 characters]",
		"gone":    "<persisted-output>\nOutput too large (43KB). Full output saved to: /nonexistent/tool-results/x.txt\n</persisted-output>",
		"chained": "[工具结果已归档:2100 字符。完整内容在 .flower/spill/dddddddddddddddd.txt,需要时用 Read 读取]",
		"known":   "<persisted-output>\nOutput too large (43KB). Full output saved to: " + cli + "\n</persisted-output>",
		"foreign": "[输出 5 字符,已落盘到 .flower/spill/aaaaaaaaaaaaaaaa.txt —— x]",
	}
	outputs := map[string]Output{
		"inline": {Text: "short"}, "spilled": {Text: big}, "cut": {Text: big}, "gone": {Text: big},
		"chained": {Text: big}, "known": {Text: big[:30000], Size: int64(len(big))}, "foreign": {Text: "other"},
		"unsent": {Text: "x"},
	}
	rep := Check(sent, outputs, ws)
	want := map[string]Status{"inline": Inline, "spilled": Recoverable, "cut": Truncated, "gone": Missing,
		"chained": Recoverable, "known": Recoverable, "foreign": Missing, "unsent": Missing}
	for _, r := range rep.Results {
		if r.Status != want[r.ToolUseID] {
			t.Errorf("%s: %s (%s), want %s", r.ToolUseID, r.Status, r.Why, want[r.ToolUseID])
		}
	}
	n := int64(len(strings.TrimSuffix(big, "\n")))
	if rep.Truncated != n-30000 || rep.Missing != n+5+1 || rep.Bytes != rep.Recoverable+rep.Truncated+rep.Missing {
		t.Errorf("report = %s (%d truncated, %d missing)", rep, rep.Truncated, rep.Missing)
	}
	if rep.Percent() >= 100 || (Report{}).Percent() != 100 {
		t.Errorf("percent %v", rep.Percent())
	}
}

func TestSentAndStored(t *testing.T) {
	rows := []json.RawMessage{
		json.RawMessage(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"<persisted-output>\nx"}]},"toolUseResult":{"stdout":"abc","persistedOutputPath":"/p.txt","persistedOutputSize":9}}`),
		json.RawMessage(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]},"toolUseResult":{"stdout":"[Output of 9 characters saved to s/x.txt]"}}`),
		json.RawMessage(`not json`),
	}
	sent := Sent(rows)
	if sent["t1"] != "<persisted-output>\nx" || sent["t2"] != "a\nb" {
		t.Errorf("Sent = %q", sent)
	}
	st := Stored(rows)
	if len(st) != 1 || st["t1"] != (Output{Text: "abc", Size: 9}) {
		t.Errorf("Stored = %+v, want only t1 (t2's stdout is a hook's pointer)", st)
	}
}
