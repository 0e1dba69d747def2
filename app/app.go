// Package app is the flower command line as a library: cmd/flower is
// app.Main(nil), and a program of your own that builds its own workflow
// gets the very same command line (subcommands, flags, credentials, screen,
// exit codes) with app.Main(yourFlow).
//
//	func main() { os.Exit(app.Main(myFlow)) }
//
// The package renders; the library below it never prints.
package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/screen"
)

// Exit codes, documented in the help text and the README.
const (
	ExitOK = 0
	// ExitFailure is every deliberate stop: cancelled, an empty request,
	// missing or rejected credentials, a failed step, a run directory
	// that cannot be written. The message is on stderr.
	ExitFailure = 1
	// ExitUsage is a command-line error: an unknown subcommand or flag, a
	// bad flag value.
	ExitUsage = 2
	// ExitInterrupted is a second Ctrl-C: the run stopped, everything
	// resumable.
	ExitInterrupted = 130
)

// Program builds the workflow behind `go` for one command line: it may talk
// to the human through ui first (ask for the request, show the wake
// banner). Main then drives the workflow: the Runtime from the flags, the
// screen, the human channel's terminal and file front ends, Ctrl-C, the
// closing line and the exit code.
type Program func(ctx context.Context, cfg Config, ui *UI) (*flower.Workflow, error)

// UI is what a flow renders through: the screen and the terminal's input.
type UI struct {
	Screen *screen.Screen
	// Stdin is the terminal's (or the pipe's) input.
	Stdin io.Reader
	// Interactive says stdin is a terminal: a human can answer.
	Interactive bool
	// Lang is the language of flower's own lines.
	Lang flower.Lang

	// answerer: something other than the input answers the questions
	// (the demo's simulated human), so no warning that nobody can.
	answerer bool
	// lastInput is when the person last gave input that flower can see
	// (a line, a Ctrl-C), in UnixNano; 0 before any. The demo's simulated
	// human waits while the person is busy.
	lastInput atomic.Int64
	// heldQuestion: the person pressed Ctrl-C at a question and has not
	// pressed Enter yet; the question is theirs to cancel, and the
	// demo's simulated human does not answer it.
	heldQuestion atomic.Bool
	// request is the request the flow runs on, for the ending and the
	// next wake (Drive takes cfg.Request; a flow that asked for it at
	// the prompt sets it).
	request string
	// langHinted: the line that says which language flower speaks and how
	// to switch was shown; a process shows it once (a wake asks twice when
	// the person types /new).
	langHinted bool

	in    *pollReader
	lines *bufio.Reader
	hooks *hooks
}

// Main runs the command line with os.Args and returns the exit code: wf
// behind `go`, with every flag of flower's own command line (a workflow
// program's defaults are those of the original's `run`: trim off unless
// -T, -W allowed). nil runs the starter flow: that is cmd/flower.
func Main(wf *flower.Workflow) int {
	if wf == nil {
		return MainFunc(nil)
	}
	return MainFunc(func(context.Context, Config, *UI) (*flower.Workflow, error) { return wf, nil })
}

// MainFunc is Main for a workflow built from the command line (the request
// in cfg.Request, the flags); nil runs the starter flow.
func MainFunc(p Program) int {
	m := &Command{Program: p, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Signals: true}
	return m.Run(context.Background(), os.Args[1:])
}

// Command is one invocation, testable without a process: the zero value
// plus the three streams is a working command.
type Command struct {
	// Program builds the workflow behind `go`; nil means StarterFlow.
	Program Program
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Getenv is os.Getenv when nil; Name, when empty, is the command
	// that runs this flower again (commandName).
	Getenv func(string) string
	Name   string
	// Signals makes Run handle Ctrl-C, SIGTERM and SIGHUP (Main sets it;
	// an in-process test leaves the process's signals alone).
	Signals bool

	hooks hooks
	lang  flower.Lang // the subcommand's language, for the last words
	// typedGo says the command line named go itself: its one-word request
	// is no typo of a subcommand.
	typedGo bool
	// flags are the global flags the subcommand parsed.
	flags globals
	// quitHint, when set, replaces the line a quit by Ctrl-C ends with
	// (the demo continues with its own command, not bare flower).
	quitHint string
}

func (m *Command) getenv(k string) string {
	if m.Getenv != nil {
		return m.Getenv(k)
	}
	return os.Getenv(k)
}

// name is the command a usage line or hint names: Name when set, else
// the one that runs this flower again (commandName).
func (m *Command) name() string {
	if m.Name != "" {
		return m.Name
	}
	return commandName()
}

// subcommands is the one list the dispatcher and the rewrite read (the
// original's rewrite had its own list and forgot setup).
var subcommands = []string{"go", "run", "once", "setup", "reply", "demo", "report", "submit", "worker", "workers", "serve", "runs", "cancel", "retry", "version", "help"}

