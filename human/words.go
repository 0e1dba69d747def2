package human

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// StateDirEnv names the folder that holds the human's side of every run
// (replies, pending words); it overrides $XDG_STATE_HOME/flower.
const StateDirEnv = "FLOWER_STATE_DIR"

// Dir is where the human's side of the run in runDir lives: the file front
// end (pending.json, replies/, outcomes/) and the words journal (words/).
//
// It is outside the workspace on purpose. The run directory defaults to
// <workspace>/runs, which the agents may write (a worker's Write tool is
// accepted there), so reply files kept in it let a worker answer a
// question as the human. Dir is $FLOWER_STATE_DIR, else
// $XDG_STATE_HOME/flower, else ~/.local/state/flower, then
// runs/<name>-<hash of runDir's absolute path>: one folder per run
// directory, created 0700. The CLI's edit tools only write the workspace
// without asking, and a session under flower cannot be asked; a Bash
// command of a worker that may run anything could still reach it, which
// no folder can prevent while the agents run as the same user.
// Without any home directory it falls back to <runDir>/human.
func Dir(runDir string) string { return DirIn(stateHome(), runDir) }

// DirIn is Dir for a process whose state folder ($FLOWER_STATE_DIR) is
// base: where a worker finds the human's side of a run it started with
// its own state folder.
func DirIn(base, runDir string) string {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		abs = filepath.Clean(runDir)
	}
	if base == "" {
		return filepath.Join(abs, "human")
	}
	sum := sha256.Sum256([]byte(abs))
	name := filepath.Base(filepath.Dir(abs)) + "-" + filepath.Base(abs)
	return filepath.Join(base, "runs", name+"-"+hex.EncodeToString(sum[:8]))
}

func stateHome() string {
	if d := strings.TrimSpace(os.Getenv(StateDirEnv)); d != "" {
		return d
	}
	if d := strings.TrimSpace(os.Getenv("XDG_STATE_HOME")); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "flower")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "flower")
	}
	return ""
}

// StateHome is flower's state folder ("" without a home): where `flower
// serve` keeps its token, out of every run's workspace.
func StateHome() string { return stateHome() }

// WordsDir is the words journal's folder inside a Dir.
const WordsDir = "words"

// Word kinds: what the human said on their own (mail) or after a Ctrl-C
// (interrupt).
const (
	WordMail      = "mail"
	WordInterrupt = "interrupt"
)

// Word is one entry of the words journal.
type Word struct {
	// Name is the entry's file name: its key, in the order typed.
	Name string    `json:"-"`
	Kind string    `json:"kind"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
	// Taken: a call of the run has it (the inbox handed it out). A taken
	// word is kept until the run ends well, then removed.
	Taken bool `json:"taken,omitempty"`
	// InBrief: the words were appended to the brief (the amend file), so
	// whatever reads the brief has them.
	InBrief bool `json:"in_brief,omitempty"`
}

// Words is the words journal: every word the human types is written here,
// whole and synced, before the receipt is shown, so that a run killed at
// any moment loses none. A word leaves it only when the run that took it
// ended well (Forget); what is left is given to the next run. Safe for
// concurrent use by one process.
type Words struct {
	dir string
	mu  sync.Mutex
	seq int
}

// OpenWords is the journal in dir (created on the first Add).
func OpenWords(dir string) *Words { return &Words{dir: dir} }

// Add writes one word and returns it; only after it returned is the word
// safe from a crash.
func (w *Words) Add(kind, text string) (Word, error) {
	if w == nil {
		return Word{}, errors.New("human: no words journal")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return Word{}, fmt.Errorf("human: the words journal: %w", err)
	}
	w.seq++
	now := time.Now()
	wd := Word{Name: fmt.Sprintf("%020d-%d-%04d.json", now.UnixNano(), os.Getpid(), w.seq), Kind: kind, Text: text, At: now}
	if err := w.write(wd); err != nil {
		return Word{}, err
	}
	return wd, nil
}

func (w *Words) write(wd Word) error {
	data, err := json.Marshal(wd)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(w.dir, wd.Name), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("human: the words journal: %w", err)
	}
	return nil
}

// MarkTaken records that a call of the run has the word.
func (w *Words) MarkTaken(name string) error {
	return w.update(name, func(wd *Word) { wd.Taken = true })
}

// MarkInBrief records that the word was appended to the brief.
func (w *Words) MarkInBrief(name string) error {
	return w.update(name, func(wd *Word) { wd.InBrief = true })
}

func (w *Words) update(name string, change func(*Word)) error {
	if w == nil || name == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	wd, err := w.read(name)
	if err != nil {
		return err
	}
	change(&wd)
	return w.write(wd)
}

// List returns every word in the journal, in the order typed. An entry
// that cannot be read is skipped and named in the error (the rest is
// still returned).
func (w *Words) List() ([]Word, error) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	entries, err := os.ReadDir(w.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("human: the words journal: %w", err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var out []Word
	var errs []error
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		wd, err := w.read(e.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, wd)
	}
	return out, errors.Join(errs...)
}

// Pending returns the words no call has taken yet.
func (w *Words) Pending() ([]Word, error) {
	all, err := w.List()
	var out []Word
	for _, wd := range all {
		if !wd.Taken {
			out = append(out, wd)
		}
	}
	return out, err
}

// Forget removes the named words: the run that had them ended well.
func (w *Words) Forget(names ...string) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, n := range names {
		if err := os.Remove(filepath.Join(w.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (w *Words) read(name string) (Word, error) {
	data, err := readBounded(filepath.Join(w.dir, name), MaxReplyBytes)
	if err != nil {
		return Word{}, err
	}
	var wd Word
	if err := json.Unmarshal(data, &wd); err != nil {
		return Word{}, fmt.Errorf("human: the word %s is not JSON: %w", filepath.Join(w.dir, name), err)
	}
	wd.Name = name
	return wd, nil
}
