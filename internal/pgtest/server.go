// Package pgtest runs a throwaway PostgreSQL cluster for tests and
// benchmarks: initdb into a temporary directory, a server that listens on
// a unix socket in it only (no TCP), password authentication, stopped and
// removed at the end. PostgreSQL refuses to run as root, so as root the
// cluster belongs to the "postgres" system user that Debian's package
// creates.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoServer is wrapped when no PostgreSQL server binaries are found.
var ErrNoServer = errors.New("pgtest: PostgreSQL server binaries (initdb, pg_ctl) not found")

// Install is the command that provides the server on Debian and Ubuntu.
const Install = "apt-get install -y postgresql"

// port is the number in the socket's name; no TCP port is opened, and each
// cluster has a socket directory of its own, so one number serves all.
const port = 5432

// startWait bounds pg_ctl's wait for the server to accept connections.
const startWait = 60 * time.Second

// Options choose how the cluster trades safety for speed.
type Options struct {
	// Durable keeps fsync and synchronous commit on, as a production server
	// runs: for benchmarks. Tests leave it off, which is many times faster
	// and loses nothing unless the machine itself crashes.
	Durable bool
}

// Server is one running cluster.
type Server struct {
	dir      string // owns everything below; removed by Remove
	data     string
	socket   string
	log      string
	bin      string
	password string
	opts     Options
	cred     *syscall.Credential // nil: run as this user

	rolesMu sync.Mutex
	roles   map[string]string // the password of each role CreateDatabaseFor made
}

// Bin finds the directory of initdb and pg_ctl: $FLOWER_PG_BIN, else the
// newest /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH),
// else PATH.
func Bin() (string, error) {
	if d := os.Getenv("FLOWER_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("%w: FLOWER_PG_BIN=%s has no initdb", ErrNoServer, d)
		}
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(found, func(i, j int) bool { return versionOf(found[i]) > versionOf(found[j]) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
	}
	return "", fmt.Errorf("%w (install them: %s)", ErrNoServer, Install)
}

func versionOf(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

// StartServer makes a cluster in a new temporary directory and starts it.
// Stop it with Remove. ctx bounds initdb and the start.
func StartServer(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flower-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, data: filepath.Join(dir, "data"), socket: dir, log: filepath.Join(dir, "server.log"),
		bin: bin, password: randomHex(12), opts: opts}
	if err := s.prepare(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	pwfile := filepath.Join(dir, "pw")
	if err := s.writeOwned(pwfile, s.password+"\n"); err != nil {
		s.Remove()
		return nil, err
	}
	if _, err := s.run(ctx, "initdb", "-D", s.data, "-U", "postgres", "--pwfile", pwfile,
		"--auth-local=scram-sha-256", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		s.Remove()
		return nil, err
	}
	os.Remove(pwfile)
	if err := s.Start(ctx); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

// prepare hands the directory to the postgres user when running as root.
func (s *Server) prepare() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("%w: running as root needs the postgres system user (install the server: %s): %v", ErrNoServer, Install, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return os.Chown(s.dir, uid, gid)
}

func (s *Server) writeOwned(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	if s.cred != nil {
		return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

func (s *Server) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, tool), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		logTail, _ := os.ReadFile(s.log)
		return out.Bytes(), fmt.Errorf("pgtest: %s: %w\n%s\n%s", tool, err, out.Bytes(), tail(logTail, 2000))
	}
	return out.Bytes(), nil
}

// Start starts the server (again, after Stop) and waits until it accepts
// connections.
func (s *Server) Start(ctx context.Context) error {
	settings := []string{"-k", s.socket, "-p", strconv.Itoa(port), "-c", "listen_addresses=", "-c", "max_connections=600"}
	if !s.opts.Durable {
		settings = append(settings, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	sctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	_, err := s.run(sctx, "pg_ctl", "-D", s.data, "-l", s.log, "-w", "-t", strconv.Itoa(int(startWait/time.Second)),
		"-o", strings.Join(settings, " "), "start")
	return err
}

// Stop stops the server, breaking every connection ("fast" mode), and
// keeps its data for Start.
func (s *Server) Stop(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	_, err := s.run(sctx, "pg_ctl", "-D", s.data, "-m", "fast", "-w", "stop")
	return err
}

// Crash stops the server as a crash would ("immediate" mode: no
// checkpoint, the WAL not yet flushed is lost), and keeps its data for
// Start, which recovers.
func (s *Server) Crash(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	_, err := s.run(sctx, "pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop")
	return err
}

// Restart stops the server and starts it again.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Remove stops the server if it runs and deletes the cluster.
func (s *Server) Remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	if _, err := os.Stat(filepath.Join(s.data, "postmaster.pid")); err == nil {
		_, _ = s.run(ctx, "pg_ctl", "-D", s.data, "-m", "immediate", "-w", "stop")
	}
	return os.RemoveAll(s.dir)
}

// URL is a connection URL for database db as the superuser.
func (s *Server) URL(db string) string {
	return s.URLWithPassword(db, s.password)
}

// URLWithPassword is URL with another password: what a wrong one gives.
func (s *Server) URLWithPassword(db, password string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password), Host: "", Path: "/" + db}
	q := url.Values{"host": {s.socket}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}
	u.RawQuery = q.Encode()
	return u.String()
}

// CreateDatabase makes a new empty database and returns its URL. It runs
// createdb, so it needs no driver.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := "t_" + randomHex(6)
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "createdb"), "-h", s.socket, "-p", strconv.Itoa(port), "-U", "postgres", name)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+s.password)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: createdb: %w: %s", err, out)
	}
	return s.URL(name), nil
}

// CreateDatabaseFor makes a login role named role (an ordinary one: no
// superuser, no role or database creation) with a password of its own, and
// a database it owns, and returns the database's URL as that role. The
// socket's folder is opened for others to pass (0711), so that a process
// of another user (a worker run as an ordinary user) reaches the server;
// the password still stands between them.
func (s *Server) CreateDatabaseFor(ctx context.Context, role string) (string, error) {
	if strings.ContainsAny(role, "\"' ") || role == "" {
		return "", fmt.Errorf("pgtest: a role name without quotes or spaces, not %q", role)
	}
	s.rolesMu.Lock()
	password, made := s.roles[role]
	if !made {
		password = randomHex(12)
		psql := exec.CommandContext(ctx, filepath.Join(s.bin, "psql"), "-h", s.socket, "-p", strconv.Itoa(port), "-U", "postgres", "-d", "postgres",
			"-v", "ON_ERROR_STOP=1", "-c", fmt.Sprintf(`create role "%s" login password '%s'`, role, password))
		psql.Env = append(os.Environ(), "PGPASSWORD="+s.password)
		if out, err := psql.CombinedOutput(); err != nil {
			s.rolesMu.Unlock()
			return "", fmt.Errorf("pgtest: a role %s: %w: %s", role, err, out)
		}
		if s.roles == nil {
			s.roles = map[string]string{}
		}
		s.roles[role] = password
	}
	s.rolesMu.Unlock()
	name := "t_" + randomHex(6)
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "createdb"), "-h", s.socket, "-p", strconv.Itoa(port), "-U", "postgres", "-O", role, name)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+s.password)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: createdb: %w: %s", err, out)
	}
	if err := os.Chmod(s.dir, 0o711); err != nil {
		return "", fmt.Errorf("pgtest: opening the socket's folder: %w", err)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(role, password), Path: "/" + name}
	u.RawQuery = url.Values{"host": {s.socket}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}.Encode()
	return u.String(), nil
}

// Log is the server's log so far, for a failing test's message.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.log)
	return string(tail(b, 4000))
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
