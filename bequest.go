package flower

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/workbench"
)

// The bequest's markers. flower owns exactly the lines between a begin and
// an end line in CLAUDE.md and AGENTS.md; everything else in those files
// is a person's and is never touched.
const (
	BequestBegin = "<!-- flower:bequest:begin (written by flower at the end of a run; replaced by the next one) -->"
	BequestEnd   = "<!-- flower:bequest:end -->"
)

// BequestFiles are the files at the workspace root that carry the bequest:
// the instructions files Claude Code and other coding tools read first.
var BequestFiles = []string{"CLAUDE.md", "AGENTS.md"}

// Bounds on the model's hand-over: "a few dozen lines" with room to
// spare; a longer reply pastes content rather than pointing at it.
const (
	bequestMaxLines = 150
	bequestMaxBytes = 16 << 10
)

// ErrBequestBlock is wrapped by the error for a file whose flower block is
// damaged (a marker missing, doubled or out of order): flower leaves it
// alone rather than guess where its block ends.
var ErrBequestBlock = errors.New("flower: the bequest block is damaged")

// bequest writes the starter flow's hand-over when the run ends.
type bequest struct {
	place starterPlace
	work  Step
}

// write is the starter workflow's Finally: once the work step ran, the
// coordinator's last session (forked, so the work session stays as it
// was; aside, so it takes no human's words) writes the hand-over; when it
// cannot (no session, the run cancelled, a failed or unusable reply) a
// mechanical one from the brief, the goal, the verdict and the manifest is
// written instead.
func (b *bequest) write(ctx context.Context, rt *Runtime, c *Ctx) {
	if _, ran := c.Result(b.work.Name); !ran {
		return // nothing was worked on: nothing to hand over
	}
	lang, t := b.place.lang, starterTextsFor(b.place.lang)
	outcome := bequestOutcome(c, t)
	text := ""
	if sid, ok := c.Session(b.work.Name); ok && ctx.Err() == nil {
		prompt := fmt.Sprintf(t.bequestPrompt, outcome, b.place.wb.Root(), b.place.brief, b.place.goal, rt.ManifestPath())
		bctx, cancel := context.WithTimeout(ctx, bequestTimeout)
		r, err := rt.Run(bctx, bequestSpec(b.work.Spec), prompt, RunOptions{
			StepName: b.work.Name + b.place.names.Bequest, Resume: sid, Fork: true, OnEvent: c.OnEvent(), Aside: true, OneAttempt: true})
		cancel()
		if err == nil {
			text = usableBequest(r.Text)
		}
	}
	mechanical := text == ""
	if mechanical {
		text = b.mechanical(rt, c, outcome)
	}
	var written, failed []string
	targets, outside := bequestTargets(b.place.ws)
	for _, o := range outside {
		slog.Warn("flower: bequest not written: the file leads outside the workspace", "path", o)
		failed = append(failed, fmt.Sprintf(langPick(lang, "%s:链接指到工作区外面,没写", "%s: a link that leads outside the workspace, left alone"), o))
	}
	var created []string
	for _, path := range targets {
		_, statErr := os.Lstat(path)
		if err := writeBequest(path, text); err != nil {
			slog.Warn("flower: bequest not written", "path", path, "err", err)
			failed = append(failed, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		written = append(written, path)
		if errors.Is(statErr, fs.ErrNotExist) {
			created = append(created, path)
		}
	}
	// A file the person's repository did not have is flower's: kept out
	// of git, so that nothing the work did not make waits to be committed.
	ignored := keepOutOfGit(ctx, b.place.ws, created)
	if f := c.OnEvent(); f != nil {
		msg := langPick(lang, "交代已写入 ", "bequest written into ") + strings.Join(written, ", ")
		if len(ignored) > 0 {
			msg += langPick(lang, "(git 不跟踪新建的 ", " (git ignores the new ") + strings.Join(ignored, ", ") +
				langPick(lang, ":写进了 .git/info/exclude,只在这个副本)", ": listed in .git/info/exclude, this clone only)")
		}
		if len(failed) > 0 {
			msg += langPick(lang, ";没写成:", "; not written: ") + strings.Join(failed, "; ")
		}
		e := event.New(event.System, msg, map[string]any{"bequest": written, "mechanical": mechanical, "failed": failed, "ignored": ignored})
		safeCall("OnEvent", func() { f(e) })
	}
}

// bequestTimeout bounds the model's hand-over: past it the mechanical one
// is written. A variable for the tests.
var bequestTimeout = 10 * time.Minute

// bequestSpec is the work spec as the hand-over runs it: one turn of
// writing, after the work stopped. It cannot ask the human (nobody may be
// there, and a question waits up to half an hour), read the inbox, or
// dispatch a worker (the hand-over writes what is known, it does no new
// work).
func bequestSpec(work AgentSpec) AgentSpec {
	spec := work
	spec.AllowedTools = slices.DeleteFunc(slices.Clone(work.AllowedTools), func(tool string) bool {
		return tool == AskTool || tool == InboxTool || tool == "Agent" || tool == "Task"
	})
	spec.DisallowedTools = append(slices.Clone(work.DisallowedTools), "Agent", "Task", AskTool, InboxTool)
	spec.Agents = nil
	if len(work.MCPServers) > 0 {
		spec.MCPServers = maps.Clone(work.MCPServers)
		delete(spec.MCPServers, ChannelServer)
	}
	spec.Env = maps.Clone(work.Env)
	return spec
}

// bequestOutcome says how the run ended: the outcome Workflow.Run decided
// (the one the ending and the report show), in words.
func bequestOutcome(c *Ctx, t starterTexts) string {
	o, ok := OutcomeOf(c)
	if !ok {
		// Finally runs after Run decided; a caller of write outside a
		// workflow decides here, with what the ctx holds.
		o = RunOutcome(c, nil, nil)
	}
	if o.State == OutcomeStopped && o.Budget {
		return t.budgetStopped
	}
	return t.outcomes[o.State]
}

// usableBequest is the model's hand-over trimmed, or "" when it cannot be
// used: empty, too long, or holding a marker of its own.
func usableBequest(text string) string {
	text = strings.TrimSpace(text)
	switch {
	case text == "", len(text) > bequestMaxBytes, strings.Count(text, "\n") >= bequestMaxLines,
		strings.Contains(text, bequestMarkerWord):
		return ""
	}
	return text
}

// bequestTargets are the bequest files at the workspace root, each once: a
// CLAUDE.md that links to AGENTS.md is written through, as one file. A
// file that is a link whose real path leaves the workspace (git stores
// links, so a cloned repository can commit one to any file of the user's),
// or a link that leads nowhere, is not a target: it is listed in outside.
func bequestTargets(ws string) (targets, outside []string) {
	root := ws
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		root = real
	}
	for _, name := range BequestFiles {
		p := filepath.Join(ws, name)
		fi, err := os.Lstat(p)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(p)
			if err != nil || !workbench.Within(root, real) {
				outside = append(outside, p)
				continue
			}
			p = real
		}
		if !slices.Contains(targets, p) {
			targets = append(targets, p)
		}
	}
	return targets, outside
}

