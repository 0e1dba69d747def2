// Package doc holds the four markdown documents a model writes and flower
// reads (Brief, Handoff, Goal, Verdict): one total section parser that accepts
// Chinese, English and Korean headings, and rendering in a chosen Lang.
package doc

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/lang"
)

// Lang selects the language documents are rendered in: flower's one
// language type (flower.Lang is the same), English for the zero value,
// "en" and its regional forms, Chinese for "zh" and its regional forms.
// Parsing accepts every supported language whatever Lang is chosen.
type Lang = lang.Lang

const (
	// English renders English headings and fixed texts; the zero Lang
	// does too.
	English = lang.English
	// Chinese reproduces the original flower's literals exactly.
	Chinese = lang.Chinese
)

// writeFile writes data to path atomically (see atomicfile), creating
// parent directories, so a reader never sees half a document even when two
// flower processes share a run directory. It returns the absolute path
// written.
func writeFile(path string, data []byte) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("doc: write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", fmt.Errorf("doc: write %s: %w", abs, err)
	}
	// Documents are meant to be read and edited by the human too.
	if err := atomicfile.Write(abs, data, 0o644); err != nil {
		return "", fmt.Errorf("doc: %w", err)
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
