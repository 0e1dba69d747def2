package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childPIDs lists the direct children of process pid: the CLIs flower
// started (each leads a process group of its own, so a terminal's signals
// never reach it) and running --notify commands.
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// signalChildren passes sig to each child's process group (and the child
// itself): a flower that dies by SIGTERM takes its CLIs with it instead of
// leaving them to finish a paid request nobody will read.
func signalChildren(sig syscall.Signal) {
	for _, pid := range childPIDs(os.Getpid()) {
		_ = syscall.Kill(-pid, sig)
		_ = syscall.Kill(pid, sig)
	}
}

// endChildren stops flower's children before flower dies by a signal: a
// SIGTERM to each one's group, up to grace for them to exit (a CLI flushes
// its transcript on the way out), then SIGKILL to what is left. Without the
// wait a CLI could still be writing its files after flower was gone.
func endChildren(grace time.Duration) {
	signalChildren(syscall.SIGTERM)
	if waitChildren(grace) {
		return
	}
	signalChildren(syscall.SIGKILL)
	waitChildren(time.Second)
}

// waitChildren reports whether flower has no child left within d (the
// driver reaps each CLI as it exits).
func waitChildren(d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if len(childPIDs(os.Getpid())) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}
