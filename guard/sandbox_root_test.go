//go:build linux

package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

// doorScene is a workspace, a HOME holding flower's .env, and, in the
// workspace, the real /tmp, HOME and /run, a unix-socket HTTP listener
// and a FIFO with a reader: everything a glance forced open might reach.
// Every file is readable and every socket and FIFO writable by anyone, so
// that only the sandbox stands between an ordinary user's glance and them.
type doorScene struct {
	root, ws, home, envFile string
	sockets, fifos          []string
	connections             atomic.Int64
	fifoBytes               atomic.Int64
}

func newDoorScene(t *testing.T) *doorScene {
	t.Helper()
	root, err := os.MkdirTemp("", "flower-doors-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	s := &doorScene{root: root, ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home")}
	s.envFile = filepath.Join(s.home, ".config", "flower", ".env")
	for p, body := range map[string]string{
		filepath.Join(s.ws, "a.txt"): "alpha\n",
		s.envFile:                    "ANTHROPIC_API_KEY=" + sceneKey + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := runIn(t, s.ws, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home}, "git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init"); code != 0 {
		t.Fatalf("git: %s", out)
	}
	if err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("flower-door-%d", time.Now().UnixNano())
	dirs := []string{s.ws, s.home, root}
	if os.Geteuid() == 0 {
		dirs = append(dirs, "/run")
	}
	for i, dir := range dirs {
		s.listen(t, filepath.Join(dir, fmt.Sprintf("%s-%d.sock", tag, i)))
		s.fifo(t, filepath.Join(dir, fmt.Sprintf("%s-%d.fifo", tag, i)))
	}
	return s
}

// listen serves HTTP on a unix socket at path, counting connections.
func (s *doorScene) listen(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o777); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "reached\n") }),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.connections.Add(1)
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); os.Remove(path) })
	s.sockets = append(s.sockets, path)
}

// fifo makes a FIFO at path with a reader that counts what arrives.
func (s *doorScene) fifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, it never blocks and never sees end of file.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 512)
		for {
			n, err := f.Read(buf)
			s.fifoBytes.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { f.Close(); os.Remove(path) })
	s.fifos = append(s.fifos, path)
}

// attacks are what a glance the parser let through by mistake would try,
// as root with bubblewrap's capabilities or as anyone.
func (s *doorScene) attacks() []string {
	q := shellQuote
	out := []string{
		"mount -o remount,rw / ; mount -o remount,bind,rw " + q(s.ws) + " ; echo x > pwned-remount",
		"mount -t tmpfs none " + q(s.ws) + " ; mount --bind /dev/shm " + q(s.home) + " ; touch " + q(filepath.Join(s.home, "pwned-mount")),
		"umount -l /tmp ; umount -l /run ; umount -l " + q(s.envFile) + " ; cat " + q(s.envFile) + " ; touch " + q(filepath.Join(s.root, "pwned-umount")),
		"umount -l " + q(s.ws) + " ; umount -l / ; echo x >> a.txt ; echo x > .git/pwned",
		"nsenter -t 1 -m -u -i -n -p -- sh -c 'touch " + filepath.Join(s.ws, "pwned-nsenter") + "; cat " + s.envFile + "'",
		"nsenter -a -t 1 -- touch " + q(filepath.Join(s.root, "pwned-nsenter2")),
		"echo x > /proc/1/root" + s.ws + "/pwned-proc1 ; echo x > /proc/self/root" + s.ws + "/pwned-self ; echo x > /proc/self/cwd/pwned-cwd",
		"echo x >> /proc/1/cwd/a.txt ; ln -s /proc/1/root/ r; cat /proc/1/root" + s.envFile,
		"cat " + q(s.envFile) + " ~/.config/flower/.env; grep -r " + sceneKey[:12] + " " + q(s.home),
	}
	for _, sock := range s.sockets {
		out = append(out, "curl -s --max-time 3 --unix-socket "+q(sock)+" http://x/ ; echo hi > /dev/null")
	}
	for _, f := range s.fifos {
		out = append(out, "echo pwned > "+q(f)+" ; echo pwned >> "+q(f)+" ; cat /etc/hostname | tee "+q(f))
	}
	return out
}

