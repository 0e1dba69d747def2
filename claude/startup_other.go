//go:build !linux

package claude

import "time"

// groupCPU is unknown here: the initialize wait is one window.
func groupCPU(pgid int) (time.Duration, bool) { return 0, false }
