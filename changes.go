package flower

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// The change report is what the round judge is shown of the workspace: a
// mechanical account, computed by flower with git, of the files changed
// since the goal was set that can make a check pass without the work (tests,
// check scripts, CI and build configuration, files a checklist command
// names), the tests newly skipped and the failures newly silenced. A worker
// that edits the check instead of the work is then seen by the judge, not
// only by whoever reads the diff later.

// BaselineName is the file in the run directory that holds the workspace as
// it was when the goal was set.
const BaselineName = "goal-baseline.json"

// The change report's bounds: how many files it names, how big a diff it
// shows inline, and how long it may be in all. What falls outside is
// counted in the report, never silently dropped.
const (
	changeReportFiles     = 40
	changeReportDiffLines = 60
	changeReportDiffBytes = 3000
	changeReportBytes     = 12000
	changeReportScanBytes = 4 << 20 // the added lines scanned for skips and silenced failures
	gitTimeout            = 2 * time.Minute
)

// goalBaseline is the workspace when the goal was set: the commit checked
// out and a tree of the whole working state (untracked files included,
// ignored ones not), written to git's object store through a scratch
// index, so the person's index is never touched.
type goalBaseline struct {
	Commit string    `json:"commit,omitempty"`
	Tree   string    `json:"tree"`
	At     time.Time `json:"at"`
}