// blockSafe is one line of text for the bequest block: control characters
// (a newline in a file name, say) become spaces and the markers' prefix is
// broken, so nothing put into the block can end it or open another.
func blockSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
	return strings.ReplaceAll(s, bequestMarkerWord, "flower bequest ")
}

// bequestMarkerWord is what both markers hold and no text in the block may.
const bequestMarkerWord = "flower:bequest:"

// writeBequest puts text into path as flower's block: the one clean block
// already there is replaced, a file without one gets it appended after a
// blank line, a missing file is created. The bytes outside the block are
// left exactly as they were. A damaged block (markers missing, doubled or
// out of order) is an error wrapping ErrBequestBlock and the file is not
// written.
func writeBequest(path, text string) error {
	if strings.Contains(text, bequestMarkerWord) {
		return fmt.Errorf("%w: the text for %s holds a marker of its own; not written", ErrBequestBlock, path)
	}
	block := BequestBegin + "\n" + strings.TrimSpace(text) + "\n" + BequestEnd
	data, err := os.ReadFile(path)
	perm := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return fmt.Errorf("flower: read %s: %w", path, err)
	default:
		if fi, err := os.Stat(path); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	out, err := replaceBequest(string(data), block)
	if err != nil {
		return fmt.Errorf("%w in %s: %v; fix or remove the flower lines by hand (flower leaves the file alone)", ErrBequestBlock, path, err)
	}
	return atomicfile.Write(path, []byte(out), perm)
}

