package claude

import (
	"log/slog"
	"time"
)

// startupWindows bounds how long at most initialize waits for a CLI that keeps
// working at its start: ten windows (ten minutes by default).
const startupWindows = 10

// stillStarting decides, each time a window of the initialize wait runs
// out, whether to wait another: yes while the CLI's process group used CPU
// in that window (at least a hundredth of it) and ten windows have not
// passed. On a busy machine the CLI's start (about a CPU-second of its
// own) can take minutes of wall time; a CLI that works is waited for, and
// said so, while one that sits idle fails after one window as before.
// Where the CLI's CPU time cannot be read (not Linux) it is one window.
func (c *conn) stillStarting(window time.Duration) func() bool {
	var last time.Duration
	if c.cmd.Process != nil {
		last, _ = groupCPU(c.cmd.Process.Pid)
	}
	windows, said := 0, false
	return func() bool {
		windows++
		if c.cmd.Process == nil || windows >= startupWindows {
			return false
		}
		used, ok := groupCPU(c.cmd.Process.Pid)
		if !ok || used-last < window/100 {
			return false
		}
		last = used
		if said {
			return true
		}
		said = true
		slog.Warn("claude: the CLI has not answered initialize yet but is still starting (it is using CPU): waiting longer; a busy machine starts it slowly",
			"waited", time.Duration(windows)*window, "at_most", startupWindows*window)
		return true
	}
}
