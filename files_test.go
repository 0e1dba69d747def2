package flower

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/workbench"
)

// What a run leaves on disk holds transcripts and tool output: after a real
// run the run directory and everything in it are this user's only, the
// spilled output too, and a `git add -A` in the workspace commits what the
// agent made and nothing of flower's. Before, the files were 0644 in 0755
// folders and the workbench went into git.
func TestRealRunKeepsItsFilesPrivateAndOutOfGit(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	runDir := filepath.Join(t.TempDir(), "runs") // New creates it
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:files": {
		// Output over the spill threshold, and a file the agent made.
		bashReply("seq 1 3000 && echo made > made.txt"),
		claudetest.Say("done"),
	}}.Handler())
	rt := newTestRuntimeIn(t, ws, srv, WithRunDir(runDir), WithWorkbench(workbench.New(ws)))
	res, err := rt.Run(runCtx(t), testSpec(), "SCENARIO:files", RunOptions{})
	if err != nil || !res.OK {
		t.Fatalf("Run = %+v, %v", res, err)
	}

	mode := func(path string, want fs.FileMode) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			return
		}
		if got := fi.Mode() & (fs.ModeDir | fs.ModePerm); got != want {
			t.Errorf("%s has mode %v, want %v", path, got, want)
		}
	}
	mode(runDir, fs.ModeDir|0o700)
	db := filepath.Join(runDir, "sessions.db")
	// -wal and -shm exist while the store is open.
	for _, p := range []string{db, db + "-wal", db + "-shm", filepath.Join(runDir, "events.jsonl"), rt.ManifestPath(), rt.ManifestPath() + ".lock"} {
		mode(p, 0o600)
	}
	spills, err := filepath.Glob(filepath.Join(rt.Workbench().SpillDir(), "*.txt"))
	if err != nil || len(spills) != 1 {
		t.Fatalf("spill files = %v, %v; want the one of the seq output", spills, err)
	}
	mode(spills[0], 0o600)
	mode(rt.Workbench().SpillDir(), fs.ModeDir|0o700)
	for _, dir := range []string{runDir, rt.Workbench().Root()} {
		if got, err := os.ReadFile(filepath.Join(dir, ".gitignore")); string(got) != "*\n" {
			t.Errorf("%s/.gitignore = %q, %v; want %q", dir, got, err, "*\n")
		}
	}

	git("add", "-A")
	if got := git("diff", "--cached", "--name-only"); got != "made.txt\n" {
		t.Errorf("git add -A in the workspace staged %q, want only made.txt", got)
	}
}

// A run directory New creates is flower's: 0700 and out of git. One that
// exists is its owner's (it may be a repository's root): New writes nothing
// into it and leaves its mode.
func TestNewKeepsOnlyItsOwnRunDirectoryOutOfGit(t *testing.T) {
	env := WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"})
	created := filepath.Join(t.TempDir(), "a", "runs")
	rt, err := New(t.TempDir(), WithRunDir(created), env)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if got, err := os.ReadFile(filepath.Join(created, ".gitignore")); string(got) != "*\n" {
		t.Errorf("the new run directory's .gitignore = %q, %v", got, err)
	}
	if fi, err := os.Stat(created); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the new run directory: %v, %v; want mode 0700", fi.Mode(), err)
	}

	existing := t.TempDir()
	if err := os.Chmod(existing, 0o750); err != nil {
		t.Fatal(err)
	}
	rt, err = New(t.TempDir(), WithRunDir(existing), env)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if _, err := os.Lstat(filepath.Join(existing, ".gitignore")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("New wrote a .gitignore into an existing directory (%v)", err)
	}
	if fi, _ := os.Stat(existing); fi.Mode().Perm() != 0o750 {
		t.Errorf("New changed an existing run directory's mode to %v", fi.Mode().Perm())
	}
}
