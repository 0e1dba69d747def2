//go:build !unix

package main

import (
	"os/exec"
	"time"
)

// drvOwnGroup: without process groups, a cancelled context kills the
// process itself and Wait gives up on its pipes after a while.
func drvOwnGroup(cmd *exec.Cmd) { cmd.WaitDelay = 5 * time.Second }
