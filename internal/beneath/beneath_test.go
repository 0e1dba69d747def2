package beneath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The red team's swap (issue 41, 6): a run exchanges a folder of its own
// with a link to the worker's private folder in a tight loop, while the
// worker reads the run's files. No read may ever return the private file.
func TestAFolderSwappedForALinkInALoopNeverLeadsOut(t *testing.T) {
	base, private := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(private, "notes.txt"), []byte("the worker's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(base, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "notes.txt"), []byte("the run's notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
			swaps.Add(1)
		}
	}()
	var own, refused int
	leaked := false // os.ReadFile of the same path, for contrast
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(sub + "/notes.txt"); err == nil && strings.Contains(string(data), "secret") {
			leaked = true
		}
		data, err := ReadFile(root, "sub/notes.txt", 1<<20)
		switch {
		case err != nil:
			refused++
		case strings.Contains(string(data), "secret"):
			stop.Store(true)
			wg.Wait()
			t.Fatalf("a read beneath the run's folder returned the worker's private file")
		default:
			own++
		}
	}
	stop.Store(true)
	wg.Wait()
	if own == 0 || refused == 0 || swaps.Load() < 100 {
		t.Fatalf("the race was not run: %d reads of the run's file, %d refused, %d swaps", own, refused, swaps.Load())
	}
	if !leaked {
		t.Fatal("a plain read of the same path never reached the private file: the race shows nothing")
	}
}

// A FIFO, a socket or a link out of the folder is refused at once, never
// waited on; a link inside the folder is the folder's own file.
func TestOnlyARegularFileBeneathIsRead(t *testing.T) {
	base := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(base, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(base, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../etc/passwd", filepath.Join(base, "climb")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "own.txt"), []byte("own"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("own.txt", filepath.Join(base, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "big"), make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFileIn(base, "fifo", 0); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("a FIFO: %v, want ErrNotRegular", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO nobody writes waited")
	}
	for _, name := range []string{"passwd", "climb", "../" + filepath.Base(base) + "/own.txt"} {
		if data, err := ReadFileIn(base, name, 0); err == nil {
			t.Errorf("%s led out of the folder: %q", name, data)
		}
	}
	if data, err := ReadFileIn(base, "alias", 0); err != nil || string(data) != "own" {
		t.Errorf("a link to the folder's own file: %q, %v", data, err)
	}
	if _, err := ReadFileIn(base, "big", 10); err == nil {
		t.Error("a file over the limit was read")
	}
}
