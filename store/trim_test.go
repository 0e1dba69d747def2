package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/flowerrun/flower/claude"
)

func layerSpillName(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])[:16] + ".txt"
}

func TestTrimSpillsOldBulkyResults(t *testing.T) {
	ws := t.TempDir()
	texts := []string{layerBigText("one", 3000), layerBigText("两", 2500), layerBigText("three", 4000)}
	var f fxTranscript
	f.prompt("u0", "read the files")
	for i, text := range texts {
		f.read(fmt.Sprintf("a%d", i), fmt.Sprintf("toolu_%d", i), "/work/ws/f.go")
		f.result(fmt.Sprintf("r%d", i), fmt.Sprintf("toolu_%d", i), text, false)
	}
	s := mustTrimming(t, fxStore(t, f.rows(t)), ws, TrimPolicy{KeepRecent: 1}, EphemeralPolicy{})
	es := layerDecode(t, layerLoad(t, s, fxKey))

	saved := 0
	for i, text := range texts[:2] {
		rel := ".flower/spill/" + layerSpillName(text)
		n := utf8.RuneCountInString(text)
		want := fmt.Sprintf("[工具结果已归档:%d 字符。完整内容在 %s,需要时用 Read 读取]", n, rel)
		b := layerResult(t, es, fmt.Sprintf("r%d", i))
		if b["content"] != want {
			t.Errorf("r%d content = %q, want %q", i, b["content"], want)
		}
		if b["is_error"] != false || b["tool_use_id"] != fmt.Sprintf("toolu_%d", i) {
			t.Errorf("r%d block lost its fields: %v", i, b)
		}
		got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("spill file of r%d: %v", i, err)
		}
		if string(got) != text {
			t.Errorf("spill file of r%d differs from the original text", i)
		}
		saved += n - utf8.RuneCountInString(want)
	}
	if b := layerResult(t, es, "r2"); b["content"] != texts[2] {
		t.Errorf("the newest result (keep_recent 1) was trimmed: %.80q", b["content"])
	}
	want := Report{Cleared: 2, Kept: 1, CharsSaved: saved}
	if got := s.LastReport(); got != want {
		t.Errorf("report = %+v, want %+v", got, want)
	}
	wantText := fmt.Sprintf("裁掉 2 个工具结果(保留最近 1 个),省下 ~%d tokens", saved/4)
	if got := s.TrimReport(); got != wantText {
		t.Errorf("TrimReport = %q, want %q", got, wantText)
	}
	leftovers, _ := filepath.Glob(filepath.Join(ws, ".flower/spill/.*.tmp"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
	// Spills are tool output: this user's only, and out of git.
	dir := filepath.Join(ws, ".flower", "spill")
	wantMode(t, dir, fs.ModeDir|0o700)
	wantMode(t, filepath.Join(dir, layerSpillName(texts[0])), 0o600)
	if got, err := os.ReadFile(filepath.Join(dir, ".gitignore")); string(got) != "*\n" {
		t.Errorf("the spill folder's .gitignore = %q, %v; want %q", got, err, "*\n")
	}
}

func TestTrimSitesAndThresholds(t *testing.T) {
	big := layerBigText("x", 2000)
	imageList := []any{
		map[string]any{"type": "text", "text": big},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
	}
	docList := []any{
		map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": big}},
	}
	textList := []any{
		map[string]any{"type": "text", "text": big[:1000]},
		map[string]any{"type": "text", "text": big[1000:]},
	}
	tests := []struct {
		name      string
		policy    TrimPolicy
		content   any
		recent    int // results after the one under test
		trimmed   bool
		spillText string
	}{
		{"exactly min_chars is trimmed", TrimPolicy{}, big, 20, true, big},
		{"one below min_chars stays", TrimPolicy{}, big[:1999], 20, false, ""},
		{"within the newest 20 stays", TrimPolicy{}, big, 19, false, ""},
		{"image block is never cut", TrimPolicy{}, imageList, 20, false, ""},
		{"document block is never cut", TrimPolicy{}, docList, 20, false, ""},
		{"text blocks are joined", TrimPolicy{}, textList, 20, true, big[:1000] + "\n" + big[1000:]},
		{"negative keep_recent exempts none", TrimPolicy{KeepRecent: -1}, big, 0, true, big},
		{"custom min_chars", TrimPolicy{MinChars: 500}, big[:600], 20, true, big[:600]},
		{"disabled", TrimPolicy{Disabled: true}, big, 20, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			var f fxTranscript
			f.prompt("u0", "go")
			f.read("a0", "toolu_0", "/work/ws/big.go")
			f.result("r0", "toolu_0", tc.content, false)
			for i := 1; i <= tc.recent; i++ {
				f.read(fmt.Sprintf("a%d", i), fmt.Sprintf("toolu_%d", i), "/work/ws/small.go")
				f.result(fmt.Sprintf("r%d", i), fmt.Sprintf("toolu_%d", i), "small", false)
			}
			rows := f.rows(t)
			s := mustTrimming(t, fxStore(t, rows), ws, tc.policy, EphemeralPolicy{})
			out := layerLoad(t, s, fxKey)
			es := layerDecode(t, out)
			content := layerResult(t, es, "r0")["content"]
			isStub := false
			if str, ok := content.(string); ok {
				isStub = strings.HasPrefix(str, "[工具结果已归档:")
			}
			if isStub != tc.trimmed {
				t.Fatalf("trimmed = %v, want %v (content %.100v)", isStub, tc.trimmed, content)
			}
			if !tc.trimmed {
				if !bytes.Equal(out[2], rows[2]) {
					t.Errorf("an untrimmed entry changed:\n got %s\nwant %s", out[2], rows[2])
				}
				if s.LastReport().Cleared != 0 {
					t.Errorf("report counts a trim: %+v", s.LastReport())
				}
				return
			}
			got, err := os.ReadFile(filepath.Join(ws, ".flower", "spill", layerSpillName(tc.spillText)))
			if err != nil || string(got) != tc.spillText {
				t.Errorf("spill file = %.60q, %v; want the original text", got, err)
			}
		})
	}
}

