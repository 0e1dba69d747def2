// Package screentest plays what a terminal received through a terminal
// emulator, so that a test sees the screen a person sees (what is left
// after every erase and redraw), not the bytes.
package screentest

import (
	"strings"

	"github.com/hinshun/vt10x"
)

// Render plays raw into a terminal of cols by rows and returns its rows,
// trailing spaces dropped.
func Render(raw string, cols, rows int) []string {
	term := vt10x.New(vt10x.WithSize(cols, rows))
	term.Write([]byte(raw))
	var out []string
	for y := range rows {
		var b strings.Builder
		for x := range cols {
			c := term.Cell(x, y).Char
			if c == 0 {
				c = ' '
			}
			b.WriteRune(c)
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}
