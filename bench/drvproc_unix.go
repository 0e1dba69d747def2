//go:build unix

package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// drvOwnGroup puts cmd in a process group of its own and makes a cancelled
// context kill the whole group: node's CLI child, or the CLI's own tool
// processes, must not outlive a variant that is stopped.
func drvOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
}

// drvSelfCPU is this process's CPU time so far, user and system.
func drvSelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return drvTimeval(ru.Utime) + drvTimeval(ru.Stime), nil
}

// drvRusage is this process's CPU time, its waited-for children's and its
// peak resident set size in bytes.
func drvRusage() (user, sys, childUser, childSys time.Duration, maxRSS int64, err error) {
	var self, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return 0, 0, 0, 0, 0, fmt.Errorf("getrusage: %w", err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		return 0, 0, 0, 0, 0, fmt.Errorf("getrusage: %w", err)
	}
	rss := int64(self.Maxrss)
	if runtime.GOOS != "darwin" {
		rss *= 1024 // kilobytes everywhere but macOS
	}
	return drvTimeval(self.Utime), drvTimeval(self.Stime), drvTimeval(kids.Utime), drvTimeval(kids.Stime), rss, nil
}

func drvTimeval(tv syscall.Timeval) time.Duration {
	return time.Duration(tv.Sec)*time.Second + time.Duration(tv.Usec)*time.Microsecond
}
