package workbench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"github.com/flowerrun/flower/internal/lang"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// write creates a file and its folders.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDescribe(t *testing.T) {
	long := strings.Repeat("长", 150)
	tests := []struct {
		name, content, want string
	}{
		{"hash desc", "#!/bin/sh\n# desc: checks the build\necho hi\n", "checks the build"},
		{"slash desc", "package main\n// desc: runs the server\n", "runs the server"},
		{"dash desc", "-- desc: drops the table\nDROP TABLE t;\n", "drops the table"},
		{"case and full-width colon", "# DESC：全角冒号\n", "全角冒号"},
		{"desc beats an earlier comment", "# first comment\n# desc: the real one\n", "the real one"},
		{"desc on line 8", "a\nb\nc\nd\ne\nf\ng\n# desc: eighth\n", "eighth"},
		{"desc on line 9 is too late", "# first\nb\nc\nd\ne\nf\ng\nh\n# desc: ninth\n", "first"},
		{"first comment line", "x = 1\n// computes x\n", "computes x"},
		{"comment of 3 characters skipped", "#\n# a\n//\n# ab\n", "ab"},
		{"shebang skipped", "#!/usr/bin/env python3\n# prints the report\n", "prints the report"},
		{"docstring on one line", "\"\"\"Fetches the logs.\"\"\"\nimport os\n", "Fetches the logs."},
		{"single-quoted docstring", "'''Single quotes.'''\n", "Single quotes."},
		{"docstring on the next line", "\"\"\"\nSummarises results.\n\"\"\"\n", "Summarises results."},
		{"markdown heading", "# 决定:用 SQLite\n\n正文\n", "决定:用 SQLite"},
		{"no comment", "plain text\nmore\n", ""},
		{"empty file", "", ""},
		{"crlf", "# desc: windows line\r\nx\r\n", "windows line"},
		{"desc cut at 100", "# desc: " + long + "\n", strings.Repeat("长", 100)},
		{"comment cut at 100", "# " + long + "\n", strings.Repeat("长", 100)},
		{"docstring cut at 100", "\"\"\"" + long + "\"\"\"\n", strings.Repeat("长", 100)},
	}
	dir := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprintf("f%d", i))
			write(t, p, tt.content)
			if got := Describe(p); got != tt.want {
				t.Errorf("Describe(%q) = %q, want %q", tt.content, got, tt.want)
			}
		})
	}
	if got := Describe(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("Describe(missing) = %q, want empty", got)
	}
}

