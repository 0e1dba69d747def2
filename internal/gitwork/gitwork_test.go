package gitwork

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// flowerFiles are the patterns a worker excludes.
var flowerFiles = []string{"/runs/", "/.flower-workbench/"}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// run runs git as a test's person would, with an identity of its own.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(testContext(t), dir, append([]string{"-c", "user.name=someone", "-c", "user.email=someone@example.com"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// remote is a bare repository whose default branch is "trunk" (so nothing
// passes by assuming "main"), holding one commit on trunk and one more on
// "dev". It returns the bare repo and the two heads.
func remote(t *testing.T) (bare, trunk, dev string) {
	t.Helper()
	root := t.TempDir()
	bare = filepath.Join(root, "origin.git")
	run(t, root, "init", "-q", "--bare", "-b", "trunk", bare)
	seed := filepath.Join(root, "seed")
	run(t, root, "clone", "-q", bare, seed)
	write(t, filepath.Join(seed, "README"), "seed\n")
	run(t, seed, "add", "README")
	run(t, seed, "commit", "-q", "-m", "seed")
	trunk = run(t, seed, "rev-parse", "HEAD")
	run(t, seed, "checkout", "-q", "-b", "dev")
	write(t, filepath.Join(seed, "dev.txt"), "dev\n")
	run(t, seed, "add", "dev.txt")
	run(t, seed, "commit", "-q", "-m", "dev")
	dev = run(t, seed, "rev-parse", "HEAD")
	run(t, seed, "push", "-q", "origin", "trunk", "dev")
	return bare, trunk, dev
}

func currentBranch(t *testing.T, dir string) string {
	t.Helper()
	return run(t, dir, "symbolic-ref", "--short", "HEAD")
}

