package team

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/guard"
)

// nobody is the ordinary user the confinement is tried as besides root.
const nobody = 65534

// A confined run, whether its worker is root or an ordinary user, sees
// and changes nothing of the machine's private parts but its own folders:
// not another run's checkout beside it, not the worker's folder or the
// operator's HOME and credentials, not /tmp or /run; not another process
// (its own PID namespace); it holds no capability and cannot mount,
// unmount or remount anything; its checkout's .git is read-only; what it
// writes in its checkout is there for the worker.
func TestAConfinedRunSeesOnlyItsOwnFolders(t *testing.T) {
	t.Parallel()
	s := guard.DetectSandbox()
	if !s.Active() {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI: bubblewrap cannot confine runs here: %s", s.Problem)
		}
		t.Skip(s.Problem)
	}
	users := []struct {
		name string
		uid  int
	}{{"as the worker's user (" + strconv.Itoa(os.Getuid()) + ")", os.Getuid()}}
	if os.Getuid() == 0 {
		users = append(users, struct {
			name string
			uid  int
		}{"as an ordinary user", nobody})
	}
	// What an operator keeps outside the folders a run is given (the red
	// team's: a --db-file under /var/lib, a password file under /etc, a
	// token under /srv or /opt), readable by every user on the host.
	planted := plantOutsideTheRun(t)
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			base, err := os.MkdirTemp("", "confine-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			if err := os.Chmod(base, 0o755); err != nil {
				t.Fatal(err)
			}
			workerDir, operator := filepath.Join(base, "worker"), filepath.Join(base, "operator")
			run, other := filepath.Join(workerDir, "r1"), filepath.Join(workerDir, "r2")
			files := map[string]string{
				filepath.Join(run, "work", ".git", "config"):            "[core]\n",
				filepath.Join(run, "work", "mine.txt"):                  "mine\n",
				filepath.Join(other, "work", "theirs.txt"):              "other run's secret\n",
				filepath.Join(operator, ".claude", ".credentials.json"): "operator's token\n",
				filepath.Join(base, "outside.txt"):                      "outside\n",
			}
			for p, body := range files {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rw := []string{filepath.Join(run, "work"), filepath.Join(run, "home"), filepath.Join(run, "state"), filepath.Join(run, "tmp")}
			for _, d := range rw {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			if u.uid != os.Getuid() {
				if err := filepath.Walk(base, func(p string, _ os.FileInfo, err error) error {
					if err != nil {
						return err
					}
					return os.Lchown(p, u.uid, u.uid)
				}); err != nil {
					t.Fatal(err)
				}
			}

			probe := strings.Join([]string{
				"echo uid=$(id -u)",
				"grep CapEff /proc/self/status",
				"echo procs=$(ls /proc | grep -c '^[0-9]')",
				"cat " + filepath.Join(other, "work", "theirs.txt") + " && echo READ-OTHER",
				"echo \"workerdir=[$(ls -A " + workerDir + " | tr '\\n' ' ')]\"",
				"cat " + filepath.Join(operator, ".claude", ".credentials.json") + " && echo READ-OPERATOR",
				"cat " + filepath.Join(base, "outside.txt") + " && echo READ-OUTSIDE",
				"ls -A /run /root /home 2>/dev/null | grep -v ':$' | grep -q . && echo SEES-PRIVATE",
				"ls -A /tmp | grep -v '^" + filepath.Base(base) + "$' | grep -q . && echo SEES-TMP",
				"cat /proc/" + strconv.Itoa(os.Getpid()) + "/cmdline && echo SEES-WORKER",
				"mount -t tmpfs none " + filepath.Join(run, "work") + " && echo MOUNTED",
				"umount -l " + filepath.Join(run, "work") + " && echo UNMOUNTED",
				"mount -o remount,rw / && echo REMOUNTED",
				"nsenter -t 1 -m true && echo NSENTER",
				"echo evil >> .git/config && echo WROTE-GIT",
				"echo ok > made.txt && echo made",
				"touch /beside-the-run && echo WROTE-ROOT",
				// The machine's programs work: the linker, Debian's
				// alternatives (awk), names, time, git, python.
				"awk 'BEGIN { print \"AWK-OK\" }'",
				"echo name=$(id -un)",
				"date +%Z | grep -q . && echo DATE-OK",
				"git --version >/dev/null && echo GIT-OK",
				"/usr/bin/python3 -c 'print(\"PY-OK\")'",
				// The glance sandbox nests inside the run's.
				"bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-all --die-with-parent --new-session -- true && echo NESTED-OK",
				"echo x > " + filepath.Join(other, "work", "theirs.txt") + " ; true",
			}, "\n")
			for i, p := range planted {
				probe += "\ncat " + p + " && echo READ-PLANTED-" + strconv.Itoa(i)
			}
			cmd := exec.Command("/bin/sh", "-c", probe)
			cmd.Dir = filepath.Join(run, "work")
			cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + filepath.Join(run, "home")}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if u.uid != os.Getuid() {
				cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.uid), Groups: []uint32{}}
			}
			c := confinement{bwrap: s.Program}
			wantUID, wantName := u.uid, "nobody"
			if u.uid == 0 {
				// A root worker: its runs run as users of their own.
				if c, err = detectConfinement(false); err != nil {
					t.Fatal(err)
				}
				if c, err = c.withRunUser(); err != nil {
					t.Fatal(err)
				}
				defer c.release()
				wantUID, wantName = c.user.uid, "flower-run"
				if err := c.handOver(run); err != nil {
					t.Fatal(err)
				}
			}
			confined, info, err := c.confined(cmd, rw, []string{filepath.Join(run, "work", ".git")}, []string{workerDir, operator})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			confined.Stdout, confined.Stderr = &out, &out
			if err := confined.Start(); err != nil {
				t.Fatal(err)
			}
			for _, f := range confined.ExtraFiles {
				f.Close()
			}
			if pid := sandboxPID(info, 10*time.Second); pid <= 0 {
				t.Errorf("bubblewrap gave no PID of the run's process (%d)", pid)
			}
			done := make(chan error, 1)
			go func() { done <- confined.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Logf("the probe ended: %v", err)
				}
			case <-time.After(time.Minute):
				_ = syscall.Kill(-confined.Process.Pid, syscall.SIGKILL)
				t.Fatal("the probe did not end in a minute")
			}
			got := out.String()
			t.Logf("inside:\n%s", got)
			for _, bad := range []string{"READ-OTHER", "READ-OPERATOR", "READ-OUTSIDE", "SEES-PRIVATE", "SEES-WORKER", "MOUNTED", "UNMOUNTED", "REMOUNTED", "NSENTER", "WROTE-GIT", "SEES-TMP", "other run's secret", "operator's token"} {
				if strings.Contains(got, bad) {
					t.Errorf("inside the confinement: %s", bad)
				}
			}
			if !strings.Contains(got, "workerdir=[r1 ]") {
				t.Errorf("the worker's folder shows more than the run's own folder")
			}
			if !strings.Contains(got, "CapEff:\t0000000000000000") {
				t.Errorf("the run holds capabilities")
			}
			if !strings.Contains(got, "uid="+strconv.Itoa(wantUID)+"\n") || wantUID == 0 || wantUID == nobody && u.uid == 0 {
				t.Errorf("the run runs as the wrong user, want %d (a root worker's run as one of its own, an ordinary worker's as itself)", wantUID)
			}
			for i, p := range planted {
				if strings.Contains(got, "READ-PLANTED-"+strconv.Itoa(i)) || strings.Contains(got, "planted secret") {
					t.Errorf("the run read %s, which is on no list of what it may see", p)
				}
			}
			if strings.Contains(got, "WROTE-ROOT") {
				t.Errorf("the run wrote beside its folders, in the confinement's root")
			}
			for _, works := range []string{"AWK-OK", "DATE-OK", "GIT-OK", "PY-OK"} {
				if !strings.Contains(got, works) {
					t.Errorf("a program of the machine does not work inside the confinement: no %s", works)
				}
			}
			if !strings.Contains(got, "name="+wantName+"\n") {
				t.Errorf("the run's user has no name inside, want %s (no /etc/passwd?)", wantName)
			}
			if !strings.Contains(got, "NESTED-OK") {
				t.Errorf("the glance sandbox cannot nest inside the run's")
			}
			if !strings.Contains(got, "made") {
				t.Errorf("the run could not write its own checkout")
			}
			if b, err := os.ReadFile(filepath.Join(run, "work", "made.txt")); err != nil || string(b) != "ok\n" {
				t.Errorf("what the run wrote in its checkout is not there for the worker: %q, %v", b, err)
			}
			for p, body := range files {
				if b, err := os.ReadFile(p); err != nil || string(b) != body {
					t.Errorf("%s changed: %q, %v", p, b, err)
				}
			}
		})
	}
}