// replaceBequest returns file with block in flower's place.
func replaceBequest(file, block string) (string, error) {
	var begins, ends []int // byte offsets of marker lines
	var endAfter int       // offset just past the end marker's text
	for off := 0; off < len(file); {
		nl := strings.IndexByte(file[off:], '\n')
		line := file[off:]
		next := len(file)
		if nl >= 0 {
			line, next = file[off:off+nl], off+nl+1
		}
		switch strings.TrimRight(line, "\r") {
		case BequestBegin:
			begins = append(begins, off)
		case BequestEnd:
			ends = append(ends, off)
			endAfter = off + len(strings.TrimRight(line, "\r"))
		}
		off = next
	}
	switch {
	case len(begins) == 0 && len(ends) == 0:
		if file == "" {
			return block + "\n", nil
		}
		sep := "\n"
		if !strings.HasSuffix(file, "\n") {
			sep = "\n\n"
		}
		return file + sep + block + "\n", nil
	case len(begins) == 1 && len(ends) == 1 && begins[0] < ends[0]:
		return file[:begins[0]] + block + file[endAfter:], nil
	}
	return "", fmt.Errorf("%d begin and %d end markers", len(begins), len(ends))
}

// mechanical is the hand-over flower writes itself: what the brief, the
// goal, the verdict and the manifest say, as pointers.
func (b *bequest) mechanical(rt *Runtime, c *Ctx, outcome string) string {
	p, lang := b.place, b.place.lang
	var sb strings.Builder
	line := func(s string) { sb.WriteString(s + "\n") }
	line(langPick(lang, "## flower 交代(机械版本)", "## flower hand-over (mechanical)"))
	line("")
	line(langPick(lang, "> 模型没写出交代,这一份由 flower 从确认书、目标、判定和 manifest 拼成。",
		"> The model wrote no hand-over; flower put this one together from the brief, the goal, the verdict and the manifest."))
	line("")
	what := langPick(lang, "(没有确认书)", "(no brief)")
	if v, ok := c.Get(BriefKey); ok {
		if br, ok := v.(*doc.Brief); ok && br != nil && strings.TrimSpace(br.Goal) != "" {
			what = blockSafe(firstLine(br.Goal))
		}
	}
	line(langPick(lang, "- **这是什么**:", "- **What this is**: ") + what)
	v, _ := c.Get(VerdictKey)
	verdict, _ := v.(*doc.Verdict)
	result := outcome
	if verdict != nil && strings.TrimSpace(verdict.Reason) != "" {
		result += langPick(lang, "。判定者的理由:", ". The judge's reason: ") + blockSafe(firstLine(verdict.Reason))
	}
	line(langPick(lang, "- **结果**:", "- **Result**: ") + result)
	if g := ctxGoal(c); g != nil {
		line(langPick(lang, "- **验收**(判定清单):", "- **Acceptance** (the checklist):"))
		for _, check := range g.Checks {
			line("  - " + checkMark(lang, verdict, check) + " " + blockSafe(check))
		}
	}
	files := listNames(p.wb.Artifacts(), p.wb.Scripts())
	gen := langPick(lang, "不知道(机械版本)", "unknown (mechanical version)")
	if len(files) > 0 {
		gen += langPick(lang, ";工作台里有:", "; the workbench holds: ") + blockSafe(strings.Join(files, ", "))
	}
	line(langPick(lang, "- **生成的文件**:", "- **Generated files**: ") + gen)
	line(langPick(lang, "- **走不通的路**:不知道(机械版本);看 notes/ 里的决定和交接书",
		"- **Dead ends**: unknown (mechanical version); see the decisions and handoffs in notes/"))
	line(fmt.Sprintf(langPick(lang, "- **工作台**:%s —— 先读 INDEX.md;需求 %s,目标 %s,问答 %s",
		"- **Workbench**: %s — read INDEX.md first; brief %s, goal %s, Q&A %s"), blockSafe(p.wb.Root()), blockSafe(p.brief), blockSafe(p.goal), blockSafe(p.log)))
	var steps []string
	for _, r := range rt.Results() {
		steps = append(steps, fmt.Sprintf("%s $%.2f", r.Step, r.CostUSD))
	}
	line(fmt.Sprintf(langPick(lang, "- **每一步和花费**:%s(%s)", "- **Steps and costs**: %s (%s)"), blockSafe(rt.ManifestPath()), blockSafe(strings.Join(steps, ", "))))
	return sb.String()
}

