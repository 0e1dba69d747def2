// Package beneath reads files inside a folder that someone else may
// write (a run's own folders, read by its worker): never through a link
// that leads out of the folder, whatever the writer swaps in between the
// look and the read, and never waiting on a FIFO or a device.
//
// It rests on os.Root, which resolves each component of a path beneath
// its folder with openat and refuses any that escapes (an absolute link,
// a "..", a folder swapped for a link to elsewhere), and on opening
// O_NONBLOCK and reading only what fstat says is a regular file.
package beneath

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is the error for a path that names something other than a
// regular file (a FIFO, a socket, a device, a folder).
var ErrNotRegular = errors.New("not a regular file")

// Open opens name, a path relative to root's folder, for reading: a
// regular file only.
func Open(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, st.Mode().Type())}
	}
	return f, nil
}

// ReadFile reads the regular file name beneath root: at most limit bytes
// when limit > 0, a larger file being an error rather than read whole.
func ReadFile(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := Open(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if limit <= 0 {
		return io.ReadAll(f)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("larger than %d bytes", limit)}
	}
	return data, nil
}

// OpenIn is Open for one file beneath dir.
func OpenIn(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return Open(root, name)
}

// ReadFileIn is ReadFile for one file beneath dir.
func ReadFileIn(dir, name string, limit int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return ReadFile(root, name, limit)
}
