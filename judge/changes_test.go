package judge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/doc"
)

// A workspace under test: a git repository with its workbench in .flower
// (ignored by git, as a project's .gitignore often has it), a home folder
// of its own for the configuration outside the workspace, and the baseline
// kept in a folder outside both.
type changeFixture struct {
	t                     *testing.T
	ws, home, baselineDir string
	items                 []Item
}

func newChangeFixture(t *testing.T, files map[string]string) *changeFixture {
	t.Helper()
	f := &changeFixture{t: t, ws: t.TempDir(), home: t.TempDir(), baselineDir: filepath.Join(t.TempDir(), "state")}
	base := map[string]string{".gitignore": ".flower/\nout/\n.env*\n", "README.md": "hello\n"}
	for k, v := range files {
		base[k] = v
	}
	for name, content := range base {
		f.write(name, content)
	}
	f.git("init", "-q")
	f.git("add", "-A")
	f.git("-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "start")
	return f
}

func (f *changeFixture) git(args ...string) string {
	f.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", f.ws}, args...)...).CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// write writes a file of the workspace; a path starting with ~/ is in the
// fixture's home.
func (f *changeFixture) write(name, content string) {
	f.t.Helper()
	p := f.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

func (f *changeFixture) path(name string) string {
	if rest, ok := strings.CutPrefix(name, "~/"); ok {
		return filepath.Join(f.home, filepath.FromSlash(rest))
	}
	return filepath.Join(f.ws, filepath.FromSlash(name))
}

func (f *changeFixture) input(lang doc.Lang) ChangeInput {
	env := map[string]string{"HOME": f.home}
	return ChangeInput{Workspace: f.ws, BaselineDir: f.baselineDir, Workbench: filepath.Join(f.ws, ".flower"),
		Items: f.items, Lang: lang, Getenv: func(k string) string { return env[k] }}
}

func (f *changeFixture) baseline() {
	f.t.Helper()
	if err := RecordBaseline(context.Background(), f.input(doc.English)); err != nil {
		f.t.Fatal(err)
	}
}

func (f *changeFixture) report(lang doc.Lang) string {
	return ChangeReport(context.Background(), f.input(lang))
}

// flagged reports whether the report flags kind (a prefix of the flag's
// bracketed kind) on a line that names where.
func flagged(report, kind, where string) bool {
	for _, ln := range strings.Split(report, "\n") {
		if strings.HasPrefix(ln, "- ["+kind) && strings.Contains(ln, where) {
			return true
		}
	}
	return false
}

func TestChangeReportFlagsSilencingAddedToAWorkbenchScriptGitIgnores(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, nil)
	f.write(".flower/scripts/check.sh", "#!/bin/sh\ngo test ./...\n")
	f.baseline()
	f.write(".flower/scripts/check.sh", "#!/bin/sh\ngo test ./... || true\n")
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		got := f.report(lang)
		kind := lang.Pick("失败被压下:|| true", "failure silenced: || true")
		if !flagged(got, kind, ".flower/scripts/check.sh:2: go test ./... || true") {
			t.Errorf("%s: the silenced script is not flagged:\n%s", lang, got)
		}
		if !strings.Contains(got, "- .flower/scripts/check.sh ("+lang.Pick("工作台脚本", "workbench script")) || !strings.Contains(got, "+go test ./... || true") {
			t.Errorf("%s: the script's change is not listed with its diff:\n%s", lang, got)
		}
	}
}

func TestChangeReportFlagsAnArtifactTheWorkerWroteAsAClaim(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, nil)
	f.write(".flower/artifacts/old.log", "kept\n")
	f.baseline()
	f.write(".flower/artifacts/check-1.log", "ok  pkg/a\nok  pkg/b\nok  pkg/c\nok  pkg/d\n")
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		got := f.report(lang)
		if !flagged(got, lang.Pick("干活的人自己写的:是说法,不是证据", "written by the worker: a claim, not evidence"), ".flower/artifacts/check-1.log") {
			t.Errorf("%s: the forged artifact is not flagged as a claim:\n%s", lang, got)
		}
		if strings.Contains(got, "old.log") {
			t.Errorf("%s: an artifact unchanged since the goal is named:\n%s", lang, got)
		}
	}
}

