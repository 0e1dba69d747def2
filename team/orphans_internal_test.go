package team

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A worker kills the run processes an earlier life of it left behind (a
// second stage of bubblewrap whose worker was killed as it started, the
// chaos test's find) and nothing else: not its own processes, not a
// person's command that names a run's folder.
func TestAWorkerKillsWhatAnEarlierLifeLeftRunningInItsFolder(t *testing.T) {
	dir := t.TempDir()
	fakeBwrap := filepath.Join(t.TempDir(), "bwrap")
	w := &Worker{o: WorkerOptions{Dir: dir}, confine: confinement{bwrap: fakeBwrap}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	args := []string{"-c", "sleep 600; :", "stage", "--chdir", filepath.Join(dir, "r1", "work")}

	// Started in the background of a shell that exits: its parent is gone,
	// as a killed worker's is.
	pidFile := filepath.Join(t.TempDir(), "pid")
	orphan := exec.Command("bash", "-c", `(exec -a "$0" sh "$@" </dev/null >/dev/null 2>&1) & echo $! > `+pidFile, fakeBwrap)
	orphan.Args = append(orphan.Args, args...)
	if out, err := orphan.CombinedOutput(); err != nil {
		t.Fatalf("starting the orphan: %v\n%s", err, out)
	}
	var orphanPID int
	for deadline := time.Now().Add(30 * time.Second); orphanPID == 0; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		orphanPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if time.Now().After(deadline) {
			t.Fatal("the orphan never said its pid")
		}
	}
	t.Cleanup(func() { syscall.Kill(orphanPID, syscall.SIGKILL) })

	// The worker's own run process, and a person's command on a run's log.
	own := &exec.Cmd{Path: "/bin/sh", Args: append([]string{fakeBwrap}, args...)}
	person := exec.Command("sh", "-c", "sleep 600; :", "tail", "-f", filepath.Join(dir, "r1", "attempt-1.log"))
	for _, c := range []*exec.Cmd{own, person} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	// Until the orphan's command line is its own (bash forked, then exec'd).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(orphanPID) + "/cmdline")
		if strings.HasPrefix(string(b), fakeBwrap+"\x00") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan's command line is %q", b)
		}
	}

	if n := w.killOrphans(); n != 1 {
		t.Errorf("killed %d processes, want the orphan alone", n)
	}
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(orphanPID, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(orphanPID) + "/stat"); strings.Contains(string(b), ") Z ") {
			break // dead, waiting for its new parent to reap it
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan still lives")
		}
	}
	for _, c := range []*exec.Cmd{own, person} {
		if err := c.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("%v was killed: %v", c.Args, err)
		}
	}
	// Unconfined, nothing is looked for.
	w.confine.bwrap = ""
	if n := w.killOrphans(); n != 0 {
		t.Errorf("an unconfined worker killed %d processes", n)
	}
}