// glanceAs is the command the wall hands the CLI for cmd, with the parser
// forced open, run by bash in the workspace as the given user (0: this
// process's), with HOME the scene's.
func (s *doorScene) glanceAs(t *testing.T, g *wall, uid int, cmd string) string {
	t.Helper()
	input, _ := json.Marshal(map[string]any{"command": cmd})
	acceptEveryGlance.Store(true)
	res, err := g.check(context.Background(), &claude.HookInput{ToolName: "Bash", ToolInput: input, Cwd: s.ws})
	acceptEveryGlance.Store(false)
	if err != nil || res == nil || res.HookSpecificOutput == nil || res.HookSpecificOutput.PermissionDecision != claude.DecisionAllow {
		t.Fatalf("the wall forced open did not allow %q: %v %s", cmd, err, mustJSON(res))
	}
	var got struct{ Command string }
	if err := json.Unmarshal(res.HookSpecificOutput.UpdatedInput, &got); err != nil {
		t.Fatal(err)
	}
	line := got.Command
	if uid != 0 {
		line = fmt.Sprintf("exec setpriv --reuid=%d --regid=%d --clear-groups bash -c %s", uid, uid, shellQuote(line))
	}
	out, _ := runIn(t, s.ws, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home, "LANG=C.UTF-8"}, line)
	return out
}

// TestSandboxHoldsAsRootAndAsAnyone: with the parser forced open, glances
// as root and as nobody try mount, umount, remount, nsenter, /proc, unix
// sockets and FIFOs in the workspace, HOME, /tmp and /run: nothing outside
// changes, no listener is connected to, no FIFO gets a byte, the hidden
// .env is never read. Outside the sandbox the same user reaches the
// listeners and the FIFOs, so the doors are real.
func TestSandboxHoldsAsRootAndAsAnyone(t *testing.T) {
	users := map[string]int{"this user": 0}
	if os.Geteuid() == 0 {
		users["nobody"] = 65534
	} else {
		t.Log("not root: the glances run as this (ordinary) user only")
	}
	for who, uid := range users {
		t.Run(who, func(t *testing.T) {
			s := newDoorScene(t)
			g := sandboxWall(t, Wall{Glance: true, Delegate: true, Roots: []string{s.root}, GlanceTimeout: 10 * time.Second})
			g.sandbox.Jail = jailCopy(t)

			// The doors are open outside the sandbox.
			s.glanceAsBare(t, uid, "curl -s --max-time 3 --unix-socket "+shellQuote(s.sockets[0])+" http://x/; echo hi > "+shellQuote(s.fifos[0]))
			waitFor(t, func() bool { return s.connections.Load() > 0 && s.fifoBytes.Load() > 0 }, "outside the sandbox, the listener and the FIFO are reached")
			s.connections.Store(0)
			s.fifoBytes.Store(0)

			before := snapshot(t, s.root)
			for _, cmd := range s.attacks() {
				if out := s.glanceAs(t, g, uid, cmd); strings.Contains(out, sceneKey[:12]) || strings.Contains(out, "reached") {
					t.Errorf("%s: the glance read the key or reached a listener:\n%s", cmd, out)
				}
			}
			// The listeners and readers run in this process: give them the
			// time a late byte would take.
			time.Sleep(200 * time.Millisecond)
			if n := s.connections.Load(); n > 0 {
				t.Errorf("glances connected %d times to the unix-socket listeners", n)
			}
			if n := s.fifoBytes.Load(); n > 0 {
				t.Errorf("glances wrote %d bytes to the FIFOs", n)
			}
			if diff := changes(before, snapshot(t, s.root)); diff != "" {
				t.Errorf("the glances changed the scene:\n%s", diff)
			}
			// A legitimate glance still works, and may use /dev/null.
			if out := s.glanceAs(t, g, uid, "cat a.txt 2>/dev/null; git log --format=%s"); out != "alpha\ninit\n" {
				t.Errorf("a plain glance in the sandbox printed %q", out)
			}
		})
	}
}

// glanceAsBare runs line as uid outside any sandbox.
func (s *doorScene) glanceAsBare(t *testing.T, uid int, line string) {
	t.Helper()
	if uid != 0 {
		line = fmt.Sprintf("exec setpriv --reuid=%d --regid=%d --clear-groups bash -c %s", uid, uid, shellQuote(line))
	}
	runIn(t, s.ws, []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.home}, line)
}

// jailCopy is this test binary copied where anyone may run it (go test
// keeps it in a folder only its user can enter): the sandbox's jail.
func jailCopy(t *testing.T) string {
	t.Helper()
	exe, err := jailExecutable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "flower-jail-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "guard.test")
	if err := os.WriteFile(copyPath, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return copyPath
}

// waitFor waits up to ten seconds for ok.
func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("not seen in ten seconds: %s", what)
}