func TestTrimLeavesProtectedEntries(t *testing.T) {
	big := layerBigText("summary", 5000)
	var f fxTranscript
	f.prompt("u0", "go")
	f.read("a0", "toolu_0", "/work/ws/a.go")
	compact := f.result("c0", "toolu_0", big, false)
	compact["isCompactSummary"] = true
	f.read("a1", "toolu_1", "/work/ws/b.go")
	meta := f.result("m1", "toolu_1", big, false)
	meta["isMeta"] = true
	rows := f.rows(t)
	s := mustTrimming(t, fxStore(t, rows), t.TempDir(), TrimPolicy{KeepRecent: -1}, EphemeralPolicy{})
	out := layerLoad(t, s, fxKey)
	for i := range rows {
		if !bytes.Equal(out[i], rows[i]) {
			t.Errorf("entry %d changed:\n got %s\nwant %s", i, out[i], rows[i])
		}
	}
	if got := s.TrimReport(); got != "未裁剪" {
		t.Errorf("TrimReport = %q, want 未裁剪", got)
	}
}

func TestTrimKeepsAnExistingSpillFile(t *testing.T) {
	ws := t.TempDir()
	big := layerBigText("same", 3000)
	path := filepath.Join(ws, ".flower", "spill", layerSpillName(big))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	var f fxTranscript
	f.read("a0", "toolu_0", "/work/ws/a.go")
	f.result("r0", "toolu_0", big, false)
	s := mustTrimming(t, fxStore(t, f.rows(t)), ws, TrimPolicy{KeepRecent: -1}, EphemeralPolicy{})
	layerLoad(t, s, fxKey)
	after, err := os.Stat(path)
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the existing spill file was replaced (%v)", err)
	}
	if s.LastReport().Cleared != 1 {
		t.Errorf("report = %+v, want one cleared", s.LastReport())
	}
}

