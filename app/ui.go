package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/flowerrun/flower"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/flowerrun/flower/internal/screen"
)

// newUI makes the screen on stdout and says whether stdin is a terminal.
func (m *Command) newUI(lang flower.Lang) *UI {
	m.lang = lang
	ui := &UI{Stdin: m.Stdin, Lang: lang, hooks: &m.hooks}
	if f, ok := m.Stdout.(*os.File); ok {
		ui.Screen = screen.New(f)
		if ui.Screen.Terminal() && m.Signals {
			// The library's log goes through the screen, warnings and
			// worse only: a raw line on the terminal would tear the
			// status line and the prompt.
			slog.SetDefault(slog.New(slog.NewTextHandler(screenLog{ui.Screen}, &slog.HandlerOptions{Level: slog.LevelWarn})))
		}
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
// io.EOF means the input closed (Ctrl-D). It does not see Ctrl-C: a
// question flower asks itself uses askYesNo.
func (ui *UI) ReadLine(prompt string) (string, error) {
	return ui.readLinePrompt(context.Background(), prompt)
}

// askYesNo asks a yes/no question on the terminal (def is the answer of a
// bare Enter). Ctrl-C (ctx ending) gives up at once, before any Enter,
// instead of waiting for a line and then quitting with it: the error says
// that nothing was done and exits 130 as setup's prompts do. Ctrl-D is a
// no, exit 1, as at the start prompt.
func (ui *UI) askYesNo(ctx context.Context, prompt string, def bool) (bool, error) {
	line, err := ui.readLinePrompt(ctx, prompt)
	if ctx.Err() != nil {
		return false, &exitError{code: ExitInterrupted, err: fmt.Errorf("%s%w", ui.T("askQuit"), silentWrap{errCancelled})}
	}
	if err != nil {
		return false, &exitError{code: ExitFailure, err: fmt.Errorf("%s%w", ui.T("cancelled"), silentWrap{errCancelled})}
	}
	if def {
		return isYes(line), nil
	}
	return isExplicitYes(line), nil
}

// readLinePrompt is ReadLine that gives up when ctx ends (Ctrl-C).
func (ui *UI) readLinePrompt(ctx context.Context, prompt string) (string, error) {
	if ui.Interactive {
		ui.Screen.SetPrompt(ui.fitPrompt(prompt))
		defer ui.Screen.SetPrompt("")
	}
	return ui.readLineCtx(ctx)
}

// fitPrompt keeps a question whole: the prompt is one row of the footer,
// so a question wider than the terminal is written above it as a wrapped
// line and the prompt keeps only its answer marker.
func (ui *UI) fitPrompt(prompt string) string {
	question, marker := splitPrompt(prompt, ui.Screen.Width())
	if question != "" {
		ui.Screen.Line(screen.Plain, question)
	}
	return marker
}

// splitPrompt returns the question to write above a prompt that does not
// fit in width columns, and the prompt that stays: its answer marker
// ("[Y/n] ", else "> "). A prompt that fits, or a width of 0 (no
// terminal), stays whole.
func splitPrompt(prompt string, width int) (question, marker string) {
	if width == 0 || screen.Columns(prompt) < width {
		return "", prompt
	}
	question, marker = strings.TrimRight(prompt, " "), "> "
	if i := strings.LastIndex(question, "["); i > 0 && strings.HasSuffix(question, "]") {
		question, marker = question[:i], question[i:]+" "
	}
	return strings.TrimSpace(question), marker
}

// readSecret is readLinePrompt with the terminal's echo off, so that a key
// never shows on the screen (or in its scrollback). Ctrl-C still signals
// (ISIG stays on) and ends ctx; the terminal's state is restored however
// the read ends.
func (ui *UI) readSecret(ctx context.Context, prompt string) (string, error) {
	if f, ok := ui.Stdin.(*os.File); ok && ui.Interactive {
		fd := int(f.Fd())
		if state, err := term.GetState(fd); err == nil {
			if t, err := unix.IoctlGetTermios(fd, ioctlGetTermios); err == nil {
				t.Lflag &^= unix.ECHO
				if unix.IoctlSetTermios(fd, ioctlSetTermios, t) == nil {
					defer term.Restore(fd, state)
				}
			}
		}
	}
	return ui.readLinePrompt(ctx, prompt)
}

// readLineCtx reads one line, giving up when ctx ends.
func (ui *UI) readLineCtx(ctx context.Context) (string, error) {
	ui.in.setContext(ctx)
	defer ui.in.setContext(context.Background())
	line, err := ui.lines.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", err
	}
	ui.touched()
	return strings.TrimRight(line, "\r\n"), nil
}

// readTyped is readLineCtx for a line typed under the screen's footer (the
// start prompt, the run's console): the line stays on the screen above the
// footer. Not for a secret: the wizard's ReadLine never echoes.
func (ui *UI) readTyped(ctx context.Context) (string, error) {
	line, err := ui.readLineCtx(ctx)
	if err == nil && ui.Interactive {
		ui.Screen.Echo(line)
	}
	return line, err
}

// touched records that the person gave input just now.
func (ui *UI) touched() { ui.lastInput.Store(time.Now().UnixNano()) }

// LastInput is when the person last gave input flower saw: a line or a
// Ctrl-C (the terminal hands over a line only at Enter, so typing before
// Enter is not seen); zero before any.
func (ui *UI) LastInput() time.Time {
	if n := ui.lastInput.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Printf writes one line in flower's plain colour.
func (ui *UI) Printf(format string, a ...any) {
	ui.Screen.Line(screen.Plain, fmt.Sprintf(format, a...))
}

// T is flower's fixed text key in the UI's language.
func (ui *UI) T(key string) string { return text(ui.Lang, key) }

// Request is what the human typed at the start prompt.
type Request struct {
	// Text is the request; "" with Continue.
	Text string
	// Continue: Enter on a waking run, carry on where it stopped.
	Continue bool
	// New: /new, archive the last brief, goal and lineage, then ask again
	// (AskRequest with waking false).
	New bool
}

// errCancelled is Ctrl-C or Ctrl-D at the start prompt: exit 1, 已取消.
var errCancelled = errors.New("flower: cancelled at the prompt")

// askMode is what the start prompt offers.
type askMode int

const (
	askStart         askMode = iota // a new request
	askWake                         // Enter continues, words add to it, /new starts anew
	askAfterAchieved                // the goal was achieved: Enter or words start anew, /continue continues
	askBeforeBrief                  // stopped before its brief: Enter continues the request, words start anew, /new asks
)

// AskRequest asks for the request, as bare `flower` does: on a terminal
// with the start (or, waking, the continue) header and a "> " prompt, the
// line read as typed, no shell parsing; from a pipe the whole input is the
// request, with no header. Ctrl-C quits with nothing done (exit 130, as
// every prompt of flower's), Ctrl-D cancels (exit 1). On a terminal an
// empty line at the start prompt asks again; from a pipe an empty request
// is an error; waking, Enter means continue.
func (ui *UI) AskRequest(ctx context.Context, waking bool) (Request, error) {
	if waking {
		return ui.askRequest(ctx, askWake)
	}
	return ui.askRequest(ctx, askStart)
}

// languageHint says, the first time only, which language flower speaks
// and how to switch.
func (ui *UI) languageHint() {
	if ui.langHinted {
		return
	}
	ui.langHinted = true
	ui.Screen.Line(screen.Dim, ui.T("langHint"))
}

func (ui *UI) askRequest(ctx context.Context, mode askMode) (Request, error) {
	var text string
	if ui.Interactive {
		head := map[askMode]string{askStart: "start", askWake: "wake", askAfterAchieved: "wakeAchieved", askBeforeBrief: "wakeBeforeBrief"}[mode]
		ui.Screen.Line(screen.Plain, ui.T(head))
		ui.languageHint()
		for {
			ui.Screen.SetPrompt("> ")
			line, err := ui.readTyped(ctx)
			ui.Screen.SetPrompt("")
			switch {
			case ctx.Err() != nil:
				return Request{}, &exitError{code: ExitInterrupted, err: fmt.Errorf("%s%w", ui.T("askQuit"), silentWrap{errCancelled})}
			case err != nil:
				return Request{}, &exitError{code: ExitFailure, err: fmt.Errorf("%s%w", ui.T("cancelled"), silentWrap{errCancelled})}
			}
			text = line
			if strings.TrimSpace(text) != "" || mode != askStart {
				break
			}
			ui.Screen.Line(screen.Yellow, ui.T("emptyAgain"))
		}
	} else {
		data, err := io.ReadAll(&ctxReader{ctx: ctx, ui: ui})
		if err != nil && len(data) == 0 {
			return Request{}, &exitError{code: ExitFailure, err: fmt.Errorf("%s%w", ui.T("cancelled"), silentWrap{errCancelled})}
		}
		text = string(data)
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "/new" && mode != askStart:
		return Request{New: true}, nil
	case text == "/continue" && mode == askAfterAchieved:
		return Request{Continue: true}, nil
	case text == "" && (mode == askWake || mode == askBeforeBrief):
		return Request{Continue: true}, nil
	case text == "" && mode == askAfterAchieved:
		// Enter after an achieved goal starts something new.
		return Request{New: true}, nil
	case text == "":
		return Request{}, &exitError{code: ExitFailure, err: errorText(ui.Lang, "empty")}
	}
	return Request{Text: text}, nil
}

// ctxReader reads the UI's input until ctx ends.
type ctxReader struct {
	ctx context.Context
	ui  *UI
}

func (r *ctxReader) Read(p []byte) (int, error) {
	r.ui.in.setContext(r.ctx)
	defer r.ui.in.setContext(context.Background())
	return r.ui.lines.Read(p)
}

// silentWrap carries an error for errors.Is without adding to the message.
type silentWrap struct{ err error }

func (s silentWrap) Error() string { return "" }
func (s silentWrap) Unwrap() error { return s.err }

// screenLog writes log records as dim screen lines.
type screenLog struct{ s *screen.Screen }

func (l screenLog) Write(p []byte) (int, error) {
	l.s.Line(screen.Dim, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
