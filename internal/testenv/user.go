package testenv

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Nobody is the ordinary user a root test drops to (65534, nobody).
const Nobody = 65534

// asNobodyEnv marks the run of a test that AsOrdinaryUser started.
const asNobodyEnv = "FLOWER_TEST_AS_NOBODY"

// AsOrdinaryUser makes a boundary's test hold for root and for an ordinary
// user alike: run as root, it runs the calling top-level test once more,
// in a copy of this test binary, as nobody (setpriv), with a HOME and
// TMPDIR of that user's, and fails t when that run does not pass; run as
// an ordinary user (or in that run) it does nothing, since the test itself
// is the ordinary user's. The caller goes on as it is either way.
func AsOrdinaryUser(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv(asNobodyEnv) != "" {
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		missing(t, "setpriv is missing, so the test cannot run as an ordinary user too; fix: apt-get install util-linux")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "flower-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "test.bin")
	if err := CopyExecutable(exe, bin); err != nil {
		t.Fatal(err)
	}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, Nobody, Nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--reuid="+strconv.Itoa(Nobody), "--regid="+strconv.Itoa(Nobody), "--clear-groups",
		bin, "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, asNobodyEnv + "=1", "CI=" + os.Getenv("CI")}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("as the ordinary user %d the test did not pass (%v):\n%s", Nobody, err, out)
	}
}

// NobodyCommand is name with args run as nobody (setpriv), for a root test
// that checks what another user can reach; it skips t (fails it under CI)
// without setpriv, and must be called as root.
func NobodyCommand(t *testing.T, ctx context.Context, name string, args ...string) *exec.Cmd {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		missing(t, "setpriv is missing; fix: apt-get install util-linux")
	}
	return exec.CommandContext(ctx, setpriv, append([]string{"--reuid=" + strconv.Itoa(Nobody), "--regid=" + strconv.Itoa(Nobody), "--clear-groups", name}, args...)...)
}

// OwnedTempDir is a new folder of uid's under parent (the temporary
// folder when ""), removed when t ends: a place of an ordinary user's for
// a root test (its HOME, a worker's --dir, a file kept where an operator
// would keep it).
func OwnedTempDir(t testing.TB, parent string, uid int) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "flower-owned-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// CopyExecutable copies the program at src to dst (a new file, 0755):
// a binary built where only root may look, put where nobody can run it.
func CopyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