func TestTrimLeavesTheSiteWholeWhenTheSpillFails(t *testing.T) {
	ws := t.TempDir()
	// A regular file where the spill directory should be: MkdirAll fails.
	if err := os.WriteFile(filepath.Join(ws, ".flower"), []byte("not a dir"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := layerBigText("keep", 3000)
	var f fxTranscript
	f.read("a0", "toolu_0", "/work/ws/a.go")
	f.result("r0", "toolu_0", big, false)
	rows := f.rows(t)
	s := mustTrimming(t, fxStore(t, rows), ws, TrimPolicy{KeepRecent: -1}, EphemeralPolicy{})
	out := layerLoad(t, s, fxKey)
	if !bytes.Equal(out[1], rows[1]) {
		t.Errorf("the site changed although its spill failed: %.120s", out[1])
	}
	if got := s.LastReport(); got.Cleared != 0 || got.SpillFailed != 1 {
		t.Errorf("report = %+v, want SpillFailed 1", got)
	}
	if got := s.TrimReport(); got != "1 个结果归档失败,原样保留" {
		t.Errorf("TrimReport = %q", got)
	}
}

func TestTrimSpillDirMustStayInsideTheWorkspace(t *testing.T) {
	base := newLayerMemStore()
	tests := []struct {
		name    string
		ws      string
		policy  TrimPolicy
		wantErr string
	}{
		{"default", "ws", TrimPolicy{}, ""},
		{"nested relative", "ws", TrimPolicy{SpillDirname: "tmp/spill"}, ""},
		{"absolute", "ws", TrimPolicy{SpillDirname: "/tmp/spill"}, "TrimPolicy.SpillDirname"},
		{"parent", "ws", TrimPolicy{SpillDirname: "../spill"}, "TrimPolicy.SpillDirname"},
		{"escapes after cleaning", "ws", TrimPolicy{SpillDirname: "a/../../spill"}, "TrimPolicy.SpillDirname"},
		{"no workspace", "", TrimPolicy{}, "workspace"},
		{"no workspace, trimming off", "", TrimPolicy{Disabled: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTrimming(base, tc.ws, tc.policy, EphemeralPolicy{})
			_, perr := NewPruning(base, tc.ws, tc.policy, PrunePolicy{}, EphemeralPolicy{})
			if tc.wantErr == "" {
				if err != nil || perr != nil {
					t.Fatalf("unexpected errors: %v / %v", err, perr)
				}
				return
			}
			var pe *PolicyError
			if !errors.As(err, &pe) || pe.Field != tc.wantErr || !errors.As(perr, &pe) {
				t.Fatalf("err = %v / %v, want a *PolicyError on %s", err, perr, tc.wantErr)
			}
		})
	}
	if _, err := NewTrimming(nil, "ws", TrimPolicy{}, EphemeralPolicy{}); err == nil {
		t.Error("a nil base store was accepted")
	}
	s := mustTrimming(t, base, "relative/ws", TrimPolicy{}, EphemeralPolicy{})
	if !filepath.IsAbs(s.Workspace()) {
		t.Errorf("Workspace() = %q, want an absolute path", s.Workspace())
	}
}

// fxEphemeral has n `git status` results, oldest first, each with
// the given content.
func fxEphemeral(n int, content func(i int) string) *fxTranscript {
	var f fxTranscript
	f.prompt("u0", "look around")
	for i := range n {
		f.bash(fmt.Sprintf("a%d", i), fmt.Sprintf("toolu_%d", i), "git status")
		f.result(fmt.Sprintf("r%d", i), fmt.Sprintf("toolu_%d", i), content(i), false)
	}
	return &f
}

func TestExpireMarksOldEphemeralResults(t *testing.T) {
	f := fxEphemeral(8, func(i int) string { return fmt.Sprintf("On branch main\nnothing to commit (%d)", i) })
	rows := f.rows(t)
	s := mustTrimming(t, fxStore(t, rows), t.TempDir(), TrimPolicy{}, EphemeralPolicy{})
	out := layerLoad(t, s, fxKey)
	es := layerDecode(t, out)
	for i, age := range []int{8, 7} {
		want := fmt.Sprintf("[`git status` 的结果已过期(第 %d 轮前),当前状态可能已变。需要请重新执行]", age)
		if got := layerResult(t, es, fmt.Sprintf("r%d", i))["content"]; got != want {
			t.Errorf("r%d = %q, want %q", i, got, want)
		}
	}
	for i := 2; i < 8; i++ {
		if !bytes.Equal(out[2+2*i], rows[2+2*i]) {
			t.Errorf("r%d (one of the newest 6) changed: %s", i, out[2+2*i])
		}
	}
	if got := s.LastReport(); got != (Report{Expired: 2, Kept: 8}) {
		t.Errorf("report = %+v", got)
	}
	if got := s.TrimReport(); got != "2 个时效性结果标记为过期" {
		t.Errorf("TrimReport = %q", got)
	}
}

func TestExpireRules(t *testing.T) {
	long := strings.Repeat("M  file.go\n", 300) // 3300 chars
	longCmd := "ls -la /work/ws/internal/transcripttest/testdata/fixtures/very/deep/path/that/goes/on"
	tests := []struct {
		name    string
		build   func(f *fxTranscript)
		policy  EphemeralPolicy
		target  string // the result under test
		want    string // its content after load; "" means unchanged
		expired int
	}{
		{
			name: "Read is never expired",
			build: func(f *fxTranscript) {
				f.read("a0", "toolu_0", "/work/ws/go.mod")
				f.result("r0", "toolu_0", "module x", false)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "another tool with a command input is not Bash",
			build: func(f *fxTranscript) {
				f.call("a0", "toolu_0", "mcp__shell__run", map[string]any{"command": "git status"})
				f.result("r0", "toolu_0", "clean", false)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "an image in the result is never expired",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "ls")
				f.result("r0", "toolu_0", []any{
					map[string]any{"type": "text", "text": "a.png"},
					map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "AAAA"}},
				}, false)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "a mutating command is not ephemeral",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "go test ./...")
				f.result("r0", "toolu_0", "ok", false)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "longer than max_chars is left to trimming",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "git status")
				f.result("r0", "toolu_0", long, false)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "the command is cut to 60 characters in backticks",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", longCmd)
				f.result("r0", "toolu_0", "total 0", false)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
			want:    "[`" + longCmd[:60] + "` 的结果已过期(第 1 轮前),当前状态可能已变。需要请重新执行]",
			expired: 1,
		},
		{
			name: "custom text",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "ls")
				f.result("r0", "toolu_0", "a b", false)
				f.bash("a1", "toolu_1", "pwd")
				f.result("r1", "toolu_1", "/work/ws", false)
			},
			policy: EphemeralPolicy{KeepRecent: 1, Text: "{cmd} is {age} old"}, target: "r0",
			want: "`ls` is 2 old", expired: 1,
		},
		{
			name: "a denial is not an ephemeral result",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "ls")
				f.denial("r0", "toolu_0")
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "an interrupted result is left to pruning",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "ls")
				f.result("r0", "toolu_0", "[Request interrupted by user for tool use]", true)
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "the tool_use must come before the result",
			build: func(f *fxTranscript) {
				f.result("r0", "toolu_0", "a b", false)
				f.bash("a0", "toolu_0", "ls")
			},
			policy: EphemeralPolicy{KeepRecent: -1}, target: "r0",
		},
		{
			name: "disabled",
			build: func(f *fxTranscript) {
				f.bash("a0", "toolu_0", "ls")
				f.result("r0", "toolu_0", "a b", false)
			},
			policy: EphemeralPolicy{Disabled: true, KeepRecent: -1}, target: "r0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fxTranscript
			f.prompt("u0", "go")
			tc.build(&f)
			rows := f.rows(t)
			s := mustTrimming(t, fxStore(t, rows), t.TempDir(), TrimPolicy{Disabled: true}, tc.policy)
			out := layerLoad(t, s, fxKey)
			es := layerDecode(t, out)
			got := layerResult(t, es, tc.target)["content"]
			if tc.want == "" {
				orig := layerResult(t, layerDecode(t, rows), tc.target)["content"]
				if !reflect.DeepEqual(got, orig) {
					t.Errorf("content changed to %.100v", got)
				}
			} else if got != tc.want {
				t.Errorf("content = %q, want %q", got, tc.want)
			}
			if s.LastReport().Expired != tc.expired {
				t.Errorf("expired = %d, want %d", s.LastReport().Expired, tc.expired)
			}
		})
	}
}

