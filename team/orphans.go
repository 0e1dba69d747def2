package team

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// killOrphans kills what an earlier life of this worker left running in
// its folders, and returns how many it killed. A root worker's run starts
// in two stages (bubblewrap as root, then setpriv and bubblewrap as the
// run's user); a worker killed in the milliseconds between them leaves the
// second stage without its parent-death signal (a change of user clears
// it, and a parent already gone never sends it), waiting forever. The
// chaos test found such a process after every worker had stopped. They are
// known by their program (this worker's bubblewrap or setpriv), the
// worker's --dir on their command line, and not being this worker's own
// processes: a person's `tail -f` of a run's log is none of them. The
// worker looks when it starts and when it stops.
func (w *Worker) killOrphans() int {
	if w.confine.bwrap == "" {
		return 0 // unconfined: a run's process dies with its worker
	}
	procs := processes()
	mine := map[int]bool{os.Getpid(): true}
	for changed := true; changed; {
		changed = false
		for pid, p := range procs {
			if !mine[pid] && mine[p.ppid] {
				mine[pid] = true
				changed = true
			}
		}
	}
	mark := []byte(filepath.Clean(w.o.Dir) + string(filepath.Separator))
	killed := 0
	for pid, p := range procs {
		program, _, _ := bytes.Cut(p.cmdline, []byte{0})
		if mine[pid] || !bytes.Contains(p.cmdline, mark) || (string(program) != w.confine.bwrap && string(program) != w.confine.setpriv) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
			w.log.Warn("flower worker: killed a process an earlier life of this worker left running in its folder",
				"pid", pid, "command", strings.ReplaceAll(string(bytes.TrimRight(p.cmdline, "\x00")), "\x00", " "))
		}
	}
	return killed
}

type process struct {
	ppid    int
	cmdline []byte
}

// processes reads every process's parent and command line from /proc
// (none where there is no /proc: nothing is killed).
func processes() map[int]process {
	out := map[int]process{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command's name may hold spaces and parentheses: the fields
		// follow the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = process{ppid: ppid, cmdline: cmdline}
	}
	return out
}
