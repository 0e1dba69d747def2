//go:build unix

package main

import (
	"os/exec"
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