func TestPrepareCreatesTheBranchFromTheBaseOrTheDefaultBranch(t *testing.T) {
	ctx := testContext(t)
	bare, trunk, dev := remote(t)

	fromDev := filepath.Join(t.TempDir(), "deep", "machine", "run1")
	head, err := Prepare(ctx, bare, fromDev, "flower/run1", "dev", "", flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	if head != dev || currentBranch(t, fromDev) != "flower/run1" {
		t.Errorf("from dev: head %s on %s, want %s on flower/run1", head, currentBranch(t, fromDev), dev)
	}

	fromDefault := filepath.Join(t.TempDir(), "run2")
	head, err = Prepare(ctx, bare, fromDefault, "flower/run2", "", "", flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	if head != trunk || currentBranch(t, fromDefault) != "flower/run2" {
		t.Errorf("from the default: head %s on %s, want trunk's %s on flower/run2", head, currentBranch(t, fromDefault), trunk)
	}

	// A checkout that is fetched, not cloned, has no origin/HEAD: the
	// default branch is asked of the remote.
	run(t, fromDefault, "remote", "set-head", "origin", "-d")
	head, err = Prepare(ctx, bare, fromDefault, "flower/run3", "", "", flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	if head != trunk {
		t.Errorf("without origin/HEAD: head %s, want trunk's %s", head, trunk)
	}
}

// A repository on this machine's disk is cloned through git's transport,
// not by hard-linking its object files: a clone that linked them failed
// when another run's push rewrote one meanwhile ("hardlink different from
// source", ci30, the run's attempt lost), and a linked file is one file
// with the origin's, in a folder the run's processes write.
func TestALocalRepositoryIsClonedWithoutSharingItsFiles(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	dir := filepath.Join(t.TempDir(), "run1")
	if _, err := Prepare(ctx, bare, dir, "flower/run1", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	var origin []os.FileInfo
	filepath.WalkDir(filepath.Join(bare, "objects"), func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := os.Stat(path); err == nil {
				origin = append(origin, fi)
			}
		}
		return nil
	})
	if len(origin) == 0 {
		t.Fatal("the origin has no object files to compare with")
	}
	filepath.WalkDir(filepath.Join(dir, ".git"), func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		fi, err := os.Stat(path)
		if err != nil {
			return nil
		}
		for _, o := range origin {
			if os.SameFile(fi, o) {
				t.Errorf("%s is the origin's %s itself (a hard link)", path, o.Name())
			}
		}
		return nil
	})
}

func TestARunContinuesOnAnotherMachineFromItsPushedCommit(t *testing.T) {
	ctx := testContext(t)
	bare, trunk, _ := remote(t)
	machineA, machineB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")

	if _, err := Prepare(ctx, bare, machineA, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(machineA, "work.txt"), "step 1\n")
	pushed, changed, err := Commit(ctx, machineA, "step 1")
	if err != nil || !changed || pushed == trunk {
		t.Fatalf("commit: %s changed=%v err=%v", pushed, changed, err)
	}
	if author := run(t, machineA, "log", "-1", "--format=%an <%ae> / %cn"); !strings.HasPrefix(author, "flower <flower@") || !strings.HasSuffix(author, "/ flower") {
		t.Errorf("author and committer: %q, want flower <flower@HOST>", author)
	}
	if err := Push(ctx, machineA, "flower/run", "", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := RemoteHead(ctx, machineA, "flower/run"); err != nil || got != pushed {
		t.Fatalf("remote head %q (%v), want %s", got, err, pushed)
	}

	head, err := Prepare(ctx, bare, machineB, "flower/run", "", pushed, flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	if head != pushed {
		t.Fatalf("machine B starts at %s, want the pushed %s", head, pushed)
	}
	if text, err := os.ReadFile(filepath.Join(machineB, "work.txt")); err != nil || string(text) != "step 1\n" {
		t.Fatalf("machine B's work.txt: %q %v", text, err)
	}

	// Nothing changed: no empty commit, the head as it was.
	same, changed, err := Commit(ctx, machineB, "nothing")
	if err != nil || changed || same != pushed {
		t.Fatalf("commit of nothing: %s changed=%v err=%v, want %s unchanged", same, changed, err, pushed)
	}
	write(t, filepath.Join(machineB, "work.txt"), "step 2\n")
	second, changed, err := Commit(ctx, machineB, "step 2")
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	if err := Push(ctx, machineB, "flower/run", pushed, nil); err != nil {
		t.Fatal(err)
	}
	if log := run(t, bare, "log", "--format=%s", "flower/run"); log != "step 2\nstep 1\nseed" {
		t.Errorf("the branch's history:\n%s\nwant step 2, step 1, seed", log)
	}
	if got, _ := RemoteHead(ctx, machineB, "flower/run"); got != second {
		t.Errorf("remote head %s, want %s", got, second)
	}
}

func TestABranchThatIsNotTheRunsIsForeign(t *testing.T) {
	ctx := testContext(t)
	bare, trunk, dev := remote(t)
	machineA := filepath.Join(t.TempDir(), "a")
	if _, err := Prepare(ctx, bare, machineA, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(machineA, "work.txt"), "work\n")
	pushed, _, err := Commit(ctx, machineA, "work")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, machineA, "flower/run", "", nil); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name, branch, pushed string
		want                 []string
	}{
		{"another last push", "flower/run", trunk, []string{"flower/run", short(pushed), short(trunk)}},
		{"never pushed", "flower/run", "", []string{"flower/run", short(pushed), "never pushed"}},
		{"an existing branch taken as new", "dev", "", []string{"dev", short(dev), "never pushed"}},
		{"the run's branch deleted", "flower/gone", pushed, []string{"flower/gone", "gone", short(pushed)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "b")
			_, err := Prepare(ctx, bare, dir, c.branch, "", c.pushed, flowerFiles)
			if !errors.Is(err, ErrForeignBranch) {
				t.Fatalf("got %v, want ErrForeignBranch", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not name %q", err, w)
				}
			}
		})
	}
	if got, _ := RemoteHead(ctx, machineA, "flower/run"); got != pushed {
		t.Errorf("the branch moved to %s; refusing must leave it at %s", got, pushed)
	}
}