func TestExpireTextTakesTheFirstLine(t *testing.T) {
	cmd := "git log --oneline\n  | head -n 5"
	got := expiryText(DefaultExpiryText, cmd, 3)
	want := "[`git log --oneline` 的结果已过期(第 3 轮前),当前状态可能已变。需要请重新执行]"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	long := strings.Repeat("状", 70)
	if got := expiryText("{cmd}", long, 1); got != "`"+strings.Repeat("状", 60)+"`" {
		t.Errorf("60-character cut counts bytes, not characters: %q", got)
	}
}

func TestLongEphemeralResultIsTrimmedNotExpired(t *testing.T) {
	ws := t.TempDir()
	long := strings.Repeat("M  internal/file.go\n", 200)
	var f fxTranscript
	f.bash("a0", "toolu_0", "git status")
	f.result("r0", "toolu_0", long, false)
	s := mustTrimming(t, fxStore(t, f.rows(t)), ws, TrimPolicy{KeepRecent: -1}, EphemeralPolicy{KeepRecent: -1})
	es := layerDecode(t, layerLoad(t, s, fxKey))
	got, _ := layerResult(t, es, "r0")["content"].(string)
	if !strings.HasPrefix(got, "[工具结果已归档:4000 字符。") {
		t.Errorf("content = %q, want the archive pointer", got)
	}
	if r := s.LastReport(); r.Expired != 0 || r.Cleared != 1 {
		t.Errorf("report = %+v", r)
	}
}