// checkMark says whether the last verdict passed a check: all pass when it
// was achieved; a check among the failed did not; with failed checks
// listed, the others did; otherwise it is not known.
func checkMark(lang Lang, v *doc.Verdict, check string) string {
	pass, fail, unknown := langPick(lang, "[过]", "[passed]"), langPick(lang, "[没过]", "[not passed]"), langPick(lang, "[未判定]", "[not judged]")
	switch {
	case v == nil:
		return unknown
	case v.State == doc.Achieved:
		return pass
	}
	for _, f := range v.Failed {
		f = strings.TrimSpace(f)
		if f != "" && (strings.Contains(check, f) || strings.Contains(f, check)) {
			return fail
		}
	}
	if len(v.Failed) > 0 {
		return pass
	}
	return unknown
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.TrimLeft(s, "-*# "))
}

// listNames lists up to 20 file names under dirs, relative to their parent.
func listNames(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if len(out) == 20 {
				return append(out, "…")
			}
			out = append(out, filepath.Join(filepath.Base(d), e.Name()))
		}
	}
	return out
}

// keepOutOfGit adds each of files (new files at the root of the work tree
// ws) to the repository's info/exclude, the list of ignored names that
// lives in .git and is never committed, and returns the names it added
// (or found there). Outside a git work tree, or where git fails, it does
// nothing: the file stays, untracked.
func keepOutOfGit(ctx context.Context, ws string, files []string) []string {
	if len(files) == 0 {
		return nil
	}
	// A stopped run's hand-over is written after its context ended: the
	// few git commands here get a bound of their own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	gitOut := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", ws}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	if inside, err := gitOut("rev-parse", "--is-inside-work-tree"); err != nil || inside != "true" {
		return nil
	}
	top, err := gitOut("rev-parse", "--show-toplevel")
	if err != nil {
		return nil
	}
	exclude, err := gitOut("rev-parse", "--git-path", "info/exclude")
	if err != nil {
		return nil
	}
	if !filepath.IsAbs(exclude) {
		exclude = filepath.Join(ws, exclude)
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	old, err := os.ReadFile(exclude)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	lines := strings.Split(string(old), "\n")
	var names, add []string
	for _, f := range files {
		real := f
		if r, err := filepath.EvalSymlinks(f); err == nil {
			real = r
		}
		rel, err := filepath.Rel(top, real)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.ContainsAny(rel, "\n\r*?[]!#\\") {
			continue
		}
		pattern := "/" + filepath.ToSlash(rel)
		names = append(names, filepath.Base(f))
		if !slices.Contains(lines, pattern) {
			add = append(add, pattern)
		}
	}
	if len(add) == 0 {
		return names
	}
	text := string(old)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# flower's hand-over, which it created (see flower's README, Files written): not the work's\n" + strings.Join(add, "\n") + "\n"
	if err := os.MkdirAll(filepath.Dir(exclude), 0o755); err != nil {
		return nil
	}
	if err := atomicfile.Write(exclude, []byte(text), 0o644); err != nil {
		slog.Info("flower: the hand-over could not be kept out of git", "path", exclude, "err", err)
		return nil
	}
	return names
}
