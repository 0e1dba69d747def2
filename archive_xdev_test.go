package flower

import (
	"errors"
	"github.com/flowerrun/flower/internal/testenv"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// --new moves the lineage out of a run directory that is on another file
// system than the workbench: copied, then removed; and when a move fails,
// everything stays where it was and no empty archive folder is left.
func TestArchiveAcrossFileSystems(t *testing.T) {
	t.Parallel()
	runDir, ws := testenv.OtherFileSystemDir(t), t.TempDir()
	notes := filepath.Join(ws, "notes")
	os.MkdirAll(filepath.Join(notes, "drafts"), 0o755)
	brief := filepath.Join(notes, "brief.md")
	os.WriteFile(brief, []byte("the brief"), 0o644)
	os.WriteFile(filepath.Join(notes, "drafts", "d.md"), []byte("a draft"), 0o600)
	// A folder on the run directory's file system too: copied whole.
	extraDir := filepath.Join(runDir, "extra")
	os.MkdirAll(filepath.Join(extraDir, "sub"), 0o755)
	os.WriteFile(filepath.Join(extraDir, "sub", "f"), []byte("f"), 0o640)
	os.Symlink("sub/f", filepath.Join(extraDir, "link"))
	lin := OpenLineage(runDir, ws)
	if err := lin.Remember("work", "s-1"); err != nil {
		t.Fatal(err)
	}
	into := filepath.Join(notes, "archive")
	dir, err := lin.Archive(into, brief, extraDir)
	if err != nil {
		t.Fatalf("Archive across file systems: %v", err)
	}
	for name, want := range map[string]string{"brief.md": "the brief", "extra/sub/f": "f"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s archived as %q, %v", name, b, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "extra", "sub", "f")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the copy lost the file's mode: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "extra", "link")); err != nil || target != "sub/f" {
		t.Errorf("the link: %q %v", target, err)
	}
	if got := OpenLineage(dir, ws); got.Steps()["work"] != "s-1" {
		t.Errorf("the archived lineage lost its steps: %v", got.Steps())
	}
	for _, gone := range []string{filepath.Join(runDir, LineageName), brief, extraDir} {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the move: %v", gone, err)
		}
	}

	// A move that fails (a FIFO cannot be copied) puts back what moved and
	// leaves no archive folder.
	if err := lin.Remember("work", "s-2"); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(runDir, "pipe")
	if err := syscallMkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	into2 := filepath.Join(t.TempDir(), "archive")
	if dir, err := lin.Archive(into2, fifo); err == nil {
		t.Fatalf("archiving a FIFO across file systems succeeded into %s", dir)
	}
	if _, err := os.Stat(into2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed archive left %s behind: %v", into2, err)
	}
	if sid := OpenLineage(runDir, ws).Steps()["work"]; sid != "s-2" {
		t.Errorf("the lineage was not put back: %q", sid)
	}
}