func TestTrimLoadLeavesTheBaseRowsUnchanged(t *testing.T) {
	f := fxFull()
	rows := f.rows(t)
	snapshot := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		snapshot[i] = bytes.Clone(r)
	}
	base := fxStore(t, rows)
	s := mustPruning(t, base, t.TempDir(), TrimPolicy{KeepRecent: -1, MinChars: 100}, PrunePolicy{}, EphemeralPolicy{KeepRecent: -1})
	out := layerLoad(t, s, fxKey)
	r := s.LastReport()
	if r.Cleared == 0 || r.Expired == 0 || r.APIErrorsDropped == 0 || r.InterruptsNeutralized == 0 || r.OrphansHealed == 0 || r.DenialsDropped == 0 {
		t.Fatalf("the transcript did not exercise every layer: %+v", r)
	}
	for i := range out { // writing into the output must not reach the base
		for j := range out[i] {
			out[i][j] = ' '
		}
	}
	stored, err := base.Load(context.Background(), fxKey)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(snapshot) {
		t.Fatalf("base has %d rows, want %d", len(stored), len(snapshot))
	}
	for i := range stored {
		if !bytes.Equal(stored[i], snapshot[i]) {
			t.Errorf("base row %d changed:\n got %s\nwant %s", i, stored[i], snapshot[i])
		}
	}
}

func TestTrimLoadKeepsUntouchedBytesAndUnknownFields(t *testing.T) {
	odd := json.RawMessage(`{ "type":"system", "uuid":"s1",  "parentUuid":null, "zzz":[1,2,3], "n":123456789012345678901234567890 }`)
	var f fxTranscript
	f.read("a0", "toolu_0", "/work/ws/a.go")
	r0 := f.result("r0", "toolu_0", layerBigText("x", 3000), false)
	r0["futureField"] = map[string]any{"nested": []any{json.Number("1e400"), "<tag> & more"}}
	rows := append([]json.RawMessage{odd}, f.rows(t)...)
	s := mustTrimming(t, fxStore(t, rows), t.TempDir(), TrimPolicy{KeepRecent: -1}, EphemeralPolicy{})
	out := layerLoad(t, s, fxKey)
	if !bytes.Equal(out[0], odd) || !bytes.Equal(out[1], rows[1]) {
		t.Errorf("untouched entries were re-encoded:\n%s\n%s", out[0], out[1])
	}
	if !bytes.Contains(out[2], []byte(`1e400`)) || !bytes.Contains(out[2], []byte(`"<tag> & more"`)) {
		t.Errorf("a changed entry lost an unknown field or a number: %s", out[2])
	}
	if !bytes.Contains(out[1], []byte(`18446744073709551615`)) {
		t.Errorf("big number lost: %s", out[1])
	}
}

