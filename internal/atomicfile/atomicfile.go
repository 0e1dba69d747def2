// Package atomicfile replaces files whole: a reader sees the old content or
// the new, never a part, and after a crash the file holds one of them. It is
// the one way flower writes a file that others read (manifests, documents,
// the workbench index, spilled tool output).
package atomicfile

import (
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
	return writeFile(path, perm, true, writeBytes(data))
}

// WriteNoSync is Write without the syncs: readers still see the old content
// or the new, never a part, but after a crash the file may be the old one,
// missing, empty or short. It is for files made again from elsewhere when
// found wrong (a trimmed transcript's spills, rebuilt from the store on the
// next load), where two syncs for each of hundreds would slow a resume by
// seconds.
func WriteNoSync(path string, data []byte, perm fs.FileMode) error {
	return writeFile(path, perm, false, writeBytes(data))
}

// WriteWith replaces the file at path with what write writes, and gives it
// the mode perm, exactly. It writes a temporary file beside path (the same
// directory, so the rename cannot cross file systems), sets its mode, syncs
// it, renames it over path and syncs the directory, so that the rename
// itself survives a crash.
//
// When write or any step before the rename fails, path is left as it was
// and the temporary file is removed. After the rename only the directory's
// sync can fail: then path already holds the new content, which a crash may
// still undo, and the error says so.
func WriteWith(path string, perm fs.FileMode, write func(io.Writer) error) error {
	return writeFile(path, perm, true, write)
}

func writeBytes(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

func writeFile(path string, perm fs.FileMode, durable bool, write func(io.Writer) error) (err error) {
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
	if durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("write %s: sync: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	if !durable {
		return nil
	}
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