func TestRefreshWritesEmptyIndex(t *testing.T) {
	wb := &Workbench{Workspace: t.TempDir()}
	got, err := wb.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	want := "# 工作台索引\n\n" +
		"> 自动生成,勿手改。scripts 首行写 `# desc: 一句话` 会出现在这里。\n\n" +
		"## 可复用脚本(0)\n- (空)\n\n" +
		"## 产出(0)\n- (空)\n\n" +
		"## 决策记录(0)\n- (空)\n"
	if got != want {
		t.Errorf("Refresh() =\n%s\nwant\n%s", got, want)
	}
	onDisk, err := os.ReadFile(filepath.Join(wb.Workspace, ".flower", "INDEX.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(onDisk) != want {
		t.Errorf("INDEX.md =\n%s\nwant\n%s", onDisk, want)
	}
	for _, d := range []string{"scripts", "artifacts", "notes"} {
		if fi, err := os.Stat(filepath.Join(wb.Workspace, ".flower", d)); err != nil || !fi.IsDir() {
			t.Errorf("%s/ not created: %v", d, err)
		}
	}
}

func TestRefreshListsEveryFile(t *testing.T) {
	ws := t.TempDir()
	wb := &Workbench{Workspace: ws}
	root := filepath.Join(ws, ".flower")
	write(t, filepath.Join(root, "scripts", "check.sh"), "#!/bin/sh\n# desc: checks it\n")
	write(t, filepath.Join(root, "scripts", "sub", "deep.py"), "\"\"\"Deep one.\"\"\"\n")
	write(t, filepath.Join(root, "artifacts", "report.md"), strings.Repeat("x", 2048))
	write(t, filepath.Join(root, "notes", "db.md"), "# 用 SQLite\n")
	got, err := wb.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	want := "# 工作台索引\n\n" +
		"> 自动生成,勿手改。scripts 首行写 `# desc: 一句话` 会出现在这里。\n\n" +
		"## 可复用脚本(2)\n" +
		"- `.flower/scripts/check.sh` — checks it (28B)\n" +
		"- `.flower/scripts/sub/deep.py` — Deep one. (16B)\n\n" +
		"## 产出(1)\n" +
		"- `.flower/artifacts/report.md` — (无说明) (2.0K)\n\n" +
		"## 决策记录(1)\n" +
		"- `.flower/notes/db.md` — 用 SQLite (13B)\n"
	if got != want {
		t.Errorf("Refresh() =\n%s\nwant\n%s", got, want)
	}

	// More files than MaxIndexEntries: INDEX.md still lists all of them.
	for i := range 45 {
		write(t, filepath.Join(root, "scripts", fmt.Sprintf("s%02d.sh", i)), "echo\n")
	}
	got, err = wb.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "## 可复用脚本(47)\n") {
		t.Errorf("index lacks the count 47:\n%s", got)
	}
	for i := range 45 {
		if !strings.Contains(got, fmt.Sprintf("- `.flower/scripts/s%02d.sh` — (无说明) (5B)\n", i)) {
			t.Errorf("index lacks s%02d.sh", i)
		}
	}
	if strings.Contains(got, "另有") {
		t.Errorf("index is cut:\n%s", got)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestScanSkipsDotFiles(t *testing.T) {
	ws := t.TempDir()
	wb := &Workbench{Workspace: ws}
	scripts := filepath.Join(ws, ".flower", "scripts")
	write(t, filepath.Join(scripts, ".hidden"), "# secret\n")
	write(t, filepath.Join(scripts, ".cache", "x.sh"), "# cached\n")
	write(t, filepath.Join(scripts, "b.sh"), "# b\n")
	write(t, filepath.Join(scripts, "a", "z.sh"), "# z\n")
	write(t, filepath.Join(scripts, "a.txt"), "# a\n")
	got := wb.Scan(scripts)
	var paths []string
	for _, e := range got {
		paths = append(paths, e.Path)
	}
	want := []string{".flower/scripts/a/z.sh", ".flower/scripts/a.txt", ".flower/scripts/b.sh"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Errorf("Scan = %v, want %v", paths, want)
	}
	if got := wb.Scan(filepath.Join(ws, "missing")); len(got) != 0 {
		t.Errorf("Scan(missing) = %v, want none", got)
	}
}

func TestPromptBlockWhenEmpty(t *testing.T) {
	wb := &Workbench{Workspace: t.TempDir()}
	want := "# 工作台 .flower/\n\n" +
		"已经存在的东西,**先用,不要重写**:\n" +
		"(目前为空)\n\n" +
		"规则:\n" +
		"1. 任何要跑第二次的脚本 —— 验证、复现、检查 —— 写进 `.flower/scripts/`,文件名说明用途,首行写 `# desc: 一句话`。下次直接跑,别重写。\n" +
		"2. 超过 2000 字符的产出 —— 日志、数据、报告、diff —— 写进 `.flower/artifacts/`,对话里只给路径和结论。\n" +
		"3. 关键决策与理由写进 `.flower/notes/`,一个决策一个文件。"
	if got := wb.PromptBlock(); got != want {
		t.Errorf("PromptBlock() =\n%s\nwant\n%s", got, want)
	}
}

func TestPromptBlockLimitsEachList(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		scripts   int
		wantShown int
		wantMore  string
	}{
		{"default 40 of 45", 0, 45, 40, "- …另有 5 个,`ls .flower/scripts/` 查看"},
		{"3 of 5", 3, 5, 3, "- …另有 2 个,`ls .flower/scripts/` 查看"},
		{"exactly at the limit", 4, 4, 4, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			wb := &Workbench{Workspace: ws, MaxIndexEntries: tt.max}
			for i := range tt.scripts {
				write(t, filepath.Join(ws, ".flower", "scripts", fmt.Sprintf("s%02d.sh", i)), "# desc: d\n")
			}
			write(t, filepath.Join(ws, ".flower", "notes", "n.md"), "note\n")
			got := wb.PromptBlock()
			if n := strings.Count(got, "- `.flower/scripts/"); n != tt.wantShown {
				t.Errorf("%d scripts shown, want %d:\n%s", n, tt.wantShown, got)
			}
			if tt.wantMore != "" && !strings.Contains(got, tt.wantMore+"\n") {
				t.Errorf("no %q in\n%s", tt.wantMore, got)
			}
			if tt.wantMore == "" && strings.Contains(got, "另有") {
				t.Errorf("unexpected cut in\n%s", got)
			}
			if !strings.Contains(got, "\n\n脚本:\n- `.flower/scripts/s00.sh` — d (10B)\n") {
				t.Errorf("scripts list malformed:\n%s", got)
			}
			if !strings.Contains(got, "\n\n笔记:\n- `.flower/notes/n.md` (5B)\n") {
				t.Errorf("notes list malformed:\n%s", got)
			}
			if strings.Contains(got, "产出:") || strings.Contains(got, "目前为空") {
				t.Errorf("empty list shown:\n%s", got)
			}
		})
	}
}

