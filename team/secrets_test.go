package team_test

// Secrets never shown: the database's password never on a command line
// (refused there, taken from FLOWER_DATABASE_URL, a file only its owner
// reads, or PostgreSQL's password file), so `ps` shows none while a
// worker works.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/team"
)

// dbPassword is the password in the world's database URL, and the URL
// without it.
func dbPassword(t *testing.T, db string) (password, bare string) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	password, _ = u.User.Password()
	if len(password) < 8 {
		t.Fatalf("the test database's password %q is too short to look for", password)
	}
	u.User = url.User(u.User.Username())
	return password, u.String()
}

func TestTheDatabasePasswordIsRefusedOnTheCommandLineAndTakenFromAFileOfTheUsersOwn(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	password, bare := dbPassword(t, w.db)

	loose := filepath.Join(t.TempDir(), "team-db")
	if err := os.WriteFile(loose, []byte(w.db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		mode os.FileMode
		want []string
	}{
		{"a password in --db", []string{"runs", "--db", w.db}, 0, []string{"--db postgres://postgres:xxxxx@", "holds a password", "ps",
			"FLOWER_DATABASE_URL", "--db-file PATH", "chmod 600", "~/.pgpass"}},
		{"a password in a keyword --db", []string{"submit", "--db", "host=/tmp password=" + password + " dbname=x", "--repo", w.remote, "task-1"}, 0,
			[]string{"password=xxxxx", "holds a password"}},
		{"a password in --db of reply", []string{"reply", "--db", w.db, "r1", "yes"}, 0, []string{"holds a password"}},
		{"a password in --db of report", []string{"report", "--db", w.db, "r1"}, 0, []string{"holds a password"}},
		{"a password in --db of cancel", []string{"cancel", "--db", w.db, "r1"}, 0, []string{"holds a password"}},
		{"a password in --db of worker", []string{"worker", "--db", w.db}, 0, []string{"holds a password"}},
		{"a file others can read", []string{"runs", "--db-file", loose}, 0o644, []string{loose, "mode 0644", "chmod 600 " + loose}},
		{"a file its group can read", []string{"submit", "--db-file", loose, "--repo", w.remote, "task-1"}, 0o640, []string{"mode 0640", "chmod 600 " + loose}},
		{"a file others can write", []string{"runs", "--db-file", loose}, 0o602, []string{"mode 0602", "chmod 600 " + loose}},
		{"a file that is missing", []string{"runs", "--db-file", loose + "-gone"}, 0, []string{loose + "-gone", "cannot be read"}},
		{"both --db and --db-file", []string{"runs", "--db", bare, "--db-file", w.dbFile}, 0, []string{"--db or --db-file, not both"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.mode != 0 {
				if err := os.Chmod(loose, c.mode); err != nil {
					t.Fatal(err)
				}
			}
			out, err := w.flower(append([]string{c.args[0], "--lang", "en"}, c.args[1:]...)...)
			if code := exitCode(t, err); code != 2 {
				t.Errorf("exit code %d, want 2 (a usage error):\n%s", code, out)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("the message does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, password) {
				t.Errorf("the message shows the password:\n%s", out)
			}
		})
	}
	if os.Geteuid() == 0 {
		// Root reads any file, so the owner is checked: a file of another
		// user's, even 0600, is not this user's secret.
		if err := os.Chmod(loose, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(loose, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		out, err := w.flower("runs", "--lang", "en", "--db-file", loose)
		if code := exitCode(t, err); code != 2 || !strings.Contains(out, "belongs to user 65534") || !strings.Contains(out, "chown $(id -u) "+loose) {
			t.Errorf("a file of another user's: exit %d\n%s", code, out)
		}
	}
	// As an ordinary user: a file of the user's own that others can read
	// is refused, one of 0600 is taken, one of root's cannot be read.
	if setpriv, err := exec.LookPath("setpriv"); err == nil && os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "flower-nobody-") // t.TempDir's parent is root's alone
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		own := filepath.Join(dir, "nobody-db")
		if err := os.WriteFile(own, []byte(w.db), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(own, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "teamflow")
		data, err := os.ReadFile(teamflow(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		asNobody := func(args ...string) (string, int) {
			cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
			cmd.Env, cmd.Dir = append(append([]string{}, w.env...), "HOME="+dir), dir
			out, err := cmd.CombinedOutput()
			return string(out), exitCode(t, err)
		}
		if out, code := asNobody("runs", "--lang", "en", "--db-file", own); code != 2 || !strings.Contains(out, "chmod 600 "+own) || strings.Contains(out, password) {
			t.Errorf("as nobody, a file of nobody's others can read: exit %d\n%s", code, out)
		}
		if err := os.Chmod(own, 0o600); err != nil {
			t.Fatal(err)
		}
		// Taken: the URL gets as far as the server. Whether nobody may
		// reach the shared server's socket depends on whether a test of
		// an ordinary role opened its folder first (pgtest.DatabaseFor),
		// so either the runs are listed or the connection is what fails.
		if out, code := asNobody("runs", "--lang", "en", "--db-file", own); code == 2 || !strings.Contains(out, "the database at postgres://postgres:xxxxx@") && !strings.Contains(out, "no runs yet") || strings.Contains(out, password) {
			t.Errorf("as nobody, a file of nobody's, 0600, was not taken: exit %d\n%s", code, out)
		}
		if out, code := asNobody("runs", "--lang", "en", "--db-file", w.dbFile); code != 2 || !strings.Contains(out, "cannot be read") {
			t.Errorf("as nobody, root's file: exit %d\n%s", code, out)
		}
	} else if os.Getenv("CI") != "" && os.Geteuid() == 0 {
		t.Fatal("setpriv is missing: the ordinary user's side was not tested")
	}
	if runs, err := tm.Runs(context.Background(), team.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("refused command lines queued %d runs (%v)", len(runs), err)
	}

	// A file of the user's own, 0600, works; so does a --db without the
	// password when PostgreSQL's password file (HOME a folder of the
	// test's) has it, and FLOWER_DATABASE_URL.
	if err := os.Chmod(w.dbFile, 0o600); err != nil {
		t.Fatal(err)
	}
	id := w.submit("task-1")
	home := t.TempDir()
	u, _ := url.Parse(w.db)
	line := "localhost:5432:" + strings.TrimPrefix(u.Path, "/") + ":" + u.User.Username() + ":" + password + "\n"
	if err := os.WriteFile(filepath.Join(home, ".pgpass"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := w.flowerEnv([]string{"HOME=" + home}, "runs", "--lang", "en", "--db", bare)
	if err != nil || !strings.Contains(out, team.RunName(id)) {
		t.Errorf("runs --db without a password, the password in ~/.pgpass: %v\n%s", err, out)
	}
	out, err = w.flowerEnv([]string{"HOME=" + home}, "cancel", "--lang", "en", "--db", bare, team.RunName(id))
	if err != nil || !strings.Contains(out, "cancelled "+team.RunName(id)) {
		t.Errorf("cancel --db without a password, the password in ~/.pgpass: %v\n%s", err, out)
	}
	// Without the password file the same --db is refused by the server.
	out, err = w.flowerEnv([]string{"HOME=" + t.TempDir()}, "runs", "--lang", "en", "--db", bare)
	if code := exitCode(t, err); code != 1 || !strings.Contains(out, "password") {
		t.Errorf("runs --db without a password and no ~/.pgpass: exit %d\n%s", code, out)
	}
	out, err = w.flowerEnv([]string{"FLOWER_DATABASE_URL=" + w.db}, "runs", "--lang", "en", team.RunName(id))
	if err != nil || !strings.Contains(out, "cancelled") {
		t.Errorf("runs with FLOWER_DATABASE_URL: %v\n%s", err, out)
	}
	// A worker given --db without the password finds it in its
	// ~/.pgpass, and so do the runs it starts (each has a HOME of its own).
	w.workerIn(home, "machine-pgpass", "--db", bare)
	worked := w.submit("task-3")
	if r := runOf(t, tm, worked, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) }); r.State != team.Achieved {
		t.Errorf("a run of the worker whose password is in ~/.pgpass ended %s: %s", r.State, r.Reason)
	}
	// reply and report serve the team's run named with FLOWER_DATABASE_URL
	// alone.
	out, err = w.flowerEnv([]string{"FLOWER_DATABASE_URL=" + w.db}, "reply", "--lang", "en", team.RunName(id), "too late")
	if !strings.Contains(out, "is cancelled: nothing waits for a reply") {
		t.Errorf("reply r%d with FLOWER_DATABASE_URL: %v\n%s", id, err, out)
	}
}

// While a worker works a run, no process of this machine shows the
// database's password in its command line: not the worker (its URL in a
// file), not the run's flower, the CLI or the tool it runs. Checked from
// /proc and with ps, as root and as an ordinary user.
func TestPsShowsNoDatabasePasswordWhileAWorkerWorks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	password, _ := dbPassword(t, w.db)
	// The slow call waits for a file in the run's own tmp folder: the
	// confined run sees nothing of the test's.
	w.model.sleep = "for i in $(seq 600); do [ -e ../tmp/go-on ] && break; sleep 0.2; done"
	id := w.submit("task-1 slow")
	m := w.worker("machine-a")
	w.waitMarker(markerName, 4*time.Minute)
	gate := filepath.Join(filepath.Dir(w.runFile(markerName)), "go-on")

	pids := append([]int{m.cmd.Process.Pid}, descendants(m.cmd.Process.Pid)...)
	if len(pids) < 3 {
		t.Fatalf("the worker has %d processes under it, want the run's flower, its CLI and the tool", len(pids)-1)
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue // ended meanwhile
		}
		if strings.Contains(string(b), password) {
			t.Errorf("process %d shows the password: %q", pid, b)
		}
	}
	ps := func(prefix ...string) string {
		out, err := exec.Command(prefix[0], append(prefix[1:], "ps", "-eo", "pid,args", "--no-headers")...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", prefix, err, out)
		}
		return string(out)
	}
	listings := map[string]string{"root": ps("env")}
	if os.Geteuid() == 0 {
		if setpriv, err := exec.LookPath("setpriv"); err == nil {
			listings["nobody"] = ps(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups")
		} else if os.Getenv("CI") != "" {
			t.Fatal("setpriv is missing: ps was not looked at as an ordinary user")
		}
	}
	for who, out := range listings {
		if !strings.Contains(out, "worker") || !strings.Contains(out, w.model.marker) {
			t.Errorf("ps as %s does not list the worker and its tool:\n%s", who, out)
		}
		if strings.Contains(out, password) {
			t.Errorf("ps as %s shows the password:\n%s", who, out)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runOf(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) }); r.State != team.Achieved {
		t.Errorf("%s ended %s: %s", r.Name(), r.State, r.Reason)
	}
}

// A run whose work adds a file holding the worker's API key is not
// pushed: the remote's branch never gets that commit, the run is parked
// saying which secret in which file (never the secret), and the commit
// stays in the worker's checkout.
func TestAWorkHoldingTheAPIKeyIsNotPushedAndTheRunSaysWhy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	const key = "sk-ant-api03-team-test-key-0123456789abcdef"
	w.env = append(w.env, "ANTHROPIC_API_KEY="+key)
	w.model.leak = key
	id := w.submit("task-1 leak")
	w.worker("machine-a")
	r := runOf(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Failed || !strings.Contains(r.Reason, "ANTHROPIC_API_KEY") || !strings.Contains(r.Reason, "leak-task-1.txt") ||
		!strings.Contains(r.Reason, "nothing was pushed") || !strings.Contains(r.Reason, "stays on worker machine-a") {
		t.Fatalf("%s ended %s: %s; want parked naming the key's kind and the file", r.Name(), r.State, r.Reason)
	}
	if got := branchFile(t, w.remote, r.Branch, "leak-task-1.txt"); got != "" {
		t.Errorf("the remote's %s holds the leaked file: %q", r.Branch, got)
	}
	if commits := remoteCommitsHolding(t, w.remote, key); commits != "" {
		t.Errorf("the key reached the remote in %s", commits)
	}
	if refs, _ := exec.Command("git", "-C", w.remote, "for-each-ref", "--format=%(refname)").CombinedOutput(); strings.Contains(string(refs), "kept") {
		t.Errorf("the work was pushed to a branch of its own: %s", refs)
	}
	m := regexp.MustCompile(`in (/\S+): take the secret out`).FindStringSubmatch(r.Reason)
	if m == nil {
		t.Fatalf("the reason does not name the checkout: %s", r.Reason)
	}
	if got := git(t, m[1], "show", "HEAD:leak-task-1.txt"); got != key {
		t.Errorf("the work is not kept in the worker's checkout %s: %q", m[1], got)
	}
	shown, _ := w.flower("runs", "--db-file", w.dbFile, "--lang", "en", r.Name())
	evs, err := tm.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		shown += fmt.Sprintf("%v %s %v\n", e.Kind, e.Text, e.Payload)
	}
	if strings.Contains(shown+r.Reason, key) {
		t.Errorf("the key is shown:\n%s", shown)
	}
	if !strings.Contains(shown, "leak-task-1.txt") {
		t.Errorf("flower runs %s does not say why:\n%s", r.Name(), shown)
	}
}

// A --repo that leads into the worker's own --dir (a run's checkout, the
// folder itself; a path, a file:// URL, a symlink, "..") is parked by the
// worker before anything is cloned, with the reason, once: never cloned,
// never retried, the model never asked.
func TestARepoIntoTheWorkersOwnFolderIsParkedBeforeItIsCloned(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	first := w.submit("task-1")
	m := w.worker("machine-a")
	runOf(t, tm, first, 4*time.Minute, "achieved", func(r team.Run) bool { return r.State == team.Achieved })
	asked := len(w.srv.Requests())
	checkout := filepath.Join(m.dir, team.RunName(first), "work")
	if _, err := os.Stat(filepath.Join(checkout, ".git")); err != nil {
		t.Fatalf("the first run's checkout is not at %s: %v", checkout, err)
	}
	// Unpushed work in that checkout: what a clone of it would take.
	if err := os.WriteFile(filepath.Join(checkout, "unpushed.txt"), []byte("r1's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, checkout, "add", "unpushed.txt")
	git(t, checkout, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "unpushed")
	link := filepath.Join(t.TempDir(), "innocent.git")
	if err := os.Symlink(checkout, link); err != nil {
		t.Fatal(err)
	}
	forms := map[string]string{
		"a path":           checkout,
		"a file:// URL":    "file://" + checkout,
		"a symlink":        link,
		"..":               filepath.Join(m.dir, team.RunName(first)) + "/../" + team.RunName(first) + "/work",
		"the dir itself":   "file://" + m.dir,
		"a run not cloned": filepath.Join(m.dir, "r99", "work"),
	}
	ids := map[int64]string{}
	for name, repo := range forms {
		ids[w.submitTo(repo, "task-2", "--no-check")] = name
	}
	for id, name := range ids {
		r := runOf(t, tm, id, 3*time.Minute, "parked", func(r team.Run) bool { return team.Ended(r.State) })
		if r.State != team.Failed || !strings.Contains(r.Reason, "inside "+m.dir) || !strings.Contains(r.Reason, "not cloned by worker machine-a") ||
			!strings.Contains(r.Reason, "shared address") {
			t.Errorf("%s (%s): ended %s: %s; want parked naming the worker's folder", r.Name(), name, r.State, r.Reason)
		}
		if n := attemptsNeverOverlap(t, tm, id); n != 1 || len(r.Failures) != 0 {
			t.Errorf("%s (%s): %d attempts, %d failures; want parked at the first", r.Name(), name, n, len(r.Failures))
		}
		if _, err := os.Stat(filepath.Join(m.dir, r.Name(), "work", "unpushed.txt")); err == nil {
			t.Errorf("%s (%s) cloned the first run's checkout", r.Name(), name)
		}
		if got := branchFile(t, w.remote, r.Branch, "unpushed.txt"); got != "" {
			t.Errorf("%s (%s) pushed the first run's unpushed work", r.Name(), name)
		}
	}
	if n := len(w.srv.Requests()); n != asked {
		t.Errorf("the model was asked %d times for runs that could not start", n-asked)
	}
	shown, _ := w.flower("runs", "--db-file", w.dbFile, "--lang", "en")
	if strings.Count(shown, "failed (parked)") != len(forms) {
		t.Errorf("flower runs does not list the %d runs as parked:\n%s", len(forms), shown)
	}
}

// A repository reached with a token in its address
// (https://user:TOKEN@host/…): the run works and pushes with it, and no
// listing, run detail, event, report header, failure or log line shows
// the token.
func TestARepositoryTokenIsMaskedInEveryListingEventAndReport(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	const token = "ghp_team-token-s3cret-0123456789"
	git(t, w.remote, "config", "http.receivepack", "true")
	backend := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(w.remote), "GIT_HTTP_EXPORT_ALL=1"}}
	if out, err := exec.Command("git", "--exec-path").Output(); err == nil {
		backend.Path = filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "worker" || pass != token {
			rw.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			rw.WriteHeader(http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	repo := strings.Replace(srv.URL, "http://", "http://worker:"+token+"@", 1) + "/" + filepath.Base(w.remote)
	shownRepo := strings.Replace(srv.URL, "http://", "http://worker:xxxxx@", 1) + "/" + filepath.Base(w.remote)

	id := w.submitTo(repo, "task-1")
	unreachable := w.submitTo(strings.Replace(repo, srv.URL[len("http://"):], "127.0.0.1:1", 1), "task-2", "--no-check")
	m := w.worker("machine-a", "--max-failures", "1")
	r := runOf(t, tm, id, 4*time.Minute, "achieved", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved || branchFile(t, w.remote, r.Branch, "task-1.txt") != "task-1" {
		t.Fatalf("%s ended %s (%s); want it achieved and pushed through the token", r.Name(), r.State, r.Reason)
	}
	bad := runOf(t, tm, unreachable, 4*time.Minute, "parked", func(r team.Run) bool { return team.Ended(r.State) })
	if bad.State != team.Failed || !strings.Contains(bad.Reason, "worker:xxxxx@127.0.0.1:1") {
		t.Errorf("%s ended %s: %s; want parked naming the masked address", bad.Name(), bad.State, bad.Reason)
	}
	if r.Repo != shownRepo {
		t.Errorf("Run.Repo is %q, want %q", r.Repo, shownRepo)
	}

	var seen strings.Builder
	for _, args := range [][]string{
		{"runs"}, {"runs", r.Name()}, {"runs", bad.Name()}, {"report", "--json", r.Name()},
	} {
		out, err := w.flower(append([]string{args[0], "--db-file", w.dbFile, "--lang", "en"}, args[1:]...)...)
		if err != nil {
			t.Errorf("flower %v: %v\n%s", args, err, out)
		}
		seen.WriteString(out)
	}
	if !strings.Contains(seen.String(), shownRepo) {
		t.Errorf("flower runs %s does not show the masked address:\n%s", r.Name(), seen.String())
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if out, err := w.flower("report", "--db-file", w.dbFile, "-o", page, r.Name()); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "worker:xxxxx@") {
		t.Errorf("the report's header does not show the masked address")
	}
	seen.Write(html)
	for _, id := range []int64{id, unreachable} {
		evs, err := tm.Events(context.Background(), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			fmt.Fprintf(&seen, "%v %s %v\n", e.Kind, e.Text, e.Payload)
		}
	}
	for _, f := range bad.Failures {
		seen.WriteString(f.Reason)
	}
	// The token is not in the run's folders either (its processes read
	// them): the checkout's origin has the address without it; git gets it
	// from a file beside the checkout, 0600.
	runFolder := filepath.Join(m.dir, r.Name())
	if out, _ := exec.Command("grep", "-rl", token, filepath.Join(runFolder, "work"), filepath.Join(runFolder, "home"),
		filepath.Join(runFolder, "state"), filepath.Join(runFolder, "tmp")).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("the token is in files of the run's folders:\n%s", out)
	}
	if origin := git(t, filepath.Join(runFolder, "work"), "remote", "get-url", "origin"); origin != strings.Replace(srv.URL, "http://", "http://worker@", 1)+"/"+filepath.Base(w.remote) {
		t.Errorf("the checkout's origin is %q", origin)
	}
	if fi, err := os.Stat(filepath.Join(runFolder, "work.git-credentials")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the credentials file beside the checkout: %v, %v", fi, err)
	}
	seen.WriteString(m.out.String())
	logs, _ := filepath.Glob(filepath.Join(m.dir, "*", "attempt-*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		seen.Write(b)
	}
	if strings.Contains(seen.String(), token) {
		i := strings.Index(seen.String(), token)
		t.Errorf("the token is shown: …%s…", seen.String()[max(i-200, 0):min(i+50, seen.Len())])
	}
}

// A run's environment starts empty (issue 41, 1): the worker's tokens
// (the dashboard's, GitHub's, AWS's) and its agent socket reach no run,
// a variable the operator names with --pass-env does, `flower workers`
// says which, and a token of the worker's written into the work is not
// pushed, naming the variable (before, the run's Bash read all four and
// pushed three on its branch).
func TestARunGetsNoVariableOfItsWorkerButThosePassedAndPushesNone(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tm := w.open()
	tokens := map[string]string{
		"FLOWER_SERVE_TOKEN":    "serve-" + randomHex(t),
		"GITHUB_TOKEN":          "ghp_" + randomHex(t),
		"AWS_SECRET_ACCESS_KEY": "aws-" + randomHex(t),
	}
	env := []string{"SSH_AUTH_SOCK=" + filepath.Join(t.TempDir(), "agent.sock"), "GOPROXY=https://goproxy.example/" + randomHex(t)}
	for k, v := range tokens {
		env = append(env, k+"="+v)
	}
	w.model.attack = "env > ../tmp/env.out; echo attacked"
	w.model.leak = tokens["GITHUB_TOKEN"]
	id := w.submit("task-1 leak, then task-1 attack")
	mc := w.workerWith("machine-a", env, "--pass-env", "GOPROXY")
	r := runOf(t, tm, id, 4*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })

	seen, err := os.ReadFile(filepath.Join(w.dirs[0], team.RunName(id), "tmp", "env.out"))
	if err != nil {
		t.Fatalf("the run's env: %v\n%s", err, mc.out)
	}
	for k, v := range tokens {
		if strings.Contains(string(seen), v) || strings.Contains(string(seen), k+"=") {
			t.Errorf("the run's Bash saw the worker's %s", k)
		}
	}
	if strings.Contains(string(seen), "SSH_AUTH_SOCK") {
		t.Error("the run's Bash saw the worker's SSH_AUTH_SOCK")
	}
	if !strings.Contains(string(seen), env[1]) {
		t.Errorf("the run did not get GOPROXY, passed with --pass-env:\n%s", seen)
	}

	if r.State != team.Failed || !strings.Contains(r.Reason, "GITHUB_TOKEN") || !strings.Contains(r.Reason, "leak-task-1.txt") {
		t.Errorf("%s ended %s: %s; want parked, naming the worker's GITHUB_TOKEN and the file", r.Name(), r.State, r.Reason)
	}
	for k, v := range tokens {
		if commits := remoteCommitsHolding(t, w.remote, v); commits != "" {
			t.Errorf("the worker's %s reached the remote in %s", k, commits)
		}
		if strings.Contains(r.Reason, v) {
			t.Error("the run's reason shows the token it names")
		}
	}

	shown, err := w.flower("workers", "--db-file", w.dbFile, "--lang", "en")
	if err != nil || !strings.Contains(shown, "machine-a gives its runs GOPROXY from its own environment (--pass-env)") {
		t.Errorf("flower workers does not say what machine-a passes its runs (%v):\n%s", err, shown)
	}
}

// remoteCommitsHolding lists the commits of any ref of remote (the
// hidden checkpoint refs too) that add or remove value.
func remoteCommitsHolding(t *testing.T, remote, value string) string {
	t.Helper()
	return strings.TrimSpace(git(t, remote, "log", "--all", "--format=%h", "-S", value))
}