func isSubcommand(s string) bool {
	for _, c := range subcommands {
		if c == s {
			return true
		}
	}
	return false
}

// Run dispatches args (without the program name) and returns the exit code.
// Every error is printed once, on stderr, without a trace.
func (m *Command) Run(ctx context.Context, args []string) int {
	m.typedGo = nextNonGlobal(args) == "go"
	args = rewrite(args)
	if m.Signals {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		defer m.watchSignals(cancel)()
	}
	err := m.dispatch(ctx, args)
	if errors.Is(context.Cause(ctx), errQuit) && !errors.Is(err, errCancelled) {
		// Quit by Ctrl-C: whatever the command returned, the step in
		// flight is rescued and the exit says so in one line.
		m.hooks.runRescue()
		hint := text(m.lang, "quit")
		if m.quitHint != "" {
			hint = m.quitHint
		}
		err = &exitError{code: ExitInterrupted, err: errors.New(hint)}
	}
	return m.exit(err)
}

// dispatch runs the subcommand args[0] names (args as rewrite left them).
func (m *Command) dispatch(ctx context.Context, args []string) error {
	var err error
	switch args[0] {
	case "help":
		// flower help CMD is flower CMD --help; the typo guard's "did you
		// mean `flower help`?" lands here too.
		if len(args) > 1 && isSubcommand(args[1]) && args[1] != "help" {
			return m.dispatch(ctx, []string{args[1], "--help"})
		}
		m.printHelp(m.usage(m.argLang(args[1:])))
	case "version":
		err = m.runVersion(ctx, args[1:])
	case "go":
		err = m.runGo(ctx, args[1:])
	case "once":
		err = m.runOnce(ctx, args[1:])
	case "setup":
		err = m.runSetup(ctx, args[1:])
	case "reply":
		err = m.runReply(ctx, args[1:])
	case "run":
		err = m.runRun(ctx, args[1:])
	case "demo":
		err = m.runDemo(ctx, args[1:])
	case "report":
		err = m.runReport(ctx, args[1:])
	case "submit":
		err = m.runSubmit(ctx, args[1:])
	case "worker":
		err = m.runWorker(ctx, args[1:])
	case "workers":
		err = m.runWorkers(ctx, args[1:])
	case "serve":
		err = m.runServe(ctx, args[1:])
	case "runs":
		err = m.runRuns(ctx, args[1:])
	case "cancel":
		err = m.runCancel(ctx, args[1:])
	case "retry":
		err = m.runRetry(ctx, args[1:])
	default:
		err = usageErrorf(text(m.argLang(args), "unknownCommand"), args[0], m.name())
	}
	return err
}

// exit prints err and maps it to its exit code.
func (m *Command) exit(err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return ExitOK
	}
	var code *exitError
	if errors.As(err, &code) && code.silent {
		return code.code
	}
	// An error may carry anything a model or a file wrote (a verdict's
	// reason, a file name): it reaches the terminal only sanitized.
	msg := screen.SanitizeLines(err.Error())
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprint(m.Stderr, msg)
	switch {
	case errors.As(err, &code):
		return code.code
	}
	return ExitFailure
}

// exitError carries an exit code other than 1.
type exitError struct {
	code   int
	err    error
	silent bool // already reported
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// UsageError is a command-line error: exit code 2.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

var errHelp = errors.New("")

// rewrite inserts the default subcommand `go`: global flags are skipped left
// to right (a valued one takes the next token unless written --x=v); if the
// first other token is no subcommand, `go` goes before it; with none at all,
// `go` is appended, unless help was asked for. `flower go run` asks for "run".
// --version and -V before any subcommand are `version`, and so is -v on
// its own: what a person types to ask (-v with anything else is
// --verbose).
func rewrite(args []string) []string {
	if len(args) == 1 && args[0] == "-v" {
		return []string{"version"}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--version" || a == "-V" {
			return append(append([]string{"version"}, args[:i]...), args[i+1:]...)
		}
		if a == "-h" || a == "--help" {
			if i == len(args)-1 || !isSubcommand(nextNonGlobal(args[i+1:])) {
				// The flags before it stay: --lang zh -h is help in Chinese.
				return append(append([]string{"help"}, args[i+1:]...), args[:i]...)
			}
			continue
		}
		if g, ok := globalFlag(a); ok {
			if g.valued && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		if isSubcommand(a) {
			return append(append([]string{a}, args[:i]...), args[i+1:]...)
		}
		return append([]string{"go"}, args...)
	}
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return []string{"help"}
		}
	}
	return append([]string{"go"}, args...)
}

func nextNonGlobal(args []string) string {
	for i := 0; i < len(args); i++ {
		if g, ok := globalFlag(args[i]); ok {
			if g.valued && !strings.Contains(args[i], "=") {
				i++
			}
			continue
		}
		return args[i]
	}
	return ""
}