func TestAPushAfterSomeoneElsePushedIsRejectedAndTheirCommitStays(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	machine := filepath.Join(t.TempDir(), "a")
	if _, err := Prepare(ctx, bare, machine, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(machine, "work.txt"), "1\n")
	first, _, err := Commit(ctx, machine, "step 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, machine, "flower/run", "", nil); err != nil {
		t.Fatal(err)
	}

	other := filepath.Join(t.TempDir(), "other")
	run(t, "", "clone", "-q", "-b", "flower/run", bare, other)
	write(t, filepath.Join(other, "theirs.txt"), "theirs\n")
	run(t, other, "add", "theirs.txt")
	run(t, other, "commit", "-q", "-m", "theirs")
	run(t, other, "push", "-q", "origin", "flower/run")
	theirs := run(t, other, "rev-parse", "HEAD")

	write(t, filepath.Join(machine, "work.txt"), "2\n")
	if _, _, err := Commit(ctx, machine, "step 2"); err != nil {
		t.Fatal(err)
	}
	err = Push(ctx, machine, "flower/run", first, nil)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), short(theirs)) {
		t.Fatalf("got %v, want ErrRejected naming their commit %s", err, short(theirs))
	}
	if got, err := RemoteHead(ctx, machine, "flower/run"); err != nil || got != theirs {
		t.Errorf("remote head %s (%v), want their commit %s intact", got, err, theirs)
	}

	// "" expects the branch absent; it exists.
	if err := Push(ctx, machine, "flower/other-run", "", nil); err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, machine, "flower/other-run", "", nil); err != nil {
		t.Fatalf("a push whose commit is already there: %v", err)
	}
	// Over a branch expected absent that holds someone else's commit.
	if err := Push(ctx, other, "flower/other-run", "", nil); !errors.Is(err, ErrRejected) {
		t.Errorf("pushing over an existing branch expected absent: %v, want ErrRejected", err)
	}
}

// A push that went through while its record did not (the run's row kept
// the commit before) goes on from this checkout's own commit: it parked
// the run as "someone else pushed to it" before.
func TestAPushWhoseRecordWasLostGoesOnFromItsOwnCommit(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	machine := filepath.Join(t.TempDir(), "a")
	if _, err := Prepare(ctx, bare, machine, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(machine, "work.txt"), "1\n")
	first, _, err := Commit(ctx, machine, "step 1")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, machine, "flower/run", "", nil); err != nil {
		t.Fatal(err)
	}
	// The record still says "never pushed" (""): the first push's answer
	// was lost. Two more steps, each pushed against that stale record.
	for i, want := range []string{"2\n", "3\n"} {
		write(t, filepath.Join(machine, "work.txt"), want)
		head, _, err := Commit(ctx, machine, "step")
		if err != nil {
			t.Fatal(err)
		}
		if err := Push(ctx, machine, "flower/run", "", nil); err != nil {
			t.Fatalf("push %d against the lost record: %v", i+2, err)
		}
		if got, err := RemoteHead(ctx, machine, "flower/run"); err != nil || got != head {
			t.Fatalf("remote head %s (%v), want %s", got, err, head)
		}
	}
	if got := run(t, bare, "rev-list", "--count", first+"..flower/run"); got != "2" {
		t.Errorf("the branch has %s commits after the first, want 2 (nothing lost, nothing rewritten)", got)
	}
}

func TestARemoteThatDeclinesAPushIsNotRejected(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	write(t, filepath.Join(bare, "hooks", "pre-receive"), "#!/bin/sh\necho 'policy: flower/ branches are closed' >&2\nexit 1\n")
	if err := os.Chmod(filepath.Join(bare, "hooks", "pre-receive"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a")
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "work.txt"), "work\n")
	if _, _, err := Commit(ctx, dir, "work"); err != nil {
		t.Fatal(err)
	}
	err := Push(ctx, dir, "flower/run", "", nil)
	if err == nil || errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "policy: flower/ branches are closed") {
		t.Fatalf("got %v, want the remote's own reason, not ErrRejected", err)
	}
}

