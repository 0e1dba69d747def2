package pgtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// psql runs one statement through the server's own client.
func psql(t *testing.T, s *Server, dbURL, sql string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(s.bin, "psql"), "-X", "-A", "-t", "-c", sql, dbURL).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestAServerAcceptsItsPasswordRefusesAnotherAndSurvivesARestart(t *testing.T) {
	s := Start(t)
	ctx := context.Background()
	u, err := s.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := psql(t, s, u, "create table t(x int); insert into t values (7)"); err != nil {
		t.Fatalf("psql: %v: %s", err, out)
	}
	bad := strings.Replace(u, s.password, "wrong", 1)
	if out, err := psql(t, s, bad, "select 1"); err == nil || !strings.Contains(out, "password authentication failed") {
		t.Fatalf("a wrong password: err %v, %s", err, out)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := psql(t, s, u, "select x from t"); err != nil || out != "7" {
		t.Fatalf("after a restart: %v %q", err, out)
	}
	// No TCP: the server listens on its socket only.
	if out, err := psql(t, s, "postgres://postgres:"+s.password+"@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=2", "select 1"); err == nil {
		t.Fatalf("the server answered on TCP: %s", out)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := psql(t, s, u, "select 1"); err == nil {
		t.Fatal("a stopped server answered")
	}
}

func TestRemoveLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, err := StartServer(ctx, Options{})
	if err != nil {
		unavailable(t, err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Fatalf("the cluster's directory is still there: %v", err)
	}
}

func TestDatabasesOfTheSharedServerAreSeparate(t *testing.T) {
	a, b := Database(t), Database(t)
	if a == b {
		t.Fatalf("two databases share a URL: %s", a)
	}
}

// scripts/test counts the tests that used a cluster from FLOWER_PG_LOG.
func TestDatabaseLogsItsTestForTheTierCheck(t *testing.T) {
	log := filepath.Join(t.TempDir(), "pg.log")
	t.Setenv("FLOWER_PG_LOG", log)
	Database(t)
	Database(t)
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat(t.Name()+"\n", 2); string(got) != want {
		t.Fatalf("FLOWER_PG_LOG holds %q, want %q", got, want)
	}
}
