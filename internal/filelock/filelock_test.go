package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAcquireWaitsForTheHolderWithinTheContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest.json.lock")
	held, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file, so a second open in this
	// process contends like another process would.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while held = %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), path)
		if err == nil {
			err = l.Unlock()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not get the lock after it was released")
	}
	if err := held.Unlock(); err != nil {
		t.Errorf("a second Unlock = %v", err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("lock file: %v, %v", info, err)
	}
}

func TestWithSerializesReadModifyWrite(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "n")
	if err := os.WriteFile(file, []byte("0"), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				err := With(context.Background(), file+".lock", func() error {
					b, err := os.ReadFile(file)
					if err != nil {
						return err
					}
					n, _ := strconv.Atoi(string(b))
					return os.WriteFile(file, []byte(strconv.Itoa(n+1)), 0o600)
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if b, _ := os.ReadFile(file); string(b) != "80" {
		t.Errorf("counter = %s, want 80: an update was lost", b)
	}
}

func TestAcquireReportsAnUnopenableLockFile(t *testing.T) {
	if _, err := Acquire(context.Background(), filepath.Join(t.TempDir(), "missing", "x.lock")); err == nil {
		t.Error("a lock file in a missing folder should be an error")
	}
}