func TestChangeReportListsAnOutputTheChecklistNamesIgnoredOrNot(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, map[string]string{"data/summary.txt": "old\n"})
	f.items = []Item{{ID: "c1", Text: "out/report.csv has one row per customer", Command: "python gen.py"},
		{ID: "c2", Text: "data/summary.txt says done"}}
	f.baseline()
	f.write("out/report.csv", "id,total\n1,42\n")
	f.write("data/summary.txt", "done\n")
	got := f.report(doc.English)
	for _, want := range []string{
		"- out/report.csv (an output the checklist names; new)", "+1,42", // git ignores out/
		"- data/summary.txt (named by the checklist; +1 −1)", "+done", // git sees it
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "data/summary.txt ("); n != 1 {
		t.Errorf("data/summary.txt is listed %d times:\n%s", n, got)
	}
}

func TestChangeReportFlagsConfigurationThatChangesHowChecksRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, before, after string
		label, shown              string
	}{
		{"go env -w", "~/.config/go/env", "", "GOFLAGS=-run=^$\n", "Go environment (go env -w)", "~/.config/go/env"},
		{"the user's npmrc", "~/.npmrc", "fund=false\n", "fund=false\nignore-scripts=true\n", "npm config", "~/.npmrc"},
		{"the workspace's npmrc", ".npmrc", "", "script-shell=/bin/true\n", "npm config", ".npmrc"},
		{"pip.conf", "~/.config/pip/pip.conf", "", "[global]\nno-index = true\n", "pip config", "~/.config/pip/pip.conf"},
		{"the old pip.conf", "~/.pip/pip.conf", "", "[install]\nno-deps = true\n", "pip config", "~/.pip/pip.conf"},
		{"the global gitconfig", "~/.gitconfig", "[user]\n\tname = t\n", "[user]\n\tname = t\n[core]\n\thooksPath = /tmp/x\n", "global git config", "~/.gitconfig"},
		{"the XDG git config", "~/.config/git/config", "", "[alias]\n\tst = status\n", "global git config", "~/.config/git/config"},
		{"the repository's git config", ".git/config", "", "[filter \"x\"]\n\tclean = cat\n", "the repository's git config", ".git/config"},
		{"a git hook", ".git/hooks/pre-commit", "", "#!/bin/sh\nexit 0\n", "git hook", ".git/hooks/pre-commit"},
		{"an ignored env file", ".env.test", "", "GOFLAGS=-count=1 -run=Nothing\n", "environment file", ".env.test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newChangeFixture(t, nil)
			if tc.before != "" {
				f.write(tc.file, tc.before)
			}
			if tc.file == ".git/config" {
				tc.after = readFile(t, f.path(".git/config")) + tc.after
			}
			f.baseline()
			f.write(tc.file, tc.after)
			got := f.report(doc.English)
			if !flagged(got, "configuration that changes how checks run: "+tc.label, tc.shown) {
				t.Errorf("not flagged as %q on %s:\n%s", tc.label, tc.shown, got)
			}
			last := splitLines(tc.after)
			if want := "+" + last[len(last)-1]; !strings.Contains(got, want) {
				t.Errorf("the change %q is not shown:\n%s", want, got)
			}
			zh := f.report(doc.Chinese)
			if !flagged(zh, "改变检查怎么跑的配置:", tc.shown) {
				t.Errorf("Chinese: not flagged:\n%s", zh)
			}
		})
	}
}

