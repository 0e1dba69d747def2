package team

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flowerrun/flower/internal/gitwork"
)

// checkpoints keep a run's work tree and its conversation together: the
// worker writes the run's transcripts back to the database every few
// seconds and at each tool call, but commits its work only when a step
// ends. Before each write-back, the work tree as it is goes to a hidden
// ref of the remote (gitwork.PushCheckpoint), and the transcripts read
// before it are written only once it is there; a worker that takes the
// run over lays that tree into its checkout (restore) before it resumes
// the session. So a resumed session never remembers edits its files do
// not have. A tree that could not be pushed holds its transcripts back: a
// takeover then resumes an earlier moment, and the calls after it are
// made again.
type checkpoints struct {
	mu    sync.Mutex
	dir   string // the checkout
	ref   string // the remote's hidden ref of the run's branch
	index string // the checkpoints' own index, outside the checkout
	// expect is what the remote's ref holds, as far as this attempt
	// knows; tree the work tree it holds (or the head's, when none
	// applies), made on parent ("" when not made by this attempt's head).
	expect, tree, parent string
	secrets              []gitwork.Secret
}

// checkpointWait bounds reading a work tree into a checkpoint.
const checkpointWait = 2 * time.Minute

// restore lays the run's latest checkpoint into the checkout when it was
// made on head, the commit the checkout is at: the work an earlier
// attempt did after its last commit.
func (a *attempt) restore(ctx context.Context, head string) error {
	// The index lives in the worker's own folder, not the run's state
	// folder: a run's processes write there, and the worker's git must not
	// read an index (or follow a link) the run planted.
	own := filepath.Join(a.w.o.Dir, ".flower-checkpoints")
	if err := os.MkdirAll(own, 0o700); err != nil {
		return err
	}
	a.cp = &checkpoints{
		dir: a.checkout, ref: gitwork.CheckpointRef(a.run.Branch),
		index: filepath.Join(own, a.name()+".index"), secrets: a.w.secrets,
	}
	remote, restored, err := gitwork.RestoreCheckpoint(ctx, a.checkout, a.cp.ref, head)
	if err != nil {
		return err
	}
	a.cp.expect = remote
	if restored != "" {
		a.cp.tree, a.cp.parent = restored, head
		a.log().Info("flower worker: the work after the last commit was restored from its checkpoint", "checkpoint", remote[:12])
		return nil
	}
	_, a.cp.tree, err = gitwork.Head(ctx, a.checkout)
	return err
}

// save pushes the work tree as a checkpoint when it changed since the
// last one. A tree equal to the head's needs none, unless a checkpoint of
// this head says otherwise: the branch holds it, or, when its push is in
// flight, the run's record of that push does (lostWork).
func (c *checkpoints) save(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Not cut when the write-back is stopped: git killed in the middle
	// leaves the index locked (a whole run failed on that).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointWait)
	defer cancel()
	tree, err := gitwork.WorkTree(wctx, c.dir, c.index)
	if err != nil || tree == c.tree {
		return err
	}
	head, headTree, err := gitwork.Head(ctx, c.dir)
	if err != nil {
		return err
	}
	if tree == headTree && c.parent != head {
		c.tree = tree
		return nil
	}
	commit, err := gitwork.PushCheckpoint(ctx, c.dir, c.ref, tree, head, c.expect, c.secrets)
	if errors.Is(err, gitwork.ErrCheckpointMoved) {
		// Another holder moved it. Write-backs run only while the run is
		// this attempt's, so the next one goes on from where it is.
		if remote, rerr := gitwork.RemoteRef(ctx, c.dir, c.ref); rerr == nil {
			c.expect = remote
		}
	}
	if err != nil {
		return err
	}
	c.expect, c.tree, c.parent = commit, tree, head
	return nil
}
