// Package filelock serializes the flower processes that share a run
// directory around its JSON files (manifest.json today, lineage.json
// next): an exclusive flock on a lock file beside the file, taken with a
// context so that no wait is unbounded.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// pollInterval separates two tries for a lock another process holds.
const pollInterval = 20 * time.Millisecond

// Lock is a held lock; Unlock releases it.
type Lock struct{ f *os.File }

// Acquire takes an exclusive lock on path (normally "<file>.lock"),
// creating it 0600. It waits while another process holds the lock, until
// ctx ends; the error then says the lock was still held. The lock file
// stays: removing it would let two processes lock different files.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("filelock: %w", err)
	}
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return &Lock{f: f}, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, fmt.Errorf("filelock: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("filelock: %s is still locked by another process: %w", path, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Unlock releases the lock. It is safe to call more than once.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// With runs fn while holding the lock on path.
func With(ctx context.Context, path string, fn func() error) error {
	l, err := Acquire(ctx, path)
	if err != nil {
		return err
	}
	defer l.Unlock()
	return fn()
}