func TestTrimLoadPassesBadEntriesThrough(t *testing.T) {
	var f fxTranscript
	f.read("a0", "toolu_0", "/work/ws/a.go")
	f.result("r0", "toolu_0", layerBigText("x", 3000), false)
	good := f.rows(t)
	bad := []json.RawMessage{json.RawMessage(`not json at all`), json.RawMessage(`[1,2]`), json.RawMessage(`"text"`), json.RawMessage(`null`), json.RawMessage(`{"type":"user"} trailing`)}
	rows := append(append([]json.RawMessage{}, bad...), good...)
	s := mustPruning(t, fxStore(t, rows), t.TempDir(), TrimPolicy{KeepRecent: -1}, PrunePolicy{}, EphemeralPolicy{})
	var logged bytes.Buffer
	s.log = slog.New(slog.NewTextHandler(&logged, nil))
	out := layerLoad(t, s, fxKey)
	if !strings.Contains(logged.String(), "count=5") || !strings.Contains(logged.String(), "key="+fxKey.ProjectKey) {
		t.Errorf("log = %q, want one warning naming the key and the count", logged.String())
	}
	if len(out) != len(rows) {
		t.Fatalf("got %d entries, want %d", len(out), len(rows))
	}
	for i, b := range bad {
		if !bytes.Equal(out[i], b) {
			t.Errorf("bad entry %d = %s, want it as is", i, out[i])
		}
	}
	if s.LastReport().Cleared != 1 {
		t.Errorf("the good entries were not processed: %+v", s.LastReport())
	}
}

func TestTrimLoadWrapsBaseErrorsWithTheKey(t *testing.T) {
	boom := errors.New("disk on fire")
	base := newLayerMemStore()
	base.loadErr = boom
	s := mustPruning(t, base, t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	key := claude.SessionKey{ProjectKey: "-p", SessionID: "s", Subpath: "subagents/agent-1"}
	_, err := s.Load(context.Background(), key)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "-p/s/subagents/agent-1") {
		t.Errorf("err = %v, want the base error wrapped with the key", err)
	}
}

func TestTrimLoadOfAnUnknownKeyIsNil(t *testing.T) {
	s := mustPruning(t, newLayerMemStore(), t.TempDir(), TrimPolicy{}, PrunePolicy{}, EphemeralPolicy{})
	if out := layerLoad(t, s, fxKey); out != nil {
		t.Errorf("got %v, want nil", out)
	}
}

func TestDecodeEntryObjectRefusesWhatIsNotOneObject(t *testing.T) {
	for raw, ok := range map[string]bool{
		`{"type":"user"}`:         true,
		`  {"type":"user"}  `:     true,
		`{"type":"user"} {"x":1}`: false,
		`{"type":"user"} junk`:    false,
		`["a"]`:                   false,
		`{"type":`:                false,
		``:                        false,
	} {
		if _, err := decodeEntryObject(json.RawMessage(raw)); (err == nil) != ok {
			t.Errorf("decodeEntryObject(%q) err = %v, want ok=%v", raw, err, ok)
		}
	}
}

func TestDecodeTranscriptKeepsOrderAndBadRowsAcrossWorkers(t *testing.T) {
	var rows []json.RawMessage
	for i := 0; i < 2000; i++ {
		if i%397 == 5 {
			rows = append(rows, json.RawMessage(`not json`))
			continue
		}
		rows = append(rows, json.RawMessage(fmt.Sprintf(`{"type":"user","uuid":"u%d"}`, i)))
	}
	es, bad := decodeTranscript(rows)
	if len(es) != len(rows) {
		t.Fatalf("%d entries for %d rows", len(es), len(rows))
	}
	for i, e := range es {
		if string(e.raw) != string(rows[i]) {
			t.Fatalf("entry %d holds another row", i)
		}
		if _, isBad := bad[i]; isBad != (i%397 == 5) || (e.obj == nil) != isBad {
			t.Fatalf("entry %d: bad %v, decoded %v", i, isBad, e.obj != nil)
		}
		if !isBadIndex(i) && e.uuid() != fmt.Sprintf("u%d", i) {
			t.Fatalf("entry %d: uuid %q", i, e.uuid())
		}
	}
	if es, bad := decodeTranscript(nil); len(es) != 0 || bad != nil {
		t.Errorf("no rows: %v, %v", es, bad)
	}
}

func isBadIndex(i int) bool { return i%397 == 5 }

