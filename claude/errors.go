package claude

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// CLINotFoundError says the claude binary could not be found.
type CLINotFoundError struct {
	// Path is the explicit path that was missing, if one was given.
	Path  string
	Tried []string
}

func (e *CLINotFoundError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("claude CLI not found at %s: install it (npm install -g @anthropic-ai/claude-code) or fix the path", e.Path)
	}
	return fmt.Sprintf("claude CLI not found (looked in %s): install it with npm install -g @anthropic-ai/claude-code, or pass its path as Options.CLIPath", strings.Join(e.Tried, ", "))
}

// ConnectionError says the CLI could not be started or written to.
type ConnectionError struct {
	Msg string
	Err error
}

func (e *ConnectionError) Error() string {
	if e.Err != nil {
		return "claude: " + e.Msg + ": " + e.Err.Error()
	}
	return "claude: " + e.Msg
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// ProcessError says the CLI exited with a failure.
type ProcessError struct {
	ExitCode int
	// Stderr is the tail of what the CLI wrote to stderr.
	Stderr string
}

func (e *ProcessError) Error() string {
	msg := fmt.Sprintf("claude CLI exited with code %d", e.ExitCode)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg
}

// ResultError is a process failure preceded by an error result: the result
// says what went wrong (an API error, a budget or turn limit, a refused
// resume). errors.As finds the *ProcessError inside it too.
type ResultError struct {
	Result  *ResultMessage
	Process *ProcessError
}

func (e *ResultError) Error() string {
	r := e.Result
	var msg string
	switch {
	case len(r.Errors) > 0:
		msg = strings.Join(r.Errors, "; ")
	case r.Result != "":
		msg = r.Result
	case r.Subtype != "" && r.Subtype != "success":
		msg = r.Subtype
	case r.APIErrorStatus != 0:
		msg = fmt.Sprintf("API error (HTTP %d)", r.APIErrorStatus)
	default:
		msg = "error result"
	}
	return "claude: " + msg
}

func (e *ResultError) Unwrap() error {
	if e.Process == nil {
		return nil
	}
	return e.Process
}

// ErrLineTooLong is wrapped by a ProtocolError when a stdout line exceeds
// Options.MaxLineBytes.
var ErrLineTooLong = errors.New("line exceeds the size limit")

// ProtocolError says the CLI sent something the driver cannot read: bad
// JSON on a line starting with '{', or a line over the size limit.
type ProtocolError struct {
	// Line is the start of the offending line (at most 200 bytes).
	Line string
	Err  error
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("claude: protocol error: %v (line starts %q)", e.Err, e.Line)
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// ControlTimeoutError says the CLI did not answer a control request in time.
type ControlTimeoutError struct {
	Subtype string
	After   time.Duration // how long it was waited for
}

func (e *ControlTimeoutError) Error() string {
	return fmt.Sprintf("claude: control request timeout: the CLI did not answer %s in %s", e.Subtype, e.After)
}

// ControlError is an error answer of the CLI to one of our control requests.
type ControlError struct {
	Subtype string
	Msg     string
}

func (e *ControlError) Error() string {
	return fmt.Sprintf("claude: %s failed: %s", e.Subtype, e.Msg)
}

// ErrClosed is returned by calls on a client that was closed or whose CLI
// has exited.
var ErrClosed = errors.New("claude: session closed")

func lineStart(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}
