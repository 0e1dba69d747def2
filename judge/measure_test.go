package judge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/internal/testenv"
)

// measureOne measures one command in ws, with a bound on the whole call
// so that a hang fails the test instead of stalling it.
func measureOne(t *testing.T, ws, command string, o MeasureOptions) Measurement {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ms := Measure(ctx, ws, []Item{{ID: "c1", Text: "the check", Command: command}}, o)
	if len(ms) != 1 {
		t.Fatalf("Measure returned %d measurements for one command item", len(ms))
	}
	return ms[0]
}

// treeDigest is every path under dir with its type, mode, size, time and
// content (a symlink's target): what "byte-identical" means here.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %d", rel, info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(" -> " + target)
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %d %x", len(data), sha256.Sum256(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func gitRepo(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "-q")
	if err := os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "doomed.txt"), []byte("doomed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("keep.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	run("add", "-A")
	run("commit", "-q", "-m", "first")
	return ws
}

func TestMeasureLeavesTheWorkspaceByteIdentical(t *testing.T) {
	testenv.Sandbox(t)
	testenv.AsOrdinaryUser(t)
	ws := gitRepo(t)
	before := treeDigest(t, ws)
	// The command sees the workspace writable: it writes, deletes,
	// commits and rewrites history, and succeeds.
	m := measureOne(t, ws, `set -e
echo changed >> keep.txt
rm doomed.txt
echo new > new.txt
git -c user.name=x -c user.email=x@localhost add -A
git -c user.name=x -c user.email=x@localhost commit -q -m gaming
git -c user.name=x -c user.email=x@localhost commit -q --amend -m rewritten
git log --oneline | wc -l
echo wrote-everything`, MeasureOptions{})
	if m.Err != "" || m.Exit != 0 || !strings.Contains(m.Head, "wrote-everything") {
		t.Fatalf("the writing command did not run to its end in the sandbox: %+v", m)
	}
	if after := treeDigest(t, ws); after != before {
		t.Fatalf("the workspace changed under a measurement:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if !strings.Contains(m.Sandbox, "throwaway") {
		t.Errorf("Sandbox = %q, want it to say the layer is throwaway", m.Sandbox)
	}
}

func TestMeasureHoldsTheMachineReadOnlyAndHidesCredentials(t *testing.T) {
	testenv.Sandbox(t)
	testenv.AsOrdinaryUser(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	for name, content := range map[string]string{
		".claude/.credentials.json": "secret-oauth-credential",
		".claude.json":              "secret-claude-json",
		".config/flower/.env":       "ANTHROPIC_API_KEY=secret-flower-env",
		".cache/tool/warm":          "warm-cache-entry",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(home, "outside-marker")
	m := measureOne(t, t.TempDir(), `
cat "$HOME/.claude/.credentials.json" "$HOME/.claude.json" "$HOME/.config/flower/.env" 2>&1
cat "$HOME/.cache/tool/warm"; echo
touch "$HOME/outside-marker" 2>/dev/null && echo HOME-WRITABLE
mount -o remount,rw / 2>/dev/null && echo REMOUNTED
touch /usr/flower-measure-marker 2>/dev/null && echo ROOT-WRITABLE
echo probe-done`, MeasureOptions{})
	out := m.Head + m.Tail
	if m.Err != "" || !strings.Contains(out, "probe-done") {
		t.Fatalf("the probe did not run: %+v", m)
	}
	if strings.Contains(out, "secret-") {
		t.Errorf("a credential file was readable in the sandbox:\n%s", out)
	}
	if !strings.Contains(out, "warm-cache-entry") {
		t.Errorf("HOME's caches were not readable in the sandbox:\n%s", out)
	}
	for _, bad := range []string{"HOME-WRITABLE", "REMOUNTED", "ROOT-WRITABLE"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: the machine was not read-only in the sandbox:\n%s", bad, out)
		}
	}
	for _, p := range []string{outside, "/usr/flower-measure-marker"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandboxed command wrote %s", p)
		}
	}
}

func TestMeasureReportsExitStatusAndBothStreams(t *testing.T) {
	testenv.Sandbox(t)
	m := measureOne(t, t.TempDir(), "echo to-stdout; echo to-stderr >&2; exit 3", MeasureOptions{})
	if m.Err != "" || m.Exit != 3 || m.TimedOut || m.Environment != "" {
		t.Fatalf("got %+v, want exit 3 and nothing else", m)
	}
	if got := m.Head + m.Tail; got != "to-stdout\nto-stderr\n" || m.Bytes != int64(len(got)) {
		t.Errorf("output = %q (%d bytes), want both streams in order", got, m.Bytes)
	}
	if m.Duration <= 0 {
		t.Errorf("Duration = %v", m.Duration)
	}
}

// processesWith counts the processes whose command line holds marker.
func processesWith(marker string) int {
	n := 0
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			n++
		}
	}
	return n
}