func TestPromptBlockExternal(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "repo")
	home := filepath.Join(tmp, ".flower-repo")
	wb := &Workbench{Workspace: ws, Home: home, MaxIndexEntries: 1}
	write(t, filepath.Join(home, "artifacts", "a.txt"), "a")
	write(t, filepath.Join(home, "artifacts", "b.txt"), "b")
	got := wb.PromptBlock()
	for _, want := range []string{
		"# 工作台 " + home + "/\n\n",
		"它在**仓库外**(`" + home + "`)—— 这是有意的,这样每个 agent 不管在哪个工作副本里都能读写同一份。**用绝对路径访问它。**\n\n已经存在的东西",
		"- `" + filepath.Join(home, "artifacts", "a.txt") + "` (1B)\n",
		"- …另有 1 个,`ls " + filepath.Join(home, "artifacts") + "/` 查看",
		"写进 `" + filepath.Join(home, "scripts") + "/`",
		"写进 `" + filepath.Join(home, "artifacts") + "/`",
		"写进 `" + filepath.Join(home, "notes") + "/`",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	inside := &Workbench{Workspace: ws}
	if got := inside.PromptBlock(); strings.Contains(got, "仓库外") {
		t.Errorf("inside workbench says it is outside:\n%s", got)
	}
}

func TestRootExternalShow(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	link := filepath.Join(tmp, "link")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		wb           Workbench
		wantRoot     string
		wantExternal bool
		show         string
		wantShow     string
	}{
		{"default", Workbench{Workspace: ws}, filepath.Join(ws, ".flower"), false,
			filepath.Join(ws, ".flower", "spill", "x.txt"), ".flower/spill/x.txt"},
		{"dirname", Workbench{Workspace: ws, Dirname: "bench"}, filepath.Join(ws, "bench"), false,
			filepath.Join(ws, "bench", "notes"), "bench/notes"},
		{"home inside", Workbench{Workspace: ws, Dirname: "ignored", Home: filepath.Join(ws, "sub", "wb")}, filepath.Join(ws, "sub", "wb"), false,
			filepath.Join(ws, "sub", "wb", "notes"), "sub/wb/notes"},
		{"home outside", Workbench{Workspace: ws, Home: filepath.Join(tmp, "out")}, filepath.Join(tmp, "out"), true,
			filepath.Join(tmp, "out", "notes"), filepath.Join(tmp, "out", "notes")},
		{"home through a link to the workspace", Workbench{Workspace: ws, Home: filepath.Join(link, "wb")}, filepath.Join(link, "wb"), false,
			filepath.Join(link, "wb", "n"), "wb/n"},
		{"workspace through a link", Workbench{Workspace: link}, filepath.Join(link, ".flower"), false,
			filepath.Join(ws, ".flower", "n"), ".flower/n"},
		{"home with dots", Workbench{Workspace: ws, Home: filepath.Join(ws, "..", "other")}, filepath.Join(tmp, "other"), true,
			filepath.Join(tmp, "other", "a"), filepath.Join(tmp, "other", "a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.wb.Root(); got != tt.wantRoot {
				t.Errorf("Root() = %q, want %q", got, tt.wantRoot)
			}
			if got := tt.wb.External(); got != tt.wantExternal {
				t.Errorf("External() = %v, want %v", got, tt.wantExternal)
			}
			if got := tt.wb.Show(tt.show); got != filepath.FromSlash(tt.wantShow) {
				t.Errorf("Show(%q) = %q, want %q", tt.show, got, tt.wantShow)
			}
			if !tt.wb.Contains(filepath.Join(tt.wb.Root(), "scripts", "a.sh")) {
				t.Errorf("Contains(root/scripts/a.sh) = false")
			}
			if tt.wb.Contains(filepath.Join(tmp, "elsewhere.txt")) {
				t.Errorf("Contains(elsewhere) = true")
			}
		})
	}
}

