package flower

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/filelock"
)

// LineageName is the lineage's file name in a run directory.
const LineageName = "lineage.json"

// lineageLockWait bounds the wait for another process's lineage write,
// which takes milliseconds.
const lineageLockWait = 30 * time.Second

// ErrLineageIgnored is wrapped by Lineage.Ignored's error: the file on disk
// was treated as absent.
var ErrLineageIgnored = errors.New("flower: lineage treated as absent")

// Lineage is continuity across processes: which session each step name
// last used, and how many times the run directory was woken, in
// <run dir>/lineage.json:
//
//	{"workspace": "<abs>", "woke": N, "steps": {"<step>": "<session id>"}}
//
// Continuity is a bonus whose failure must never stop anyone working: a
// file that is missing, unreadable, not a JSON object or recorded for
// another workspace counts as absent (Ignored says why), and a write that
// fails is reported but changes nothing else. Every write takes the run
// directory's lock, re-reads the file and changes only its own part, so
// two processes sharing a run directory lose none of each other's steps;
// the file is replaced atomically, so a killed process never leaves half
// of it.
//
// The step names are the workflow's own: suffixed labels (name#retry1,
// name#round2, a judge's name·判定#1) never enter it. A Lineage is safe
// for use by several goroutines.
type Lineage struct {
	path, workspace string

	mu      sync.Mutex
	woke    int
	steps   map[string]string
	ignored error
}

// lineageFile is the file's shape.
type lineageFile struct {
	Workspace string            `json:"workspace"`
	Woke      int               `json:"woke"`
	Steps     map[string]string `json:"steps"`
}

// OpenLineage reads <runDir>/lineage.json for workspace (made absolute).
// It never fails: what it cannot use counts as absent, and Ignored says
// why.
func OpenLineage(runDir, workspace string) *Lineage {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		ws = filepath.Clean(workspace)
	}
	l := &Lineage{path: filepath.Join(runDir, LineageName), workspace: ws, steps: map[string]string{}}
	f, err := l.read()
	l.ignored = err
	l.woke, l.steps = f.Woke, f.Steps
	return l
}

// read loads the file; anything it cannot use gives an empty lineage and,
// unless the file is simply missing, an error wrapping ErrLineageIgnored.
func (l *Lineage) read() (lineageFile, error) {
	empty := lineageFile{Workspace: l.workspace, Steps: map[string]string{}}
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("%w: %s cannot be read (%v); the steps start new sessions", ErrLineageIgnored, l.path, err)
	}
	var f lineageFile
	if err := json.Unmarshal(b, &f); err != nil {
		return empty, fmt.Errorf("%w: %s is not a lineage JSON object (%v); the steps start new sessions and the next write replaces it", ErrLineageIgnored, l.path, err)
	}
	if filepath.Clean(f.Workspace) != l.workspace {
		return empty, fmt.Errorf("%w: %s was recorded for workspace %q, not %q (a copied directory?); the steps start new sessions",
			ErrLineageIgnored, l.path, f.Workspace, l.workspace)
	}
	steps := map[string]string{}
	for k, v := range f.Steps {
		if k != "" && v != "" {
			steps[k] = v
		}
	}
	return lineageFile{Workspace: l.workspace, Woke: max(f.Woke, 0), Steps: steps}, nil
}

// Path is <run dir>/lineage.json.
func (l *Lineage) Path() string { return l.path }

// Ignored says why the file found on disk was treated as absent when the
// Lineage was opened (not readable, not JSON, another workspace), nil if it
// was used or there was none.
func (l *Lineage) Ignored() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ignored
}

// Woke is how many times the run directory was woken (Bump), 0 before the
// first.
func (l *Lineage) Woke() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.woke
}

// Steps is a copy of the step name → session id map.
func (l *Lineage) Steps() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.steps)
}

// Session is the session step last used, if any.
func (l *Lineage) Session(step string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sid, ok := l.steps[step]
	return sid, ok
}

// Remember records that step's current session is sessionID and writes the
// file at once, so that a process killed a moment later keeps it. Empty
// values are ignored. A later session of the same step (a handoff's
// successor, a retry's new session) replaces the earlier one. The error
// says the file could not be written; the Lineage in memory holds the
// session either way.
func (l *Lineage) Remember(step, sessionID string) error {
	if step == "" || sessionID == "" {
		return nil
	}
	return l.update(func(f *lineageFile) { f.Steps[step] = sessionID })
}

// Bump counts one more wake of the run directory, writes it and returns
// the count: 1 on the first run. On a write error the count in memory is
// still returned.
func (l *Lineage) Bump() (int, error) {
	err := l.update(func(f *lineageFile) { f.Woke++ })
	return l.Woke(), err
}