func TestAnUnreachableRepositoryIsNamed(t *testing.T) {
	ctx := testContext(t)
	missing := filepath.Join(t.TempDir(), "no-such-repo.git")
	_, err := Prepare(ctx, missing, filepath.Join(t.TempDir(), "a"), "flower/run", "", "", flowerFiles)
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %q, want one line of ErrUnreachable naming %s", err, missing)
	}

	// A checkout whose remote went away: the fetch and ls-remote fail.
	bare, _, _ := remote(t)
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	moved := bare + ".moved"
	if err := os.Rename(bare, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", "", flowerFiles); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), bare) {
		t.Errorf("fetch: got %v, want ErrUnreachable naming %s", err, bare)
	}
	if _, err := RemoteHead(ctx, dir, "flower/run"); !errors.Is(err, ErrUnreachable) {
		t.Errorf("ls-remote: got %v, want ErrUnreachable", err)
	}
	if err := Push(ctx, dir, "flower/run", "", nil); !errors.Is(err, ErrUnreachable) {
		t.Errorf("push: got %v, want ErrUnreachable", err)
	}
}

func TestARepositoryAskingForAPasswordFailsAtOnce(t *testing.T) {
	asked := make(chan struct{}, 16)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer server.Close()
	// A password helper of the worker's environment would wait for
	// somebody; flower's git never calls it.
	helperRan := filepath.Join(t.TempDir(), "asked")
	helper := filepath.Join(t.TempDir(), "askpass")
	write(t, helper, "#!/bin/sh\ntouch "+helperRan+"\nsleep 20\n")
	if err := os.Chmod(helper, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_ASKPASS", helper)
	t.Setenv("SSH_ASKPASS", helper)

	for _, repo := range []string{
		server.URL + "/team.git",
		strings.Replace(server.URL, "http://", "http://worker:s3cret-token@", 1) + "/team.git",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := Prepare(ctx, repo, filepath.Join(t.TempDir(), "a"), "flower/run", "", "", flowerFiles)
		cancel()
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("got %v, want ErrUnreachable without waiting for a password", err)
		}
		if strings.Contains(err.Error(), "s3cret-token") {
			t.Errorf("the error shows the URL's token: %v", err)
		}
	}
	if len(asked) == 0 {
		t.Fatal("git never asked the server; the test shows nothing")
	}
	if _, err := os.Stat(helperRan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the environment's password helper ran: %v", err)
	}
}

func TestABaseThatDoesNotExistIsErrNoBase(t *testing.T) {
	bare, _, _ := remote(t)
	_, err := Prepare(testContext(t), bare, filepath.Join(t.TempDir(), "a"), "flower/run", "release-9", "", flowerFiles)
	if !errors.Is(err, ErrNoBase) || !strings.Contains(err.Error(), "release-9") {
		t.Fatalf("got %v, want ErrNoBase naming release-9", err)
	}

	// An empty repository has no branch to start from, default or not.
	empty := filepath.Join(t.TempDir(), "empty.git")
	run(t, "", "init", "-q", "--bare", empty)
	_, err = Prepare(testContext(t), empty, filepath.Join(t.TempDir(), "b"), "flower/run", "", "", flowerFiles)
	if !errors.Is(err, ErrNoBase) {
		t.Fatalf("an empty repository: got %v, want ErrNoBase", err)
	}
}

