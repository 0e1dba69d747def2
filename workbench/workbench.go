// Package workbench keeps what agents produce on disk instead of in context:
// scripts/, artifacts/ and notes/ under one root, an INDEX.md listing them,
// the prompt block that tells an agent what is there, and spill/ for big results.
package workbench

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// Defaults of the Workbench fields.
const (
	DefaultDirname         = ".flower"
	DefaultMaxIndexEntries = 40
)

// Workbench is the shared folder where agents leave reusable scripts, long
// artifacts and decision notes. Its zero value, given a Workspace, is the
// original's default: <Workspace>/.flower, 40 entries per list in the prompt
// block, Chinese texts.
type Workbench struct {
	// Workspace is the repository the agents work in. A relative path is
	// taken from the current directory.
	Workspace string
	// Dirname is the root's name inside Workspace; "" means ".flower".
	// Ignored when Home is set.
	Dirname string
	// MaxIndexEntries caps each list of the prompt block (the rest is
	// summed up in one line); zero or less means 40. INDEX.md always lists
	// every file.
	MaxIndexEntries int
	// Home, when set, is the root itself, wherever it lies. An isolated
	// agent works in its own git worktree and cannot write into the shared
	// checkout, so with isolation the root must lie outside the workspace.
	Home string
	// Texts are the sentences of INDEX.md and the prompt block; the zero
	// value means ChineseTexts (see TextsFor).
	Texts Texts
}

// New returns a workbench in <workspace>/.flower with the default limits.
func New(workspace string) *Workbench {
	return &Workbench{Workspace: workspace, Dirname: DefaultDirname, MaxIndexEntries: DefaultMaxIndexEntries}
}

// Location is where the workbench of workspace lives: <workspace>/.flower,
// or, when isolating, <parent>/.flower-<workspace name> beside the
// workspace. Isolated agents work in their own git worktrees and cannot
// write into the shared checkout, so their workbench must lie outside it.
// It is the one decider of that place: every caller that needs it (the
// runtime's default workbench, the command's -W, a driver looking for the
// brief) asks here, since a path put together by hand that is slightly
// wrong fails silently. The result is absolute and clean.
func Location(workspace string, isolate bool) string {
	ws := absPath(workspace)
	if !isolate {
		return filepath.Join(ws, DefaultDirname)
	}
	return filepath.Join(filepath.Dir(ws), DefaultDirname+"-"+filepath.Base(ws))
}

// At returns the workbench of workspace at Location(workspace, isolate),
// with the default limits and texts.
func At(workspace string, isolate bool) *Workbench {
	w := New(workspace)
	if isolate {
		w.Home = Location(workspace, true)
	}
	return w
}

