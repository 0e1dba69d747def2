//go:build darwin || freebsd || netbsd || openbsd

package app

import "golang.org/x/sys/unix"

// The termios requests of this system (readSecret).
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
