package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flowerrun/flower/internal/screen"
)

// newUI makes the screen on stdout and says whether stdin is a terminal.
func (m *Command) newUI(lang string) *UI {
	m.lang = lang
	ui := &UI{Stdin: m.Stdin, Lang: lang, hooks: &m.hooks}
	if f, ok := m.Stdout.(*os.File); ok {
		ui.Screen = screen.New(f)
	} else {
		ui.Screen = screen.NewWriter(m.Stdout)
	}
	if f, ok := m.Stdin.(*os.File); ok {
		ui.Interactive = screen.IsTerminal(int(f.Fd()))
	}
	ui.in = newPollReader(m.Stdin)
	ui.lines = bufio.NewReader(ui.in)
	return ui
}

// ReadLine shows prompt and reads one line, as typed: no shell parsing.
// io.EOF means the input closed (Ctrl-D).
func (ui *UI) ReadLine(prompt string) (string, error) {
	if ui.Interactive {
		ui.Screen.SetPrompt(prompt)
		defer ui.Screen.SetPrompt("")
	}
	return ui.readLineCtx(context.Background())
}

// readLineCtx reads one line, giving up when ctx ends.
func (ui *UI) readLineCtx(ctx context.Context) (string, error) {
	ui.in.setContext(ctx)
	defer ui.in.setContext(context.Background())
	line, err := ui.lines.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// Printf writes one line in flower's plain colour.
func (ui *UI) Printf(format string, a ...any) {
	ui.Screen.Line(screen.Plain, fmt.Sprintf(format, a...))
}

// T is flower's fixed text key in the UI's language.
func (ui *UI) T(key string) string { return text(ui.Lang, key) }
