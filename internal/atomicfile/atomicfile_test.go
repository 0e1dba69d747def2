package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// onlyEntries fails t unless dir holds exactly the names given: no
// temporary file is left behind.
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if fmt.Sprint(got) != fmt.Sprint(names) {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}

func TestWriteCreatesAndReplacesWithTheModeGiven(t *testing.T) {
	for name, write := range map[string]func(string, []byte, fs.FileMode) error{"Write": Write, "WriteNoSync": WriteNoSync} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			if err := write(path, []byte("one"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != "one" {
				t.Fatalf("content %q, want one", got)
			}
			if m := mode(t, path); m != 0o600 {
				t.Errorf("mode %v, want 0600", m)
			}
			// Replacing gives the new mode too, wider than CreateTemp's
			// 0600 and whatever the umask.
			if err := write(path, []byte("two"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != "two" {
				t.Fatalf("content %q, want two", got)
			}
			if m := mode(t, path); m != 0o644 {
				t.Errorf("mode %v, want 0644", m)
			}
			if err := write(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if fi, _ := os.Stat(path); fi.Size() != 0 {
				t.Errorf("an empty write left %d bytes", fi.Size())
			}
			onlyEntries(t, dir, "f.json")
		})
	}
}

func TestWriteRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := Write("rel.txt", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "rel.txt")); string(got) != "x" {
		t.Fatalf("content %q", got)
	}
	onlyEntries(t, dir, "rel.txt")
}

func TestFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "manifest.json")
	if err := Write(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("encoder failed")
	err := WriteWith(path, 0o600, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half of the new"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("WriteWith = %v, want the writer's error, naming the file", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("the old file now holds %q", got)
	}
	if m := mode(t, path); m != 0o644 {
		t.Errorf("the old file's mode changed to %v", m)
	}
	onlyEntries(t, dir, "manifest.json")
}

func TestFailedRenameLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory where the file should go: the rename fails
	// after the temporary file is written.
	path := filepath.Join(dir, "taken")
	if err := os.MkdirAll(filepath.Join(path, "inside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err == nil {
		t.Fatal("Write over a non-empty directory succeeded")
	}
	onlyEntries(t, dir, "taken")
	onlyEntries(t, path, "inside")
}

func TestWriteIntoAMissingDirectoryFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	err := Write(path, []byte("x"), 0o600)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Write into a missing directory = %v, want fs.ErrNotExist naming %s", err, path)
	}
}

// A reader never sees part of a file, however the writes and reads
// interleave.
func TestReadersSeeOldOrNewNeverAPart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	a := strings.Repeat("a", 256<<10)
	b := strings.Repeat("b", 256<<10)
	if err := Write(path, []byte(a), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	bad := make(chan string, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := os.ReadFile(path)
			if err != nil || (string(got) != a && string(got) != b) {
				select {
				case bad <- fmt.Sprintf("read %d bytes (%v)", len(got), err):
				default:
				}
				return
			}
		}
	}()
	for i := range 100 {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := Write(path, []byte(data), 0o600); err != nil {
			t.Error(err)
			break
		}
	}
	close(stop)
	wg.Wait()
	select {
	case msg := <-bad:
		t.Fatalf("a reader saw a part: %s", msg)
	default:
	}
	onlyEntries(t, dir, "f")
}
