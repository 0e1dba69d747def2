package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuPrefix starts the line -exec-cpu prints after a test binary ended; the
// table reads it back from the package's output.
const cpuPrefix = "test-times: cpu "

// execCPU runs a test binary as `go test -exec` does and then prints the CPU
// time of it and of every process it waited for (the CLIs, flower, git,
// bubblewrap): on a machine whose cores are busy, that and not the wall
// time says what a package costs. A process that outlived its parent or
// left as a daemon (a PostgreSQL server started by pg_ctl) is not counted.
// Signals go test sends (its timeout's SIGQUIT, an interrupt) reach the
// binary, and the exit status is the binary's.
func execCPU(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "test-times: -exec-cpu needs the program to run (go test -exec 'test-times -exec-cpu')")
		return 2
	}
	// The binary dies with this process (SIGKILLed by go test past its
	// grace): the parent-death signal is tied to the thread that started it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "test-times: %v\n", err)
		return 2
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var rusage syscall.Rusage
	if gerr := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rusage); gerr == nil {
		user := time.Duration(rusage.Utime.Nano())
		sys := time.Duration(rusage.Stime.Nano())
		fmt.Fprintf(stdout, "%s%.2fs (user %.2fs, system %.2fs) in the test binary and the processes it waited for\n",
			cpuPrefix, (user + sys).Seconds(), user.Seconds(), sys.Seconds())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	default:
		fmt.Fprintf(stderr, "test-times: %v\n", err)
		return 2
	}
}

// cpuSeconds reads a line execCPU printed: its seconds, or false.
func cpuSeconds(line string) (float64, bool) {
	rest, ok := strings.CutPrefix(line, cpuPrefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "s ")
	if !ok {
		return 0, false
	}
	secs, err := strconv.ParseFloat(num, 64)
	return secs, err == nil
}