// update applies change to the file under the run directory's lock:
// re-read, change, write; memory then holds what the file holds.
func (l *Lineage) update(change func(*lineageFile)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	// In memory first: a failed write must not lose what this process
	// knows.
	mem := lineageFile{Workspace: l.workspace, Woke: l.woke, Steps: l.steps}
	change(&mem)
	l.woke, l.steps = mem.Woke, mem.Steps

	ctx, cancel := context.WithTimeout(context.Background(), lineageLockWait)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("flower: write lineage: %w", err)
	}
	err := filelock.With(ctx, l.path+".lock", func() error {
		// The file is the truth: another process may have written steps of
		// its own or archived it since; only this change is applied. A file
		// that cannot be used is replaced.
		disk, _ := l.read()
		change(&disk)
		b, err := json.MarshalIndent(disk, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.Write(l.path, append(b, '\n'), 0o600); err != nil {
			return err
		}
		l.woke, l.steps = disk.Woke, disk.Steps
		return nil
	})
	if err != nil {
		return fmt.Errorf("flower: write lineage (continuity may be lost for this run; check that %s is writable): %w", filepath.Dir(l.path), err)
	}
	return nil
}

// adoptLineage records workspace in the lineage of runDir when the file
// names another: a run continued from a database on another machine (or
// in another checkout) is the same run in a folder at another path, and
// its steps' sessions stay its own. Without the file it does nothing.
func adoptLineage(runDir, workspace string) error {
	path := filepath.Join(runDir, LineageName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil // a new run: nothing to adopt
	}
	ctx, cancel := context.WithTimeout(context.Background(), lineageLockWait)
	defer cancel()
	return filelock.With(ctx, path+".lock", func() error {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("flower: lineage: %w", err)
		}
		var f map[string]json.RawMessage
		if json.Unmarshal(b, &f) != nil {
			return nil // unusable either way: OpenLineage says so
		}
		var was string
		_ = json.Unmarshal(f["workspace"], &was)
		if filepath.Clean(was) == workspace {
			return nil
		}
		f["workspace"], _ = json.Marshal(workspace)
		out, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return err
		}
		slog.Info("flower: the run continues in this workspace", "was", was, "now", workspace)
		return atomicfile.Write(path, append(out, '\n'), 0o600)
	})
}

// Archive moves lineage.json and those of extra that exist (a brief, a
// goal: files or folders) into <into>/<YYYYmmdd-HHMMSS>/ and returns that
// folder; nothing is deleted. The Lineage is empty afterwards (no steps,
// woke 0), so the next run starts fresh. Two archives in the same second
// get folders of their own (-2, -3, …).
func (l *Lineage) Archive(into string, extra ...string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), lineageLockWait)
	defer cancel()
	var dir string
	err := filelock.With(ctx, l.path+".lock", func() error {
		d, err := newArchiveDir(into, time.Now())
		if err != nil {
			return err
		}
		dir = d
		var moved [][2]string // from, to: put back if a later move fails
		for _, p := range append([]string{l.path}, extra...) {
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				continue
			}
			to := filepath.Join(dir, filepath.Base(p))
			if err := moveAcross(p, to); err != nil {
				for i := len(moved) - 1; i >= 0; i-- {
					if back := moveAcross(moved[i][1], moved[i][0]); back != nil {
						slog.Error("flower: archive: a moved file could not be put back", "file", moved[i][0], "now", moved[i][1], "err", back)
					}
				}
				// Only when empty: no folder is left that holds nothing.
				os.Remove(dir)
				os.Remove(into)
				dir = ""
				return fmt.Errorf("move %s into %s (nothing was archived; make both writable and run again): %w", p, d, err)
			}
			moved = append(moved, [2]string{p, to})
		}
		return nil
	})
	if err != nil {
		return dir, fmt.Errorf("flower: archive the lineage: %w", err)
	}
	l.woke, l.steps, l.ignored = 0, map[string]string{}, nil
	return dir, nil
}

// newArchiveDir creates <into>/<timestamp>, or <timestamp>-N when taken.
func newArchiveDir(into string, now time.Time) (string, error) {
	if err := os.MkdirAll(into, 0o700); err != nil {
		return "", err
	}
	base := filepath.Join(into, now.Format("20060102-150405"))
	for n := 1; ; n++ {
		dir := base
		if n > 1 {
			dir += "-" + strconv.Itoa(n)
		}
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
}

// moveAcross renames from to to, and where they are on different file
// systems (EXDEV: a run directory on one disk, the workbench on another)
// copies instead and removes the original once the copy is whole. A copy
// that fails is removed and the original stays.
func moveAcross(from, to string) error {
	err := os.Rename(from, to)
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	if err := copyTree(from, to); err != nil {
		os.RemoveAll(to)
		return fmt.Errorf("copy across file systems: %w", err)
	}
	return os.RemoveAll(from)
}

// copyTree copies a file, a symbolic link or a folder (recursively) with
// their permission bits.
func copyTree(from, to string) error {
	fi, err := os.Lstat(from)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	case fi.IsDir():
		if err := os.Mkdir(to, fi.Mode().Perm()); err != nil {
			return err
		}
		entries, err := os.ReadDir(from)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := copyTree(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				return err
			}
		}
		return nil
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is neither a file, a folder nor a link", from)
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
