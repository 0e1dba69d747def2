package team

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/guard"
)

// A root worker runs each run as a user of its own: not nobody, no
// account's, no process's, not another run's. A process of the host that
// runs as nobody (the red team's) can then neither read a run's
// environment (its proxy token) nor trace or signal it; the same probe
// reads and traces a process that runs as nobody, as runs did before.
func TestEachRunOfARootWorkerIsAUserOfItsOwn(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI: a root worker's run users take root")
		}
		t.Skip("a root worker's run users take root")
	}
	if s := guard.DetectSandbox(); !s.Active() {
		t.Fatalf("bubblewrap cannot confine runs here: %s", s.Problem)
	}
	c, err := detectConfinement(false)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := machineUIDs()
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.withRunUser()
	if err != nil {
		t.Fatal(err)
	}
	defer first.release()
	second, err := c.withRunUser()
	if err != nil {
		t.Fatal(err)
	}
	defer second.release()
	for _, u := range []int{first.user.uid, second.user.uid} {
		if u == nobody || taken[u] || u < firstRunUID {
			t.Errorf("a run's user %d is the machine's (an account's or a process's) or nobody", u)
		}
	}
	if first.user.uid == second.user.uid {
		t.Fatalf("two runs share the user %d", first.user.uid)
	}

	const token = "flower-proxy-token-of-the-run"
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "120")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "FLOWER_API_TOKEN=" + token}
	cmd.SysProcAttr = runProcAttr()
	// What bubblewrap says when the run does not start (an *os.File:
	// the sandbox's processes write it themselves, no copying goroutine).
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stderr, stderr
	confined, info, err := first.confined(cmd, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := confined.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range confined.ExtraFiles {
		f.Close()
	}
	defer func() {
		_ = syscall.Kill(-confined.Process.Pid, syscall.SIGKILL)
		_ = confined.Wait()
	}()
	run := sandboxPID(info, 30*time.Second)
	if run <= 0 {
		t.Fatal("bubblewrap gave no PID of the run's process")
	}
	if got := procUID(t, run); got != first.user.uid {
		// (ci18 once saw -1 here: the run's process was gone at once.)
		said, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the run's process %d runs as %d, want its user %d; bubblewrap said: %q", run, got, first.user.uid, said)
	}

	// What runs as nobody on the host, as the red team's process did.
	asNobody := func(pid int) string {
		probe := strings.Join([]string{
			"cat /proc/" + strconv.Itoa(pid) + "/environ | tr '\\0' '\\n' | grep -q FLOWER_API_TOKEN && echo READ-ENVIRON",
			"timeout 10 strace -qq -e trace=none -p " + strconv.Itoa(pid) + " -o /dev/null & sleep 1; kill -0 $! 2>/dev/null && echo TRACED; kill $! 2>/dev/null",
			"kill -0 " + strconv.Itoa(pid) + " && echo SIGNALLED",
		}, "\n")
		out, _ := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", probe).CombinedOutput()
		return string(out)
	}
	got := asNobody(run)
	for _, bad := range []string{"READ-ENVIRON", "TRACED", "SIGNALLED", token} {
		if strings.Contains(got, bad) {
			t.Errorf("a host process running as nobody reached the run: %s\n%s", bad, got)
		}
	}

	// The control: a process that runs as nobody, as a root worker's runs
	// did, is read, traced and signalled by the same probe.
	control := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sleep", "120")
	control.Env = cmd.Env
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = control.Process.Kill()
		_ = control.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for procUID(t, control.Process.Pid) != nobody && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // setpriv has not changed user yet
	}
	got = asNobody(control.Process.Pid)
	for _, want := range []string{"READ-ENVIRON", "TRACED", "SIGNALLED"} {
		if !strings.Contains(got, want) {
			t.Errorf("the probe does not reach a process of nobody's (%s): it would show nothing\n%s", want, got)
		}
	}
}

// procUID is the real uid process pid runs as (-1 when gone).
func procUID(t *testing.T, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("Uid:")); ok {
			f := strings.Fields(string(rest))
			if len(f) > 0 {
				uid, _ := strconv.Atoi(f[0])
				return uid
			}
		}
	}
	return -1
}