func TestChangeReportConfigurationNamedByItsEnvironmentAndSecretsMasked(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, nil)
	pip := filepath.Join(t.TempDir(), "custom-pip.conf")
	in := f.input(doc.English)
	env := map[string]string{"HOME": f.home, "PIP_CONFIG_FILE": pip, "GOENV": filepath.Join(f.home, "goenv")}
	in.Getenv = func(k string) string { return env[k] }
	if err := RecordBaseline(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(pip, []byte("[global]\nindex-url = https://user:hunter2@example.invalid/simple\n"), 0o644)
	os.WriteFile(filepath.Join(f.home, "goenv"), []byte("GOFLAGS=-tags=fake\n"), 0o644)
	f.write("~/.npmrc", "//registry.example.invalid/:_authToken=s3cr3t-token\n")
	got := ChangeReport(context.Background(), in)
	for _, want := range []string{pip, "~/goenv", "+GOFLAGS=-tags=fake", "~/.npmrc", "_authToken=***", "://***@"} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	for _, secret := range []string{"hunter2", "s3cr3t-token"} {
		if strings.Contains(got, secret) {
			t.Errorf("a secret reached the report: %q\n%s", secret, got)
		}
	}
}

func TestChangeReportFlagsATestsExpectedOutputHardCodedInCode(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, map[string]string{
		"calc.go":      "package calc\n\nfunc Total(in string) string {\n\treturn compute(in)\n}\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {\n\tif got := Total(\"3 items\"); got != \"Total: 42.00\" {\n\t\tt.Fatal(got)\n\t}\n}\n",
	})
	f.items = []Item{{ID: "c1", Text: `the tool prints "All 7 checks green"`, Command: "./tool"}}
	f.baseline()
	f.write("calc.go", "package calc\n\nfunc Total(in string) string {\n\tif in == \"3 items\" {\n\t\treturn \"Total: 42.00\"\n\t}\n\treturn compute(in)\n}\n")
	f.write("main.go", "package main\n\nfunc main() {\n\tprintln(\"All 7 checks green\")\n\tprintln(\"an ordinary message here\")\n}\n")
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		got := f.report(lang)
		kind := lang.Pick("疑似特判", "suspected special-casing")
		for _, where := range []string{`calc.go:4: if in == "3 items" {`, `calc.go:5: return "Total: 42.00"`, `main.go:4: println("All 7 checks green")`} {
			if !flagged(got, kind, where) {
				t.Errorf("%s: %s is not flagged as special-casing:\n%s", lang, where, got)
			}
		}
		if strings.Contains(got, "ordinary message") {
			t.Errorf("%s: a literal no test expects is flagged:\n%s", lang, got)
		}
	}
}

func TestChangeReportRanksAWeakenedTestAheadOfNoise(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, map[string]string{
		"calc_test.go": "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"1+2\")\n\t}\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"2+2\")\n\t}\n}\n",
	})
	f.baseline()
	f.write("calc_test.go", "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Log(\"1+2\")\n\t}\n}\n")
	for i := range 45 {
		f.write(fmt.Sprintf("src/noise_%02d.go", i), fmt.Sprintf("package src\n\nvar n%d = %d\n", i, i))
	}
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		got := f.report(lang)
		if !flagged(got, lang.Pick("测试被削弱", "test weakened"), "calc_test.go") {
			t.Errorf("%s: the weakened test is not flagged:\n%s", lang, got)
		}
		listed := strings.Index(got, "- calc_test.go ("+lang.Pick("测试", "test"))
		others := strings.Index(got, lang.Pick("另有 45 个文件有改动", "45 other files changed"))
		if listed < 0 || others < 0 || listed > others {
			t.Errorf("%s: the test is not listed ahead of the count of the 45 others:\n%s", lang, got)
		}
		if strings.Contains(got, "noise_") {
			t.Errorf("%s: a noise file is named:\n%s", lang, got)
		}
	}
}

