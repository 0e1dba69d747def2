// Package screen is the one way flower writes to a terminal: every line is
// sanitized (the model's and the tools' escape sequences and control bytes
// never reach the terminal, only flower's own colours do), wrapped at the
// terminal's width in display columns, and written under a per-terminal file
// lock so that two flower processes sharing a terminal never mix their lines.
// The terminal's bottom rows are a footer (a status line, the prompt) that
// output lines never interleave with and never leave copies of.
package screen

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"

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
	reset = "\x1b[0m"
	// eraseFooter goes to the first column and erases to the end of the
	// screen: the footer (status line, prompt) is always at the bottom.
	eraseFooter = "\r\x1b[J"
	// cursorUp moves one row up, to the footer's first row.
	cursorUp = "\x1b[1A"
	// saveCursor and restoreCursor (DECSC, DECRC) keep the cursor where
	// the human types while the status row above it is rewritten.
	saveCursor, restoreCursor = "\x1b7", "\x1b8"
	// DefaultWidth is the width of a terminal that does not say its own.
	DefaultWidth = 80
	// footerMinWidth is the narrowest terminal that gets a status line: on
	// fewer columns it would be nothing but "...".
	footerMinWidth = 20
)

// Screen writes lines. Its methods are safe from any goroutine.
//
// On a terminal the bottom rows are a footer: a status line (SetStatus)
// and the prompt (SetPrompt), each cut to one row shorter than the
// terminal so that neither ever wraps. Every output erases the footer,
// writes its lines (wrapped at the terminal's width) and draws the footer
// again, so output lines and the footer never interleave and nothing of
// an old footer is left behind, whatever the width.
type Screen struct {
	mu     sync.Mutex
	w      io.Writer
	fd     int // the terminal's descriptor; -1 when not a terminal
	lock   *ttyLock
	prompt string
	status string
	drawn  int // rows of footer on the terminal now
	cols   func() int
	// wrote is when the last output line was written.
	wrote time.Time
}

// New returns a Screen on f. When f is a terminal, lines are coloured,
// wrapped at its width and serialized with the other flower processes on
// it; otherwise they are plain lines, sanitized but never wrapped (a log
// keeps a line whole).
func New(f *os.File) *Screen {
	s := &Screen{w: f, fd: -1, wrote: time.Now()}
	fd := int(f.Fd())
	if IsTerminal(fd) {
		s.fd = fd
		s.lock = openTTYLock(fd)
		s.cols = func() int {
			if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
				return int(ws.Col)
			}
			return 0
		}
	}
	return s
}

// NewWriter returns a Screen that writes plain lines to w.
func NewWriter(w io.Writer) *Screen { return &Screen{w: w, fd: -1, wrote: time.Now()} }

// Quiet is how long ago the last output line was written (the footer does
// not count).
func (s *Screen) Quiet() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.wrote)
}

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// Terminal reports whether the Screen writes to a terminal.
func (s *Screen) Terminal() bool { return s.fd >= 0 }

// Width is the terminal's width in columns, which lines wrap at
// (DefaultWidth when the terminal reports 0); 0 when not a terminal (no
// wrap).
func (s *Screen) Width() int {
	if s.fd < 0 {
		return 0
	}
	if c := s.cols(); c > 0 {
		return c
	}
	return DefaultWidth
}

// SetPrompt sets the prompt kept on the terminal's last row, redrawn after
// every output ("" removes it). It is not shown when not a terminal. A
// prompt wider than the terminal loses the middle of its text, never its
// end ("> ").
func (s *Screen) SetPrompt(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompt = Sanitize(p)
	s.redraw()
}

