package judge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"unicode/utf8"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/internal/atomicfile"
)

// The change report is what the round judge is shown of how the workspace
// moved since the goal was set: a mechanical account, computed by flower
// with git and content hashes, never reported by the workers. It lists the
// files that can make a check pass without the work (tests, check scripts,
// CI and build files, the workbench's scripts and artifacts, the outputs a
// checklist item names, the configuration outside the workspace that
// changes how checks run) ahead of the rest, and flags each way of gaming
// a check it recognises (a failure silenced, a test skipped, renamed out of
// the runner's reach or weakened, an artifact the worker wrote, a test's
// expected output hard-coded in the code, a baseline tampered with), so
// that a worker who edits the check instead of the work is seen by the
// judge, not only by whoever reads the diff later.

// BaselineName is the file in ChangeInput.BaselineDir that holds the
// workspace as it was when the goal was set.
const BaselineName = "goal-baseline.json"

// baselineIndexName is git's index kept beside the baseline: its stat
// cache makes each later snapshot hash only the files that changed. It is
// flower's own, out of the tools' reach, so a tool cannot mark a file
// unchanged in it (a copy of the workspace's own index could be).
const baselineIndexName = "goal-baseline.index"

// The change report's bounds. What falls outside is counted in the
// report, never silently dropped.
const (
	changeReportBytes     = 12000   // the whole report
	changeReportDiffLines = 60      // a file's diff shown inline: at most this many lines…
	changeReportDiffBytes = 3000    // …and bytes
	changeReportDiffTotal = 5000    // all inline diffs together
	changeReportScanBytes = 4 << 20 // the diff read for flags
	maxFlags              = 40      // flag lines shown
	maxWatchedShown       = 40      // watched files shown
	watchedDiffLines      = 20      // lines of a watched file's change shown
	watchedDiffTotal      = 3000    // all watched files' changes shown together
	maxWatchedPerDir      = 2000    // files of one workbench folder watched
	maxNamedTokens        = 100     // paths taken from the checklist
	keptTextBytes         = 16 << 10
	hashedBytes           = 64 << 20 // a watched file's hash covers at most this much (and its size)
	maxLiterals           = 200      // string literals checked for special-casing
	gitTimeout            = 2 * time.Minute
)

// ChangeInput is what the change report compares and where it keeps its
// baseline.
type ChangeInput struct {
	// Workspace is the folder the run works in (a git work tree, or a
	// folder within one; outside git only the watched files are compared).
	Workspace string
	// BaselineDir is where the baseline is kept: a folder no tool of the
	// run can write (the person's state folder). A baseline a tool can
	// write can be rewritten to hide a change, and the report says so
	// when BaselineDir lies inside the workspace.
	BaselineDir string
	// Workbench is the workbench root: its scripts/ and artifacts/ are
	// watched even when git ignores them. "" watches none.
	Workbench string
	// Items are the goal's checklist: the paths they name are watched,
	// ignored or not, and the literals they quote are looked for in code.
	Items []Item
	// Notes are lines the guard adds (restored files), shown first.
	Notes []string
	// Lang is the report's language.
	Lang doc.Lang
	// Getenv reads the environment of the run's tools, which decides where
	// their configuration lives (HOME, XDG_CONFIG_HOME, GOENV,
	// PIP_CONFIG_FILE, NPM_CONFIG_USERCONFIG, GIT_CONFIG_GLOBAL); nil reads
	// this process's.
	Getenv func(string) string
}

func (in ChangeInput) getenv(k string) string {
	if in.Getenv != nil {
		return in.Getenv(k)
	}
	return os.Getenv(k)
}

// baseline is the workspace when the goal was set: the commit checked out
// and a tree of the whole working state (untracked files included, ignored
// ones not) in git's object store, and the watched files' states.
type baseline struct {
	Commit string                 `json:"commit,omitempty"`
	Tree   string                 `json:"tree,omitempty"` // "": not a git repository
	At     time.Time              `json:"at"`
	Files  map[string]watchedFile `json:"files,omitempty"` // by absolute path
}

// watchedFile is one watched file's state.
type watchedFile struct {
	Role   string `json:"role"`
	Exists bool   `json:"exists"`
	Size   int64  `json:"size,omitempty"`
	Hash   string `json:"hash,omitempty"`
	// Text is the content of a small text file, for a diff.
	Text *string `json:"text,omitempty"`
}

// Roles of a watched file.
const (
	roleScript   = "script"   // under the workbench's scripts/
	roleArtifact = "artifact" // under the workbench's artifacts/
	roleNamed    = "named"    // a path a checklist item names
	// Configuration that changes how checks run; the suffix says which.
	roleGoEnv     = "config:go"
	roleNpm       = "config:npm"
	rolePip       = "config:pip"
	roleGitGlobal = "config:git-global"
	roleGitRepo   = "config:git-repo"
	roleGitHook   = "config:git-hook"
	roleEnvFile   = "config:env"
)

// RecordBaseline snapshots the workspace and the watched files and keeps
// the baseline in in.BaselineDir. Outside git it keeps the watched files
// alone. It fails only when the baseline cannot be written.
func RecordBaseline(ctx context.Context, in ChangeInput) error {
	if in.BaselineDir == "" {
		return errors.New("judge: no folder to keep the goal's baseline in")
	}
	if err := os.MkdirAll(in.BaselineDir, 0o700); err != nil {
		return fmt.Errorf("judge: the goal's baseline: %w", err)
	}
	b := baseline{At: time.Now().UTC()}
	g, gitErr := openRepo(ctx, in.Workspace)
	if gitErr == nil {
		os.Remove(filepath.Join(in.BaselineDir, baselineIndexName)) // a fresh index: nothing trusted from before
		tree, commit, err := g.snapshot(ctx, in.BaselineDir)
		if err != nil {
			return fmt.Errorf("judge: the goal's baseline: %w", err)
		}
		b.Tree, b.Commit = tree, commit
	}
	b.Files = map[string]watchedFile{}
	for p, role := range watchList(ctx, in, g) {
		b.Files[p] = readWatched(p, role)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(in.BaselineDir, BaselineName), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("judge: the goal's baseline: %w", err)
	}
	return nil
}

// HasBaseline reports whether a baseline file is kept for in, readable or
// not: one that cannot be read is a sign of tampering for the report to
// say, never a reason to take a new one over it.
func HasBaseline(in ChangeInput) bool {
	if in.BaselineDir == "" {
		return false
	}
	_, err := os.Lstat(filepath.Join(in.BaselineDir, BaselineName))
	return err == nil
}

func loadBaseline(dir string) (*baseline, error) {
	data, err := os.ReadFile(filepath.Join(dir, BaselineName))
	if err != nil {
		return nil, err
	}
	var b baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("%s is not a baseline: %v", BaselineName, err)
	}
	if b.At.IsZero() {
		return nil, fmt.Errorf("%s is not a baseline: it has no time", BaselineName)
	}
	return &b, nil
}

