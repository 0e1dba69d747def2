package pointer

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFiles(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"guard zh", "[输出 5000 字符,已落盘到 .flower/spill/0123456789abcdef.txt —— 需要全文用 Read 读它]\n开头 400 字符:a b", []string{".flower/spill/0123456789abcdef.txt"}},
		{"guard en", "[Output of 5000 characters saved to /w/.flower/spill/0123456789abcdef.txt: Read it]\nFirst 400 characters: x", []string{"/w/.flower/spill/0123456789abcdef.txt"}},
		{"guard partial with the whole", "[输出不完整 —— .flower/spill/0123456789abcdef.txt 只有前 30000 字符,全部输出 9 字节没能存下;完整输出在 /c/tool-results/b1.txt]", []string{".flower/spill/0123456789abcdef.txt", "/c/tool-results/b1.txt"}},
		{"trim stub", "[工具结果已归档:5000 字符。完整内容在 .flower/spill/0123456789abcdef.txt,需要时用 Read 读取]", []string{".flower/spill/0123456789abcdef.txt"}},
		{"cli persisted", "<persisted-output>\nOutput too large (42.9KB). Full output saved to: /tmp/c/projects/k/s/tool-results/bbcz.txt\n\nPreview (first 2KB):\n1\n2\n", []string{"/tmp/c/projects/k/s/tool-results/bbcz.txt"}},
		{"guard preview naming files", "[Output of 5000 characters saved to .flower/spill/0123456789abcdef.txt: Read it]\nFirst 400 characters: src/mod00.txt:1: x a/b.txt", []string{".flower/spill/0123456789abcdef.txt"}},
		{"cli preview naming files", "<persisted-output>\nFull output saved to: /t/tool-results/b.txt\n\nPreview (first 2KB):\nsrc/a.txt:1: x\n", []string{"/t/tool-results/b.txt"}},
		{"not a pointer", "cat said /etc/notes.txt", nil},
		{"a pointer naming no file", "[nothing here]", nil},
		{"no slash", "[see notes.txt]", nil},
		{"repeated once", "[a/b.txt a/b.txt]", []string{"a/b.txt"}},
		{"txt inside a name", "[a/b.txtx/c.txt]", []string{"a/b.txtx/c.txt"}},
	}
	for _, tt := range tests {
		if got := Files(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Files = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func FuzzFiles(f *testing.F) {
	f.Add("[a/b.txt]")
	f.Add("<persisted-output>\nsaved to: /x.txt")
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range Files(s) {
			if len(p) < len("/.txt") {
				t.Fatalf("Files(%q) gave %q", s, p)
			}
		}
	})
}