func TestExcludedFilesAreNeverCommittedAndSurvivePrepare(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	dir := filepath.Join(t.TempDir(), "a")
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "runs", "r1", "manifest.json"), "{}\n")
	write(t, filepath.Join(dir, ".flower-workbench", "note"), "note\n")
	write(t, filepath.Join(dir, "src", "runs", "kept.go"), "package runs\n") // only the top-level /runs/ is flower's
	pushed, changed, err := Commit(ctx, dir, "work")
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	if files := run(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); files != "README\nsrc/runs/kept.go" {
		t.Errorf("committed files:\n%s\nwant README and src/runs/kept.go only", files)
	}
	// Only flower's files changed: nothing to commit.
	write(t, filepath.Join(dir, "runs", "r1", "manifest.json"), `{"step":2}`+"\n")
	if _, changed, err := Commit(ctx, dir, "state only"); err != nil || changed {
		t.Errorf("a change to excluded files only: changed=%v err=%v, want no commit", changed, err)
	}
	if err := Push(ctx, dir, "flower/run", "", nil); err != nil {
		t.Fatal(err)
	}

	// Prepare again on the same machine: local changes go, flower's stay,
	// even where the exclude file lacks them (an older checkout): Prepare
	// writes it before it cleans.
	write(t, filepath.Join(dir, ".git", "info", "exclude"), "")
	write(t, filepath.Join(dir, "README"), "edited\n")
	write(t, filepath.Join(dir, "stray", "file"), "stray\n")
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", pushed, flowerFiles); err != nil {
		t.Fatal(err)
	}
	if text, _ := os.ReadFile(filepath.Join(dir, "README")); string(text) != "seed\n" {
		t.Errorf("README %q, want the committed seed", text)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an untracked file stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "r1", "manifest.json")); err != nil {
		t.Errorf("the run's state was removed: %v", err)
	}
}

