// Package fakecli is the scripted CLI's side of the stream-json protocol
// for the root package's and the fault suite's tests: a test binary that
// re-executes itself as `claude` answers the version probe, the initialize
// request and reads the prompt through it, then scripts the rest.
package fakecli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

// Version is what the scripted CLI reports to the driver's probe.
const Version = "2.1.332 (Claude Code)"

// AnsweredVersion prints Version and reports true when the process was
// started as the driver's version probe (-v or --version); the caller then
// exits.
func AnsweredVersion() bool {
	if slices.Contains(os.Args[1:], "-v") || slices.Contains(os.Args[1:], "--version") {
		fmt.Println(Version)
		return true
	}
	return false
}

// Session reads the driver's messages from stdin and writes the CLI's to
// stdout.
type Session struct {
	in  *bufio.Reader
	out *json.Encoder
	// Init is the driver's initialize request (its hooks' callback ids,
	// its agents), for a script that plays hook callbacks.
	InitRequest map[string]any
}

// Connect answers the initialize request with success and returns the
// session, ready to read the prompt.
func Connect() *Session {
	s := &Session{in: bufio.NewReader(os.Stdin), out: json.NewEncoder(os.Stdout)}
	init := s.Read()
	s.InitRequest = init
	s.Send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": init["request_id"], "response": map[string]any{}}})
	return s
}

// Read returns the next message, or nil at the end of input. A line that
// is not JSON reads as an empty message.
func (s *Session) Read() map[string]any {
	line, err := s.in.ReadBytes('\n')
	if err != nil {
		return nil
	}
	var m map[string]any
	json.Unmarshal(line, &m)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// Send writes one message.
func (s *Session) Send(v any) { s.out.Encode(v) }

// Drain reads until the driver closes stdin.
func (s *Session) Drain() {
	for s.Read() != nil {
	}
}

// Text is the text of a user message: its string content, or its text
// blocks joined.
func Text(m map[string]any) string {
	msg, _ := m["message"].(map[string]any)
	switch c := msg["content"].(type) {
	case string:
		return c
	case []any:
		text := ""
		for _, b := range c {
			if b, ok := b.(map[string]any); ok {
				t, _ := b["text"].(string)
				text += t
			}
		}
		return text
	}
	return ""
}

// Init sends the system/init message of session sid.
func (s *Session) Init(sid string) {
	s.Send(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "uuid": "i"})
}

// Say sends an assistant message of session sid holding text.
func (s *Session) Say(sid, text string) {
	s.Send(map[string]any{"type": "assistant", "session_id": sid, "uuid": "a-" + text, "parent_tool_use_id": nil,
		"message": map[string]any{"id": "m-" + text, "model": "fake", "content": []any{map[string]any{"type": "text", "text": text}}}})
}

// Success sends the successful result of a turn of session sid.
func (s *Session) Success(sid, text string) {
	s.Send(map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 1, "duration_api_ms": 1,
		"num_turns": 1, "result": text, "session_id": sid, "total_cost_usd": 0.01})
}