// SetStatus sets the status line kept above the prompt, redrawn after
// every output ("" removes it). It is cut to one row; it is not shown when
// not a terminal or on a terminal narrower than 20 columns.
func (s *Screen) SetStatus(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text = Sanitize(text)
	if s.fd >= 0 && text != "" && s.status != "" && s.prompt != "" && s.drawn == 2 && s.Width() >= footerMinWidth {
		// Only the status row changes: rewrite it with the cursor saved,
		// so that what the human is typing after the prompt stays.
		s.status = text
		row := sgr[Dim] + Cut(text, s.Width()-1) + reset
		s.lock.hold(func() { io.WriteString(s.w, saveCursor+cursorUp+"\r\x1b[2K"+row+restoreCursor) })
		return
	}
	s.status = text
	s.redraw()
}

// redraw erases the footer and draws it again; s.mu is held.
func (s *Screen) redraw() {
	if s.fd < 0 {
		return
	}
	width := s.Width()
	s.lock.hold(func() { io.WriteString(s.w, s.eraseLocked()+s.footerLocked(width)) })
}

// eraseLocked is the sequence that erases the footer drawn now.
func (s *Screen) eraseLocked() string {
	up := strings.Repeat(cursorUp, max(0, s.drawn-1))
	s.drawn = 0
	return up + eraseFooter
}

// footerLocked draws the footer for width columns and counts its rows.
func (s *Screen) footerLocked(width int) string {
	var rows []string
	if s.status != "" && width >= footerMinWidth {
		rows = append(rows, sgr[Dim]+Cut(s.status, width-1)+reset)
	}
	if s.prompt != "" {
		rows = append(rows, cutPrompt(s.prompt, width-1))
	}
	s.drawn = len(rows)
	return strings.Join(rows, "\r\n")
}

// cutPrompt fits a prompt into cols columns, keeping its last two
// characters (the "> " the cursor waits after).
func cutPrompt(p string, cols int) string {
	if Columns(p) <= cols || cols < 8 {
		return p
	}
	tail := ""
	if r := []rune(p); len(r) > 2 {
		tail = string(r[len(r)-2:])
		p = string(r[:len(r)-2])
	}
	return Cut(p, cols-Columns(tail)) + tail
}

// Echo keeps a line the human typed at the prompt on the screen: the
// terminal's own echo of the Enter moved the cursor one row below the
// footer, so the footer is erased from one row further up, "> " and the
// typed line are written as an output line (sanitized: typed escape
// sequences stay inert; an empty line writes nothing) and the footer is
// drawn again below. Nothing happens when no footer is shown.
func (s *Screen) Echo(typed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 || s.drawn == 0 {
		return
	}
	s.drawn++
	if typed == "" {
		s.redraw()
		return
	}
	// "> " and the words: the hint before it is no news in the history.
	s.writeLocked(Magenta, []string{"> " + typed})
}

// Line writes one line in colour c; text with newlines becomes several lines.
func (s *Screen) Line(c Color, text string) { s.Block(c, strings.Split(text, "\n")...) }

// Block writes lines in colour c as one unit: no other flower process on the
// terminal writes between them.
func (s *Screen) Block(c Color, lines ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeLocked(c, lines)
}

// writeLocked writes lines as one unit; s.mu is held.
func (s *Screen) writeLocked(c Color, lines []string) {
	width := s.Width()
	s.lock.hold(func() {
		if s.fd < 0 {
			s.wrote = time.Now()
			for _, l := range lines {
				io.WriteString(s.w, Sanitize(l)+"\n")
			}
			return
		}
		s.wrote = time.Now()
		var b strings.Builder
		b.WriteString(s.eraseLocked())
		for _, l := range lines {
			for _, row := range WrapRow(Sanitize(l), width) {
				if on := sgr[c]; on != "" && row != "" {
					row = on + row + reset
				}
				b.WriteString(row + "\r\n")
			}
		}
		b.WriteString(s.footerLocked(width))
		// One write: the lock keeps a block whole against other
		// processes, one write keeps it whole against a reader.
		io.WriteString(s.w, b.String())
	})
}

// Close erases the footer and releases the terminal lock's file.
func (s *Screen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd >= 0 && s.drawn > 0 {
		s.lock.hold(func() { io.WriteString(s.w, s.eraseLocked()) })
	}
	return s.lock.close()
}
