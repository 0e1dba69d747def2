package flower

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChangeReportOverAHugeDiffIsBoundedAndSaysWhatItLeftOut(t *testing.T) {
	t.Parallel()
	ws, runDir := t.TempDir(), t.TempDir()
	gitWorkspace(t, ws)
	ctx := context.Background()
	if err := recordBaseline(ctx, ws, runDir); err != nil {
		t.Fatal(err)
	}
	for i := range 120 {
		p := filepath.Join(ws, "tests", fmt.Sprintf("case_%03d_test.py", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		body := fmt.Sprintf("import pytest\n@pytest.mark.skip\ndef test_%d():\n    assert True\n", i)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ws, "huge.txt"), []byte(strings.Repeat("x\n", 200000)), 0o644)
	for _, lang := range []Lang{English, Chinese} {
		got := changeReport(ctx, ws, runDir, []string{"run `sh scripts/check.sh`, see ok"}, nil, lang)
		if len(got) > changeReportBytes+200 {
			t.Errorf("%s: the report is %d bytes, over its bound", lang, len(got))
		}
		for _, want := range []string{langPick(lang, "另有 80 个这样的文件", "80 more such files"), "tests/case_000_test.py",
			langPick(lang, "另有 1 个文件有改动(200000 行)", "1 other files changed (200000 lines)")} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: the report lacks %q:\n%s", lang, want, got)
			}
		}
		if n := strings.Count(got, "_test.py:2: @pytest.mark.skip"); n != 20 {
			t.Errorf("%s: %d skipped tests listed, want the first 20", lang, n)
		}
	}
}

func TestChangeReportWithoutGitOrBaselineSaysSo(t *testing.T) {
	t.Parallel()
	ws, runDir := t.TempDir(), t.TempDir()
	ctx := context.Background()
	if err := recordBaseline(ctx, ws, runDir); err == nil {
		t.Error("a baseline outside git")
	}
	got := changeReport(ctx, ws, runDir, nil, []string{"a note"}, English)
	if !strings.Contains(got, "No baseline was recorded") || !strings.Contains(got, "- a note") {
		t.Errorf("report = %q", got)
	}
	os.WriteFile(filepath.Join(runDir, BaselineName), []byte("{"), 0o644)
	if got := changeReport(ctx, ws, runDir, nil, nil, English); !strings.Contains(got, "could not be computed") || !strings.Contains(got, "delete it") {
		t.Errorf("a broken baseline: %q", got)
	}
}

func TestChangeKindsNameWhatCanDecideACheck(t *testing.T) {
	named := []string{"tools/verify_all", "data/golden.json"}
	cases := map[string]bool{
		"pkg/x_test.go": true, "tests/test_api.py": true, "web/a.spec.ts": true, "scripts/check.sh": true,
		".github/workflows/ci.yml": true, "Makefile": true, "go.mod": true, "package.json": true,
		"tools/verify_all": true, "data/golden.json": true,
		"src/main.go": false, "README.md": false, "docs/guide.md": false,
	}
	for p, want := range cases {
		if got := len(kindsOf(p, named, English)) > 0; got != want {
			t.Errorf("%s: listed %v, want %v", p, got, want)
		}
	}
}
