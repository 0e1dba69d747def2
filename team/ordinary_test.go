package team_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/internal/testenv"
	"github.com/flowerrun/flower/team"
)

// A worker run as an ordinary user (issue 41, point 3 and the
// ordinary-user tier): its database role is an ordinary one of its own,
// and it keeps its credentials where the red team found an operator's,
// outside HOME and --dir: the --db-file under /var/lib, its .env with the
// model's key under /etc (XDG_CONFIG_HOME), a pgpass under /srv, a token
// under /opt, all its own and 0600. Its runs run as that same user, so
// only what they are shown stands between them and those files: a run's
// Bash reads each path, lists the folders, and greps for the secrets; it
// finds nothing, and the run still ends achieved through the real CLI.
func TestAnOrdinaryUsersWorkerKeepsItsCredentialsFromItsRuns(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatal("this test runs a worker as nobody and puts its files under /etc, /var/lib, /srv and /opt: it takes root")
	}
	db := pgtest.DatabaseFor(t, "nobody")
	w := newWorldOn(t, db)
	tm := w.open()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	dbPassword, _ := u.User.Password()
	apiKey := "sk-ant-ordinary-key-" + randomHex(t)
	token := "operator-token-" + randomHex(t)

	// The worker's own folders, and its origin, are nobody's.
	home, tmp, state := testenv.OwnedTempDir(t, "", testenv.Nobody), testenv.OwnedTempDir(t, "", testenv.Nobody), testenv.OwnedTempDir(t, "", testenv.Nobody)
	w.remote = nobodysOrigin(t)
	place := map[string]string{}
	for parent, file := range map[string]string{"/var/lib": "team-db", "/etc": "flower/.env", "/srv": "pgpass", "/opt": "token"} {
		dir := testenv.OwnedTempDir(t, parent, testenv.Nobody)
		path := filepath.Join(dir, file)
		place[file] = path
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Dir(path), testenv.Nobody, testenv.Nobody); err != nil {
			t.Fatal(err)
		}
	}
	for file, body := range map[string]string{
		"team-db":     db + "\n",
		"flower/.env": "ANTHROPIC_API_KEY=" + apiKey + "\n",
		"pgpass":      "*:*:*:nobody:" + dbPassword + "\n",
		"token":       token + "\n",
	} {
		if err := os.WriteFile(place[file], []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(place[file], testenv.Nobody, testenv.Nobody); err != nil {
			t.Fatal(err)
		}
	}

	var paths []string
	for _, p := range place {
		paths = append(paths, p)
	}
	w.model.attack = strings.Join([]string{
		"{ id; env",
		"cat " + strings.Join(paths, " "),
		"ls -la /var/lib /etc /srv /opt " + home,
		"grep -rs -e " + apiKey + " -e " + token + " /etc /var /srv /opt 2>/dev/null | head",
		"} > ../tmp/attack.out 2>&1; echo attacked",
	}, "\n")
	// Root's git would refuse to look at nobody's repository: the
	// worker, nobody's, checks it.
	id := w.submit("task-1 attack", "--no-check")

	w.as = &syscall.Credential{Uid: testenv.Nobody, Gid: testenv.Nobody, Groups: []uint32{}}
	mc := w.workerEnvIn(home, "machine-nobody", []string{
		"TMPDIR=" + tmp, "XDG_STATE_HOME=" + state, "XDG_CONFIG_HOME=" + filepath.Dir(filepath.Dir(place["flower/.env"])),
		"PGPASSFILE=" + place["pgpass"],
		// The origin is nobody's, and git run by nobody's worker checks
		// whose a repository is.
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
	}, "--db-file", place["team-db"])

	r := runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Errorf("the run of an ordinary user's worker ended %s (%s)", r.State, r.Reason)
	}
	if !strings.Contains(mc.out.String(), "nobody") {
		t.Errorf("the worker did not say its runs run as its own user, nobody:\n%s", mc.out)
	}
	out, err := os.ReadFile(filepath.Join(w.dirs[0], team.RunName(id), "tmp", "attack.out"))
	if err != nil {
		t.Fatalf("the attack's output: %v\nworker:\n%s", err, mc.out)
	}
	if !strings.Contains(string(out), "uid=65534") {
		t.Errorf("the run does not run as its worker's user; the attack's output:\n%.2000s", out)
	}
	for what, secret := range map[string]string{"the database's password": dbPassword, "the model's key": apiKey, "the operator's token": token} {
		if i := strings.Index(string(out), secret); i >= 0 {
			t.Errorf("the run read %s: …%s…", what, out[max(0, i-300):min(len(out), i+100)])
		}
	}
}

