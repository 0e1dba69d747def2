package app

import "golang.org/x/sys/unix"

// The termios requests of this system (readSecret).
const (
	ioctlGetTermios = unix.TCGETS
	ioctlSetTermios = unix.TCSETS
)
