// Package atomicfile replaces files whole: a reader sees the old content or
// the new, never a part, and after a crash the file holds one of them. It is
// the one way flower writes a file that others read (manifests, documents,
// the workbench index, spilled tool output).
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write replaces the file at path with data and gives it the mode perm,
// exactly (the umask does not narrow it). The directory must exist. See
// WriteWith for how it is done and what a failure leaves.
func Write(path string, data []byte, perm fs.FileMode) error {
	return WriteWith(path, perm, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// WriteWith replaces the file at path with what write writes, and gives it
// the mode perm, exactly. It writes a temporary file beside path (the same
// directory, so the rename cannot cross file systems), syncs it, sets its
// mode, renames it over path and syncs the directory, so the rename itself
// survives a crash.
//
// When write or any step before the rename fails, path is left as it was
// and the temporary file is removed. After the rename only the directory's
// sync can fail: then path already holds the new content, which a crash may
// still undo, and the error says so.
func WriteWith(path string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, renamed := f.Name(), false
	defer func() {
		if err != nil && !renamed {
			_ = f.Close() // a second Close only reports that it was closed
			_ = os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Chmod on the open file: a name could be swapped in between.
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: set its mode: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: the file is replaced, but syncing its directory failed, so a crash may bring the old one back: %w", path, err)
	}
	return nil
}

// syncDir flushes a directory's entries to disk. File systems that cannot
// sync a directory (EINVAL) persist renames their own way.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}
