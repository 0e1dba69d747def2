// Package runstate keeps a run's state where the next process can read it,
// whichever machine that process runs on.
//
// A run's state is files: the run directory (lineage, manifest, events,
// run info), the human's side (questions, replies, pending words, the
// words journal), the workbench (brief, goal, handoffs, verdicts, INDEX,
// notes, artifacts, spills) and the outputs the CLI kept whole for the
// model to read back. Flower, the CLI, the model and the person all read
// and write them as files, so files stay the working copy on every
// machine. By default that is all there is (nothing here runs). With a
// Backend, a Mirror makes the backend the run's record: Open takes the run
// as its only writer (a lease with a heartbeat), lays out locally what the
// backend holds, and Sync writes back what changed, fenced by the lease, so
// that a process that lost the run never writes to it.
//
// What is deliberately not here: the workspace's own files (the user's
// code) travel with git, as the work does; the transcripts live in the
// session store.
package runstate

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// Root names one of the local folders a run's state lives in. A file is
// kept under its root's name and its slash path inside the root, so a
// machine with other absolute paths (another HOME, another checkout) lays
// it out in its own folder of the same role.
type Root string

const (
	// RunDir is the run directory (<workspace>/runs by default).
	RunDir Root = "run"
	// Human is the human's side of the run (human.Dir).
	Human Root = "human"
	// Workbench is the workbench (<workspace>/.flower).
	Workbench Root = "workbench"
	// CLIFiles is the CLI's folder of the workspace's project
	// (<config dir>/projects/<project key>): the outputs it kept whole
	// (tool-results); its transcripts are skipped, the store has them.
	CLIFiles Root = "cli"
)

// Places is where each root is on this machine. A root that is absent or
// empty is not kept.
type Places map[Root]string

// Holder says who holds a run: what a second process is told.
type Holder struct {
	Host string
	PID  int
	// Where names the holder's working copy (its host and folders): a
	// process that finds its predecessor had the same one keeps the
	// local files, which may be newer than what reached the backend.
	Where string
	// Since is when the holder took the run.
	Since time.Time
	// Beat is when the holder was last heard from, and TTL how long after
	// that the run is free for another (zero where not known).
	Beat time.Time
	TTL  time.Duration
}

func (h Holder) String() string {
	return fmt.Sprintf("%s (pid %d) since %s", h.Host, h.PID, h.Since.Local().Format("2006-01-02 15:04:05"))
}

// ErrBusy is wrapped by BusyError.
var ErrBusy = errors.New("the run is busy")

// BusyError says the run has a live writer elsewhere.
type BusyError struct {
	Run    string
	Holder Holder
}

func (e *BusyError) Error() string {
	msg := fmt.Sprintf("run %s is busy on %s", e.Run, e.Holder)
	if !e.Holder.Beat.IsZero() && e.Holder.TTL > 0 {
		ago := max(time.Since(e.Holder.Beat), 0).Round(time.Second)
		free := max(e.Holder.TTL-time.Since(e.Holder.Beat), 0).Round(time.Second)
		return msg + fmt.Sprintf(", last heard from %s ago: wait for it to end, or stop it there; if that machine is gone, the run is free in %s", ago, free)
	}
	return msg + ": wait for it to end, or stop it there"
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// ErrLeaseLost is wrapped when this process no longer holds the run:
// another took it over after this one stopped beating (paused, cut off).
// Nothing is written after it; the process must stop.
var ErrLeaseLost = errors.New("this process no longer holds the run (another took it over)")

// File is one file of a run's state as a backend keeps it.
type File struct {
	Root Root
	Path string // slash-separated, relative to the root
	Data []byte
	Mode fs.FileMode
}

// Change is one file written back: its whole content, or, when Append is
// set, bytes to add to a stored file that is Prefix bytes long.
type Change struct {
	Root   Root
	Path   string
	Data   []byte
	Mode   fs.FileMode
	Append bool
	Prefix int64
	// Deleted says the file is gone; Data is empty.
	Deleted bool
}

// Stored is a stored file's size and content hash, without its data.
type Stored struct {
	Root Root
	Path string
	Size int64
	Sum  [sha256.Size]byte
}

// Backend keeps runs' files beyond this machine.
type Backend interface {
	// Acquire makes this process run's only writer for ttl: it fails with
	// a *BusyError while another holder's lease is live, and takes over a
	// lease whose holder has not beaten for the ttl that holder took.
	Acquire(ctx context.Context, run string, me Holder, ttl time.Duration) (Lease, error)
}

// Lease is a held run. Every method that writes checks, in the same
// transaction, that the lease is still this one's, and fails with
// ErrLeaseLost, writing nothing, when it is not.
type Lease interface {
	// Previous is who held the run before (zero for a new run).
	Previous() Holder
	// Files calls fn for every stored file of the run.
	Files(ctx context.Context, fn func(File) error) error
	// Stored lists every stored file of the run by size and SHA-256,
	// without the data: what a writer reads after a Write that failed,
	// to learn what the backend holds (the commit may have succeeded and
	// only its reply been lost).
	Stored(ctx context.Context) ([]Stored, error)
	// Write stores changes at once: all or none.
	Write(ctx context.Context, changes []Change) error
	// Beat extends the lease by its ttl.
	Beat(ctx context.Context) error
	// Release gives the run up, so the next process need not wait.
	Release(ctx context.Context) error
}

// mode0600 is what a restored file gets when its mode was not kept.
const mode0600 fs.FileMode = 0o600

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}