// ChangeReport computes the report for the judge. It never fails: what it
// could not compute, it says, and a baseline that is missing its objects
// or cannot be read is said to be tampered with, never read as "nothing
// changed".
func ChangeReport(ctx context.Context, in ChangeInput) string {
	return Changes(ctx, in).Report
}

// Flag is one way of gaming a check the change report recognised: its
// kind, in the report's language, and where (a file, its line, the
// change).
type Flag struct{ Kind, Where string }

// String is the flag as the report lists it.
func (f Flag) String() string { return "[" + f.Kind + "] " + f.Where }

// ChangeSummary is the change report and the flags it raised.
type ChangeSummary struct {
	Report string
	Flags  []Flag
}

// Changes computes the change report (ChangeReport) and returns its flags
// with it: a flagged change keeps a round from ending achieved whatever
// the judge says (Decision.Flag).
func Changes(ctx context.Context, in ChangeInput) ChangeSummary {
	report, flags := changeReport(ctx, in)
	return ChangeSummary{Report: report, Flags: flags}
}

func changeReport(ctx context.Context, in ChangeInput) (string, []Flag) {
	t := changeTextsFor(in.Lang)
	var head strings.Builder
	head.WriteString(t.title)
	for _, n := range in.Notes {
		head.WriteString("- " + n + "\n")
	}
	base, err := loadBaseline(in.BaselineDir)
	switch {
	case in.BaselineDir == "" || errors.Is(err, fs.ErrNotExist):
		head.WriteString(t.noBaseline)
		return finish(head.String(), "", "", t), nil
	case err != nil:
		fmt.Fprintf(&head, t.unreadable, filepath.Join(in.BaselineDir, BaselineName), err)
		return finish(head.String(), "", "", t), nil
	}
	fmt.Fprintf(&head, t.since, base.At.Local().Format("2006-01-02 15:04"), shortHash(base.Commit))
	if within(in.Workspace, in.BaselineDir) {
		head.WriteString(t.baselineInside)
	}
	r := &reporter{in: in, t: t, base: base, named: namedPaths(in)}
	r.gitPart(ctx)
	r.watchedPart()
	r.specialCasing(ctx)

	var body strings.Builder
	if len(r.problems) > 0 {
		for _, p := range r.problems {
			body.WriteString(p)
		}
	}
	if len(r.flags) > 0 {
		fmt.Fprintf(&body, t.flagged, len(r.flags))
		for i, f := range r.flags {
			if i == maxFlags {
				fmt.Fprintf(&body, t.moreFlags, len(r.flags)-maxFlags)
				break
			}
			fmt.Fprintf(&body, "- %s\n", f)
		}
	}
	body.WriteString(r.watched)
	var tail strings.Builder
	if r.otherFiles > 0 {
		fmt.Fprintf(&tail, t.others, r.otherFiles, r.otherLines)
	}
	if r.diffsLeft > 0 {
		fmt.Fprintf(&tail, t.diffsLeft, r.diffsLeft, changeReportDiffLines, changeReportDiffBytes)
	}
	if r.scanCut {
		fmt.Fprintf(&tail, t.scanCut, changeReportScanBytes>>20)
	}
	// The ranked list takes what room is left, cut at a line and counted:
	// the flags above name every file a flag concerns whatever happens.
	room := changeReportBytes - head.Len() - body.Len() - tail.Len() - 200
	listed := r.listed
	if len(listed) > room {
		listed = cutLines(listed, max(room, 0))
		fmt.Fprintf(&tail, t.listCut, r.listedCount-strings.Count(listed, "\n- ")-boolInt(strings.HasPrefix(listed, "- ")))
	}
	body.WriteString(listed)
	if body.Len() == 0 && tail.Len() == 0 && len(in.Notes) == 0 {
		body.WriteString(t.nothing)
	}
	return finish(head.String(), body.String(), tail.String(), t), r.flags
}

// finish joins the report and holds it to its bound.
func finish(head, body, tail string, t changeTexts) string {
	out := head + body + tail
	if len(out) > changeReportBytes {
		out = truncateUTF8(out, changeReportBytes) + "\n" + fmt.Sprintf(t.cut, len(out)-changeReportBytes)
	}
	return strings.TrimSpace(out)
}

// cutLines keeps the whole lines of s that fit in n bytes; an indented
// line (a diff) goes with the listed line above it.
func cutLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndex(s[:n], "\n- ")
	if cut < 0 {
		return ""
	}
	return s[:cut+1]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reporter gathers one report's parts.
type reporter struct {
	in    ChangeInput
	t     changeTexts
	base  *baseline
	g     *repo
	named []string // workspace-relative paths the checklist names
	cur   string   // the current tree

	problems []string
	flags    []Flag
	watched  string
	listed   string
	// listedCount is the number of files in listed.
	listedCount            int
	otherFiles, otherLines int
	diffsLeft              int
	scanCut                bool
	// codeLiterals are string literals added to non-test code, checked
	// against the tests' expected outputs.
	codeLiterals []literalAt
	// removedLiterals are those removed from the same files (a moved line
	// is not new).
	removedLiterals map[string]bool
	watchedRel      map[string]bool // watched paths inside the repository, repository-relative
	gitChanged      map[string]bool // the paths git shows changed
}

func (r *reporter) flag(kind, where string) {
	r.flags = append(r.flags, Flag{kind, truncateUTF8(where, 240)})
}

