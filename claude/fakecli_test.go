package claude_test

// The fake CLI: the test binary re-executes itself as a scripted `claude`
// (FAKECLI_SCENARIO names the script) to reach protocol edge cases the real
// CLI rarely shows.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/claude"
)

func TestMain(m *testing.M) {
	if name := os.Getenv("FAKECLI_SCENARIO"); name != "" {
		runFakeCLI(name)
		return
	}
	goleak.VerifyTestMain(m)
}

// fakeOptions runs the named scenario as the CLI.
func fakeOptions(t testing.TB, scenario string) claude.Options {
	t.Helper()
	return claude.Options{
		CLIPath:       os.Args[0],
		BaseEnv:       []string{"PATH=" + os.Getenv("PATH"), "FAKECLI_SCENARIO=" + scenario},
		ShutdownGrace: 2e9,
	}
}

type fake struct {
	in      *bufio.Reader
	outMu   sync.Mutex
	out     *bufio.Writer
	mu      sync.Mutex
	stash   []map[string]any // stdin frames read while waiting for another
	nextReq int
}

func runFakeCLI(name string) {
	for _, a := range os.Args[1:] {
		if a == "-v" {
			fmt.Println("2.1.332 (Claude Code)")
			os.Exit(0)
		}
	}
	f := &fake{in: bufio.NewReaderSize(os.Stdin, 1<<20), out: bufio.NewWriterSize(os.Stdout, 1<<20)}
	script, ok := fakeScripts[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown scenario", name)
		os.Exit(2)
	}
	script(f)
	os.Exit(0)
}

func (f *fake) raw(line string) {
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.out.WriteString(line)
	f.out.WriteByte('\n')
	f.out.Flush()
}

func (f *fake) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	f.raw(string(b))
}

// read returns the next stdin frame, or nil at EOF.
func (f *fake) read() map[string]any {
	f.mu.Lock()
	if len(f.stash) > 0 {
		m := f.stash[0]
		f.stash = f.stash[1:]
		f.mu.Unlock()
		return m
	}
	f.mu.Unlock()
	return f.readWire()
}

func (f *fake) readWire() map[string]any {
	line, err := f.in.ReadBytes('\n')
	if len(strings.TrimSpace(string(line))) == 0 && err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(line, &m) != nil {
		fmt.Fprintln(os.Stderr, "fake: bad stdin line", string(line))
		os.Exit(3)
	}
	return m
}

// handshake answers initialize and returns its request body.
func (f *fake) handshake() map[string]any {
	m := f.read()
	if m == nil || m["type"] != "control_request" {
		fmt.Fprintln(os.Stderr, "fake: expected initialize, got", m)
		os.Exit(4)
	}
	req := m["request"].(map[string]any)
	f.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": m["request_id"], "response": map[string]any{"commands": []any{}, "echo": req},
	}})
	return req
}

// prompt reads the next user message's text.
func (f *fake) prompt() string {
	m := f.read()
	if m == nil || m["type"] != "user" {
		fmt.Fprintln(os.Stderr, "fake: expected a user message, got", m)
		os.Exit(5)
	}
	c, _ := m["message"].(map[string]any)["content"].(string)
	return c
}

// call sends a control request to the host and returns its id.
func (f *fake) call(subtype string, fields map[string]any) string {
	f.mu.Lock()
	f.nextReq++
	id := fmt.Sprintf("cli_%d", f.nextReq)
	f.mu.Unlock()
	body := map[string]any{"subtype": subtype}
	for k, v := range fields {
		body[k] = v
	}
	f.send(map[string]any{"type": "control_request", "request_id": id, "request": body})
	return id
}

// reply waits for the host's control_response to id.
func (f *fake) reply(id string) map[string]any {
	f.mu.Lock()
	for i, m := range f.stash {
		if r, ok := m["response"].(map[string]any); ok && m["type"] == "control_response" && r["request_id"] == id {
			f.stash = append(f.stash[:i], f.stash[i+1:]...)
			f.mu.Unlock()
			return r
		}
	}
	f.mu.Unlock()
	for {
		m := f.readWire()
		if m == nil {
			fmt.Fprintln(os.Stderr, "fake: stdin closed while waiting for", id)
			os.Exit(6)
		}
		if m["type"] == "control_response" {
			r := m["response"].(map[string]any)
			if r["request_id"] == id {
				return r
			}
		}
		f.mu.Lock()
		f.stash = append(f.stash, m)
		f.mu.Unlock()
	}
}

func (f *fake) system(subtype string, extra map[string]any) {
	m := map[string]any{"type": "system", "subtype": subtype, "session_id": "sess-1", "uuid": "u-" + subtype}
	for k, v := range extra {
		m[k] = v
	}
	f.send(m)
}

func (f *fake) assistantText(text string) {
	f.send(map[string]any{"type": "assistant", "session_id": "sess-1", "uuid": "a-1", "parent_tool_use_id": nil,
		"message": map[string]any{"id": "msg_1", "model": "fake", "role": "assistant",
			"content": []any{map[string]any{"type": "text", "text": text}}}})
}

func (f *fake) result(text string, isError bool) {
	f.send(map[string]any{"type": "result", "subtype": "success", "is_error": isError, "duration_ms": 1,
		"duration_api_ms": 1, "num_turns": 1, "result": text, "session_id": "sess-1", "total_cost_usd": 0.01})
}

// waitEOF returns once the host has closed stdin.
func (f *fake) waitEOF() {
	for f.read() != nil {
	}
}

var fakeScripts = map[string]func(*fake){}
