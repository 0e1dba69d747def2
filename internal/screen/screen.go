// Package screen is the one way flower writes to a terminal: every line is
// sanitized (the model's and the tools' escape sequences and control bytes
// never reach the terminal, only flower's own colours do), cut to the
// terminal's width in display columns, and written under a per-terminal file
// lock so that two flower processes sharing a terminal never mix their lines.
package screen

import (
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Color is one of flower's own colours; the only escape sequences a Screen
// ever writes are these (and the erase of the prompt line).
type Color int

// Colours say who speaks.
const (
	Plain   Color = iota
	Dim           // thinking, status, subagents
	Green         // done, answered, received
	Yellow        // warnings, questions
	Red           // failures
	Cyan          // steps, handoffs, the oracle
	Magenta       // the human's prompt
)

var sgr = map[Color]string{
	Dim: "\x1b[2m", Green: "\x1b[32m", Yellow: "\x1b[33m", Red: "\x1b[31m",
	Cyan: "\x1b[36m", Magenta: "\x1b[35m",
}

const (
	reset     = "\x1b[0m"
	eraseLine = "\r\x1b[2K"
	// MinWidth and MaxWidth bound the width of a terminal line: narrower
	// terminals still get 40 columns (wrapping beats losing the text), wider
	// ones no more than 110 (long lines are hard to read).
	MinWidth = 40
	MaxWidth = 110
)

// Screen writes lines. Its methods are safe from any goroutine.
type Screen struct {
	mu     sync.Mutex
	w      io.Writer
	fd     int // the terminal's descriptor; -1 when not a terminal
	lock   *ttyLock
	prompt string
}

// New returns a Screen on f. When f is a terminal, lines are coloured, cut to
// its width and serialized with the other flower processes on it; otherwise
// they are plain lines, sanitized but never cut (a log keeps all of a line).
func New(f *os.File) *Screen {
	s := &Screen{w: f, fd: -1}
	fd := int(f.Fd())
	if IsTerminal(fd) {
		s.fd = fd
		s.lock = openTTYLock(fd)
	}
	return s
}

// NewWriter returns a Screen that writes plain lines to w.
func NewWriter(w io.Writer) *Screen { return &Screen{w: w, fd: -1} }

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// Terminal reports whether the Screen writes to a terminal.
func (s *Screen) Terminal() bool { return s.fd >= 0 }

// Width is the width lines are cut to: max(40, min(columns, 110)) on a
// terminal, 0 (no cut) otherwise.
func (s *Screen) Width() int {
	if s.fd < 0 {
		return 0
	}
	cols := 80
	if ws, err := unix.IoctlGetWinsize(s.fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		cols = int(ws.Col)
	}
	return max(MinWidth, min(cols, MaxWidth))
}

// SetPrompt sets the prompt kept on the terminal's last line, redrawn after
// every output ("" removes it). It is not shown when not a terminal.
func (s *Screen) SetPrompt(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompt = Sanitize(p)
	if s.fd >= 0 {
		s.lock.hold(func() { io.WriteString(s.w, eraseLine+s.prompt) })
	}
}

// Line writes one line in colour c; text with newlines becomes several lines.
func (s *Screen) Line(c Color, text string) { s.Block(c, strings.Split(text, "\n")...) }

// Block writes lines in colour c as one unit: no other flower process on the
// terminal writes between them.
func (s *Screen) Block(c Color, lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	width := s.Width()
	s.lock.hold(func() {
		for _, l := range lines {
			l = Sanitize(l)
			if width > 0 {
				l = Cut(l, width)
			}
			if s.fd < 0 {
				io.WriteString(s.w, l+"\n")
				continue
			}
			if on := sgr[c]; on != "" && l != "" {
				l = on + l + reset
			}
			// Each line is its own write: the lock, not the size of a
			// write, keeps a block whole.
			io.WriteString(s.w, eraseLine+l+"\n")
		}
		if s.fd >= 0 && s.prompt != "" {
			io.WriteString(s.w, s.prompt)
		}
	})
}

// Close releases the terminal lock's file.
func (s *Screen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lock.close()
}
