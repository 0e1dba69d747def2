//go:build unix

package ephemeral

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTimeOf is the CPU time f used on its thread: the time it waited for
// a core on a loaded machine is not in it, so a comparison of two calls
// holds on a busy machine as on a quiet one.
func cpuTimeOf(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &before) != nil {
		return wallTimeOf(f)
	}
	f()
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &after) != nil {
		return wallTimeOf(f)
	}
	return time.Duration(after.Nano() - before.Nano())
}

func wallTimeOf(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