func TestChangeReportSaysATamperedBaselinePlainly(t *testing.T) {
	t.Parallel()
	t.Run("pruned objects", func(t *testing.T) {
		t.Parallel()
		f := newChangeFixture(t, map[string]string{"calc_test.go": "package calc\n"})
		f.write("wip.txt", "untracked, so the baseline's tree is its own\n")
		f.baseline()
		f.write("calc_test.go", "package calc\n// emptied\n")
		f.git("prune", "--expire=now")
		for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
			got := f.report(lang)
			if !strings.Contains(got, lang.Pick("怀疑被动过手脚", "tampering is suspected")) || strings.Contains(got, lang.Pick("都没有改动", "Nothing changed")) {
				t.Errorf("%s: pruned baseline objects are not said plainly:\n%s", lang, got)
			}
		}
	})
	t.Run("an unreadable baseline", func(t *testing.T) {
		t.Parallel()
		f := newChangeFixture(t, nil)
		f.baseline()
		os.WriteFile(filepath.Join(f.baselineDir, BaselineName), []byte(`{"tree":"0000"}`), 0o600)
		got := f.report(doc.English)
		if !strings.Contains(got, "cannot be read") || !strings.Contains(got, "tampering is suspected") || strings.Contains(got, "Nothing changed") {
			t.Errorf("a rewritten baseline is not said plainly:\n%s", got)
		}
		if !HasBaseline(f.input(doc.English)) {
			t.Error("an unreadable baseline counts as none: a new one would be taken over it")
		}
	})
	t.Run("kept inside the workspace", func(t *testing.T) {
		t.Parallel()
		f := newChangeFixture(t, nil)
		f.baselineDir = filepath.Join(f.ws, "runs")
		f.baseline()
		if got := f.report(doc.English); !strings.Contains(got, "kept inside the workspace") {
			t.Errorf("a baseline tools can write is not said:\n%s", got)
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		f := newChangeFixture(t, nil)
		in := f.input(doc.English)
		in.Notes = []string{"a note"}
		if HasBaseline(in) {
			t.Error("HasBaseline before any was recorded")
		}
		if got := ChangeReport(context.Background(), in); !strings.Contains(got, "No baseline was recorded") || !strings.Contains(got, "- a note") {
			t.Errorf("report = %q", got)
		}
	})
	t.Run("outside git", func(t *testing.T) {
		t.Parallel()
		ws, home := t.TempDir(), t.TempDir()
		in := ChangeInput{Workspace: ws, BaselineDir: t.TempDir(), Workbench: filepath.Join(ws, ".flower"),
			Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }}
		if err := RecordBaseline(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(ws, ".flower", "artifacts"), 0o755)
		os.WriteFile(filepath.Join(ws, ".flower", "artifacts", "pass.txt"), []byte("PASS\n"), 0o644)
		got := ChangeReport(context.Background(), in)
		if !strings.Contains(got, "not a git repository") || !flagged(got, "written by the worker", ".flower/artifacts/pass.txt") {
			t.Errorf("outside git the watched files are not compared:\n%s", got)
		}
	})
}