func TestNewSetsDefaults(t *testing.T) {
	wb := New("/repo")
	if wb.Dirname != ".flower" || wb.MaxIndexEntries != 40 || wb.Home != "" || wb.Workspace != "/repo" {
		t.Errorf("New = %+v", wb)
	}
	if wb.Root() != filepath.FromSlash("/repo/.flower") {
		t.Errorf("Root() = %q", wb.Root())
	}
}

func TestSpillWritesOnceByHash(t *testing.T) {
	wb := &Workbench{Workspace: t.TempDir()}
	content := strings.Repeat("数据 line\n", 1000)
	sum := sha256.Sum256([]byte(content))
	want := filepath.Join(wb.Root(), "spill", hex.EncodeToString(sum[:])[:16]+".txt")
	got, err := wb.Spill(content)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Spill path = %q, want %q", got, want)
	}
	data, err := os.ReadFile(got)
	if err != nil || string(data) != content {
		t.Fatalf("spill file holds %d bytes (err %v), want the content", len(data), err)
	}
	// A file already there is kept as it is.
	if err := os.WriteFile(got, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := wb.Spill(content); err != nil || again != want {
		t.Fatalf("second Spill = %q, %v", again, err)
	}
	if data, _ := os.ReadFile(got); string(data) != "kept" {
		t.Errorf("existing spill file rewritten: %q", data)
	}
}

func TestUnwritableWorkbenchFails(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	write(t, file, "not a folder")
	wb := &Workbench{Workspace: tmp, Home: filepath.Join(file, "wb")}
	if _, err := wb.Refresh(); err == nil {
		t.Error("Refresh under a file succeeded")
	}
	if err := wb.Ensure(); err == nil {
		t.Error("Ensure under a file succeeded")
	}
	if _, err := wb.Spill("x"); err == nil {
		t.Error("Spill under a file succeeded")
	}
	if got := wb.PromptBlock(); !strings.Contains(got, "(目前为空)") {
		t.Errorf("PromptBlock of an unreadable workbench:\n%s", got)
	}
}

func TestTexts(t *testing.T) {
	tests := []struct {
		lang lang.Lang
		want Texts
	}{
		{"", EnglishTexts}, {"zh", ChineseTexts}, {"zh-CN", ChineseTexts},
		{"en", EnglishTexts}, {"EN-us", EnglishTexts}, {"en_GB", EnglishTexts}, {"english", EnglishTexts},
	}
	for _, tt := range tests {
		if got := TextsFor(tt.lang); got != tt.want {
			t.Errorf("TextsFor(%q) = %q…, want %q…", tt.lang, got.IndexTitle, tt.want.IndexTitle)
		}
	}

	ws := t.TempDir()
	en := &Workbench{Workspace: ws, Texts: EnglishTexts}
	idx, err := en.Refresh()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(idx, "# Workbench index\n") || !strings.Contains(idx, "## Reusable scripts (0)\n- (empty)\n") {
		t.Errorf("English index:\n%s", idx)
	}
	block := en.PromptBlock()
	for _, want := range []string{"# Workbench .flower/\n", "(empty so far)", "Rules:\n1. ", "`.flower/artifacts/`", "3. Key decisions"} {
		if !strings.Contains(block, want) {
			t.Errorf("English block lacks %q:\n%s", want, block)
		}
	}
	// A partial Texts falls back to Chinese field by field.
	partial := &Workbench{Workspace: ws, Texts: Texts{PromptEmpty: "(nothing yet)"}}
	block = partial.PromptBlock()
	if !strings.Contains(block, "(nothing yet)") || !strings.HasPrefix(block, "# 工作台 .flower/") {
		t.Errorf("partial texts:\n%s", block)
	}
	// Every English field is set, so nothing falls back to Chinese.
	if EnglishTexts.withDefaults() != EnglishTexts {
		t.Error("EnglishTexts has an empty field")
	}
}

