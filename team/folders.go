package team

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// A run's folder under the worker's --dir (its checkout, HOME, state, tmp
// and attempt logs) is the worker's cache of what the database and the
// branch hold. It goes when the run ends achieved, stopped or cancelled
// (or KeepEnded later, for an operator or a test to look into); a
// failed (parked) run's stays KeepFailed for a person to look into (its
// unpushed work may be there: see attempt.park's reasons), and so does the
// folder of a run that is not over (it may come back to this worker).
// Each quarter round looks at every folder, so folders of runs another
// worker ended, a pruned run's, and those a stopped worker left are
// removed too.

// runFolderRE is a run's folder name under --dir.
var runFolderRE = regexp.MustCompile(`^r([1-9][0-9]*)$`)

// sweepFolders removes the folders under the worker's --dir that are no
// longer needed (see above); only ids, when given, are looked at.
func (w *Worker) sweepFolders(ctx context.Context, ids ...int64) {
	if len(ids) == 0 {
		entries, err := os.ReadDir(w.o.Dir)
		if err != nil {
			return // a missing or unreadable --dir is the health check's to say
		}
		for _, e := range entries {
			if m := runFolderRE.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
				id, _ := strconv.ParseInt(m[1], 10, 64)
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, w.o.Rescue/4)
	defer cancel()
	// The database's clock decides a failed run's age, as it does every
	// other age.
	rows, err := w.t.pool.Query(cctx, `select r.id, (`+shownState+` in ('achieved', 'stopped', 'cancelled')
				and coalesce(r.ended_at, r.updated_at) <= now() - make_interval(secs => $3))
			or (`+shownState+` = 'failed' and coalesce(r.ended_at, r.updated_at) < now() - make_interval(secs => $2))
		from unnest($1::bigint[]) as i(id) left join team_runs r on r.id = i.id left join river_job j on j.id = r.job_id`,
		ids, w.o.KeepFailed.Seconds(), w.o.KeepEnded.Seconds())
	if err != nil {
		return
	}
	type verdict struct {
		id   *int64
		done *bool
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (verdict, error) {
		var v verdict
		return v, row.Scan(&v.id, &v.done)
	})
	if err != nil {
		return
	}
	known := map[int64]bool{}
	var gone []int64
	for _, v := range found {
		if v.id != nil {
			known[*v.id] = true
			if v.done != nil && *v.done {
				gone = append(gone, *v.id)
			}
		}
	}
	for _, id := range ids {
		if !known[id] {
			gone = append(gone, id) // pruned, or of another team's database
		}
	}
	for _, id := range gone {
		w.removeFolder(id)
	}
}

// removeFolder removes run id's folder unless this worker works the run.
// The folder is renamed aside under the worker's lock first, so that an
// attempt starting meanwhile makes a fresh one rather than lose half of it.
func (w *Worker) removeFolder(id int64) {
	dir := filepath.Join(w.o.Dir, RunName(id))
	aside := filepath.Join(w.o.Dir, ".removing-"+RunName(id)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	w.mu.Lock()
	_, working := w.attempts[id]
	var err error
	if !working {
		err = os.Rename(dir, aside)
	}
	w.mu.Unlock()
	if working || err != nil {
		return
	}
	size := treeSize(aside)
	if err := removeTree(aside); err != nil {
		w.log.Warn("flower worker: a run's folder could not be removed", "run", RunName(id), "dir", aside, "err", err)
		return
	}
	w.log.Info("flower worker: removed the folder of an ended run", "run", RunName(id), "bytes", size)
}

// treeSize is the bytes the files under dir take on disk (their blocks),
// for the log line that says what a removal freed.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += diskBytes(fi)
		}
		return nil
	})
	return n
}

// removeTree removes dir and everything in it, also folders a run made
// read-only (a Go module cache, a chmod 555): those are made writable
// first, which as an ordinary user is the only way to empty them.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// diskBytes is what fi takes on disk: its blocks where the system says.
func diskBytes(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