// gitPart diffs the workspace's tree against the baseline's.
func (r *reporter) gitPart(ctx context.Context) {
	t := r.t
	if r.base.Tree == "" {
		r.problems = append(r.problems, t.noGit)
		return
	}
	g, err := openRepo(ctx, r.in.Workspace)
	if err != nil {
		r.problems = append(r.problems, fmt.Sprintf(t.failed, err))
		return
	}
	r.g = g
	for _, obj := range []string{r.base.Tree, r.base.Commit} {
		if obj == "" {
			continue
		}
		if _, err := g.run(ctx, nil, 0, "cat-file", "-e", obj); err != nil {
			r.problems = append(r.problems, fmt.Sprintf(t.pruned, shortHash(obj)))
			return
		}
	}
	cur, _, err := g.snapshot(ctx, r.in.BaselineDir)
	if err != nil {
		r.problems = append(r.problems, fmt.Sprintf(t.failed, err))
		return
	}
	r.cur = cur
	if cur == r.base.Tree {
		return
	}
	// A watched file git also sees is shown once, with the watched ones;
	// an output the checklist names stays with git when git sees it.
	r.watchedRel = map[string]bool{}
	watched := r.currentWatched()
	for p, wf := range r.base.Files {
		watched[p] = wf.Role
	}
	for p, role := range watched {
		if rel, ok := g.rel(p); ok && role != roleNamed {
			r.watchedRel[rel] = true
		}
	}
	files, err := g.numstat(ctx, r.base.Tree, cur)
	if err != nil {
		r.problems = append(r.problems, fmt.Sprintf(t.failed, err))
		return
	}
	r.gitChanged = map[string]bool{}
	for _, f := range files {
		r.gitChanged[f.path] = true
	}
	r.renames(ctx)
	r.scan(ctx)
	var sb strings.Builder
	diffBytes := 0
	for _, f := range files {
		if r.watchedRel[f.path] {
			continue // shown with the watched files
		}
		kinds := kindsOf(f.path, r.named, r.in.Lang)
		if len(kinds) == 0 {
			r.otherFiles++
			r.otherLines += max(0, f.added) + max(0, f.deleted)
			continue
		}
		if r.listedCount == 0 {
			sb.WriteString(t.listed)
		}
		r.listedCount++
		size := "binary"
		if f.added >= 0 {
			size = fmt.Sprintf("+%d −%d", f.added, f.deleted)
		}
		fmt.Fprintf(&sb, "- %s (%s; %s)\n", f.path, strings.Join(kinds, ", "), size)
		if f.added < 0 || f.added+f.deleted == 0 {
			continue
		}
		if f.added+f.deleted > changeReportDiffLines || diffBytes >= changeReportDiffTotal {
			r.diffsLeft++
			continue
		}
		d, err := g.run(ctx, nil, changeReportDiffBytes+1, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U2", r.base.Tree, cur, "--", f.path)
		if errors.Is(err, errTooLong) || len(d) > changeReportDiffBytes {
			r.diffsLeft++
			continue
		}
		if err == nil && strings.TrimSpace(d) != "" {
			diffBytes += len(d)
			writeDiff(&sb, strings.Split(strings.TrimRight(diffBody(d), "\n"), "\n"))
		}
	}
	r.listed = sb.String()
}

func writeDiff(sb *strings.Builder, lines []string) {
	sb.WriteString("  ```diff\n")
	for _, ln := range lines {
		sb.WriteString("  " + ln + "\n")
	}
	sb.WriteString("  ```\n")
}

// renames flags tests renamed, moved or deleted.
func (r *reporter) renames(ctx context.Context) {
	out, err := r.g.run(ctx, nil, changeReportScanBytes, "diff", "--name-status", "-z", "-M", "-l2000", "--diff-filter=RD", r.base.Tree, r.cur)
	if err != nil && !errors.Is(err, errTooLong) {
		return
	}
	t := r.t
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		status := fields[i]
		switch {
		case strings.HasPrefix(status, "R") && i+2 < len(fields):
			from, to := fields[i+1], fields[i+2]
			i += 2
			switch {
			case testPath.MatchString(from) && !testPath.MatchString(to):
				r.flag(t.kRenamedAway, from+" → "+to)
			case testPath.MatchString(from) || testPath.MatchString(to):
				r.flag(t.kRenamed, from+" → "+to)
			}
		case status == "D" && i+1 < len(fields):
			if p := fields[i+1]; testPath.MatchString(p) {
				r.flag(t.kDeleted, p)
			}
			i++
		}
	}
}

// literalAt is a string literal on an added line of non-test code.
type literalAt struct{ text, where string }

