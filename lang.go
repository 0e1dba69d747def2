package flower

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/filelock"
	"github.com/flowerrun/flower/internal/lang"
)

// Lang selects the language of the texts flower writes and feeds the model:
// rule texts, fixed prompts, guard refusals, document headings, step names,
// events and errors. It is the project's one language type (doc.Lang and
// the Lang parameters of human, guard, workbench and event are the same
// type). The zero value means English; a Runtime's language (WithLanguage)
// reaches every step, role and channel it runs that did not choose one.
type Lang = doc.Lang

const (
	// English renders every text in English: "en", its regional forms, and
	// the zero Lang.
	English = doc.English
	// Chinese reproduces the original flower's literals exactly: "zh" and
	// its regional forms. New refuses any tag that is neither.
	Chinese = doc.Chinese
)

// RunInfoName is the file in a run directory that records its language.
const RunInfoName = "run.json"

// runInfo is run.json.
type runInfo struct {
	Language Lang `json:"language"`
}

// RunDirLanguage is the language recorded in runDir by its first Runtime
// (English or Chinese), and whether one was. A continuing run reads it to
// keep its step and file names. A record that cannot be read is an error
// naming the file.
func RunDirLanguage(runDir string) (Lang, bool, error) {
	path := filepath.Join(runDir, RunInfoName)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("flower: read %s: %w", path, err)
	}
	var info runInfo
	if err := json.Unmarshal(data, &info); err != nil || lang.Check(info.Language) != nil || info.Language == "" {
		return "", false, fmt.Errorf("flower: %s does not record a language (en or zh); fix or delete it: %q", path, data)
	}
	return info.Language.Canonical(), true, nil
}

// recordLanguage records want in runDir unless a language is recorded
// already, and returns the run directory's language.
func recordLanguage(runDir string, want Lang) (Lang, error) {
	ctx, cancel := context.WithTimeout(context.Background(), manifestLockWait)
	defer cancel()
	var got Lang
	err := filelock.With(ctx, filepath.Join(runDir, RunInfoName+".lock"), func() error {
		l, ok, err := RunDirLanguage(runDir)
		if err != nil || ok {
			got = l
			return err
		}
		got = want.Canonical()
		data, err := json.Marshal(runInfo{Language: got})
		if err != nil {
			return err
		}
		return atomicfile.Write(filepath.Join(runDir, RunInfoName), append(data, '\n'), 0o600)
	})
	if err != nil {
		return "", fmt.Errorf("flower: the run directory's language: %w", err)
	}
	return got, nil
}
