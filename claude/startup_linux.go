package claude

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on every Linux
// architecture Go supports).
const clockTick = 10 * time.Millisecond

// groupCPU sums the user and system CPU time of every live process in the
// process group pgid (the CLI starts in a group of its own, so a wrapper
// script and what it starts count too).
func groupCPU(pgid int) (time.Duration, bool) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	var ticks int64
	found := false
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		// The command name (field 2) may hold spaces and parentheses:
		// the fields that follow start after its last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		// f[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
		if len(f) < 13 {
			continue
		}
		if g, err := strconv.Atoi(string(f[2])); err != nil || g != pgid {
			continue
		}
		user, _ := strconv.ParseInt(string(f[11]), 10, 64)
		sys, _ := strconv.ParseInt(string(f[12]), 10, 64)
		ticks += user + sys
		found = true
	}
	return time.Duration(ticks) * clockTick, found
}