func TestChangeReportFlagsSilencingInEveryForm(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, before, after string
		kind, where               string
	}{
		{"|| true", "scripts/check.sh", "go test ./...\n", "go test ./... || true\n", "failure silenced: || true", "scripts/check.sh:1"},
		{"; true", "scripts/check.sh", "go test ./...\n", "go test ./...; true\n", "failure silenced: ; true", "scripts/check.sh:1"},
		{"|| :", "ci.sh", "pytest\n", "pytest || :\n", "failure silenced: || :", "ci.sh:1"},
		{"a make recipe's -", "Makefile", "test:\n\tgo test ./...\n", "test:\n\t-go test ./...\n", "failure silenced: -", "Makefile:2"},
		{"| tee", "scripts/test.sh", "go test ./...\n", "go test ./... | tee test.log\n", "failure silenced: | tee", "scripts/test.sh:1"},
		{"set +e", "scripts/check.sh", "go test ./...\n", "set +e\ngo test ./...\n", "failure silenced: set +e", "scripts/check.sh:1"},
		{"; exit 0", "scripts/check.sh", "go test ./...\n", "go test ./...; exit 0\n", "failure silenced: ; exit 0", "scripts/check.sh:1"},
		{"|| exit 0", "scripts/check.sh", "go test ./...\n", "go test ./... || exit 0\n", "failure silenced: || exit 0", "scripts/check.sh:1"},
		{"continue-on-error in CI", ".github/workflows/ci.yml", "jobs:\n  t:\n    steps:\n      - run: make test\n", "jobs:\n  t:\n    steps:\n      - run: make test\n        continue-on-error: true\n", "failure silenced: continue-on-error", ".github/workflows/ci.yml:5"},
		{"set -e removed", "scripts/check.sh", "set -euo pipefail\ngo test ./...\n", "go test ./...\n", "stop-on-error removed", "scripts/check.sh"},
		{"t.Skip", "calc_test.go", "package calc\nfunc TestA(t *testing.T) {\n}\n", "package calc\nfunc TestA(t *testing.T) {\n\tt.Skip(\"later\")\n}\n", "test skipped", "calc_test.go:3"},
		{"pytest skip", "tests/test_api.py", "def test_a():\n    assert f()\n", "import pytest\n@pytest.mark.skip\ndef test_a():\n    assert f()\n", "test skipped", "tests/test_api.py:2"},
		{"it.skip", "web/a.test.js", "it('adds', () => {})\n", "it.skip('adds', () => {})\n", "test skipped", "web/a.test.js:1"},
		{"xit", "web/b.spec.ts", "it('adds', () => {})\n", "xit('adds', () => {})\n", "test skipped", "web/b.spec.ts:1"},
		{"describe.skip", "web/c.test.ts", "describe('x', () => {})\n", "describe.skip('x', () => {})\n", "test skipped", "web/c.test.ts:1"},
		{"#[ignore]", "tests/calc.rs", "#[test]\nfn adds() {}\n", "#[test]\n#[ignore]\nfn adds() {}\n", "test skipped", "tests/calc.rs:2"},
		{"@Disabled", "src/CalcTest.java", "@Test\nvoid adds() {}\n", "@Disabled\n@Test\nvoid adds() {}\n", "test skipped", "src/CalcTest.java:1"},
		{"a deselected test", "Makefile", "test:\n\tpytest\n", "test:\n\tpytest --deselect tests/test_api.py::test_a\n", "test skipped", "Makefile:2"},
		{"TestX renamed to testX", "calc_test.go", "package calc\nfunc TestAdd(t *testing.T) {\n}\n", "package calc\nfunc testAdd(t *testing.T) {\n}\n", "test renamed so it no longer runs", "calc_test.go: TestAdd → testAdd"},
		{"a test function removed", "tests/test_api.py", "def test_a():\n    assert f()\n\ndef test_b():\n    assert g()\n", "def test_a():\n    assert f()\n", "test function removed", "tests/test_api.py: test_b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newChangeFixture(t, map[string]string{tc.file: tc.before})
			f.baseline()
			f.write(tc.file, tc.after)
			if got := f.report(doc.English); !flagged(got, tc.kind, tc.where) {
				t.Errorf("not flagged as %q at %q:\n%s", tc.kind, tc.where, got)
			}
		})
	}
	t.Run("renames", func(t *testing.T) {
		t.Parallel()
		body := "package calc\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n"
		py := "def test_a():\n    assert f() == 1\n    assert g() == 2\n"
		f := newChangeFixture(t, map[string]string{"calc_test.go": body, "tests/test_api.py": py, "tests/test_gone.py": py + "# gone\n"})
		f.baseline()
		os.Rename(f.path("calc_test.go"), f.path("calc_test.go.bak"))
		os.MkdirAll(f.path("tests/old"), 0o755)
		os.Rename(f.path("tests/test_api.py"), f.path("tests/old/test_api.py"))
		os.Remove(f.path("tests/test_gone.py"))
		for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
			got := f.report(lang)
			for _, c := range []struct{ kind, where string }{
				{lang.Pick("测试文件改了名", "test file renamed out of the runner's reach"), "calc_test.go → calc_test.go.bak"},
				{lang.Pick("测试被改名或移动", "test renamed or moved"), "tests/test_api.py → tests/old/test_api.py"},
				{lang.Pick("测试文件被删除", "test file deleted"), "tests/test_gone.py"},
			} {
				if !flagged(got, c.kind, c.where) {
					t.Errorf("%s: not flagged as %q at %q:\n%s", lang, c.kind, c.where, got)
				}
			}
		}
	})
}

