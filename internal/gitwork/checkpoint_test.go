package gitwork

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A checkpoint carries the uncommitted work of one machine's checkout,
// edits, new files and deletions, to another machine's checkout of the
// same branch head, and leaves both branches and indexes alone.
func TestACheckpointCarriesUncommittedWorkToAnotherMachine(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	head, err := Prepare(ctx, bare, a, "flower/r1", "dev", "", flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	ref := CheckpointRef("flower/r1")
	index := filepath.Join(t.TempDir(), "index")

	write(t, filepath.Join(a, "new.txt"), "new\n")
	write(t, filepath.Join(a, "README"), "edited\n")
	if err := os.Remove(filepath.Join(a, "dev.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(a, "runs", "state.json"), "excluded\n") // flower's own: never in a checkpoint
	tree, err := WorkTree(ctx, a, index)
	if err != nil {
		t.Fatal(err)
	}
	if _, headTree, _ := Head(ctx, a); tree == headTree {
		t.Fatal("the work tree's id is the head's, with three files changed")
	}
	if again, _ := WorkTree(ctx, a, index); again != tree {
		t.Errorf("the same files gave another tree: %s, then %s", tree, again)
	}
	// A call cut in the middle (git killed with its context) leaves the
	// index locked; the next call goes on. (A whole team run failed on it.)
	write(t, index+".lock", "")
	if again, err := WorkTree(ctx, a, index); err != nil || again != tree {
		t.Errorf("after a lock left behind: %s, %v; want %s", again, err, tree)
	}
	cp, err := PushCheckpoint(ctx, a, ref, tree, head, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, a, "rev-parse", "HEAD"); got != head {
		t.Errorf("a checkpoint moved the branch to %s", got)
	}
	if staged := run(t, a, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("a checkpoint staged %q in the checkout's own index", staged)
	}

	// Machine B checks out the branch as it is on origin and restores.
	headB, err := Prepare(ctx, bare, b, "flower/r1", "dev", "", flowerFiles)
	if err != nil || headB != head {
		t.Fatalf("machine B's checkout at %s (%v), want %s", headB, err, head)
	}
	remote, restored, err := RestoreCheckpoint(ctx, b, ref, headB)
	if err != nil || remote != cp || restored != tree {
		t.Fatalf("RestoreCheckpoint = %s, %s, %v; want %s, %s", remote, restored, err, cp, tree)
	}
	for name, want := range map[string]string{"new.txt": "new\n", "README": "edited\n"} {
		if got, _ := os.ReadFile(filepath.Join(b, name)); string(got) != want {
			t.Errorf("machine B's %s holds %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(b, "dev.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dev.txt, deleted on machine A, is on machine B (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(b, "runs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an excluded folder came with the checkpoint (%v)", err)
	}
	if got := run(t, b, "rev-parse", "HEAD"); got != head {
		t.Errorf("restoring moved machine B's branch to %s", got)
	}
	if status := run(t, b, "status", "--porcelain"); status != " M README\n D dev.txt\n?? new.txt" {
		t.Errorf("machine B's status after the restore:\n%s\nwant the work uncommitted, as it was on machine A", status)
	}

	// A holder that lost the run cannot move its successor's checkpoint.
	write(t, filepath.Join(a, "later.txt"), "later\n")
	later, err := WorkTree(ctx, a, index)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PushCheckpoint(ctx, a, ref, later, head, "", nil); !errors.Is(err, ErrCheckpointMoved) {
		t.Errorf("a push expecting no checkpoint over %s: %v, want ErrCheckpointMoved", cp, err)
	}

	// Once the branch moved on, the checkpoint is of work it holds: left alone.
	run(t, b, "add", "-A")
	run(t, b, "commit", "-q", "-m", "the work")
	if err := Push(ctx, b, "flower/r1", "", nil); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(t.TempDir(), "c")
	headC, err := Prepare(ctx, bare, c, "flower/r1", "dev", run(t, b, "rev-parse", "HEAD"), flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	if _, restored, err := RestoreCheckpoint(ctx, c, ref, headC); err != nil || restored != "" {
		t.Errorf("a checkpoint of an earlier head was restored: %q, %v", restored, err)
	}
	if status := run(t, c, "status", "--porcelain"); status != "" {
		t.Errorf("machine C's checkout is not clean after a stale checkpoint: %q", status)
	}
	// No checkpoint at all: nothing to restore.
	if remote, restored, err := RestoreCheckpoint(ctx, c, CheckpointRef("flower/r2"), headC); err != nil || remote != "" || restored != "" {
		t.Errorf("RestoreCheckpoint of an absent ref = %q, %q, %v", remote, restored, err)
	}
}

// A checkpoint holding a secret is not pushed, as a commit holding one is not.
func TestACheckpointHoldingASecretIsNotPushed(t *testing.T) {
	ctx := testContext(t)
	bare, _, _ := remote(t)
	a := filepath.Join(t.TempDir(), "a")
	head, err := Prepare(ctx, bare, a, "flower/r1", "", "", flowerFiles)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(a, "leak.txt"), "key sk-ant-secret-value\n")
	tree, err := WorkTree(ctx, a, filepath.Join(t.TempDir(), "index"))
	if err != nil {
		t.Fatal(err)
	}
	ref := CheckpointRef("flower/r1")
	_, err = PushCheckpoint(ctx, a, ref, tree, head, "", []Secret{{Kind: "the model's API key", Value: "sk-ant-secret-value"}})
	var se *SecretError
	if !errors.As(err, &se) || se.File != "leak.txt" {
		t.Fatalf("PushCheckpoint of a tree with a key: %v, want a SecretError naming leak.txt", err)
	}
	if got, err := RemoteRef(ctx, a, ref); err != nil || got != "" {
		t.Errorf("origin's checkpoint ref is %q (%v) after a refused push", got, err)
	}
}