func TestMeasureKillsEverythingAtTheTimeLimit(t *testing.T) {
	testenv.Sandbox(t)
	testenv.AsOrdinaryUser(t)
	// 7361 and 7362 mark the sleeps; setsid and nohup escape a process
	// group, not a PID namespace.
	m := measureOne(t, t.TempDir(), "setsid nohup sleep 7361 >/dev/null 2>&1 & sleep 7362 & echo started; wait",
		MeasureOptions{Timeout: time.Second})
	if !m.TimedOut || m.Exit != -1 || m.Err != "" {
		t.Fatalf("got %+v, want a timed-out measurement", m)
	}
	if !strings.Contains(m.Head, "started") {
		t.Errorf("the output before the limit was lost: %q", m.Head)
	}
	// The namespace's end is the kernel's to finish: give it a moment.
	deadline := time.Now().Add(10 * time.Second)
	for processesWith("sleep\x00736") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("a process the command started outlived its time limit")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMeasureKeepsHeadAndTailOfAHugeOutputWithoutHoldingIt(t *testing.T) {
	testenv.Sandbox(t)
	const total = 300_000_000
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m := measureOne(t, t.TempDir(), fmt.Sprintf("yes | head -c %d; echo END-OF-IT", total), MeasureOptions{})
	runtime.ReadMemStats(&after)
	if m.Err != "" || m.Exit != 0 {
		t.Fatalf("got %+v", m)
	}
	if m.Bytes != int64(total+len("END-OF-IT\n")) {
		t.Errorf("Bytes = %d, want %d", m.Bytes, total+len("END-OF-IT\n"))
	}
	if len(m.Head) != defaultOutputBytes || len(m.Tail) != defaultOutputBytes {
		t.Errorf("head %d and tail %d bytes, want %d each", len(m.Head), len(m.Tail), defaultOutputBytes)
	}
	if !strings.HasPrefix(m.Head, "y\ny\n") || !strings.HasSuffix(m.Tail, "y\nEND-OF-IT\n") {
		t.Errorf("head %q… tail …%q", m.Head[:8], m.Tail[len(m.Tail)-16:])
	}
	// Held whole, the output would have cost 300 MB.
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("300 MB of output: %v in the sandbox, %d KiB allocated in all", m.Duration, allocated>>10)
	if allocated > 16<<20 {
		t.Errorf("measuring 300 MB of output allocated %d MiB", allocated>>20)
	}
}

// interfaces are the network interfaces /proc/net/dev lists in out.
func interfaces(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}

func TestMeasureHasNoNetworkUnlessAllowed(t *testing.T) {
	testenv.Sandbox(t)
	ws := t.TempDir()
	off := measureOne(t, ws, "cat /proc/net/dev", MeasureOptions{})
	if got := interfaces(off.Head); len(got) != 1 || got[0] != "lo" {
		t.Errorf("without the network the sandbox has interfaces %v, want lo alone", got)
	}
	if !strings.Contains(off.Sandbox, "no network") {
		t.Errorf("Sandbox = %q, want it to say there is no network", off.Sandbox)
	}
	host, err := os.ReadFile("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	on := measureOne(t, ws, "cat /proc/net/dev", MeasureOptions{Network: true})
	if got, want := interfaces(on.Head), interfaces(string(host)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("with the network allowed the sandbox has interfaces %v, want the machine's %v", got, want)
	}
	// A tool that wanted the network says so, and flower reports it as
	// the environment's failure.
	git := measureOne(t, ws, "git ls-remote https://flower-measure.example/repo.git", MeasureOptions{})
	if git.Exit == 0 || git.Environment != "network" {
		t.Errorf("git without the network: exit %d, Environment %q, output %q; want a failure for want of the network", git.Exit, git.Environment, git.Head)
	}
}

// TestMeasureNamesAGoModuleMissingFromTheCache runs the real go command
// on a module whose dependency no cache holds: the failure is the
// environment's, read from go's own words.
func TestMeasureNamesAGoModuleMissingFromTheCache(t *testing.T) {
	testenv.Sandbox(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	ws := t.TempDir()
	for name, content := range map[string]string{
		"go.mod": "module x\ngo 1.22\nrequire flower-measure.example/absent v1.0.0\n",
		"x.go":   "package x\n\nimport _ \"flower-measure.example/absent\"\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, proxy := range []string{"off", "https://proxy.golang.org"} {
		m := measureOne(t, ws, "go build ./...", MeasureOptions{Env: []string{"GOPROXY=" + proxy, "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}})
		if m.Exit == 0 || m.Environment == "" {
			t.Errorf("GOPROXY=%s: exit %d, Environment %q, output %q; want a failure named as the environment's", proxy, m.Exit, m.Environment, m.Head)
		}
	}
}

func TestMeasureGivesAMinimalEnvironment(t *testing.T) {
	testenv.Sandbox(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret-key-value-1")
	t.Setenv("FLOWER_DATABASE_URL", "postgres://u:secret-db@localhost/x")
	t.Setenv("GITHUB_TOKEN", "secret-github-token")
	t.Setenv("GOPROXY", "https://user:secret-proxy-pass@proxy.example/")
	t.Setenv("SOME_UNRELATED", "secret-unrelated")
	t.Setenv("GOFLAGS", "-mod=mod")
	m := measureOne(t, t.TempDir(), "env; echo; tr '\\0' '\\n' < /proc/1/environ; echo env-done", MeasureOptions{
		Env: []string{"EXTRA=from-caller", "ANTHROPIC_AUTH_TOKEN=secret-from-caller", "CI=true"},
	})
	out := m.Head + m.Tail
	if m.Err != "" || !strings.Contains(out, "env-done") {
		t.Fatalf("got %+v", m)
	}
	if strings.Contains(out, "secret") {
		t.Errorf("a secret reached the command's environment:\n%s", out)
	}
	for _, want := range []string{"GOFLAGS=-mod=mod", "TERM=dumb", "TMPDIR=/tmp", "EXTRA=from-caller", "CI=true", "PATH=", "HOME="} {
		if !strings.Contains(out, want+"\n") && !strings.Contains(out, want) {
			t.Errorf("the command's environment lacks %s:\n%s", want, out)
		}
	}
}

func TestMeasureWithoutBubblewrapRunsNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran-unconfined")
	noBwrap := t.TempDir()
	for _, name := range []string{"sh", "cp"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(noBwrap, name)); err != nil {
			t.Fatal(err)
		}
	}
	refusing := filepath.Join(t.TempDir(), "bwrap")
	if err := os.WriteFile(refusing, []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string // PATH for the case, "" to keep it
		o    MeasureOptions
		want string
	}{
		{"no bwrap on PATH", noBwrap, MeasureOptions{}, "apt-get install bubblewrap"},
		{"a named program that is not there", "", MeasureOptions{Bubblewrap: "/nonexistent/bwrap"}, "apt-get install bubblewrap"},
		{"bubblewrap refused", "", MeasureOptions{Bubblewrap: refusing}, "No permissions to create new namespace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.path != "" {
				t.Setenv("PATH", c.path)
			}
			items := []Item{{ID: "a", Command: "touch " + marker}, {ID: "b", Text: "read only"}, {ID: "c", Command: "touch " + marker}}
			ms := Measure(context.Background(), t.TempDir(), items, c.o)
			if len(ms) != 2 {
				t.Fatalf("%d measurements for 2 command items", len(ms))
			}
			for _, m := range ms {
				if m.Exit != -1 || !strings.Contains(m.Err, c.want) || !strings.Contains(m.Err, "only inside a sandbox") {
					t.Errorf("%s: Exit %d, Err %q; want not run, naming %q", m.Item.ID, m.Exit, m.Err, c.want)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran outside a sandbox")
			}
			if r := RenderMeasurements(ms, doc.Lang("en")); !strings.Contains(r, "Not run: ") || !strings.Contains(r, "Judge this item by reading files") {
				t.Errorf("the judge is not told the items were not run:\n%s", r)
			}
		})
	}
}

func TestMeasureRefusesABadWorkspaceAndAStoppedContext(t *testing.T) {
	items := []Item{{ID: "a", Command: "true"}}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for ws, want := range map[string]string{"": "no workspace", file: "not a folder", "/nonexistent/ws": "cannot be read", "/": "cannot be /"} {
		ms := Measure(context.Background(), ws, items, MeasureOptions{})
		if len(ms) != 1 || ms[0].Exit != -1 || !strings.Contains(ms[0].Err, want) {
			t.Errorf("workspace %q: %+v, want Err naming %q", ws, ms, want)
		}
	}
	testenv.Sandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ms := Measure(ctx, t.TempDir(), items, MeasureOptions{})
	if ms[0].Exit != -1 || !strings.Contains(ms[0].Err, "stopped") {
		t.Errorf("a stopped context: %+v, want not run", ms[0])
	}
	if ms := Measure(context.Background(), t.TempDir(), []Item{{ID: "x", Text: "no command"}}, MeasureOptions{}); len(ms) != 0 {
		t.Errorf("items without commands got measurements: %+v", ms)
	}
}

func TestMeasureRunsEachCommandOnItsOwnCopy(t *testing.T) {
	testenv.Sandbox(t)
	ws := t.TempDir()
	var items []Item
	for i := range 12 {
		// Each command sees no trace of the one before it.
		items = append(items, Item{ID: fmt.Sprintf("c%d", i+1), Command: fmt.Sprintf("ls; echo %d > trace", i)})
	}
	start := time.Now()
	ms := Measure(context.Background(), ws, items, MeasureOptions{})
	t.Logf("%d commands in %v: %v per command (copy and sandbox)", len(ms), time.Since(start), time.Since(start)/time.Duration(len(ms)))
	for _, m := range ms {
		if m.Err != "" || m.Exit != 0 || m.Bytes != 0 {
			t.Errorf("%s: exit %d, Err %q, output %q; want a clean run on a fresh copy", m.Item.ID, m.Exit, m.Err, m.Head)
		}
	}
}

func TestEnvironmentOfReadsToolOutput(t *testing.T) {
	cases := []struct{ output, want string }{
		{"fatal: unable to access 'https://x/': Could not resolve host: x", "network"},
		{"ping: example.com: Temporary failure in name resolution", "network"},
		{"go: downloading rsc.io/quote v1.5.2\ngo: rsc.io/quote@v1.5.2: Get \"https://proxy.golang.org/...\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: connect: network is unreachable", "network"},
		{"dial tcp 142.250.1.1:443: connect: network is unreachable", "network"},
		{"npm ERR! code ENOTFOUND\nnpm ERR! network request to https://registry.npmjs.org/x failed", "network"},
		{"npm error code EAI_AGAIN", "network"},
		{"WARNING: Retrying ... NewConnectionError('<...>: Failed to establish a new connection: [Errno -3]')\nERROR: No matching distribution found for requests", "network"},
		{"go: rsc.io/quote@v1.5.2: module lookup disabled by GOPROXY=off", "cache"},
		{"npm ERR! code ENOTCACHED", "cache"},
		{"go: downloading example.com/m v1.0.0\nx.go:2:8: mkdir /root/go/pkg/mod/cache/download/example.com: read-only file system", "cache"},
		{"npm error code EROFS\nnpm error syscall mkdir\nnpm error path /home/u/.npm/_cacache/index-v5/1a", "cache"},
		{"error: failed to download `x`\nattempting to make an HTTP request, but --offline was specified", "cache"},
		// The work's own failures are the work's.
		{"--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3, want 4\nFAIL", ""},
		{"dial tcp 127.0.0.1:8080: connect: connection refused", ""},
		{"ERROR: No matching distribution found for reqeusts", ""},
		{"", ""},
	}
	for _, c := range cases {
		if got := environmentOf(c.output); got != c.want {
			t.Errorf("environmentOf(%q) = %q, want %q", c.output, got, c.want)
		}
	}
}

func TestHeadTailKeepsTheEndsOfAnyStream(t *testing.T) {
	for _, n := range []int{1, 7, 64} {
		for _, size := range []int{0, 1, n - 1, n, n + 1, 2 * n, 2*n + 1, 5*n + 3, 1000} {
			for _, chunk := range []int{1, 3, n, 2*n + 1, 4096} {
				data := make([]byte, size)
				for i := range data {
					data[i] = byte('a' + i%26)
				}
				h := newHeadTail(n)
				for p := data; len(p) > 0; {
					k := min(chunk, len(p))
					h.Write(p[:k])
					p = p[k:]
				}
				head, tail, total := h.result()
				wantHead := data[:min(n, size)]
				wantTail := data[len(wantHead):]
				if len(wantTail) > n {
					wantTail = wantTail[len(wantTail)-n:]
				}
				if head != string(wantHead) || tail != string(wantTail) || total != int64(size) {
					t.Fatalf("n=%d size=%d chunk=%d: head %q tail %q total %d", n, size, chunk, head, tail, total)
				}
			}
		}
	}
}

func TestRenderMeasurementsSaysWhatFlowerMeasured(t *testing.T) {
	ms := []Measurement{
		{Item: Item{ID: "c1", Text: "tests pass", Command: "go test ./..."}, Exit: 1, Head: "--- FAIL: TestAdd\n```go\nx\n```\n", Bytes: 30, Duration: 1200 * time.Millisecond, Sandbox: "bubblewrap, a throwaway copy of the workspace, HOME read-only, no network"},
		{Item: Item{ID: "c2", Text: "builds", Command: "go build ./..."}, Exit: 1, Environment: "network", Head: "dial tcp: lookup proxy.golang.org: network is unreachable\n", Bytes: 60, Sandbox: "bubblewrap, a throwaway copy of the workspace, HOME read-only, no network"},
		{Item: Item{ID: "c3", Text: "npm ci", Command: "npm ci --offline"}, Exit: 1, Environment: "cache", Head: "npm ERR! code ENOTCACHED\n", Bytes: 25, Sandbox: "bubblewrap, a throwaway copy of the workspace, HOME read-only, no network"},
		{Item: Item{ID: "c4", Text: "server", Command: "./serve"}, Exit: -1, TimedOut: true, Head: "listening\n", Bytes: 10, Duration: 5 * time.Minute, Sandbox: "bubblewrap, a throwaway copy of the workspace, HOME read-only, no network"},
		{Item: Item{ID: "c5", Text: "lint", Command: "make lint"}, Exit: 0, Sandbox: "bubblewrap, a throwaway copy of the workspace, HOME read-only, no network"},
		{Item: Item{ID: "c6", Text: "e2e", Command: "make e2e"}, Exit: -1, Err: "no sandbox here", Sandbox: "not run"},
		{Item: Item{ID: "c7", Text: "bench", Command: "make bench"}, Exit: -1, Hidden: "cp: permission denied", Sandbox: "bubblewrap, a throwaway copy of the workspace, HOME read-only, no network"},
	}
	en := RenderMeasurements(ms, doc.Lang("en"))
	zh := RenderMeasurements(ms, doc.Lang("zh"))
	for _, want := range []string{
		"## Measured by flower", "ran each checklist command below itself", "are evidence", "claims, not evidence",
		"### [c1] tests pass", "go test ./...", "Exit status: 1 (in 1.2s)", "````\n--- FAIL: TestAdd",
		"### [c2]", "a failure. Its output reads like a want of the network", "does not excuse the item",
		"a want of a dependency missing from the local cache",
		"Timed out: killed after 5m0s", "Exit status: 0", "No output.",
		"Not run: no sandbox here", "Judge this item by reading files",
		"Failed: the workspace could not be copied for the command (cp: permission denied). What the work keeps from flower's measurement fails its item.",
		"Sandbox: bubblewrap, a throwaway copy of the workspace, HOME read-only, no network.",
	} {
		if !strings.Contains(en, want) {
			t.Errorf("the English rendering lacks %q:\n%s", want, en)
		}
	}
	for _, want := range []string{
		"## flower 亲自测量的结果", "亲自在沙箱里运行", "这些是证据", "只是它的说法,不是证据",
		"### [c1] tests pass", "退出码:1(用时 1.2s)", "未通过。它的输出看起来像是缺少网络", "不能为这一项开脱",
		"本地缓存缺少依赖", "未通过:无法为该命令复制工作区(cp: permission denied)", "超时:运行 5m0s 后被终止", "没有输出。", "未运行:", "此项请通过阅读文件来判断",
	} {
		if !strings.Contains(zh, want) {
			t.Errorf("the Chinese rendering lacks %q:\n%s", want, zh)
		}
	}
	// Both say the same: the same items, fences and output lines.
	if strings.Count(en, "\n") != strings.Count(zh, "\n") || strings.Count(en, "```") != strings.Count(zh, "```") {
		t.Errorf("the English and Chinese renderings differ in shape:\n%s\n---\n%s", en, zh)
	}
	if RenderMeasurements(nil, doc.Lang("en")) != "" {
		t.Error("no measurement rendered as text")
	}
}

func TestRenderMeasurementsIsBoundedWhateverItGets(t *testing.T) {
	big := strings.Repeat("é```` ", 2048) // backtick runs, runes cut anywhere
	var ms []Measurement
	for i := range 300 {
		ms = append(ms, Measurement{
			Item: Item{ID: fmt.Sprintf("c%d", i+1), Text: strings.Repeat("long text ", 100), Command: strings.Repeat("x", 5000)},
			Exit: 1,
			Head: big[:defaultOutputBytes], Tail: big[len(big)-defaultOutputBytes:], Bytes: 1 << 30,
			Sandbox: "bubblewrap",
		})
	}
	for _, lang := range []doc.Lang{"en", "zh"} {
		for _, n := range []int{1, 3, 300} {
			r := RenderMeasurements(ms[:n], lang)
			if len(r) > MaxRenderedMeasurements {
				t.Errorf("%s, %d items: %d bytes rendered, over %d", lang, n, len(r), MaxRenderedMeasurements)
			}
			if !strings.Contains(r, "[c1]") {
				t.Errorf("%s, %d items: the first item is missing", lang, n)
			}
			if n == 300 && !strings.Contains(r, "c300") {
				t.Errorf("%s: the items left out are not named:\n%s", lang, r[len(r)-500:])
			}
			if n == 1 && (!strings.Contains(r, "1073741824") || !strings.Contains(r, "é")) {
				t.Errorf("%s: the one item's output or its size is missing:\n%s", lang, r)
			}
			if n < 300 && !strings.Contains(r, "\n`````\n") {
				t.Errorf("%s: the output is not fenced longer than its backtick runs", lang)
			}
			if !utf8Valid(r) {
				t.Errorf("%s, %d items: the rendering is not valid UTF-8", lang, n)
			}
		}
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }

// TestMeasureCostOfTheSandbox reports what a measurement costs beyond the
// command itself (a copy of a small workspace and a bubblewrap start); a
// figure for the report, not a condition.
func TestMeasureCostOfTheSandbox(t *testing.T) {
	testenv.Sandbox(t)
	ws := gitRepo(t)
	const n = 10
	var sandboxed time.Duration
	start := time.Now()
	for range n {
		m := measureOne(t, ws, "true", MeasureOptions{})
		if m.Err != "" || m.Exit != 0 {
			t.Fatalf("got %+v", m)
		}
		sandboxed += m.Duration
	}
	all := time.Since(start)
	t.Logf("per command: %v in all, %v of it in bubblewrap (the rest copies the workspace)", all/n, sandboxed/n)
}

// A workspace that keeps files from flower's measurement (one it cannot
// read, a FIFO, a socket) fails the item, never leaves it to reading: the
// red team's chmod 000 file made every measurement "not run" and the
// judge's "passed" stood. Root reads any file, so the unreadable one
// only hides from an ordinary user; both must end measured or failed.
func TestAWorkspaceThatHidesAFileFailsItsItem(t *testing.T) {
	testenv.Sandbox(t)
	testenv.AsOrdinaryUser(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "check.sh"), []byte("exit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "secret"), []byte("kept from flower"), 0o000); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := measureOne(t, ws, "sh check.sh", MeasureOptions{})
	if m.Err != "" || m.Sandbox == "not run" {
		t.Fatalf("the measurement was left to reading: %+v", m)
	}
	items := []Item{{ID: "c1", Text: "the check", Command: "sh check.sh"}}
	reply := &Reply{Conclusion: doc.Achieved, Reason: "all done",
		Items: []ItemVerdict{{ID: "c1", Status: Passed, Evidence: "I ran it"}}}
	d := Decide(items, []Measurement{m}, reply, doc.Lang("en"))
	if os.Geteuid() == 0 {
		if m.Hidden != "" || m.Exit != 0 || !d.Passed() {
			t.Fatalf("root reads every file, so the command ran and passed: %+v, %s", m, d.State)
		}
		return
	}
	if m.Hidden == "" || !m.Failed() || !strings.Contains(m.Hidden, "secret") {
		t.Fatalf("an unreadable file did not fail the item and name itself: %+v", m)
	}
	if d.Passed() || !strings.Contains(d.Verdict.Reason, "What the work keeps from flower's measurement fails its item") {
		t.Fatalf("the judge's passed stood over a workspace that hid a file: %s\n%s", d.State, d.Verdict.Reason)
	}
}

// The command is the first process of its namespace: /proc/1 is its shell,
// not a bubblewrap that tells a test it is being measured.
func TestAMeasuredCommandSeesNoSandboxAtPID1(t *testing.T) {
	testenv.Sandbox(t)
	m := measureOne(t, t.TempDir(), `tr '\0' ' ' < /proc/1/cmdline; echo; echo done`, MeasureOptions{})
	if m.Err != "" || m.Exit != 0 || !strings.Contains(m.Head, "done") {
		t.Fatalf("the command did not run: %+v", m)
	}
	if first := strings.SplitN(m.Head, "\n", 2)[0]; strings.Contains(first, "bwrap") || !strings.Contains(first, "sh") {
		t.Errorf("/proc/1/cmdline reads %q: want the command's shell, not bubblewrap", first)
	}
}