// CheckWritable creates the folders and proves that a file can be written
// in the root, so that a workbench nobody can write is an error before any
// agent is paid to fill it.
func (w *Workbench) CheckWritable() error {
	if err := w.Ensure(); err != nil {
		return err
	}
	f, err := os.CreateTemp(w.Root(), ".write-check-*")
	if err != nil {
		return fmt.Errorf("workbench: %s cannot be written: %w", w.Root(), err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Root is the workbench folder: Home if set, else Workspace/Dirname, as an
// absolute, clean path.
func (w *Workbench) Root() string {
	if w.Home != "" {
		return absPath(w.Home)
	}
	name := w.Dirname
	if name == "" {
		name = DefaultDirname
	}
	return filepath.Join(w.workspace(), name)
}

// Scripts is the folder of scripts worth running again.
func (w *Workbench) Scripts() string { return filepath.Join(w.Root(), "scripts") }

// Artifacts is the folder of long outputs (over 2000 characters).
func (w *Workbench) Artifacts() string { return filepath.Join(w.Root(), "artifacts") }

// Notes is the folder of key decisions, one file per decision.
func (w *Workbench) Notes() string { return filepath.Join(w.Root(), "notes") }

// SpillDir is the folder where the spill guard writes big tool results.
func (w *Workbench) SpillDir() string { return filepath.Join(w.Root(), "spill") }

// IndexPath is the path of INDEX.md.
func (w *Workbench) IndexPath() string { return filepath.Join(w.Root(), "INDEX.md") }

// External reports whether the root lies outside the workspace (symbolic
// links resolved). An external workbench is shown with absolute paths.
func (w *Workbench) External() bool {
	return !Within(canonical(w.workspace()), canonical(w.Root()))
}

// Show is how a path is shown to the model: relative to the workspace when
// it lies inside it, absolute otherwise. A relative p is taken from the
// workspace.
func (w *Workbench) Show(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.workspace(), p)
	}
	p = filepath.Clean(p)
	ws := w.workspace()
	if Within(ws, p) {
		if rel, err := filepath.Rel(ws, p); err == nil {
			return rel
		}
	}
	cws, cp := canonical(ws), canonical(p)
	if Within(cws, cp) {
		if rel, err := filepath.Rel(cws, cp); err == nil {
			return rel
		}
	}
	return p
}

// Contains reports whether p lies inside the root (symbolic links resolved).
// A relative p is taken from the workspace.
func (w *Workbench) Contains(p string) bool {
	if !filepath.IsAbs(p) {
		p = filepath.Join(w.workspace(), p)
	}
	root := w.Root()
	return Within(root, filepath.Clean(p)) || Within(canonical(root), canonical(p))
}

// Ensure creates scripts/, artifacts/ and notes/, and a .gitignore that
// keeps the whole root out of git (see Spill).
func (w *Workbench) Ensure() error {
	if err := w.ensureRoot(); err != nil {
		return err
	}
	for _, d := range []string{w.Scripts(), w.Artifacts(), w.Notes()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("workbench: create %s: %w", d, err)
		}
	}
	return nil
}

// ensureRoot creates the root and keeps it out of git (KeepOutOfGit): the
// workbench holds tool output, and a worker's `git add -A` in the
// workspace must not commit it.
func (w *Workbench) ensureRoot() error {
	root := w.Root()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("workbench: create %s: %w", root, err)
	}
	if err := KeepOutOfGit(root); err != nil {
		return fmt.Errorf("workbench: %w", err)
	}
	return nil
}

// KeepOutOfGit writes, into the existing directory dir, a .gitignore that
// ignores everything in dir, itself included, unless dir has a .gitignore
// already: that one is its owner's and stays as it is. flower keeps the
// folders it fills with tool output out of git this way.
func KeepOutOfGit(dir string) error {
	path := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or unknowable: either way not ours to write
	}
	if err := atomicfile.Write(path, []byte("*\n"), 0o644); err != nil {
		return fmt.Errorf("keep %s out of git: %w", dir, err)
	}
	return nil
}

// Spill writes content to spill/<first 16 hex digits of its SHA-256>.txt,
// keeping a file already there (same name, same content), and returns the
// file's absolute path. The file and the folder are this user's only, and
// the root's .gitignore keeps them out of git.
func (w *Workbench) Spill(content string) (string, error) {
	dir := w.SpillDir()
	sum := sha256.Sum256([]byte(content))
	path := filepath.Join(dir, hex.EncodeToString(sum[:])[:16]+".txt")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := w.ensureRoot(); err != nil {
		return "", err
	}
	// A spill is a tool's output, which may hold secrets: this user's only.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("workbench: create spill folder: %w", err)
	}
	if err := atomicfile.Write(path, []byte(content), 0o600); err != nil {
		return "", fmt.Errorf("workbench: spill: %w", err)
	}
	return path, nil
}

