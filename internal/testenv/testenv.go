// Package testenv holds the preconditions that tests of several packages
// share: each gives what a test needs or, when the machine lacks it, skips
// the test with the fix, and under CI (CI set, as scripts/test sets it)
// fails it instead, so a tier never passes by not running.
package testenv

import (
	"os"
	"syscall"
	"testing"

	"github.com/flowerrun/flower/guard"
)

// OtherFileSystemDir is a new folder on another file system than
// t.TempDir()'s (tmpfs /dev/shm on Linux), for the paths that must copy
// where a rename gives EXDEV.
func OtherFileSystemDir(t testing.TB) string {
	t.Helper()
	var a, b syscall.Stat_t
	if err := syscall.Stat(t.TempDir(), &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat("/dev/shm", &b); err != nil || a.Dev == b.Dev {
		missing(t, "no second file system: /dev/shm (%v) is on the temp dir's; mount a tmpfs there", err)
	}
	dir, err := os.MkdirTemp("/dev/shm", "flower-xdev-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Sandbox is the glance sandbox (bubblewrap), which scripts/test installs.
func Sandbox(t testing.TB) guard.Sandbox {
	t.Helper()
	s := guard.DetectSandbox()
	if !s.Active() {
		missing(t, "no glance sandbox: %s; fix: %s", s.Problem, s.Fix)
	}
	return s
}

// missing fails t under CI and skips it elsewhere.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}
