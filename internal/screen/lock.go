package screen

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockWait bounds the wait for another process's line: a stuck holder
// delays a line, never stops the run.
const lockWait = 2 * time.Second

// ttyLock is an exclusive flock on a file named after the terminal's device,
// shared by every flower process writing to that terminal, taken per line or
// block.
type ttyLock struct{ f *os.File }

// LockPath is the lock file of the terminal on fd: under $XDG_RUNTIME_DIR
// (private to the user) or else the temporary directory, named after the
// device number, so that every process on the terminal finds the same file
// however it opened the terminal.
func LockPath(fd int) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", err
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if fi, err := os.Stat(dir); dir == "" || err != nil || !fi.IsDir() {
		dir = os.TempDir()
	}
	return filepath.Join(dir, fmt.Sprintf("flower-tty-%d-%x.lock", os.Getuid(), uint64(st.Rdev))), nil
}

func openTTYLock(fd int) *ttyLock {
	path, err := LockPath(fd)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
			return &ttyLock{f: f}
		}
	}
	// Without the lock lines may mix with another flower's; the output
	// itself still works.
	slog.Debug("screen: no terminal lock", "err", err)
	return nil
}

// hold runs fn holding the lock (or without it, when there is none or it
// cannot be had within lockWait).
func (l *ttyLock) hold(fn func()) {
	if l == nil || l.f == nil {
		fn()
		return
	}
	fd := int(l.f.Fd())
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			defer unix.Flock(fd, unix.LOCK_UN)
			break
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fn()
}

func (l *ttyLock) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
