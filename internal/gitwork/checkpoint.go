package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// A checkpoint is a run's work tree as it was at a moment between two
// commits of its branch: a commit whose parent is the branch's head, kept
// on a hidden ref of origin (CheckpointRef), never on the branch. A run's
// conversation is saved only after the files it describes are in a
// checkpoint, so a machine that takes the run over restores both.

// ErrCheckpointMoved: origin's checkpoint ref is not where the caller
// last saw it (another holder of the run moved it).
var ErrCheckpointMoved = errors.New("gitwork: the checkpoint moved")

// CheckpointRef is the hidden ref on origin that holds branch's latest
// checkpoint.
func CheckpointRef(branch string) string { return "refs/flower/checkpoint/" + branch }

// WorkTree writes the tree of dir's work tree as it is now, tracked and
// untracked files alike (git add -A: excluded files stay out), and returns
// its id. It stages into index, a file of the caller's and never dir's own
// index, so dir's index and branch are left as they are; kept between
// calls, it spares git re-reading files that did not change. The index is
// the caller's alone, one call at a time: a lock a cut call left on it
// (git killed with its context) is removed first.
func WorkTree(ctx context.Context, dir, index string) (string, error) {
	if err := os.Remove(index + ".lock"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("gitwork: clearing the checkpoint index's lock: %w", err)
	}
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := os.Stat(index); err != nil {
		if _, err := gitWith(ctx, dir, env, "read-tree", "HEAD"); err != nil {
			return "", fmt.Errorf("gitwork: starting a checkpoint index of %s: %w", dir, err)
		}
	}
	if _, err := gitWith(ctx, dir, env, "add", "-A"); err != nil {
		return "", fmt.Errorf("gitwork: reading the work tree of %s: %w", dir, err)
	}
	tree, err := gitWith(ctx, dir, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("gitwork: writing the work tree of %s: %w", dir, err)
	}
	return tree, nil
}

// Head is dir's HEAD commit and its tree.
func Head(ctx context.Context, dir string) (commit, tree string, err error) {
	out, err := git(ctx, dir, "rev-parse", "HEAD", "HEAD^{tree}")
	if err != nil {
		return "", "", fmt.Errorf("gitwork: reading the head of %s: %w", dir, err)
	}
	commit, tree, _ = strings.Cut(out, "\n")
	return commit, tree, nil
}

// PushCheckpoint commits tree with parent as its only parent and pushes
// it to origin's ref, if origin's ref is still at expect ("" = absent):
// --force-with-lease, so a holder that lost the run cannot overwrite its
// successor's checkpoint. The commit is searched for secrets first, as
// Push does (a *SecretError, nothing pushed). ErrCheckpointMoved when the
// ref moved; the new commit otherwise.
func PushCheckpoint(ctx context.Context, dir, ref, tree, parent, expect string, secrets []Secret) (string, error) {
	if !strings.HasPrefix(ref, "refs/flower/") {
		return "", fmt.Errorf("gitwork: %q is not a checkpoint ref", ref)
	}
	if expect != "" && !commitPattern.MatchString(expect) {
		return "", fmt.Errorf("gitwork: the expected checkpoint %q is not a full commit id", expect)
	}
	host, herr := os.Hostname()
	if herr != nil || host == "" {
		host = "localhost"
	}
	commit, err := git(ctx, dir,
		"-c", "user.name=flower", "-c", "user.email=flower@"+host, "-c", "commit.gpgsign=false",
		"commit-tree", "-p", parent, "-m", "flower checkpoint", tree)
	if err != nil {
		return "", fmt.Errorf("gitwork: committing a checkpoint in %s: %w", dir, err)
	}
	if err := findSecretIn(ctx, dir, commit, secrets); err != nil {
		return "", err
	}
	_, pushErr := git(ctx, dir, append(credentialArgs(dir), "push", "-q", "--no-verify", "--force-with-lease="+ref+":"+expect, "origin", commit+":"+ref)...)
	if pushErr == nil || ctx.Err() != nil {
		return commit, pushErr
	}
	remote, err := RemoteRef(ctx, dir, ref)
	switch {
	case err != nil:
		return "", err
	case remote == commit:
		return commit, nil // pushed, only the answer was lost
	case remote != expect:
		return "", fmt.Errorf("%w: %s is at %s, not %s", ErrCheckpointMoved, ref, cmpShort(remote), cmpShort(expect))
	}
	return "", fmt.Errorf("gitwork: pushing a checkpoint to %s: %w; check that this machine may push to origin", ref, pushErr)
}

// cmpShort is short, with "nothing" for an absent ref.
func cmpShort(id string) string {
	if id == "" {
		return "nothing"
	}
	return short(id)
}

// RemoteRef is origin's ref ("" when absent), asked of origin.
func RemoteRef(ctx context.Context, dir, ref string) (string, error) {
	out, err := git(ctx, dir, append(credentialArgs(dir), "ls-remote", "origin", ref)...)
	if err != nil {
		url, _ := git(ctx, dir, "remote", "get-url", "origin")
		return "", unreachable(ctx, url, err)
	}
	// ls-remote matches patterns by their tail; keep the exact ref only.
	for _, line := range strings.Split(out, "\n") {
		if id, name, ok := strings.Cut(line, "\t"); ok && name == ref {
			return id, nil
		}
	}
	return "", nil
}

// RestoreCheckpoint lays origin's checkpoint at ref into dir's work tree
// when it was made on head (its parent is head): dir's files become what
// they were at the checkpoint, uncommitted, and its index and branch stay
// at head. A checkpoint made on another commit is of work the branch
// already holds or never took, and is left alone. remote is what origin's
// ref holds ("" when absent), restored the tree laid out ("" when none).
func RestoreCheckpoint(ctx context.Context, dir, ref, head string) (remote, restored string, err error) {
	remote, err = RemoteRef(ctx, dir, ref)
	if err != nil || remote == "" {
		return remote, "", err
	}
	local := "refs/flower/restoring"
	if _, err := git(ctx, dir, append(credentialArgs(dir), "fetch", "-q", "--no-tags", "origin", "+"+ref+":"+local)...); err != nil {
		return remote, "", fmt.Errorf("gitwork: fetching the checkpoint %s: %w", ref, err)
	}
	out, err := git(ctx, dir, "rev-parse", local, local+"^{tree}", local+"^@")
	if err != nil {
		return remote, "", fmt.Errorf("gitwork: reading the checkpoint %s: %w", ref, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != 3 || lines[2] != head {
		return remote, "", nil
	}
	remote, tree := lines[0], lines[1]
	// read-tree -u --reset makes the work tree the checkpoint's (files it
	// lacks are removed); reset puts the index back at head, so what the
	// checkpoint holds is the uncommitted work it was.
	if _, err := git(ctx, dir, "read-tree", "-u", "--reset", remote); err != nil {
		return remote, "", fmt.Errorf("gitwork: laying out the checkpoint %s in %s: %w", short(remote), dir, err)
	}
	if _, err := git(ctx, dir, "reset", "-q"); err != nil {
		return remote, "", fmt.Errorf("gitwork: resetting the index of %s: %w", dir, err)
	}
	return remote, tree, nil
}