func TestChangeReportOverAHugeDiffIsBoundedAndSaysWhatItLeftOut(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, nil)
	f.baseline()
	for i := range 120 {
		f.write(fmt.Sprintf("tests/case_%03d_test.py", i), fmt.Sprintf("import pytest\n@pytest.mark.skip\ndef test_%d():\n    assert True\n", i))
	}
	f.write("huge.txt", strings.Repeat("x\n", 200000))
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		got := f.report(lang)
		if len(got) > changeReportBytes+200 {
			t.Errorf("%s: the report is %d bytes, over its bound", lang, len(got))
		}
		for _, want := range []string{lang.Pick("另有 80 处标记", "80 more flags"), "tests/case_000_test.py", "tests/case_119_test.py",
			lang.Pick("另有 1 个文件有改动(200000 行)", "1 other files changed (200000 lines)")} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: the report lacks %q:\n%s", lang, want, got)
			}
		}
		if n := strings.Count(got, "_test.py:2: @pytest.mark.skip"); n != maxFlags {
			t.Errorf("%s: %d skipped tests flagged, want the first %d", lang, n, maxFlags)
		}
	}
}

func TestChangeReportOfAnUnchangedWorkspaceSaysNothingChanged(t *testing.T) {
	t.Parallel()
	f := newChangeFixture(t, nil)
	f.write(".flower/artifacts/a.log", "x\n")
	f.write("~/.npmrc", "fund=false\n")
	f.baseline()
	for _, lang := range []doc.Lang{doc.English, doc.Chinese} {
		got := f.report(lang)
		if !strings.Contains(got, lang.Pick("都没有改动", "Nothing changed")) || strings.Contains(got, "- [") {
			t.Errorf("%s: an unchanged workspace:\n%s", lang, got)
		}
	}
}

func TestChangeKindsNameWhatCanDecideACheck(t *testing.T) {
	t.Parallel()
	named := []string{"tools/verify_all", "data/golden.json"}
	cases := map[string]bool{
		"pkg/x_test.go": true, "tests/test_api.py": true, "web/a.spec.ts": true, "scripts/check.sh": true,
		".github/workflows/ci.yml": true, "Makefile": true, "go.mod": true, "package.json": true, ".gitignore": true,
		"tools/verify_all": true, "data/golden.json": true,
		"src/main.go": false, "README.md": false, "docs/guide.md": false,
	}
	for p, want := range cases {
		if got := len(kindsOf(p, named, doc.English)) > 0; got != want {
			t.Errorf("%s: listed %v, want %v", p, got, want)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A file rewritten at its old size within the second its baseline entry
// was taken is still seen changed: git rehashes such a "racily clean"
// entry only while the index keeps the time it was written at, and the
// snapshot's copy of its kept index once had a newer one (CI saw a test
// renamed to stop running reported as nothing changed). The report comes
// a second later, as the copy did.
func TestChangeReportSeesARewriteInTheBaselinesSecond(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		// Start just after a second begins: the write, the baseline and
		// the rewrite then share it on all but a very loaded machine.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
		f := newChangeFixture(t, map[string]string{"calc_test.go": "package calc\nfunc TestAdd(t *testing.T) {\n}\n"})
		f.baseline()
		f.write("calc_test.go", "package calc\nfunc testAdd(t *testing.T) {\n}\n")
		time.Sleep(1100 * time.Millisecond)
		if got := f.report(doc.English); !flagged(got, "test renamed so it no longer runs", "calc_test.go: TestAdd → testAdd") {
			t.Fatalf("try %d: a rewrite in the baseline's second went unseen:\n%s", i, got)
		}
	}
}
