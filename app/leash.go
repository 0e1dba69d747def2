package app

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowerrun/flower"
)

// The leash ties a run's process to the team worker that started it (see
// flower.LeashFDEnv and team's leash): the process stops at once, with
// every CLI it started, when nothing came down the pipe for the interval
// or the pipe closed. A run then never works on for a worker that is
// paused, dead or cut off: another worker may already hold the run.
// holdLeash starts watching the leash the environment names, if any; a
// leash that cannot be read is refused: a run that cannot tell whether its
// worker still holds it must not start.
func (m *Command) holdLeash() error {
	fdText := m.getenv(flower.LeashFDEnv)
	if fdText == "" {
		return nil
	}
	fd, err := strconv.Atoi(fdText)
	ttl, terr := time.ParseDuration(m.getenv(flower.LeashEnv))
	if err != nil || fd < 3 || terr != nil || ttl <= 0 {
		return usageErrorf("%s=%q and %s=%q: a team worker gives a file descriptor above 2 and a duration", flower.LeashFDEnv, fdText, flower.LeashEnv, m.getenv(flower.LeashEnv))
	}
	// A team run's tools run as this process's user: not dumpable, it
	// cannot be traced by them, nor its memory, environment or open files
	// read through /proc (the judge, the measurement, the person's channel
	// and the reply key live there). As its PID namespace's first process
	// it ignores the SIGKILL and SIGSTOP they could send it.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("flower: a team run could not shield itself from its own tools (prctl PR_SET_DUMPABLE): %w", err)
	}
	// Not handed on: the CLI and the model's Bash have no use for it (a
	// shell reading it would take the worker's confirmations).
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "leash")
	if f == nil {
		return usageErrorf("%s=%d is not an open file", flower.LeashFDEnv, fd)
	}
	cut := func(why string) {
		fmt.Fprintf(os.Stderr, "flower: %s: stopping this run at once (another worker may hold it now)\n", why)
		signalChildren(syscall.SIGKILL)
		// Not a signal to itself: in the run's own PID namespace this
		// process is its init, which ignores them; its exit ends every
		// process of the namespace.
		os.Exit(ExitFailure)
	}
	timer := time.AfterFunc(ttl, func() { cut(fmt.Sprintf("the worker did not confirm this run's attempt for %s", ttl)) })
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := f.Read(buf); err != nil {
				cut("the worker that started this run is gone")
			}
			timer.Reset(ttl)
		}
	}()
	return nil
}

// takeReplyKey reads the reply key a team worker gave on the descriptor
// flower.ReplyKeyFDEnv names (nil when none) and closes it, before any
// process that could inherit it starts.
func (m *Command) takeReplyKey() (string, error) {
	fdText := m.getenv(flower.ReplyKeyFDEnv)
	if fdText == "" {
		return "", nil
	}
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 3 {
		return "", usageErrorf("%s=%q: a team worker gives a file descriptor above 2", flower.ReplyKeyFDEnv, fdText)
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "reply key")
	if f == nil {
		return "", usageErrorf("%s=%d is not an open file", flower.ReplyKeyFDEnv, fd)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", fmt.Errorf("flower: reading the reply key its worker gave: %w", err)
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil || len(key) < 16 {
		return "", usageErrorf("%s=%d holds no reply key (%d bytes): a team worker writes one in hex", flower.ReplyKeyFDEnv, fd, len(text))
	}
	return string(key), nil
}
