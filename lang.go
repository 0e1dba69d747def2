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
// events and errors. It is doc.Lang, so the whole project shares one
// language type. The zero value means Chinese.
type Lang = doc.Lang

const (
	// Chinese reproduces the original flower's literals exactly: "zh" and
	// its regional forms, and the zero Lang.
	Chinese = doc.Chinese
	// English renders every text in English: "en" and its regional forms.
	// New refuses any tag that is neither.
	English = doc.English
)

// isEnglish reports whether lang asks for English: "en" and its regional
// forms ("en-US", "en_GB"), in any case, as guard.TextsFor and
// workbench.TextsFor read it.
func isEnglish(l Lang) bool { return lang.IsEnglish(string(l)) }

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
	if err := json.Unmarshal(data, &info); err != nil || lang.Check(string(info.Language)) != nil || info.Language == "" {
		return "", false, fmt.Errorf("flower: %s does not record a language (en or zh); fix or delete it: %q", path, data)
	}
	return canonicalLang(info.Language), true, nil
}

// canonicalLang is English or Chinese.
func canonicalLang(l Lang) Lang {
	if isEnglish(l) {
		return English
	}
	return Chinese
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
		got = canonicalLang(want)
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