func TestHumanSize(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{{0, "0B"}, {1023, "1023B"}, {1024, "1.0K"}, {1536, "1.5K"}, {1024*1024 - 1, "1024.0K"}, {1024 * 1024, "1.0M"}, {5 * 1024 * 1024 / 2, "2.5M"}}
	for _, tt := range tests {
		if got := humanSize(tt.n); got != tt.want {
			t.Errorf("humanSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestConcurrentRefreshAndSpill(t *testing.T) {
	ws := t.TempDir()
	wb := &Workbench{Workspace: ws}
	write(t, filepath.Join(ws, ".flower", "notes", "n.md"), "# note\n")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 20 {
		wg.Go(func() {
			if _, err := wb.Refresh(); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			if _, err := wb.Spill("same content"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	data, err := os.ReadFile(wb.IndexPath())
	if err != nil || !strings.Contains(string(data), "## 决策记录(1)\n- `.flower/notes/n.md` — note (7B)\n") {
		t.Errorf("INDEX.md after concurrent refreshes (err %v):\n%s", err, data)
	}
	left, _ := filepath.Glob(filepath.Join(wb.Root(), "*", ".*.tmp"))
	more, _ := filepath.Glob(filepath.Join(wb.Root(), ".*.tmp"))
	if len(left)+len(more) > 0 {
		t.Errorf("temporary files left: %v %v", left, more)
	}
}

// A spill is a tool's output, which may hold secrets: it was 0644 in a 0755
// folder, readable by every user of the machine.
func TestSpillIsPrivate(t *testing.T) {
	wb := New(t.TempDir())
	path, err := wb.Spill("token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]fs.FileMode{path: 0o600, wb.SpillDir(): fs.ModeDir | 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (fs.ModeDir | fs.ModePerm); got != want {
			t.Errorf("%s has mode %v, want %v", p, got, want)
		}
	}
	// The index is for reading, by the human too.
	if _, err := wb.Refresh(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(wb.IndexPath()); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("INDEX.md: %v, %v; want mode 0644", fi.Mode(), err)
	}
}

// A worker's `git add -A` committed the workbench (tool output included):
// the root keeps itself out of git, unless its owner wrote a .gitignore.
func TestWorkbenchKeepsItselfOutOfGit(t *testing.T) {
	for name, create := range map[string]func(*Workbench) error{
		"Refresh": func(wb *Workbench) error { _, err := wb.Refresh(); return err },
		"Ensure":  func(wb *Workbench) error { return wb.Ensure() },
		"Spill":   func(wb *Workbench) error { _, err := wb.Spill("x"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			wb := New(t.TempDir())
			if err := create(wb); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(wb.Root(), ".gitignore"))
			if err != nil || string(got) != "*\n" {
				t.Fatalf(".gitignore = %q, %v; want %q", got, err, "*\n")
			}
		})
	}
	wb := New(t.TempDir())
	own := filepath.Join(wb.Root(), ".gitignore")
	write(t, own, "spill/\n")
	if _, err := wb.Refresh(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(own); string(got) != "spill/\n" {
		t.Errorf("the owner's .gitignore was replaced by %q", got)
	}
	// INDEX.md lists what agents left, not the .gitignore.
	if text, _ := wb.Refresh(); strings.Contains(text, "gitignore") {
		t.Errorf("the index lists the .gitignore:\n%s", text)
	}

	t.Run("git add -A", func(t *testing.T) {
		ws := t.TempDir()
		git := func(args ...string) string {
			t.Helper()
			cmd := exec.Command("git", args...)
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		git("init", "-q")
		wb := New(ws)
		if _, err := wb.Spill("tool output"); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(wb.Scripts(), "x.sh"), "# x\n")
		if _, err := wb.Refresh(); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(ws, "main.go"), "package main\n")
		git("add", "-A")
		if got := git("diff", "--cached", "--name-only"); got != "main.go\n" {
			t.Errorf("git add -A staged %q, want only main.go", got)
		}
	})
}

func TestLocationIsTheOneDecider(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "repo")
	if got := Location(ws, false); got != filepath.Join(ws, ".flower") {
		t.Errorf("Location(ws, false) = %s", got)
	}
	if got := Location(ws, true); got != filepath.Join(tmp, ".flower-repo") {
		t.Errorf("Location(ws, true) = %s", got)
	}
	if got := Location(ws+"/", true); got != filepath.Join(tmp, ".flower-repo") {
		t.Errorf("a trailing slash changed the place: %s", got)
	}
	for _, isolate := range []bool{false, true} {
		w := At(ws, isolate)
		if w.Root() != Location(ws, isolate) || w.External() != isolate {
			t.Errorf("At(ws, %v): root %s, external %v", isolate, w.Root(), w.External())
		}
	}
}

func TestCheckWritableRefusesAFolderThatCannotBeWritten(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A root below a plain file cannot be created, even by root.
	if err := (&Workbench{Workspace: tmp, Home: filepath.Join(file, "wb")}).CheckWritable(); err == nil {
		t.Error("a workbench under a file should not be writable")
	}
	w := &Workbench{Workspace: tmp}
	if err := w.CheckWritable(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(w.Root(), ".write-check-*")); len(left) != 0 {
		t.Errorf("the probe left %v", left)
	}
}
