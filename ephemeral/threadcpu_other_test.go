//go:build !unix

package ephemeral

import "time"

// cpuTimeOf is f's wall time where no thread CPU clock is read.
func cpuTimeOf(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
