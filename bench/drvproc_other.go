//go:build !unix

package main

import (
	"errors"
	"os/exec"
	"time"
)

// drvOwnGroup: without process groups, a cancelled context kills the
// process itself and Wait gives up on its pipes after a while.
func drvOwnGroup(cmd *exec.Cmd) { cmd.WaitDelay = 5 * time.Second }

var drvNoRusage = errors.New("CPU times and memory need getrusage, which this system lacks")

func drvSelfCPU() (time.Duration, error) { return 0, drvNoRusage }

func drvRusage() (user, sys, childUser, childSys time.Duration, maxRSS int64, err error) {
	return 0, 0, 0, 0, 0, drvNoRusage
}