// Refresh creates the folders, rewrites INDEX.md from what is on disk and
// returns its content. INDEX.md lists every file, whatever MaxIndexEntries.
func (w *Workbench) Refresh() (string, error) {
	if err := w.Ensure(); err != nil {
		return "", err
	}
	t := w.Texts.withDefaults()
	var b strings.Builder
	b.WriteString(t.IndexTitle + "\n\n" + t.IndexNote + "\n\n")
	for _, s := range []struct{ title, dir string }{
		{t.IndexScripts, w.Scripts()},
		{t.IndexArtifacts, w.Artifacts()},
		{t.IndexNotes, w.Notes()},
	} {
		entries := w.Scan(s.dir)
		fmt.Fprintf(&b, t.IndexSection+"\n", s.title, len(entries))
		if len(entries) == 0 {
			b.WriteString("- " + t.EmptySection + "\n")
		}
		for _, e := range entries {
			desc := e.Desc
			if desc == "" {
				desc = t.NoDesc
			}
			fmt.Fprintf(&b, "- `%s` — %s (%s)\n", e.Path, desc, humanSize(e.Size))
		}
		b.WriteString("\n")
	}
	text := strings.TrimSuffix(b.String(), "\n")
	path := w.IndexPath()
	if old, err := os.ReadFile(path); err == nil && string(old) == text {
		return text, nil
	}
	if err := atomicfile.Write(path, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("workbench: write index: %w", err)
	}
	return text, nil
}

// PromptBlock is the short text that tells an agent where the workbench is,
// what it holds (at most MaxIndexEntries files per list) and the three rules
// for using it. It creates nothing: call Ensure or Refresh first so that the
// folders it names exist.
func (w *Workbench) PromptBlock() string {
	t := w.Texts.withDefaults()
	limit := w.MaxIndexEntries
	if limit <= 0 {
		limit = DefaultMaxIndexEntries
	}
	root := w.Root()
	parts := []string{fmt.Sprintf(t.PromptTitle, w.Show(root)), ""}
	if w.External() {
		parts = append(parts, fmt.Sprintf(t.PromptExternal, root), "")
	}
	parts = append(parts, t.PromptReuse)
	empty := true
	for _, g := range []struct{ title, dir string }{
		{t.PromptScripts, w.Scripts()},
		{t.PromptArtifacts, w.Artifacts()},
		{t.PromptNotes, w.Notes()},
	} {
		entries := w.Scan(g.dir)
		if len(entries) == 0 {
			continue
		}
		empty = false
		parts = append(parts, "\n"+fmt.Sprintf(t.PromptGroup, g.title))
		for i, e := range entries {
			if i == limit {
				more := fmt.Sprintf(t.PromptMore, len(entries)-limit, w.Show(g.dir))
				parts = append(parts, "- "+more)
				break
			}
			line := "- `" + e.Path + "`"
			if e.Desc != "" {
				line += " — " + e.Desc
			}
			parts = append(parts, line+" ("+humanSize(e.Size)+")")
		}
	}
	if empty {
		parts = append(parts, t.PromptEmpty)
	}
	parts = append(parts, "", t.PromptRules,
		fmt.Sprintf(t.Rule1, w.Show(w.Scripts())),
		fmt.Sprintf(t.Rule2, w.Show(w.Artifacts())),
		fmt.Sprintf(t.Rule3, w.Show(w.Notes())))
	return strings.Join(parts, "\n")
}

func (w *Workbench) workspace() string { return absPath(w.Workspace) }

// absPath makes p absolute and clean; if the working directory cannot be
// read, it stays as given (cleaned).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// canonical resolves symbolic links in the longest existing prefix of the
// absolute path p, so that paths reached through different links compare
// equal even when the tail does not exist yet.
func canonical(p string) string {
	p = absPath(p)
	var tail []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, tail...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, tail...)...)
		}
		tail = append([]string{filepath.Base(p)}, tail...)
		p = parent
	}
}

// Within reports whether path p is base or below it, lexically (no
// links resolved: resolve them first where a link could lead out).
func Within(base, p string) bool {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// humanSize renders a byte count as the original did: 512B, 1.5K, 2.0M.
func humanSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1fK", float64(n)/1024)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/(1024*1024))
	}
}