// plantOutsideTheRun writes a secret, readable by all, in a new folder
// under each of /etc, /var/lib, /srv and /opt (those that exist), and
// returns their paths; they go with the test. It takes root.
func plantOutsideTheRun(t *testing.T) []string {
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI: the confinement test plants files under /etc and /var/lib, which takes root")
		}
		t.Log("not root: no file planted under /etc, /var/lib, /srv, /opt")
		return nil
	}
	var paths []string
	for _, parent := range []string{"/etc", "/var/lib", "/srv", "/opt"} {
		if _, err := os.Stat(parent); err != nil {
			continue
		}
		dir, err := os.MkdirTemp(parent, "flower-confine-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		p := filepath.Join(dir, "secret")
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("planted secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// A worker that cannot confine its runs (no bubblewrap here) does not
// start, and says what to do; told --unconfined, it runs them as they are.
func TestAWorkerWithoutBubblewrapRefusesUnlessToldUnconfined(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no bwrap, no setpriv
	_, err := detectConfinement(false)
	if !errors.Is(err, ErrUnconfined) {
		t.Fatalf("without bubblewrap: %v, want ErrUnconfined", err)
	}
	for _, want := range []string{"bubblewrap", "--unconfined"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %s: %v", want, err)
		}
	}
	c, err := detectConfinement(true)
	if err != nil || c.bwrap != "" {
		t.Fatalf("--unconfined: %+v, %v", c, err)
	}
	cmd := exec.Command("/bin/true")
	if got, info, err := c.confined(cmd, nil, nil, nil); err != nil || got != cmd || info != nil {
		t.Errorf("an unconfined worker wrapped its run: %v %v", got.Args, err)
	}
}
