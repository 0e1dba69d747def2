package team

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/flowerrun/flower/internal/atomicfile"
)

// A root worker runs each run as a user of its own: one no account of
// the machine has and no process of it runs as, so that nothing on the
// host (a service running as nobody, another run) shares the run's uid
// and with it the right to read its environment (the proxy token) or to
// trace it. The users come from a range of their own; a lock file per uid
// under runUsersDir, held while the run lives, keeps two runs of any
// worker on this machine from sharing one.
const (
	firstRunUID = 1_500_000_000
	runUIDCount = 1 << 16
)

// runUsersDir holds the locks and the passwd and group files that name
// each run user (bound over /etc's inside its confinement).
var runUsersDir = "/run/flower/run-users"

// runUser is the user one run (or one probe of the CLI) runs as.
type runUser struct {
	uid    int
	lock   *os.File
	passwd string // /etc/passwd as the run sees it: the machine's, and its own
	group  string
}

// release gives the uid back: the lock goes with the file.
func (u *runUser) release() {
	if u != nil && u.lock != nil {
		u.lock.Close()
		u.lock = nil
	}
}

// takeRunUser finds the first uid of the range that is free here (no
// account, no process, no lock) and holds it. The lowest free one, so that
// the files under runUsersDir stay as few as the runs this machine ever
// had at once.
func takeRunUser() (*runUser, error) {
	if err := os.MkdirAll(runUsersDir, 0o755); err != nil {
		return nil, fmt.Errorf("team: a folder for the users of runs: %w", err)
	}
	taken, err := machineUIDs()
	if err != nil {
		return nil, err
	}
	for i := range runUIDCount {
		uid := firstRunUID + i
		if taken[uid] {
			continue
		}
		base := filepath.Join(runUsersDir, strconv.Itoa(uid))
		f, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("team: a lock for the users of runs: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		u := &runUser{uid: uid, lock: f, passwd: base + ".passwd", group: base + ".group"}
		if err := u.writeNames(); err != nil {
			u.release()
			return nil, err
		}
		return u, nil
	}
	return nil, fmt.Errorf("team: all %d users of runs (%d and up) are in use on this machine", runUIDCount, firstRunUID)
}

// writeNames writes the machine's /etc/passwd and /etc/group with the run
// user added (flower-run), so that what looks the user up (id, git's
// identity, a shell's prompt) finds a name.
func (u *runUser) writeNames() error {
	id := strconv.Itoa(u.uid)
	for _, f := range []struct{ host, path, line string }{
		{"/etc/passwd", u.passwd, "flower-run:x:" + id + ":" + id + ":a flower run:/nonexistent:/bin/sh\n"},
		{"/etc/group", u.group, "flower-run:x:" + id + ":\n"},
	} {
		b, err := os.ReadFile(f.host)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		if err := atomicfile.Write(f.path, append(b, f.line...), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// machineUIDs are the uids this machine's accounts have and its processes
// run as (real, effective, saved and filesystem).
func machineUIDs() (map[int]bool, error) {
	taken := map[int]bool{}
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if f := strings.Split(line, ":"); len(f) > 2 {
				if uid, err := strconv.Atoi(f[2]); err == nil {
					taken[uid] = true
				}
			}
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("team: the processes of this machine: %w", err)
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
				for _, v := range strings.Fields(rest) {
					if uid, err := strconv.Atoi(v); err == nil {
						taken[uid] = true
					}
				}
				break
			}
		}
	}
	return taken, nil
}