// recordBaseline snapshots the workspace ws and keeps the baseline in
// runDir. A workspace outside git has no baseline: the report says so.
func recordBaseline(ctx context.Context, ws, runDir string) error {
	tree, commit, err := snapshotTree(ctx, ws, runDir)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(goalBaseline{Commit: commit, Tree: tree, At: time.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return fmt.Errorf("flower: the goal's baseline: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(runDir, BaselineName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("flower: the goal's baseline: %w", err)
	}
	return nil
}

// loadBaseline reads runDir's baseline; an absent one wraps fs.ErrNotExist.
func loadBaseline(runDir string) (*goalBaseline, error) {
	data, err := os.ReadFile(filepath.Join(runDir, BaselineName))
	if err != nil {
		return nil, err
	}
	var b goalBaseline
	if err := json.Unmarshal(data, &b); err != nil || b.Tree == "" {
		return nil, fmt.Errorf("flower: %s is not a baseline (%v); delete it and a new one is taken", BaselineName, err)
	}
	return &b, nil
}

// snapshotTree writes the working state of ws as a git tree, through a
// scratch index in scratchDir, and returns it with the commit checked out
// ("" before the first commit).
func snapshotTree(ctx context.Context, ws, scratchDir string) (tree, commit string, err error) {
	if err := os.MkdirAll(scratchDir, 0o755); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(scratchDir, ".goal-index-*")
	if err != nil {
		return "", "", fmt.Errorf("flower: a scratch index for the goal's baseline: %w", err)
	}
	index := f.Name()
	f.Close()
	os.Remove(index) // git wants to create it
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if out, err := runGit(ctx, ws, nil, 0, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		commit = strings.TrimSpace(out)
	}
	if commit != "" {
		if _, err := runGit(ctx, ws, env, 0, "read-tree", commit); err != nil {
			return "", "", err
		}
	}
	if _, err := runGit(ctx, ws, env, 0, "add", "-A", "--", "."); err != nil {
		return "", "", err
	}
	out, err := runGit(ctx, ws, env, 0, "write-tree")
	if err != nil {
		return "", "", err
	}
	return strings.TrimSpace(out), commit, nil
}

// errTooLong marks git output cut at its cap.
var errTooLong = errors.New("output over its cap")

// runGit runs git in dir, bounded in time, with env laid over the process
// environment; limit > 0 caps the output kept (the rest is read and
// dropped, and the error is errTooLong with the output so far).
func runGit(ctx context.Context, dir string, env []string, limit int, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.quotepath=off"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out := &cappedBuffer{limit: limit}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if out.cut {
		return out.String(), errTooLong
	}
	return out.String(), nil
}

// cappedBuffer keeps the first limit bytes written to it (all of them when
// limit is 0) and remembers whether it dropped any.
type cappedBuffer struct {
	bytes.Buffer
	limit int
	cut   bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.limit > 0 && b.Len()+len(p) > b.limit {
		b.cut = true
		b.Buffer.Write(p[:max(0, b.limit-b.Len())])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// changedFile is one file of the diff since the baseline.
type changedFile struct {
	path           string
	added, deleted int // -1 for a binary file
	kinds          []string
}

// Path shapes that make a file able to decide a check.
var (
	testPath = regexp.MustCompile(`(^|/)(tests?|__tests__|specs?|e2e|testdata)/|_test\.[A-Za-z]+$|(^|/)test_[^/]*\.py$|` +
		`(^|/)conftest\.py$|_spec\.rb$|\.(test|spec)\.[cm]?[jt]sx?$|(^|/)[^/]*Tests?\.(java|kt|cs|swift)$`)
	checkScriptPath = regexp.MustCompile(`(?i)(^|/)[^/]*(check|verify|test|lint|validate|ci)[^/]*\.(sh|bash|zsh|py|ps1|js|mjs|ts|rb|pl)$`)
	ciPath          = regexp.MustCompile(`^\.github/workflows/|(^|/)\.gitlab-ci\.ya?ml$|^\.circleci/|(^|/)Jenkinsfile$|` +
		`(^|/)azure-pipelines\.ya?ml$|(^|/)\.travis\.ya?ml$|^\.buildkite/|(^|/)bitbucket-pipelines\.ya?ml$|(^|/)\.drone\.ya?ml$`)
	buildPath = regexp.MustCompile(`(^|/)(Makefile|makefile|GNUmakefile|[^/]+\.mk|go\.mod|package\.json|pyproject\.toml|setup\.py|` +
		`setup\.cfg|tox\.ini|pytest\.ini|noxfile\.py|Cargo\.toml|CMakeLists\.txt|[^/]+\.cmake|build\.gradle(\.kts)?|` +
		`settings\.gradle(\.kts)?|pom\.xml|build\.xml|meson\.build|BUILD(\.bazel)?|WORKSPACE|[Jj]ustfile|Taskfile\.ya?ml|` +
		`Dockerfile|docker-compose\.ya?ml|(jest|vitest|playwright|cypress|babel|webpack|karma)\.conf(ig)?\.[cm]?[jt]s|` +
		`tsconfig(\.[^/]+)?\.json|\.eslintrc[^/]*|\.golangci\.ya?ml|\.pre-commit-config\.yaml|Rakefile|Gemfile|` +
		`composer\.json|phpunit\.xml(\.dist)?|\.coveragerc|\.mocharc[^/]*)$`)
	// skipAdded matches a line that skips or disables a test.
	skipAdded = regexp.MustCompile(`\bt\.Skip(Now|f)?\(|@pytest\.mark\.(skip|skipif|xfail)\b|\bpytest\.skip\(|@unittest\.skip|` +
		`\bskipTest\(|\b(it|test|describe|context)\.(skip|todo)\(|\bx(it|describe|test)\(|@Ignore\b|@Disabled\b|` +
		`#\[ignore\]|@skip\b|\bskip\s*:\s*true\b`)
	// silenceAdded matches a line that makes a failing command succeed.
	silenceAdded = regexp.MustCompile(`\|\|\s*(true|:|exit\s+0|echo\b)|;\s*true\s*$|\bset\s+\+e\b|continue-on-error:\s*true|` +
		`allow_failure:\s*true|--exit-zero\b|ignore_errors\s*[:=]\s*[Tt]rue`)
	// pathToken finds path-like words in a checklist item.
	pathToken = regexp.MustCompile("[A-Za-z0-9_./\\-]*[A-Za-z0-9_\\-]\\.[A-Za-z0-9]+|[A-Za-z0-9_.\\-]*/[A-Za-z0-9_./\\-]+")
)

// kindsOf names why a changed file matters to the checks, nothing when it
// does not; named are the path-like words of the checklist.
func kindsOf(p string, named []string, lang Lang) []string {
	var out []string
	add := func(zh, en string) { out = append(out, langPick(lang, zh, en)) }
	if testPath.MatchString(p) {
		add("测试", "test")
	}
	if checkScriptPath.MatchString(p) && !testPath.MatchString(p) {
		add("检查脚本", "check script")
	}
	if ciPath.MatchString(p) {
		add("CI", "CI")
	}
	if buildPath.MatchString(p) {
		add("构建配置", "build configuration")
	}
	for _, n := range named {
		n = strings.TrimPrefix(n, "./")
		if n != "" && (p == n || strings.HasSuffix(p, "/"+n) || (strings.Contains(n, ".") && path.Base(p) == path.Base(n))) {
			add("判定清单里点了名", "named by the checklist")
			break
		}
	}
	return out
}

// changeReport computes the report for the judge. checks are the goal's
// checklist; notes are lines flower adds (a protected file restored). It
// never fails: what it could not compute, it says.
func changeReport(ctx context.Context, ws, runDir string, checks, notes []string, lang Lang) string {
	t := changeTextsFor(lang)
	var sb strings.Builder
	sb.WriteString(t.title)
	for _, n := range notes {
		sb.WriteString("- " + n + "\n")
	}
	body := changeBody(ctx, ws, runDir, checks, lang, t)
	if body == "" && len(notes) == 0 {
		body = t.nothing
	}
	sb.WriteString(body)
	out := sb.String()
	if len(out) > changeReportBytes {
		out = truncateUTF8(out, changeReportBytes) + "\n" + fmt.Sprintf(t.cut, len(sb.String())-changeReportBytes)
	}
	return strings.TrimSpace(out)
}

func changeBody(ctx context.Context, ws, runDir string, checks []string, lang Lang, t changeTexts) string {
	base, err := loadBaseline(runDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return t.noBaseline
		}
		return fmt.Sprintf(t.failed, err)
	}
	cur, _, err := snapshotTree(ctx, ws, runDir)
	if err != nil {
		return fmt.Sprintf(t.failed, err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, t.since, base.At.Local().Format("2006-01-02 15:04"), shortHash(base.Commit))
	if cur == base.Tree {
		sb.WriteString(t.nothing)
		return sb.String()
	}
	files, err := numstat(ctx, ws, base.Tree, cur)
	if err != nil {
		return sb.String() + fmt.Sprintf(t.failed, err)
	}
	var named []string
	for _, c := range checks {
		named = append(named, pathToken.FindAllString(c, -1)...)
	}
	var listed []changedFile
	otherFiles, otherLines := 0, 0
	for _, f := range files {
		if f.kinds = kindsOf(f.path, named, lang); len(f.kinds) > 0 {
			listed = append(listed, f)
		} else {
			otherFiles++
			otherLines += max(0, f.added) + max(0, f.deleted)
		}
	}
	skips, silenced, scanCut := scanAdded(ctx, ws, base.Tree, cur)
	if len(listed) > 0 {
		sb.WriteString(t.listed)
	}
	diffsLeft := 0
	for i, f := range listed {
		if i == changeReportFiles {
			fmt.Fprintf(&sb, t.moreFiles, len(listed)-changeReportFiles)
			break
		}
		size := "binary"
		if f.added >= 0 {
			size = fmt.Sprintf("+%d −%d", f.added, f.deleted)
		}
		fmt.Fprintf(&sb, "- %s (%s; %s)\n", f.path, strings.Join(f.kinds, ", "), size)
		if f.added < 0 {
			continue
		}
		if f.added+f.deleted > changeReportDiffLines {
			diffsLeft++
			continue
		}
		d, err := runGit(ctx, ws, nil, changeReportDiffBytes+1, "diff", "--no-color", "--no-ext-diff", "-U2", base.Tree, cur, "--", f.path)
		if errors.Is(err, errTooLong) || len(d) > changeReportDiffBytes {
			diffsLeft++
			continue
		}
		if err == nil && strings.TrimSpace(d) != "" {
			sb.WriteString("  ```diff\n")
			for _, ln := range strings.Split(strings.TrimRight(diffBody(d), "\n"), "\n") {
				sb.WriteString("  " + ln + "\n")
			}
			sb.WriteString("  ```\n")
		}
	}
	if len(skips) > 0 {
		sb.WriteString(t.skipped)
		for _, s := range skips {
			sb.WriteString("- " + s + "\n")
		}
	}
	if len(silenced) > 0 {
		sb.WriteString(t.silenced)
		for _, s := range silenced {
			sb.WriteString("- " + s + "\n")
		}
	}
	if otherFiles > 0 {
		fmt.Fprintf(&sb, t.others, otherFiles, otherLines)
	}
	if diffsLeft > 0 {
		fmt.Fprintf(&sb, t.diffsLeft, diffsLeft, changeReportDiffLines, changeReportDiffBytes)
	}
	if scanCut {
		fmt.Fprintf(&sb, t.scanCut, changeReportScanBytes>>20)
	}
	return sb.String()
}

// numstat lists the files that differ between two trees.
func numstat(ctx context.Context, ws, from, to string) ([]changedFile, error) {
	out, err := runGit(ctx, ws, nil, 0, "diff", "--numstat", "-z", "--no-renames", from, to)
	if err != nil {
		return nil, err
	}
	var files []changedFile
	for _, rec := range strings.Split(out, "\x00") {
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		f := changedFile{path: parts[2], added: -1, deleted: -1}
		if a, err := strconv.Atoi(parts[0]); err == nil {
			f.added = a
		}
		if d, err := strconv.Atoi(parts[1]); err == nil {
			f.deleted = d
		}
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b changedFile) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// scanAdded reads the lines added since the baseline and returns those that
// skip a test and those that silence a failure, as "path:line: text"; cut
// says the diff was longer than the scan reads.
func scanAdded(ctx context.Context, ws, from, to string) (skips, silenced []string, cut bool) {
	out, err := runGit(ctx, ws, nil, changeReportScanBytes, "diff", "--no-color", "--no-ext-diff", "-U0", "--no-renames", from, to)
	if err != nil && !errors.Is(err, errTooLong) {
		return nil, nil, false
	}
	cut = errors.Is(err, errTooLong)
	file, line := "", 0
	for _, ln := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(ln, "+++ "):
			file = strings.TrimPrefix(strings.TrimPrefix(ln, "+++ "), "b/")
		case strings.HasPrefix(ln, "@@"):
			// @@ -a,b +c,d @@
			if i := strings.Index(ln, " +"); i >= 0 {
				num := ln[i+2:]
				if j := strings.IndexAny(num, ", "); j >= 0 {
					num = num[:j]
				}
				line, _ = strconv.Atoi(num)
			}
		case strings.HasPrefix(ln, "+"):
			text := strings.TrimSpace(ln[1:])
			where := fmt.Sprintf("%s:%d: %s", file, line, truncateUTF8(text, 160))
			if skipAdded.MatchString(text) && len(skips) < 20 {
				skips = append(skips, where)
			}
			if silenceAdded.MatchString(text) && len(silenced) < 20 {
				silenced = append(silenced, where)
			}
			line++
		}
	}
	return skips, silenced, cut
}

// diffBody drops the header lines of a one-file diff.
func diffBody(d string) string {
	if i := strings.Index(d, "\n@@"); i >= 0 {
		return d[i+1:]
	}
	return d
}

func shortHash(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	if h == "" {
		return "-"
	}
	return h
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// changeTexts are the change report's words in one language.
type changeTexts struct {
	title, since, nothing, noBaseline, failed string
	listed, moreFiles, skipped, silenced      string
	others, diffsLeft, scanCut, cut           string
}

func changeTextsFor(lang Lang) changeTexts {
	if lang.IsEnglish() {
		return changeTexts{
			title:      "Computed by flower from git, not reported by the workers.\n",
			since:      "Compared with the workspace when the goal was set (%s, commit %s):\n",
			nothing:    "Nothing changed in tests, checks, CI or build files.\n",
			noBaseline: "No baseline was recorded when the goal was set (the workspace is not a git repository, or the goal predates this): no change report.\n",
			failed:     "The change report could not be computed: %v\n",
			listed:     "Files that look like tests, check scripts, CI or build configuration, or that the checklist names:\n",
			moreFiles:  "- … and %d more such files, not listed\n",
			skipped:    "Tests newly skipped or disabled:\n",
			silenced:   "Failures newly silenced (a command made to succeed whatever happens):\n",
			others:     "%d other files changed (%d lines), not listed.\n",
			diffsLeft:  "Left out: the diffs of %d of the files above (over %d lines or %d bytes each); read them with git diff.\n",
			scanCut:    "Left out: the diff is longer than the %d MiB scanned for skips and silenced failures.\n",
			cut:        "… the report is cut here (%d more bytes left out).",
		}
	}
	return changeTexts{
		title:      "由 flower 用 git 算出,不是干活的人自己报的。\n",
		since:      "对照设定目标时的工作区(%s,commit %s):\n",
		nothing:    "测试、检查、CI、构建文件都没有改动。\n",
		noBaseline: "设定目标时没有记下基线(工作区不是 git 仓库,或者目标是更早设定的):没有改动报告。\n",
		failed:     "改动报告没能算出来:%v\n",
		listed:     "像是测试、检查脚本、CI 或构建配置的文件,以及判定清单里点了名的文件:\n",
		moreFiles:  "- ……另有 %d 个这样的文件,没有列出\n",
		skipped:    "新跳过或停用的测试:\n",
		silenced:   "新压下的失败(不管结果如何都让命令成功):\n",
		others:     "另有 %d 个文件有改动(%d 行),没有列出。\n",
		diffsLeft:  "略去:上面 %d 个文件的 diff(每个超过 %d 行或 %d 字节);要看就用 git diff。\n",
		scanCut:    "略去:diff 超过了扫描跳过和压下失败时读的 %d MiB。\n",
		cut:        "……报告到此截断(另有 %d 字节略去)。",
	}
}