// TestTrimShortensOldSpillPointers: a result the spill guard replaced by a
// pointer with a 400-character preview is short of MinChars, but it is
// still the bulk of an old result (about 600 of the 700 bytes a call keeps
// in a resumed history, the economy benchmark found): an old one becomes
// the trim stub naming the same file, whose whole output is counted; a
// pointer whose file is gone, a glance's expiry and the newest sites stay
// as they are.
func TestTrimShortensOldSpillPointers(t *testing.T) {
	ws := t.TempDir()
	whole := layerBigText("log", 9000)
	spill := filepath.Join(ws, ".flower", "spill")
	if err := os.MkdirAll(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(spill, "0123456789abcdef.txt"), []byte(whole), 0o600); err != nil {
		t.Fatal(err)
	}
	guardPointer := func(file string) string {
		return fmt.Sprintf("[Output of %d chars saved to %s: Read it for all, Grep to search]\nFirst 400 chars: %s",
			utf8.RuneCountInString(whole), file, strings.ReplaceAll(whole[:400], "\n", " "))
	}
	old, gone := guardPointer(".flower/spill/0123456789abcdef.txt"), guardPointer(".flower/spill/fedcba9876543210.txt")
	var f fxTranscript
	f.prompt("u0", "run the tests")
	f.bash("a0", "toolu_0", "go test ./...")
	f.result("r0", "toolu_0", old, false)
	f.bash("a1", "toolu_1", "go test ./...")
	f.result("r1", "toolu_1", gone, false)
	f.bash("a2", "toolu_2", "git status")
	f.result("r2", "toolu_2", guardPointer(".flower/spill/0123456789abcdef.txt"), false)
	f.bash("a3", "toolu_3", "go test ./...")
	f.result("r3", "toolu_3", old, false)
	f.bash("a4", "toolu_4", "ls")
	f.result("r4", "toolu_4", "go.mod", false)
	s := mustTrimming(t, fxStore(t, f.rows(t)), ws, TrimPolicy{KeepRecent: 2}, EphemeralPolicy{KeepRecent: 1})
	es := layerDecode(t, layerLoad(t, s, fxKey))

	stub := fmt.Sprintf("[工具结果已归档:%d 字符。完整内容在 .flower/spill/0123456789abcdef.txt,需要时用 Read 读取]", utf8.RuneCountInString(whole))
	if got := layerResult(t, es, "r0")["content"]; got != stub {
		t.Errorf("the old pointer = %q, want the stub %q", got, stub)
	}
	if got := layerResult(t, es, "r1")["content"]; got != gone {
		t.Errorf("a pointer whose file is gone changed: %q", got)
	}
	if got := layerResult(t, es, "r2")["content"].(string); !strings.HasPrefix(got, "[`git status` 的结果已过期") || !strings.Contains(got, "0123456789abcdef.txt") {
		t.Errorf("the glance should keep its expiry naming the file: %q", got)
	}
	if got := layerResult(t, es, "r3")["content"]; got != old {
		t.Errorf("the newest site changed: %q", got)
	}
	if rep := s.LastReport(); rep.Cleared != 1 || rep.Expired != 1 || rep.CharsSaved != utf8.RuneCountInString(old)-utf8.RuneCountInString(stub) {
		t.Errorf("report = %+v", rep)
	}
}

// A spilled glance that expires keeps naming its spill file, and only it:
// its preview's "src/mod00.txt:1:" lines are the output's text, not files
// of the pointer (they were listed as such), and the pointer note speaks
// the policy's words.
func TestExpiredSpilledGlanceNamesOnlyItsSpillFile(t *testing.T) {
	var f fxTranscript
	f.prompt("u0", "look around")
	f.bash("a0", "toolu_0", "cat src/mod00.txt")
	f.result("r0", "toolu_0", "[Output of 19999 chars saved to .flower/spill/e89e9fb4749e9bbe.txt: Read it for all, Grep to search]\n"+
		"First 400 chars: src/mod00.txt:1: report guard\nsrc/mod01.txt:2: resume", false)
	for i := 1; i <= 7; i++ {
		f.bash(fmt.Sprintf("a%d", i), fmt.Sprintf("toolu_%d", i), "git status")
		f.result(fmt.Sprintf("r%d", i), fmt.Sprintf("toolu_%d", i), "clean", false)
	}
	pol := EphemeralPolicy{Text: "[The result of {cmd} has expired]", PointerText: "(still in {path})"}
	s := mustTrimming(t, fxStore(t, f.rows(t)), t.TempDir(), TrimPolicy{Disabled: true}, pol)
	es := layerDecode(t, layerLoad(t, s, fxKey))
	want := "[The result of `cat src/mod00.txt` has expired](still in .flower/spill/e89e9fb4749e9bbe.txt)"
	if got := layerResult(t, es, "r0")["content"]; got != want {
		t.Errorf("r0 = %q, want %q", got, want)
	}
}