// nobodysOrigin is origin, in a folder of nobody's and given to nobody.
func nobodysOrigin(t *testing.T) string {
	t.Helper()
	made := origin(t)
	dir := testenv.OwnedTempDir(t, "", testenv.Nobody)
	bare := filepath.Join(dir, "origin.git")
	if out, err := exec.Command("cp", "-a", made, bare).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	if out, err := exec.Command("chown", "-R", "65534:65534", bare).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v\n%s", err, out)
	}
	return bare
}

// nobodysWorker starts a worker run as nobody on w, a world on a database
// of nobody's role (newWorldOn(t, pgtest.DatabaseFor(t, "nobody"))) whose
// origin is nobody's (set before submitting: w.remote = nobodysOrigin(t)).
// Its HOME, temp and state folders and its --db-file are nobody's.
func (w *world) nobodysWorker(name string, extra ...string) *machine {
	t := w.t
	t.Helper()
	home, tmp, state := testenv.OwnedTempDir(t, "", testenv.Nobody), testenv.OwnedTempDir(t, "", testenv.Nobody), testenv.OwnedTempDir(t, "", testenv.Nobody)
	dbFile := filepath.Join(testenv.OwnedTempDir(t, "", testenv.Nobody), "team-db")
	if err := os.WriteFile(dbFile, []byte(w.db+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dbFile, testenv.Nobody, testenv.Nobody); err != nil {
		t.Fatal(err)
	}
	w.as = &syscall.Credential{Uid: testenv.Nobody, Gid: testenv.Nobody, Groups: []uint32{}}
	return w.workerEnvIn(home, name, []string{
		"TMPDIR=" + tmp, "XDG_STATE_HOME=" + state,
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
	}, append([]string{"--db-file", dbFile}, extra...)...)
}

// The doors of a root worker's run, held for an ordinary user's too,
// whose runs run as the worker's own user: the run's tools see no
// process of its flower's and their signals reach none; the hosts its
// submission lists are reached and no others (issue 41: "the team ones
// with a worker run as root and with a worker run as an ordinary user").
func TestAnOrdinaryUsersRunReachesOnlyItsHostsAndNotItsFlower(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Fatal("this test runs a worker as nobody: it takes root")
	}
	w := newWorldOn(t, pgtest.DatabaseFor(t, "nobody"))
	tm := w.open()
	w.remote = nobodysOrigin(t)
	listed, listedHits := serveMarker(t, "127.0.0.2:0", "listed-ok")
	unlisted, unlistedHits := serveMarker(t, "127.0.0.3:0", "unlisted-ok")
	w.model.attack = strings.Join([]string{
		"{ id",
		"for p in /proc/[0-9]*; do echo \"== ${p#/proc/}: $(tr '\\0' ' ' < $p/cmdline)\"; done",
		"for sig in TERM HUP INT USR1 QUIT STOP KILL; do kill -$sig 1; done; echo signalled",
		"curl -s -m 20 -p http://" + listed + "/ && echo ' TUNNELLED'",
		"curl -s -m 20 -o /dev/null -w 'unlisted=%{http_code}\\n' http://" + unlisted + "/",
		"echo net-tried",
		"} > ../tmp/net.out 2>&1; echo attacked",
	}, "\n")
	id := w.submit("task-1 attack", "--no-check", "--net", listed)
	mc := w.nobodysWorker("machine-nobody")
	r := runOf(t, tm, id, 5*time.Minute, "ended", func(r team.Run) bool { return team.Ended(r.State) })
	if r.State != team.Achieved {
		t.Errorf("the run of an ordinary user's worker ended %s (%s)", r.State, r.Reason)
	}
	b, err := os.ReadFile(filepath.Join(w.dirs[0], team.RunName(id), "tmp", "net.out"))
	got := string(b)
	if err != nil || !strings.Contains(got, "net-tried") || !strings.Contains(got, "signalled") {
		t.Fatalf("the attack's output: %v\n%s\nworker:\n%s", err, got, mc.out)
	}
	t.Logf("inside:\n%s", got)
	if !strings.Contains(got, "uid=65534") {
		t.Errorf("the run does not run as its worker's user:\n%s", got)
	}
	if strings.Contains(got, " go -w ") {
		t.Errorf("the run's tools see the run's flower:\n%s", got)
	}
	if !strings.Contains(got, "listed-ok TUNNELLED") || !strings.Contains(got, "unlisted=403") {
		t.Errorf("the run did not reach exactly its listed host:\n%s", got)
	}
	if n, m := listedHits.Load(), unlistedHits.Load(); n != 1 || m != 0 {
		t.Errorf("the listed service was reached %d times (want 1), the unlisted %d (want 0)", n, m)
	}
}