// testFunc names a test function in Go and Python source.
var (
	goTestFunc = regexp.MustCompile(`^func\s+((?:Test|Benchmark|Fuzz|Example)[A-Za-z0-9_]*)\s*\(`)
	goAnyFunc  = regexp.MustCompile(`^func\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	pyTestFunc = regexp.MustCompile(`^\s*(?:async\s+)?def\s+(test[A-Za-z0-9_]*)\s*\(`)
	pyAnyFunc  = regexp.MustCompile(`^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	assertion  = regexp.MustCompile(`\b(assert[A-Za-z_]*|expect|t\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)|require\.[A-Za-z]+|should)\b|\bassert!|\bassert_eq!`)
	setErrExit = regexp.MustCompile(`^\s*set\s+-[a-zA-Z]*e|^\s*set\s+-o\s+(errexit|pipefail)|\bpipefail\b`)
)

// scan reads the diff since the baseline line by line and flags what
// silences a failure, skips or weakens a test, or takes a test out of the
// runner's reach; it also gathers the literals added to non-test code.
func (r *reporter) scan(ctx context.Context) {
	out, err := r.g.run(ctx, nil, changeReportScanBytes, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-U0", "--no-renames", r.base.Tree, r.cur)
	if err != nil && !errors.Is(err, errTooLong) {
		return
	}
	r.scanCut = errors.Is(err, errTooLong)
	t := r.t
	type fileCount struct{ added, removed int }
	asserts := map[string]*fileCount{}
	var assertOrder []string
	// countOf is file's assertion count, made on first use in diff order.
	countOf := func(file string) *fileCount {
		c := asserts[file]
		if c == nil {
			c = &fileCount{}
			asserts[file] = c
			assertOrder = append(assertOrder, file)
		}
		return c
	}
	removedTests := map[string]string{} // name → where
	addedFuncs := map[string]bool{}
	r.removedLiterals = map[string]bool{}
	file, line, skipFile := "", 0, false
	oldFile := ""
	for _, ln := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(ln, "--- "):
			oldFile = strings.TrimPrefix(strings.TrimPrefix(ln, "--- "), "a/")
		case strings.HasPrefix(ln, "+++ "):
			file = strings.TrimPrefix(strings.TrimPrefix(ln, "+++ "), "b/")
			if file == "/dev/null" {
				file = oldFile
			}
			skipFile = r.watchedRel[file]
		case strings.HasPrefix(ln, "@@"):
			// @@ -a,b +c,d @@
			if i := strings.Index(ln, " +"); i >= 0 {
				num := ln[i+2:]
				if j := strings.IndexAny(num, ", "); j >= 0 {
					num = num[:j]
				}
				line, _ = strconv.Atoi(num)
			}
		case skipFile:
		case strings.HasPrefix(ln, "+"):
			text := ln[1:]
			where := fmt.Sprintf("%s:%d: %s", file, line, truncateUTF8(strings.TrimSpace(text), 160))
			r.lineFlags(file, text, where)
			if testPath.MatchString(file) {
				if assertion.MatchString(text) {
					countOf(file).added++
				}
				for _, re := range []*regexp.Regexp{goAnyFunc, pyAnyFunc} {
					if m := re.FindStringSubmatch(text); m != nil {
						addedFuncs[m[1]] = true
					}
				}
			} else if codePath.MatchString(file) {
				for _, lit := range literals(text) {
					if len(r.codeLiterals) < maxLiterals {
						r.codeLiterals = append(r.codeLiterals, literalAt{lit, where})
					}
				}
			}
			line++
		case strings.HasPrefix(ln, "-"):
			text := ln[1:]
			if commandFile(file) && setErrExit.MatchString(text) {
				r.flag(t.kErrexitRemoved, fmt.Sprintf("%s: %s", file, truncateUTF8(strings.TrimSpace(text), 160)))
			}
			if testPath.MatchString(file) {
				if assertion.MatchString(text) {
					countOf(file).removed++
				}
				for _, re := range []*regexp.Regexp{goTestFunc, pyTestFunc} {
					if m := re.FindStringSubmatch(text); m != nil {
						removedTests[m[1]] = file
					}
				}
			} else if codePath.MatchString(file) {
				for _, lit := range literals(text) {
					r.removedLiterals[lit] = true
				}
			}
		}
	}
	names := make([]string, 0, len(removedTests))
	for n := range removedTests {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		if addedFuncs[name] {
			continue // edited in place
		}
		renamed := ""
		for f := range addedFuncs {
			if strings.EqualFold(f, name) || strings.EqualFold(strings.TrimLeft(f, "_x"), name) {
				renamed = f
			}
		}
		if renamed != "" {
			r.flag(t.kNoLongerRuns, fmt.Sprintf("%s: %s → %s", removedTests[name], name, renamed))
		} else {
			r.flag(t.kTestRemoved, fmt.Sprintf("%s: %s", removedTests[name], name))
		}
	}
	for _, f := range assertOrder {
		if c := asserts[f]; c.removed > c.added {
			r.flag(t.kWeakened, fmt.Sprintf(t.assertCount, f, c.removed, c.added))
		}
	}
}

// lineFlags flags an added line that skips a test or silences a failure.
func (r *reporter) lineFlags(file, text, where string) {
	t := r.t
	if skipAdded.MatchString(text) {
		r.flag(t.kSkipped, where)
	}
	if !commandFile(file) {
		return
	}
	if m := silenceAdded.FindString(text); m != "" {
		r.flag(fmt.Sprintf(t.kSilenced, strings.TrimSpace(m)), where)
	}
	if makeFile.MatchString(file) && makeIgnore.MatchString(text) {
		r.flag(fmt.Sprintf(t.kSilenced, "-"), where)
	}
}

// watchedPart compares the watched files with their state at the
// baseline.
func (r *reporter) watchedPart() {
	t := r.t
	now := r.currentWatched()
	for p, wf := range r.base.Files {
		if _, ok := now[p]; !ok {
			now[p] = wf.Role
		}
	}
	paths := make([]string, 0, len(now))
	for p := range now {
		paths = append(paths, p)
	}
	// Configuration first, then scripts, outputs, artifacts: the order of
	// what most often decides a check without the work.
	rank := func(role string) int {
		switch {
		case strings.HasPrefix(role, "config:"):
			return 0
		case role == roleScript:
			return 1
		case role == roleNamed:
			return 2
		}
		return 3
	}
	slices.SortFunc(paths, func(a, b string) int {
		if d := rank(now[a]) - rank(now[b]); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	// The files that changed, each read once.
	curs := map[string]watchedFile{}
	var changed []string
	for _, p := range paths {
		role := now[p]
		old, known := r.base.Files[p]
		if known {
			role = old.Role
		}
		if rel, ok := r.relOf(p); ok && role == roleNamed && r.gitChanged[rel] {
			continue // shown with git's files
		}
		cur := readWatched(p, role)
		if (known && (old.Exists != cur.Exists || old.Hash != cur.Hash)) || (!known && cur.Exists) {
			curs[p] = cur
			changed = append(changed, p)
		}
	}
	var sb strings.Builder
	shown, diffBytes := 0, 0
	for _, p := range changed {
		cur := curs[p]
		role := cur.Role
		old, known := r.base.Files[p]
		state := t.sNew
		switch {
		case !known && role == roleNamed:
			state = t.sUnrecorded
		case old.Exists && !cur.Exists:
			state = t.sRemoved
		case old.Exists:
			state = fmt.Sprintf(t.sChanged, old.Size, cur.Size)
		}
		shownPath := r.show(p)
		label := t.roleLabel(role)
		switch {
		case role == roleArtifact && cur.Exists:
			r.flag(t.kClaim, fmt.Sprintf("%s (%s)", shownPath, state))
		case strings.HasPrefix(role, "config:"):
			r.flag(fmt.Sprintf(t.kConfig, label), fmt.Sprintf("%s (%s)", shownPath, state))
		}
		if shown == maxWatchedShown {
			continue
		}
		if shown == 0 {
			sb.WriteString(t.watchedTitle)
		}
		shown++
		fmt.Fprintf(&sb, "- %s (%s; %s)\n", shownPath, label, state)
		oldText, newText := "", ""
		if old.Text != nil {
			oldText = *old.Text
		}
		if cur.Text != nil {
			newText = *cur.Text
		}
		if (old.Exists && old.Text == nil) || (cur.Exists && cur.Text == nil) {
			continue // large or binary: the sizes say it
		}
		removed, added := lineChange(oldText, newText)
		secret := strings.HasPrefix(role, "config:")
		var lines []string
		for _, l := range removed {
			lines = append(lines, "-"+maybeMask(l, secret))
		}
		for _, a := range added {
			lines = append(lines, "+"+maybeMask(a.text, secret))
			if role == roleScript || role == roleNamed || role == roleGitHook {
				where := fmt.Sprintf("%s:%d: %s", shownPath, a.line, truncateUTF8(strings.TrimSpace(a.text), 160))
				if skipAdded.MatchString(a.text) {
					r.flag(t.kSkipped, where)
				}
				if m := silenceAdded.FindString(a.text); m != "" {
					r.flag(fmt.Sprintf(t.kSilenced, strings.TrimSpace(m)), where)
				}
			}
		}
		if len(lines) > watchedDiffLines {
			lines = append(lines[:watchedDiffLines], fmt.Sprintf(t.moreLines, len(lines)-watchedDiffLines))
		}
		if n := len(strings.Join(lines, "\n")); len(lines) > 0 && diffBytes+n <= watchedDiffTotal {
			diffBytes += n
			writeDiff(&sb, lines)
		} else if len(lines) > 0 {
			r.diffsLeft++
		}
	}
	if shown < len(changed) {
		fmt.Fprintf(&sb, t.moreWatched, len(changed)-shown)
	}
	r.watched = sb.String()
}

// relOf is p relative to the repository's root, when there is one.
func (r *reporter) relOf(p string) (string, bool) {
	if r.g == nil {
		return "", false
	}
	return r.g.rel(p)
}

// currentWatched is the watch list as the workspace and environment are
// now.
func (r *reporter) currentWatched() map[string]string {
	return watchList(context.Background(), r.in, r.g)
}

// show is how a watched path is shown: relative to the workspace inside
// it, ~/ under the home folder, else absolute.
func (r *reporter) show(p string) string {
	if rel, err := filepath.Rel(r.in.Workspace, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	if h := r.in.getenv("HOME"); h != "" {
		if rel, err := filepath.Rel(h, p); err == nil && !strings.HasPrefix(rel, "..") {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// specialCasing flags literals newly added to non-test code that a test
// at the baseline expects, or that a checklist item quotes: code that
// answers the check instead of doing the work.
func (r *reporter) specialCasing(ctx context.Context) {
	if len(r.codeLiterals) == 0 {
		return
	}
	expected := map[string]bool{}
	for _, it := range r.in.Items {
		for _, q := range quoted(it.Text) {
			if q != strings.TrimSpace(it.Command) {
				expected[q] = true
			}
		}
	}
	var cands []string
	seen := map[string]bool{}
	for _, l := range r.codeLiterals {
		if !seen[l.text] && !r.removedLiterals[l.text] {
			seen[l.text] = true
			cands = append(cands, l.text)
		}
	}
	inTests := map[string]bool{}
	if r.g != nil && len(cands) > 0 {
		inTests = r.g.grepFixed(ctx, r.base.Tree, cands, testPathspecs)
		// A literal the code already held at the baseline is not new.
		if len(inTests) > 0 {
			var hits []string
			for c := range inTests {
				hits = append(hits, c)
			}
			inCode := r.g.grepFixed(ctx, r.base.Tree, hits, append([]string{":(glob)**"}, excludeSpecs(testPathspecs)...))
			for c := range inCode {
				delete(inTests, c)
			}
		}
	}
	for _, l := range r.codeLiterals {
		hit := inTests[l.text] && !r.removedLiterals[l.text]
		for e := range expected {
			if l.text == e || (len(e) >= 6 && strings.Contains(l.text, e)) {
				hit = true
			}
		}
		if hit {
			r.flag(r.t.kHardcoded, l.where)
		}
	}
}

// literals are the string literals on a line of code worth matching: four
// characters or more, and not a bare identifier-like word of fewer than
// eight (too common to tell anything).
var literalRe = regexp.MustCompile("\"((?:[^\"\\\\]|\\\\.){4,200})\"|'((?:[^'\\\\]|\\\\.){4,200})'|`([^`]{4,200})`")
var plainWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-/]*$`)

func literals(line string) []string {
	var out []string
	for _, m := range literalRe.FindAllStringSubmatch(line, -1) {
		s := m[1] + m[2] + m[3]
		if strings.TrimSpace(s) == "" || (plainWord.MatchString(s) && len(s) < 8) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// quoted are the strings a checklist item quotes ("…", `…`, '…', “…”).
var quotedRe = regexp.MustCompile("\"([^\"]{4,200})\"|`([^`]{4,200})`|“([^”]{4,200})”|'([^']{4,200})'")

func quoted(s string) []string {
	var out []string
	for _, m := range quotedRe.FindAllStringSubmatch(s, -1) {
		q := strings.TrimSpace(m[1] + m[2] + m[3] + m[4])
		if q != "" && !pathToken.MatchString(q) || strings.ContainsAny(q, " =:") {
			out = append(out, q)
		}
	}
	return out
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
	// configPath are files in the repository that change what git shows
	// or how tools run: a change can hide a file or alter a check.
	configPath = regexp.MustCompile(`(^|/)(\.gitignore|\.gitattributes|\.npmrc|\.yarnrc(\.yml)?|pip\.conf|\.env[^/]*|` +
		`\.cargo/config(\.toml)?|\.bazelrc|\.bashrc|\.profile|sitecustomize\.py|[^/]+\.pth)$`)
	// codePath is source code that may hard-code an answer.
	codePath = regexp.MustCompile(`\.(go|py|js|mjs|cjs|ts|jsx|tsx|rb|java|kt|cs|rs|c|cc|cpp|cxx|h|hpp|php|swift|scala|lua|pl)$`)
	// makeFile is a makefile, whose recipe lines a leading - silences.
	makeFile   = regexp.MustCompile(`(^|/)(Makefile|makefile|GNUmakefile|[^/]+\.mk)$`)
	makeIgnore = regexp.MustCompile(`^\t[@+]*-`)
	// shellish are files whose lines are commands.
	shellish = regexp.MustCompile(`(?i)\.(sh|bash|zsh|ksh|ps1|bat|cmd)$|(^|/)(Dockerfile|Justfile|justfile|Taskfile\.ya?ml|tox\.ini|package\.json|\.pre-commit-config\.yaml)$|(^|/)(bin|scripts?|hooks)/[^/.]+$`)
	// skipAdded matches a line that skips, disables or deselects a test.
	skipAdded = regexp.MustCompile(`\bt\.Skip(Now|f)?\(|\bb\.Skip(Now|f)?\(|@pytest\.mark\.(skip|skipif|xfail)\b|\bpytest\.(skip|xfail)\(|@unittest\.(skip|expectedFailure)|` +
		`\bskipTest\(|\b(it|test|describe|context|suite)\.(skip|todo)\(|\bx(it|describe|test|context)\(|@Ignore\b|@Disabled\b|` +
		`#\[ignore\]|@skip\b|\bskip\s*:\s*true\b|\s--deselect\b|\s-k\s+['"]?not\s|\s-skip[= ]|\s--ignore(-glob)?=|\s-run[= ]['"]?\^\$`)
	// silenceAdded matches a line that makes a failing command succeed or
	// hides its exit status.
	silenceAdded = regexp.MustCompile(`\|\|\s*(true|:|exit\s+0|return\s+0|echo\b)|;\s*(true|:)\s*(;|$)|;\s*exit\s+0\b|^\s*exit\s+0\s*$|` +
		`\bset\s+\+e\b|\|\s*tee\b|continue-on-error:\s*true|allow_failure:\s*true|--exit-zero\b|ignore_errors\s*[:=]\s*[Tt]rue|` +
		`--passWithNoTests\b|--no-fail\b|-o\s+pipefail\s*$`)
	// pathToken finds path-like words in a checklist item.
	pathToken = regexp.MustCompile("[A-Za-z0-9_./\\-]*[A-Za-z0-9_\\-]\\.[A-Za-z0-9]+|[A-Za-z0-9_.\\-]*/[A-Za-z0-9_./\\-]+")
)

// commandFile reports whether file's lines are commands, where a
// silenced exit status means something.
func commandFile(file string) bool {
	return shellish.MatchString(file) || makeFile.MatchString(file) || ciPath.MatchString(file) || testPath.MatchString(file) && strings.HasSuffix(file, ".sh")
}

// testPathspecs select the test files, for git grep.
var testPathspecs = []string{
	":(glob)**/*_test.*", ":(glob)**/test_*.py", ":(glob)**/tests/**", ":(glob)**/test/**", ":(glob)**/__tests__/**",
	":(glob)**/spec/**", ":(glob)**/specs/**", ":(glob)**/e2e/**", ":(glob)**/testdata/**", ":(glob)**/*.test.*",
	":(glob)**/*.spec.*", ":(glob)**/*_spec.rb", ":(glob)**/conftest.py", ":(glob)**/*Test.java", ":(glob)**/*Tests.java",
	":(glob)**/*Test.kt", ":(glob)**/*Tests.cs", ":(glob)**/*Tests.swift",
}

func excludeSpecs(specs []string) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = ":(exclude,glob)" + strings.TrimPrefix(s, ":(glob)")
	}
	return out
}

// kindsOf names why a changed file matters to the checks, nothing when it
// does not; named are the workspace-relative paths the checklist names.
func kindsOf(p string, named []string, lang doc.Lang) []string {
	var out []string
	add := func(zh, en string) { out = append(out, lang.Pick(zh, en)) }
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
	if configPath.MatchString(p) {
		add("配置", "configuration")
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

// namedPaths are the path-like words of the checklist (its texts and
// commands), workspace-relative.
func namedPaths(in ChangeInput) []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range in.Items {
		for _, tok := range pathToken.FindAllString(it.Text+" "+it.Command, -1) {
			tok = strings.TrimPrefix(strings.TrimRight(tok, "."), "./")
			if tok == "" || seen[tok] || strings.Contains(tok, "..") || strings.HasPrefix(tok, "/") || strings.HasPrefix(tok, "//") {
				continue
			}
			seen[tok] = true
			out = append(out, tok)
			if len(out) == maxNamedTokens {
				return out
			}
		}
	}
	return out
}

// watchList is every file the report watches by content, whether git
// ignores it or not, with its role; paths are absolute.
func watchList(ctx context.Context, in ChangeInput, g *repo) map[string]string {
	out := map[string]string{}
	if in.Workbench != "" {
		for dir, role := range map[string]string{"scripts": roleScript, "artifacts": roleArtifact} {
			n := 0
			root := filepath.Join(in.Workbench, dir)
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				if n++; n > maxWatchedPerDir {
					return filepath.SkipAll
				}
				out[p] = role
				return nil
			})
		}
	}
	for _, n := range namedPaths(in) {
		p := filepath.Join(in.Workspace, filepath.FromSlash(n))
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			continue
		}
		out[p] = roleNamed
	}
	home := in.getenv("HOME")
	configHome := in.getenv("XDG_CONFIG_HOME")
	if configHome == "" && home != "" {
		configHome = filepath.Join(home, ".config")
	}
	add := func(p, role string) {
		if p != "" && filepath.IsAbs(p) {
			if _, taken := out[p]; !taken {
				out[p] = role
			}
		}
	}
	if goenv := in.getenv("GOENV"); goenv != "off" {
		if goenv == "" && configHome != "" {
			goenv = filepath.Join(configHome, "go", "env")
		}
		add(goenv, roleGoEnv)
	}
	if u := in.getenv("NPM_CONFIG_USERCONFIG"); u != "" {
		add(u, roleNpm)
	} else if home != "" {
		add(filepath.Join(home, ".npmrc"), roleNpm)
	}
	add(filepath.Join(in.Workspace, ".npmrc"), roleNpm)
	add(in.getenv("PIP_CONFIG_FILE"), rolePip)
	if configHome != "" {
		add(filepath.Join(configHome, "pip", "pip.conf"), rolePip)
		add(filepath.Join(configHome, "git", "config"), roleGitGlobal)
	}
	if home != "" {
		add(filepath.Join(home, ".pip", "pip.conf"), rolePip)
	}
	add("/etc/pip.conf", rolePip)
	if gc := in.getenv("GIT_CONFIG_GLOBAL"); gc != "" {
		add(gc, roleGitGlobal)
	} else if home != "" {
		add(filepath.Join(home, ".gitconfig"), roleGitGlobal)
	}
	if g != nil {
		add(filepath.Join(g.common, "config"), roleGitRepo)
		add(filepath.Join(g.common, "info", "exclude"), roleGitRepo)
		add(filepath.Join(g.common, "info", "attributes"), roleGitRepo)
		if entries, err := os.ReadDir(g.hooks); err == nil {
			for i, e := range entries {
				if i == 200 {
					break
				}
				if !e.IsDir() {
					add(filepath.Join(g.hooks, e.Name()), roleGitHook)
				}
			}
		}
	}
	if envs, err := filepath.Glob(filepath.Join(in.Workspace, ".env*")); err == nil {
		for _, p := range envs {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				add(p, roleEnvFile)
			}
		}
	}
	return out
}

// readWatched reads one watched file's state: its hash (over at most
// hashedBytes, with the size), and its text when small.
func readWatched(p, role string) watchedFile {
	w := watchedFile{Role: role}
	f, err := os.Open(p)
	if err != nil {
		return w
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return w
	}
	w.Exists, w.Size = true, fi.Size()
	h := sha256.New()
	var head bytes.Buffer
	if _, err := io.Copy(io.MultiWriter(h, &limitedWriter{&head, keptTextBytes + 1}), io.LimitReader(f, hashedBytes)); err != nil {
		w.Hash = "unreadable: " + err.Error()
		return w
	}
	fmt.Fprintf(h, "\x00%d", fi.Size())
	w.Hash = hex.EncodeToString(h.Sum(nil))
	if b := head.Bytes(); len(b) <= keptTextBytes && utf8.Valid(b) && !bytes.ContainsRune(b, 0) {
		s := string(b)
		w.Text = &s
	}
	return w
}

// limitedWriter keeps the first n bytes written and swallows the rest.
type limitedWriter struct {
	buf *bytes.Buffer
	n   int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if room := l.n - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// addedLine is a line added to a watched file, with its line number.
type addedLine struct {
	text string
	line int
}

// lineChange is the lines of old no longer in new and the lines of new
// not in old (counted as multisets, in file order): a watched file's
// change without a diff algorithm, enough to show and scan.
func lineChange(old, new string) (removed []string, added []addedLine) {
	count := map[string]int{}
	oldLines := splitLines(old)
	newLines := splitLines(new)
	for _, l := range oldLines {
		count[l]++
	}
	for i, l := range newLines {
		if count[l] > 0 {
			count[l]--
			continue
		}
		added = append(added, addedLine{l, i + 1})
	}
	have := map[string]int{}
	for _, l := range newLines {
		have[l]++
	}
	for _, l := range oldLines {
		if have[l] > 0 {
			have[l]--
			continue
		}
		removed = append(removed, l)
	}
	return removed, added
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// secretKey finds settings whose values are secrets: a configuration file's
// change is shown with them masked, since the report reaches a model.
var (
	secretKey  = regexp.MustCompile(`(?i)(token|secret|passw|auth|api[_-]?key|credential|cookie|session|private)[^=:]*[=:]\s*`)
	urlUser    = regexp.MustCompile(`://[^/@\s]+@`)
	secretTail = regexp.MustCompile(`\S+`)
)

func maybeMask(line string, secret bool) string {
	line = truncateUTF8(line, 200)
	if !secret {
		return line
	}
	line = urlUser.ReplaceAllString(line, "://***@")
	if loc := secretKey.FindStringIndex(line); loc != nil {
		line = line[:loc[1]] + secretTail.ReplaceAllString(line[loc[1]:], "***")
	}
	return line
}

// repo is the git repository the workspace lies in.
type repo struct {
	ws     string // where git runs
	top    string // the work tree's root
	common string // the common git folder (config, info/)
	hooks  string // the hooks folder git uses
}

func openRepo(ctx context.Context, ws string) (*repo, error) {
	g := &repo{ws: ws}
	out, err := g.run(ctx, nil, 0, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--git-path", "hooks")
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.TrimSpace(out), "\n")
	if len(parts) != 3 {
		return nil, fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	g.top, g.common, g.hooks = parts[0], parts[1], parts[2]
	return g, nil
}

// rel is p relative to the work tree's root, if inside it.
func (g *repo) rel(p string) (string, bool) {
	rel, err := filepath.Rel(g.top, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		if real, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			rel, err = filepath.Rel(g.top, filepath.Join(real, filepath.Base(p)))
			if err == nil && !strings.HasPrefix(rel, "..") {
				return filepath.ToSlash(rel), true
			}
		}
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// readKept reads the kept index and its file information.
func readKept(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(f)
	return data, info, err
}

// snapshot writes the working state as a git tree through flower's own
// index in dir (kept there: its stat cache makes the next snapshot fast),
// and returns it with the commit checked out ("" before the first commit).
func (g *repo) snapshot(ctx context.Context, dir string) (tree, commit string, err error) {
	kept := filepath.Join(dir, baselineIndexName)
	f, err := os.CreateTemp(dir, ".goal-index-*")
	if err != nil {
		return "", "", fmt.Errorf("a scratch index: %w", err)
	}
	index := f.Name()
	f.Close()
	defer os.Remove(index)
	fresh := true
	// The copy keeps the kept index's time: git trusts an entry's stat
	// only when the file's time is older than its index's, and rehashes
	// the rest (racy git). A copy made now would make a file rewritten in
	// the second its entry was taken, at its old size, look unchanged: a
	// test renamed to stop running went unseen.
	if data, info, err := readKept(kept); err == nil && os.WriteFile(index, data, 0o600) == nil &&
		os.Chtimes(index, info.ModTime(), info.ModTime()) == nil {
		fresh = false
	} else {
		os.Remove(index) // git wants to create it
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	if out, err := g.run(ctx, nil, 0, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		commit = strings.TrimSpace(out)
	}
	if fresh && commit != "" {
		if _, err := g.run(ctx, env, 0, "read-tree", commit); err != nil {
			return "", "", err
		}
	}
	if _, err := g.run(ctx, env, 0, "add", "-A", "--", "."); err != nil {
		return "", "", err
	}
	out, err := g.run(ctx, env, 0, "write-tree")
	if err != nil {
		return "", "", err
	}
	if err := os.Rename(index, kept); err != nil {
		return "", "", err
	}
	return strings.TrimSpace(out), commit, nil
}

// numstat lists the files that differ between two trees.
func (g *repo) numstat(ctx context.Context, from, to string) ([]changedFile, error) {
	out, err := g.run(ctx, nil, 0, "diff", "--numstat", "-z", "--no-renames", "--no-textconv", from, to)
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

// changedFile is one file of the diff since the baseline.
type changedFile struct {
	path           string
	added, deleted int // -1 for a binary file
}

// grepFixed returns which of the fixed strings occur in the files of tree
// that pathspecs select.
func (g *repo) grepFixed(ctx context.Context, tree string, strs, pathspecs []string) map[string]bool {
	found := map[string]bool{}
	if len(strs) == 0 {
		return found
	}
	args := []string{"grep", "-F", "-I", "-o", "-h", "--no-color", "--no-textconv"}
	for _, s := range strs {
		args = append(args, "-e", s)
	}
	args = append(append(args, tree, "--"), pathspecs...)
	out, err := g.run(ctx, nil, 1<<20, args...)
	if err != nil && !errors.Is(err, errTooLong) {
		return found // exit status 1: nothing found
	}
	want := map[string]bool{}
	for _, s := range strs {
		want[s] = true
	}
	for _, ln := range strings.Split(out, "\n") {
		if want[ln] {
			found[ln] = true
		}
	}
	return found
}

// errTooLong marks git output cut at its cap.
var errTooLong = errors.New("output over its cap")

// run runs git in the workspace, bounded in time, with env laid over the
// process environment; limit > 0 caps the output kept (the rest is read
// and dropped, and the error is errTooLong with the output so far). The
// repository's own configuration is a stranger's: an fsmonitor it names
// would run a program of the worker's and could lie about what changed,
// so it is turned off.
func (g *repo) run(ctx context.Context, env []string, limit int, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", g.ws, "-c", "core.quotepath=off", "-c", "core.fsmonitor=false",
		"-c", "core.trustctime=true", "-c", "core.checkStat=default"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out := &cappedBuffer{limit: limit}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args[:min(len(args), 3)], " "), err, truncateUTF8(strings.TrimSpace(stderr.String()), 300))
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

// within reports whether p lies inside dir (both made absolute).
func within(dir, p string) bool {
	if dir == "" || p == "" {
		return false
	}
	d, err1 := filepath.Abs(dir)
	q, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, q)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
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
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// changeTexts are the change report's words in one language.
type changeTexts struct {
	lang                                                    doc.Lang
	title, since, nothing, noBaseline, unreadable, pruned   string
	baselineInside, noGit, failed                           string
	flagged, moreFlags, listed, listCut, watchedTitle       string
	moreWatched, moreLines, others, diffsLeft, scanCut, cut string
	sNew, sUnrecorded, sRemoved, sChanged                   string
	kSilenced, kSkipped, kRenamed, kRenamedAway, kDeleted   string
	kNoLongerRuns, kTestRemoved, kWeakened, assertCount     string
	kErrexitRemoved, kClaim, kConfig, kHardcoded            string
}

// roleLabel names a watched file's role.
func (t changeTexts) roleLabel(role string) string {
	p := t.lang.Pick
	switch role {
	case roleScript:
		return p("工作台脚本", "workbench script")
	case roleArtifact:
		return p("工作台产物", "workbench artifact")
	case roleNamed:
		return p("判定清单点了名的输出", "an output the checklist names")
	case roleGoEnv:
		return p("Go 环境(go env -w)", "Go environment (go env -w)")
	case roleNpm:
		return p("npm 配置", "npm config")
	case rolePip:
		return p("pip 配置", "pip config")
	case roleGitGlobal:
		return p("git 全局配置", "global git config")
	case roleGitRepo:
		return p("仓库的 git 配置", "the repository's git config")
	case roleGitHook:
		return p("git 钩子", "git hook")
	case roleEnvFile:
		return p("环境文件", "environment file")
	}
	return role
}

func changeTextsFor(lang doc.Lang) changeTexts {
	if lang.IsEnglish() {
		return changeTexts{
			lang:            lang,
			title:           "Computed by flower from git and file hashes, not reported by the workers.\n",
			since:           "Compared with the workspace when the goal was set (%s, commit %s):\n",
			nothing:         "Nothing changed in tests, checks, CI, build files, the workbench's scripts and artifacts, the checklist's outputs or the configuration that decides how checks run.\n",
			noBaseline:      "No baseline was recorded when the goal was set (the goal predates this, or no folder was given to keep it): no change report.\n",
			unreadable:      "The baseline %s cannot be read (%v): it was kept where no tool can write, so tampering is suspected; what changed since the goal was set is unknown, not nothing. The person can delete it to take a new one.\n",
			pruned:          "The baseline's git objects (%s) are gone from the repository (pruned or rewritten): tampering is suspected; what changed in the repository since the goal was set is unknown, not nothing.\n",
			baselineInside:  "The baseline is kept inside the workspace, where tools can write: a rewritten baseline cannot be told from a true one.\n",
			noGit:           "The workspace is not a git repository: only the workbench, the checklist's outputs and the configuration are compared.\n",
			failed:          "The change report could not be computed: %v\n",
			flagged:         "Flagged (%d): ways to make a check pass without the work; each needs a reason in the work, or the item fails:\n",
			moreFlags:       "- … and %d more flags, not listed\n",
			watchedTitle:    "Watched files changed (ignored by git or outside the workspace; compared by content):\n",
			moreWatched:     "- … and %d more watched files changed, not listed\n",
			moreLines:       "… %d more changed lines",
			listed:          "Files that can decide a check (tests, check scripts, CI, build files and configuration, files the checklist names), first:\n",
			listCut:         "Left out for the report's bound: %d more of the files that can decide a check; read them with git diff.\n",
			others:          "%d other files changed (%d lines), not listed.\n",
			diffsLeft:       "Left out: the diffs of %d of the files above (over %d lines or %d bytes each, or past the report's room for diffs); read them with git diff.\n",
			scanCut:         "Left out: the diff is longer than the %d MiB scanned for flags.\n",
			cut:             "… the report is cut here (%d more bytes left out).",
			sNew:            "new",
			sUnrecorded:     "exists; not recorded when the goal was set",
			sRemoved:        "removed",
			sChanged:        "changed, %d → %d bytes",
			kSilenced:       "failure silenced: %s",
			kSkipped:        "test skipped or deselected",
			kRenamed:        "test renamed or moved",
			kRenamedAway:    "test file renamed out of the runner's reach",
			kDeleted:        "test file deleted",
			kNoLongerRuns:   "test renamed so it no longer runs",
			kTestRemoved:    "test function removed",
			kWeakened:       "test weakened",
			assertCount:     "%s: %d assertion lines removed, %d added",
			kErrexitRemoved: "stop-on-error removed",
			kClaim:          "written by the worker: a claim, not evidence",
			kConfig:         "configuration that changes how checks run: %s",
			kHardcoded:      "suspected special-casing: a test's expected output now in non-test code",
		}
	}
	return changeTexts{
		lang:            lang,
		title:           "由 flower 用 git 和文件哈希算出,不是干活的人自己报的。\n",
		since:           "对照设定目标时的工作区(%s,commit %s):\n",
		nothing:         "测试、检查、CI、构建文件、工作台的脚本和产物、判定清单点了名的输出、决定检查怎么跑的配置,都没有改动。\n",
		noBaseline:      "设定目标时没有记下基线(目标是更早设定的,或者没有给放基线的文件夹):没有改动报告。\n",
		unreadable:      "基线 %s 读不了(%v):它放在任何工具都写不到的地方,所以怀疑被动过手脚;设定目标以来改了什么不知道,不是没改。人可以删掉它,重新记一份。\n",
		pruned:          "基线的 git 对象(%s)已经不在仓库里了(被清理或改写):怀疑被动过手脚;设定目标以来仓库里改了什么不知道,不是没改。\n",
		baselineInside:  "基线放在工作区里,工具写得到:被改写的基线和真的分不出来。\n",
		noGit:           "工作区不是 git 仓库:只对照工作台、判定清单点了名的输出和配置。\n",
		failed:          "改动报告没能算出来:%v\n",
		flagged:         "标记(%d 处):不做实事也能让检查通过的做法;每一处都要在工作里有理由,否则该项不通过:\n",
		moreFlags:       "- ……另有 %d 处标记,没有列出\n",
		watchedTitle:    "改动了的受监视文件(git 忽略的或在工作区外的;按内容对照):\n",
		moreWatched:     "- ……另有 %d 个受监视文件有改动,没有列出\n",
		moreLines:       "……另有 %d 行改动",
		listed:          "能决定检查结果的文件(测试、检查脚本、CI、构建文件和配置、判定清单里点了名的文件),排在前面:\n",
		listCut:         "因报告篇幅所限略去:另有 %d 个能决定检查结果的文件;要看就用 git diff。\n",
		others:          "另有 %d 个文件有改动(%d 行),没有列出。\n",
		diffsLeft:       "略去:上面 %d 个文件的 diff(每个超过 %d 行或 %d 字节,或者超出了报告留给 diff 的篇幅);要看就用 git diff。\n",
		scanCut:         "略去:diff 超过了扫描标记时读的 %d MiB。\n",
		cut:             "……报告到此截断(另有 %d 字节略去)。",
		sNew:            "新建",
		sUnrecorded:     "存在;设定目标时没有记下",
		sRemoved:        "删除",
		sChanged:        "改动,%d → %d 字节",
		kSilenced:       "失败被压下:%s",
		kSkipped:        "测试被跳过或排除",
		kRenamed:        "测试被改名或移动",
		kRenamedAway:    "测试文件改了名,测试运行器找不到了",
		kDeleted:        "测试文件被删除",
		kNoLongerRuns:   "测试改了名,不会再运行",
		kTestRemoved:    "测试函数被删除",
		kWeakened:       "测试被削弱",
		assertCount:     "%s:删了 %d 行断言,加了 %d 行",
		kErrexitRemoved: "出错即停被去掉",
		kClaim:          "干活的人自己写的:是说法,不是证据",
		kConfig:         "改变检查怎么跑的配置:%s",
		kHardcoded:      "疑似特判:测试期望的输出出现在了非测试代码里",
	}
}
