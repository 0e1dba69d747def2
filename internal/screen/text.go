package screen

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// Sanitize makes text safe to print: escape sequences (CSI, OSC, DCS and
// the rest) are dropped whole, as are C0 and C1 control characters, DEL and
// the bidirectional overrides that can make a line read other than it is; a
// tab becomes a space and invalid UTF-8 becomes U+FFFD. Newlines are dropped
// too: a caller that means several lines passes them as several lines.
func Sanitize(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
			i++
			continue
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI: parameters up to a final byte
			i += n + csiLen(s[i+n:])
			continue
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidiControl(r):
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// SanitizeLines is Sanitize for text of several lines: each line is made
// safe and the newlines between them are kept. Every byte a command
// writes to a terminal without a Screen (an error on stderr, a reply's
// outcome, a report's problems) goes through it, and so does every text
// of the HTML report.
func SanitizeLines(s string) string {
	if isClean(strings.ReplaceAll(s, "\n", "")) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Sanitize(strings.TrimSuffix(l, "\r"))
	}
	return strings.Join(lines, "\n")
}

func isClean(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError || isBidiControl(r) {
			return false
		}
	}
	return true
}

func isBidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// escapeLen is the length of the escape sequence at the start of s (s[0] is
// ESC): CSI to its final byte, OSC/DCS/SOS/PM/APC to BEL or ST (or the end of
// the text, when the model never closed it), else ESC and one character.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + csiLen(s[2:])
	case ']', 'P', 'X', '^', '_':
		for j := 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	return 1 + n
}

// csiLen is the length of a CSI's parameters and final byte (0x40-0x7e).
func csiLen(s string) int {
	for j := 0; j < len(s); j++ {
		if s[j] >= 0x40 && s[j] <= 0x7e {
			return j + 1
		}
		if s[j] < 0x20 || s[j] > 0x7e {
			return j // a broken sequence ends where the text goes on
		}
	}
	return len(s)
}

// RuneWidth is how many columns r takes on a terminal: 2 for East Asian
// wide, fullwidth and ambiguous characters (CJK terminals draw the
// ambiguous ones wide, and cutting early beats wrapping), 0 for combining
// marks and zero-width characters, else 1.
func RuneWidth(r rune) int {
	switch {
	case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff,
		unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r),
		r >= 0xfe00 && r <= 0xfe0f:
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth, width.EastAsianAmbiguous:
		return 2
	}
	if r >= 0x1f300 && r <= 0x1faff { // emoji the width table calls neutral
		return 2
	}
	return 1
}

// Columns is the display width of s.
func Columns(s string) int {
	n := 0
	for _, r := range s {
		n += RuneWidth(r)
	}
	return n
}

// Cut shortens s to at most cols display columns, ending a cut line with
// "..."; a line that fits is returned as is.
func Cut(s string, cols int) string {
	if Columns(s) <= cols {
		return s
	}
	const ellipsis = "..."
	room := cols - len(ellipsis)
	n := 0
	for i, r := range s {
		w := RuneWidth(r)
		if n+w > room {
			return s[:i] + ellipsis
		}
		n += w
	}
	return s
}

// Pad fills s with spaces to cols display columns (a table of CJK labels
// lines up only when padded by width, not by rune count).
func Pad(s string, cols int) string {
	if c := Columns(s); c < cols {
		return s + strings.Repeat(" ", cols-c)
	}
	return s
}

// Wrap breaks s into lines of at most cols display columns: at the last
// blank that fits when there is one, anywhere in a run without blanks (a
// Chinese sentence has none). Existing line breaks stay. cols below 10
// leaves s unbroken: there is no room to wrap into.
func Wrap(s string, cols int) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if cols < 10 {
			out = append(out, line)
			continue
		}
		for Columns(line) > cols {
			n, cut, blank := 0, 0, -1
			for i, r := range line {
				w := RuneWidth(r)
				if n+w > cols {
					break
				}
				n += w
				cut = i + utf8.RuneLen(r)
				if r == ' ' {
					blank = i
				}
			}
			if blank > 0 && blank > cut/2 {
				cut = blank
			}
			out = append(out, strings.TrimRight(line[:cut], " "))
			line = strings.TrimLeft(line[cut:], " ")
		}
		out = append(out, line)
	}
	return out
}

// WrapRow breaks one screen line into rows of at most cols display columns
// (the screen's own wrap, where Wrap is a caller's for a paragraph): at the last
// space that fits when there is one, else at the column (CJK text has no
// spaces); a continuation row starts with s's own indentation, so that a
// wrapped "  | …" line still reads as its thread's. cols <= 0, or a line
// that fits, is s alone.
func WrapRow(s string, cols int) []string {
	if cols <= 0 || Columns(s) <= cols {
		return []string{s}
	}
	indent := s[:len(s)-len(strings.TrimLeft(s, " |"))]
	if Columns(indent) > cols/2 {
		indent = ""
	}
	var rows []string
	for s != "" {
		room := cols
		if Columns(s) <= room {
			rows = append(rows, s)
			break
		}
		cut, lastSpace, n := 0, -1, 0
		for i, r := range s {
			w := RuneWidth(r)
			if n+w > room {
				break
			}
			n += w
			cut = i + utf8.RuneLen(r)
			if r == ' ' && i > len(indent) {
				lastSpace = i
			}
		}
		if cut == 0 { // a rune wider than the row: take it anyway
			_, cut = utf8.DecodeRuneInString(s)
		}
		row, rest := s[:cut], s[cut:]
		if lastSpace > 0 && rest != "" && rest[0] != ' ' {
			row, rest = s[:lastSpace], s[lastSpace+1:]
		}
		rows = append(rows, strings.TrimRight(row, " "))
		if rest = strings.TrimLeft(rest, " "); rest != "" {
			rest = indent + rest
		}
		s = rest
	}
	return rows
}