func TestNoHookOfTheRepositoryRuns(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := "#!/bin/sh\necho \"$0\" >> " + marker + "\n"
	writeHook := func(hooksDir string, names ...string) {
		for _, name := range names {
			path := filepath.Join(hooksDir, name)
			write(t, path, hook)
			if err := os.Chmod(path, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A hook in the remote's own hooks directory is not cloned. (Its
	// receive hooks are the remote's policy and do run on a push, as they
	// would on a server: TestARemoteThatDeclinesAPushIsNotRejected.)
	writeHook(filepath.Join(bare, "hooks"), "post-checkout", "pre-commit")

	dir := filepath.Join(t.TempDir(), "a")
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	writeHook(filepath.Join(dir, ".git", "hooks"), "pre-commit", "commit-msg", "post-commit", "post-checkout", "pre-push", "reference-transaction")
	write(t, filepath.Join(dir, "work.txt"), "work\n")
	pushed, _, err := Commit(ctx, dir, "work")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, dir, "flower/run", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(ctx, bare, dir, "flower/run", "", pushed, flowerFiles); err != nil {
		t.Fatal(err)
	}
	if ran, err := os.ReadFile(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hooks ran:\n%s", ran)
	}
	// The hooks work when plain git runs them, so their silence above is ours.
	plain := exec.CommandContext(ctx, "git", "-c", "user.name=someone", "-c", "user.email=someone@example.com",
		"commit", "-q", "--allow-empty", "-m", "with hooks")
	plain.Dir = dir
	if out, err := plain.CombinedOutput(); err != nil {
		t.Fatalf("plain git commit: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the test's hooks do not run even for plain git: %v", err)
	}
}

func TestANameGitCouldReadAsAnOptionIsRefused(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	marker := filepath.Join(t.TempDir(), "ran")
	dir := filepath.Join(t.TempDir(), "a")
	for _, branch := range []string{"-x", "--upload-pack=touch " + marker, "a..b", "has space", "@{-1}", ""} {
		if _, err := Prepare(ctx, bare, dir, branch, "", "", flowerFiles); !errors.Is(err, ErrBadBranch) {
			t.Errorf("branch %q: got %v, want ErrBadBranch", branch, err)
		}
	}
	if _, err := Prepare(ctx, bare, dir, "flower/run", "--orphan", "", flowerFiles); !errors.Is(err, ErrBadBranch) {
		t.Errorf("base --orphan: got %v, want ErrBadBranch", err)
	}
	if err := Push(ctx, dir, "-f", "", nil); !errors.Is(err, ErrBadBranch) {
		t.Errorf("push -f: got %v, want ErrBadBranch", err)
	}
	// A repository that reads as an option is a path that does not exist.
	_, err := Prepare(ctx, "--upload-pack=touch "+marker, dir, "flower/run", "", "", flowerFiles)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("repo --upload-pack: got %v, want ErrUnreachable", err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an option in a name ran: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Prepare left %s behind: %v", dir, err)
	}
}

func TestADirectoryWithOtherFilesIsNotCloned(t *testing.T) {
	bare, _, _ := remote(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "mine.txt"), "mine\n")
	_, err := Prepare(testContext(t), bare, dir, "flower/run", "", "", flowerFiles)
	if err == nil || errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "not a git checkout") {
		t.Fatalf("got %v, want a refusal saying %s is not a checkout", err, dir)
	}
	if text, _ := os.ReadFile(filepath.Join(dir, "mine.txt")); string(text) != "mine\n" {
		t.Errorf("mine.txt is %q", text)
	}
}

func TestAnEndedContextStopsGit(t *testing.T) {
	bare, _, _ := remote(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Prepare(ctx, bare, filepath.Join(t.TempDir(), "a"), "flower/run", "", "", flowerFiles)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnreachable) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestRedactHidesTheAddressesSecretOnly(t *testing.T) {
	for repo, want := range map[string]string{
		"https://worker:s3cret-tok@git.example.com/team.git": "https://worker:xxxxx@git.example.com/team.git",
		"https://ghp_s3cretToken123@github.com/org/team.git": "https://xxxxx@github.com/org/team.git",
		"http://x-access-token:s3c%2Fret@git.example.com/t":  "http://x-access-token:xxxxx@git.example.com/t",
		"ssh://git:s3cret@git.example.com:2222/team.git":     "ssh://git:xxxxx@git.example.com:2222/team.git",
		"https://worker:s3cret@git.example.com:bad/team.git": "https://worker:xxxxx@git.example.com:bad/team.git",
		"deploy:s3cret@git.example.com:team.git":             "deploy:xxxxx@git.example.com:team.git",
		"ssh://git@git.example.com/team.git":                 "ssh://git@git.example.com/team.git",
		"https://git.example.com/team.git":                   "https://git.example.com/team.git",
		"git@git.example.com:team.git":                       "git@git.example.com:team.git",
		"/srv/git/team.git":                                  "/srv/git/team.git",
		"file:///srv/git/team.git":                           "file:///srv/git/team.git",
		"":                                                   "",
	} {
		got := Redact(repo)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", repo, got, want)
		}
		if secret := secretOf(repo); secret != "" {
			said := Mask(repo, "fatal: unable to access '"+repo+"': the token "+secret+" was refused")
			if strings.Contains(got, secret) || strings.Contains(said, secret) || !strings.Contains(said, "xxxxx") {
				t.Errorf("the secret %q of %q shows: %q, %q", secret, repo, got, said)
			}
		}
	}
}

// A commit holding a secret is never pushed, whichever commit of the push
// holds it and in whatever file; the refusal names the kind and the file,
// never the value; what origin already had is not held against the run.
func TestACommitHoldingASecretIsNotPushed(t *testing.T) {
	const key = "sk-ant-api03-s3cretKEYvalue0123456789"
	const dbPassword = "db-pass-4711abc"
	secrets := []Secret{
		{Kind: "the model's API key (ANTHROPIC_API_KEY)", Value: key},
		{Kind: "the database's password", Value: dbPassword},
		{Kind: "too short to look for", Value: "ab"},
	}
	ctx := testContext(t)
	bare, _, _ := remote(t)
	// Origin's own history holds the password already: not the run's doing.
	seed := filepath.Join(t.TempDir(), "seed")
	run(t, "", "clone", "-q", bare, seed)
	write(t, filepath.Join(seed, "old.conf"), "password="+dbPassword+"\n")
	run(t, seed, "add", "old.conf")
	run(t, seed, "commit", "-q", "-m", "an old mistake")
	run(t, seed, "push", "-q", "origin", "trunk")

	for _, c := range []struct {
		name, file, kind string
		commits          []map[string]string // file → content, one map a commit
	}{
		{"the key in a new file", "notes/leak.txt", "ANTHROPIC_API_KEY", []map[string]string{{"notes/leak.txt": "key: " + key + "\n"}}},
		{"the key added then removed", "a.txt", "ANTHROPIC_API_KEY", []map[string]string{{"a.txt": key + "\n"}, {"a.txt": "gone\n"}}},
		{"the password in a binary file", "blob.bin", "database's password", []map[string]string{{"blob.bin": "\x00\x01" + dbPassword + "\x00"}}},
		{"the key in a file's name", "a file's name", "ANTHROPIC_API_KEY", []map[string]string{{"k-" + key + ".txt": "x\n"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			machine := filepath.Join(t.TempDir(), "a")
			if _, err := Prepare(ctx, bare, machine, "flower/run", "", "", flowerFiles); err != nil {
				t.Fatal(err)
			}
			var head string
			for i, files := range c.commits {
				for name, text := range files {
					write(t, filepath.Join(machine, name), text)
				}
				var err error
				if head, _, err = Commit(ctx, machine, fmt.Sprintf("step %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			err := Push(ctx, machine, "flower/run", "", secrets)
			var se *SecretError
			if !errors.Is(err, ErrSecret) || !errors.As(err, &se) {
				t.Fatalf("got %v, want a SecretError", err)
			}
			if se.File != c.file || !strings.Contains(se.Kind, c.kind) || !strings.Contains(err.Error(), c.file) {
				t.Errorf("the refusal names %q in %q (%v), want %s in %s", se.Kind, se.File, err, c.kind, c.file)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), dbPassword) {
				t.Errorf("the refusal shows the secret: %v", err)
			}
			if remoteHead, _ := RemoteHead(ctx, machine, "flower/run"); remoteHead != "" {
				t.Errorf("the branch was pushed (at %s)", remoteHead)
			}
			if got := run(t, machine, "rev-parse", "HEAD"); got != head {
				t.Errorf("the work moved: HEAD %s, was %s", got, head)
			}
		})
	}

	// Without a secret the same push goes; the next one is looked at from
	// there, so the pushed history is not looked through again.
	machine := filepath.Join(t.TempDir(), "b")
	if _, err := Prepare(ctx, bare, machine, "flower/run", "", "", flowerFiles); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(machine, "ok.txt"), "fine\n")
	first, _, err := Commit(ctx, machine, "clean")
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, machine, "flower/run", "", secrets); err != nil {
		t.Fatalf("a clean push: %v", err)
	}
	write(t, filepath.Join(machine, "ok.txt"), key+"\n")
	if _, _, err := Commit(ctx, machine, "leak"); err != nil {
		t.Fatal(err)
	}
	if err := Push(ctx, machine, "flower/run", first, secrets); !errors.Is(err, ErrSecret) {
		t.Fatalf("got %v, want ErrSecret", err)
	}
	if got, _ := RemoteHead(ctx, machine, "flower/run"); got != first {
		t.Errorf("the branch is at %s, want the clean commit %s", got, first)
	}

	// The token in origin's address is looked for without being given.
	run(t, machine, "remote", "set-url", "origin", "https://worker:tok-9876543210abc@git.example.invalid/app.git")
	write(t, filepath.Join(machine, "ok.txt"), "tok-9876543210abc\n")
	if _, _, err := Commit(ctx, machine, "token"); err != nil {
		t.Fatal(err)
	}
	err = FindSecret(ctx, machine, nil)
	if !errors.Is(err, ErrSecret) || !strings.Contains(err.Error(), "repository's token") || strings.Contains(err.Error(), "tok-9876543210abc") {
		t.Errorf("got %v, want the repository's token found and not shown", err)
	}
}

// A repository address that leads into the worker's own folder is refused
// whatever its form; one outside it is not.
func TestARepositoryInsideTheWorkersFolderIsRefusedInEveryForm(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "worker")
	checkout := filepath.Join(dir, "r1", "work")
	run(t, "", "init", "-q", checkout)
	outside := filepath.Join(root, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"link-to-checkout": checkout,
		"link-to-dir":      dir,
		"link-to-r1":       filepath.Join(dir, "r1"),
		"app.git":          checkout, // git tries REPO.git for REPO
	} {
		if err := os.Symlink(target, filepath.Join(outside, link)); err != nil {
			t.Fatal(err)
		}
	}
	// A folder whose .git file points into the worker's folder.
	write(t, filepath.Join(outside, "redirect", ".git"), "gitdir: "+filepath.Join(checkout, ".git")+"\n")
	// The worker's --dir given through a symlink resolves the same.
	dirLink := filepath.Join(root, "worker-link")
	if err := os.Symlink(dir, dirLink); err != nil {
		t.Fatal(err)
	}
	t.Chdir(outside)

	for _, repo := range []string{
		checkout,
		dir,
		checkout + "/",
		filepath.Join(dir, "r2", "work"), // a run not checked out yet
		"file://" + checkout,
		"file://localhost" + checkout,
		"file://" + strings.ReplaceAll(checkout, "/", "%2F"),
		"file://" + strings.ReplaceAll(checkout, "r1", "%721"),
		"FILE://" + checkout,
		filepath.Join(outside, "link-to-checkout"),
		"file://" + filepath.Join(outside, "link-to-dir") + "/r1/work",
		outside + "/sub/../link-to-r1/work",
		outside + "/link-to-r1/../r1/work", // the link first, then ..: dir/r1/work
		"link-to-checkout",                 // relative to the current directory
		"./link-to-dir/../worker/r1",
		"../worker/r1/work",
		filepath.Join(outside, "app"),
		filepath.Join(outside, "redirect"),
	} {
		for _, folder := range []string{dir, dirLink} {
			err := CheckOutside(repo, folder)
			if !errors.Is(err, ErrOwnFolder) {
				t.Errorf("CheckOutside(%q, %q) = %v, want ErrOwnFolder", repo, folder, err)
			}
		}
	}
	for _, repo := range []string{
		outside,
		filepath.Join(outside, "sub"),
		root + "/worker-other/r1/work", // a name that starts like the folder's
		"https://git.example.com/app.git",
		"ssh://git@git.example.com" + checkout,
		"git@git.example.com:" + checkout,
		"host:" + checkout,
	} {
		if err := CheckOutside(repo, dir); err != nil {
			t.Errorf("CheckOutside(%q) = %v, want nil", repo, err)
		}
	}
	err := CheckOutside("https://u:tok-s3cret-123@x"+checkout, dir)
	if err != nil {
		t.Errorf("a remote address was refused: %v", err)
	}
	if err := CheckOutside("file://"+checkout, dir); err == nil || !strings.Contains(err.Error(), checkout) || !strings.Contains(err.Error(), "shared address") {
		t.Errorf("the refusal does not say where and what to do: %v", err)
	}
}

// An http(s) address's password goes to a file of mode 0600 beside the
// checkout, and origin keeps the address without it; any other address is
// origin as given, and an earlier file goes.
func TestAnAddresssPasswordIsKeptBesideTheCheckout(t *testing.T) {
	checkout := filepath.Join(t.TempDir(), "r1", "work")
	file := filepath.Join(filepath.Dir(checkout), "work.git-credentials")
	origin, err := keepCredentials("https://worker:t%2Fok-s3cret@git.example.com/app.git", checkout)
	if err != nil {
		t.Fatal(err)
	}
	if origin != "https://worker@git.example.com/app.git" {
		t.Errorf("origin %q", origin)
	}
	data, err := os.ReadFile(file)
	fi, _ := os.Stat(file)
	if err != nil || string(data) != "https://worker:t%2Fok-s3cret@git.example.com\n" || fi.Mode().Perm() != 0o600 {
		t.Errorf("the credentials file: %q %v %v", data, fi.Mode(), err)
	}
	if args := credentialArgs(checkout); len(args) != 4 || args[3] != "credential.helper=store --file="+file {
		t.Errorf("credentialArgs: %q", args)
	}
	for _, repo := range []string{"https://git.example.com/app.git", "ssh://git:pw@git.example.com/app.git", "/srv/app.git"} {
		origin, err := keepCredentials(repo, checkout)
		if err != nil || origin != repo {
			t.Errorf("keepCredentials(%q) = %q, %v", repo, origin, err)
		}
		if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) || credentialArgs(checkout) != nil {
			t.Errorf("after %q the credentials file stays: %v", repo, err)
		}
	}
}
