package app

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/internal/testenv"
)

// A worker says, when it starts, whom its runs run as (issue 41, point
// 8): as root, each a user of its own; as an ordinary user (nobody here,
// with a database role of its own, as an operator would give it), the
// worker's own user, and what that exposes. The built binary on a
// terminal, in English and Chinese, 80 and 160 columns.
func TestAWorkerSaysWhomItsRunsRunAs(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatal("this test starts a worker as root and one as nobody: it takes root")
	}
	// The binary where nobody can run it (the tests' build folder is
	// root's alone).
	shared, err := os.MkdirTemp("", "flower-runusers-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	bin := filepath.Join(shared, "flower")
	if err := testenv.CopyExecutable(flowerBin, bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
				t.Parallel()
				t1 := func(k string) string { return texts[k][map[bool]int{false: 0, true: 1}[l.english]] }
				size := &pty.Winsize{Rows: 50, Cols: cols}

				env := hermeticEnv(t, l.locale, "FLOWER_DATABASE_URL="+pgtest.Database(t))
				p := startCmdPTYWinsize(t, exec.Command(bin, "worker", "--dir", t.TempDir(), "--name", "root-"+l.name), t.TempDir(), env, size)
				p.expectFlat(t, t1("teamRunUsers"))
				stopWorker(t, p)
				checkLanguage(t, l.english, p.screen())

				// An ordinary user's worker: its HOME, its --dir and its
				// database role are its own.
				home, dir := testenv.OwnedTempDir(t, "", testenv.Nobody), testenv.OwnedTempDir(t, "", testenv.Nobody)
				env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TERM=xterm", "LANG=" + l.locale,
					"FLOWER_DATABASE_URL=" + pgtest.DatabaseFor(t, "nobody")}
				cmd := exec.Command(bin, "worker", "--dir", dir, "--name", "nobody-"+l.name)
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: testenv.Nobody, Gid: testenv.Nobody, Groups: []uint32{}}}
				p = startCmdPTYWinsize(t, cmd, home, env, size)
				p.expectFlat(t, fmt.Sprintf(t1("teamRunsShareUser"), "nobody"))
				if strings.Contains(flat(p.screen()), flat(t1("teamRunUsers"))) {
					t.Errorf("an ordinary user's worker says its runs have users of their own:\n%s", p.screen())
				}
				stopWorker(t, p)
				checkLanguage(t, l.english, p.screen())
			})
		}
	}
}

// stopWorker sends Ctrl-C, as the person at the worker's terminal would,
// and waits until the worker has left.
func stopWorker(t *testing.T, p *ptyRun) {
	t.Helper()
	if _, err := p.tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	if code := p.exitWithin(t, 2*time.Minute); code != 0 {
		t.Errorf("the worker stopped by Ctrl-C: exit %d\n%s", code, p.screen())
	}
}
