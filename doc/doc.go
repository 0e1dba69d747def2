// Package doc holds the four markdown documents a model writes and flower
// reads (Brief, Handoff, Goal, Verdict): one total section parser that accepts
// Chinese, English and Korean headings, and rendering in a chosen Lang.
package doc

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/flowerrun/flower/internal/lang"
)

// Lang selects the language documents are rendered in. Parsing accepts every
// supported language whatever Lang is chosen.
type Lang string

const (
	// Chinese reproduces the original flower's literals exactly. It is also
	// what any Lang other than English renders, the zero value included.
	Chinese Lang = "zh"
	// English renders English headings and fixed texts.
	English Lang = "en"
)

// isEnglish reports whether l asks for English ("en", "en-US", …).
func (l Lang) isEnglish() bool { return lang.IsEnglish(string(l)) }

// pick returns en for English and zh for everything else.
func (l Lang) pick(zh, en string) string {
	if l.isEnglish() {
		return en
	}
	return zh
}

// writeFile writes data to path atomically (a temporary file in the same
// directory, then a rename), creating parent directories, so a reader never
// sees half a document even when two flower processes share a run
// directory. It returns the absolute path written.
func writeFile(path string, data []byte) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("doc: write %s: %w", path, err)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("doc: write %s: %w", abs, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(abs)+".tmp*")
	if err != nil {
		return "", fmt.Errorf("doc: write %s: %w", abs, err)
	}
	fail := func(err error) (string, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", fmt.Errorf("doc: write %s: %w", abs, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	// CreateTemp makes the file 0600; documents are meant to be read and
	// edited by the human too.
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("doc: write %s: %w", abs, err)
	}
	if err := os.Rename(tmp.Name(), abs); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("doc: write %s: %w", abs, err)
	}
	return abs, nil
}

// readFile reads a document's text and its absolute path. An absent file
// gives an error that wraps fs.ErrNotExist.
func readFile(path string) (text, abs string, err error) {
	abs, err = filepath.Abs(path)
	if err != nil {
		return "", "", fmt.Errorf("doc: load %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return "", "", fmt.Errorf("doc: load: %w", err)
	}
	return string(data), abs, nil
}
