package pgtest

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// shared is the process's one cluster for Database: started on first use,
// removed by Run when the tests end.
var shared struct {
	mu     sync.Mutex
	inRun  bool
	server *Server
	err    error
}

// Run runs a test binary's tests and then removes the shared cluster. A
// package whose tests call Database needs it in its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
func Run(m *testing.M) int {
	shared.mu.Lock()
	shared.inRun = true
	shared.mu.Unlock()
	code := m.Run()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.server != nil {
		shared.server.Remove()
		shared.server = nil
	}
	return code
}

// Database returns the URL of a new empty database on the test binary's
// shared cluster (started on first use). Without the server binaries the
// test fails under CI and is skipped elsewhere, naming the install command.
func Database(t testing.TB) string {
	t.Helper()
	s := sharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatalf("%v\nserver log:\n%s", err, s.Log())
	}
	return u
}

// sharedServer is the package's shared cluster, started on first use.
func sharedServer(t testing.TB) *Server {
	t.Helper()
	shared.mu.Lock()
	if !shared.inRun {
		shared.mu.Unlock()
		t.Fatal("pgtest.Database needs pgtest.Run in the package's TestMain (it removes the shared cluster)")
	}
	if shared.server == nil && shared.err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		shared.server, shared.err = StartServer(ctx, Options{})
		cancel()
	}
	s, err := shared.server, shared.err
	shared.mu.Unlock()
	if err != nil {
		unavailable(t, err)
	}
	logUse(t)
	return s
}

// DatabaseFor is Database owned by, and reached as, a login role of its
// own named role (CreateDatabaseFor): an ordinary role, as an operator
// gives an ordinary user.
func DatabaseFor(t testing.TB, role string) string {
	t.Helper()
	s := sharedServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := s.CreateDatabaseFor(ctx, role)
	if err != nil {
		t.Fatalf("%v\nserver log:\n%s", err, s.Log())
	}
	return u
}

// Start makes a cluster of the test's own, removed when the test ends: for
// tests that stop or restart the server.
func Start(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := StartServer(ctx, Options{})
	if err != nil {
		unavailable(t, err)
	}
	logUse(t)
	t.Cleanup(func() { s.Remove() })
	return s
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoServer) && os.Getenv("CI") == "" {
		t.Skipf("%v (install: %s)", err, Install)
	}
	t.Fatal(err)
}

// logUse appends the test's name to $FLOWER_PG_LOG, when set: scripts/test
// fails when no test used a server, as it does for the real-CLI tier.
func logUse(t testing.TB) {
	path := os.Getenv("FLOWER_PG_LOG")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatalf("pgtest: FLOWER_PG_LOG: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString(t.Name() + "\n"); err != nil {
		t.Fatalf("pgtest: FLOWER_PG_LOG: %v", err)
	}
}
