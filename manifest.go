package flower

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/flowerrun/flower/internal/atomicfile"
	"github.com/flowerrun/flower/internal/filelock"
)

// manifestLockWait bounds the wait for another process's manifest write,
// which takes milliseconds.
const manifestLockWait = 30 * time.Second

// ManifestName is the manifest's file name in a run directory.
const ManifestName = "manifest.json"

// ErrManifestCorrupt is wrapped by ReadManifest's error for a manifest that
// is not a JSON array.
var ErrManifestCorrupt = errors.New("flower: manifest is not a JSON array")

// ManifestRow is one row of manifest.json: a step's StepResult, its
// duration_s, and run, the id of the Runtime that wrote it.
type ManifestRow struct {
	StepResult
	Run string
}

// MarshalJSON writes the row: the StepResult's fields, duration_s, run.
func (r ManifestRow) MarshalJSON() ([]byte, error) {
	w := r.StepResult.wire()
	w.Run = r.Run
	return json.Marshal(w)
}

// UnmarshalJSON reads a row.
func (r *ManifestRow) UnmarshalJSON(b []byte) error {
	var w stepResultJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	r.StepResult, r.Run = w.result(), w.Run
	return nil
}

// ManifestRecovery reports a manifest that was not JSON: it was moved
// aside, whole, and a new one built.
type ManifestRecovery struct {
	// Path is the manifest; Aside where its old content now is.
	Path, Aside string
	// Err is why it could not be read.
	Err error
}

func (m *ManifestRecovery) String() string {
	return fmt.Sprintf("%s was not a JSON array (%v): kept aside as %s, and a new manifest was started", m.Path, m.Err, m.Aside)
}

// WriteManifest records one Runtime's results in the manifest at path. The
// manifest accumulates across processes: under an exclusive lock on
// path+".lock" it re-reads the file, drops the rows of run (this Runtime's
// earlier write), keeps every other row as it was, appends results in
// order, and replaces the file atomically. So two flower processes sharing
// a run directory never lose each other's rows, provided their run ids
// differ.
//
// A manifest that is not a JSON array is never overwritten: it is moved to
// path+".corrupt-<YYYYmmdd-HHMMSS>", a new one is built, and the returned
// *ManifestRecovery says so (it is logged too). It is nil otherwise.
func WriteManifest(path, run string, results []StepResult) (*ManifestRecovery, error) {
	if run == "" {
		return nil, errors.New("flower: write manifest: empty run id")
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("flower: write manifest: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), manifestLockWait)
	defer cancel()
	lock, err := filelock.Acquire(ctx, path+".lock")
	if err != nil {
		return nil, fmt.Errorf("flower: write manifest (if another flower process is stuck on this run directory, stop it): %w", err)
	}
	defer lock.Unlock()

	others, readErr := readRows(path)
	var rec *ManifestRecovery
	if readErr != nil {
		if !errors.Is(readErr, ErrManifestCorrupt) {
			return nil, fmt.Errorf("flower: write manifest: %w", readErr)
		}
		aside, err := moveAside(path)
		if err != nil {
			return nil, fmt.Errorf("flower: write manifest: keep the unreadable manifest aside: %w", err)
		}
		rec = &ManifestRecovery{Path: path, Aside: aside, Err: errors.Unwrap(readErr)}
		slog.Warn("flower: manifest was not a JSON array; kept aside and rebuilt", "path", path, "aside", aside, "err", rec.Err)
		others = nil
	}

	rows := make([]json.RawMessage, 0, len(others)+len(results))
	for _, raw := range others {
		var head struct {
			Run *string `json:"run"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Run != nil && *head.Run == run {
			continue
		}
		rows = append(rows, raw)
	}
	for _, r := range results {
		b, err := json.Marshal(ManifestRow{StepResult: r, Run: run})
		if err != nil {
			return rec, fmt.Errorf("flower: write manifest: %w", err)
		}
		rows = append(rows, b)
	}
	// The rows hold the agents' answers: this user's only, like the run
	// directory.
	err = atomicfile.WriteWith(path, 0o600, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	})
	if err != nil {
		return rec, fmt.Errorf("flower: write manifest: %w", err)
	}
	return rec, nil
}

// ReadManifest returns the manifest's rows; none when the file does not
// exist. A manifest that is not a JSON array gives an error wrapping
// ErrManifestCorrupt; elements that are not rows are skipped.
func ReadManifest(path string) ([]ManifestRow, error) {
	raws, err := readRows(path)
	if err != nil {
		return nil, err
	}
	rows := make([]ManifestRow, 0, len(raws))
	for _, raw := range raws {
		var r ManifestRow
		if json.Unmarshal(raw, &r) == nil {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// readRows reads the manifest's elements raw. A missing or empty file has
// none.
func readRows(path string) ([]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(data, &rows); err != nil {
		return nil, &corruptError{path: path, err: err}
	}
	return rows, nil
}

// corruptError is a manifest that is not a JSON array; it is
// ErrManifestCorrupt and unwraps to the JSON error.
type corruptError struct {
	path string
	err  error
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("flower: %s is not a JSON array: %v", e.path, e.err)
}

func (e *corruptError) Is(target error) bool { return target == ErrManifestCorrupt }

func (e *corruptError) Unwrap() error { return e.err }

// moveAside renames path to path.corrupt-<timestamp>, never over an
// existing file.
func moveAside(path string) (string, error) {
	base := path + ".corrupt-" + time.Now().Format("20060102-150405")
	aside := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(aside); errors.Is(err, fs.ErrNotExist) {
			break
		}
		aside = fmt.Sprintf("%s-%d", base, i)
	}
	return aside, os.Rename(path, aside)
}
