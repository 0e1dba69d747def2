package ephemeral

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// glanceTimeout is how long one accepted glance may run in
// TestGlancesOnlyReadWithRealPrograms: a glance ends on its own, and the
// slowest here take well under a second; the margin is for a busy machine.
const glanceTimeout = 20 * time.Second

// TestGlancesOnlyReadWithRealPrograms runs every accepted case of the
// tables with the machine's real programs, in a scratch workspace (a git
// repository with the files the cases name) whose HOME and TMPDIR are
// inside it too, and checks that each command ends on its own and that
// nothing in the scratch tree changed: no file created, removed, written
// or touched. A program the machine lacks fails with 127, which changes
// nothing either; the logging cross-check above covers what bash runs
// either way. git runs with GIT_OPTIONAL_LOCKS=0, as the coordinator's
// session does, since git status otherwise refreshes .git/index.
func TestGlancesOnlyReadWithRealPrograms(t *testing.T) {
	bash := needBash(t, "run the glances for real")
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed to build the scratch repository")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	home := filepath.Join(root, "home")
	tmp := filepath.Join(root, "tmp")
	makeWorkspace(t, work, home, tmp)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "LC_ALL=C",
		"GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_PAGER=cat", "PAGER=cat",
	}
	before := snapshot(t, root)
	for _, table := range [][]glanceCase{cases, glances} {
		for _, c := range table {
			if !c.want {
				continue
			}
			took, timedOut := runGlance(t, bash, c.cmd, work, env, glanceTimeout)
			if timedOut {
				t.Errorf("Is(%q) = true, but it ran past %v", c.cmd, glanceTimeout)
			}
			if took > time.Second {
				t.Logf("%q took %v", c.cmd, took)
			}
			after := snapshot(t, root)
			if diff := compareSnapshots(before, after); diff != "" {
				t.Errorf("Is(%q) = true, but running it changed %s", c.cmd, diff)
				before = after
			}
		}
	}
}

// runGlance runs cmd under bash in dir, its output discarded, and kills
// its whole process group if it outlives limit.
func runGlance(t *testing.T, bash, cmd, dir string, env []string, limit time.Duration) (time.Duration, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	run := exec.CommandContext(ctx, bash, "-c", cmd)
	run.Dir, run.Env = dir, env
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	run.Cancel = func() error { return syscall.Kill(-run.Process.Pid, syscall.SIGKILL) }
	run.WaitDelay = 5 * time.Second
	start := time.Now()
	err := run.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) && ctx.Err() == nil {
		t.Fatalf("running %q: %v", cmd, err)
	}
	return time.Since(start), ctx.Err() != nil
}

// makeWorkspace writes the files the tables' commands name and commits
// them, so the git glances have history to read.
func makeWorkspace(t *testing.T, work, home, tmp string) {
	t.Helper()
	lines := "alpha x 3\nbeta y 200\nTODO gamma\ninet 10.0.0.1\n"
	files := map[string]string{
		"f": lines, "a": lines, "b": "beta\n", "a.txt": lines, "b.txt": "other\n", "x": "x\n",
		"log": lines, "log.txt": lines, "other.txt": "other\n", "README.md": "# readme\n",
		"go.mod": "module x\n", "go.sum": "x v1 h1:x\n", "main.go": "package main\n",
		"f.json": `{"items":[{"ok":true,"name":"n"}],"name":"x"}`, "package.json": `{"name":"p"}`,
		"sums": "d41d8cd98f00b204e9800998ecf8427e  f\n", "sub/inner.txt": "inner\n",
		"src/x.go": "package x\n", "src/app.log": lines, "docs/dev/notes.md": "notes\n",
	}
	for name, text := range files {
		writeFile(t, filepath.Join(work, name), []byte(text))
	}
	writeFile(t, filepath.Join(work, "a.tar"), tarball(t, false))
	writeFile(t, filepath.Join(work, "a.tgz"), tarball(t, true))
	writeFile(t, filepath.Join(work, "a.zip"), zipball(t))
	for _, d := range []string{filepath.Join(home, "src"), tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "first"},
		{"tag", "v1.0"},
	} {
		git := exec.Command("git", args...)
		git.Dir = work
		git.Env = []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func tarball(t *testing.T, gz bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var tw *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	} else {
		tw = tar.NewWriter(&buf)
	}
	body := []byte("in the archive\n")
	if err := tw.WriteHeader(&tar.Header{Name: "src/member.txt", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func zipball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("src/member.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("in the archive\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// snapshot records every entry under root: its type and mode, size,
// modification time and, for files, a hash of the content.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	entries := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		rel, _ := filepath.Rel(root, p)
		entries[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// compareSnapshots names the first difference, or "".
func compareSnapshots(before, after map[string]string) string {
	for name, was := range before {
		now, ok := after[name]
		switch {
		case !ok:
			return name + " (removed)"
		case now != was:
			return name + " (" + was + " -> " + now + ")"
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			return name + " (created)"
		}
	}
	return ""
}

// TestRealRunSeesWhatChanges keeps the real-program check honest: the
// harness must see a write, a touch and a command that does not end.
func TestRealRunSeesWhatChanges(t *testing.T) {
	bash := needBash(t, "check the glance harness")
	root := t.TempDir()
	work, home, tmp := filepath.Join(root, "work"), filepath.Join(root, "home"), filepath.Join(root, "tmp")
	makeWorkspace(t, work, home, tmp)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp}
	for _, cmd := range []string{"echo x > new", "touch -d 2001-01-01 f", "mkdir " + filepath.Join(home, "d")} {
		before := snapshot(t, root)
		runGlance(t, bash, cmd, work, env, glanceTimeout)
		if compareSnapshots(before, snapshot(t, root)) == "" {
			t.Errorf("the harness saw no change after %q", cmd)
		}
	}
	if _, timedOut := runGlance(t, bash, "sleep 60", work, env, time.Second); !timedOut {
		t.Error("sleep 60 ended within a second")
	}
}
