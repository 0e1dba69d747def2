package main

// The scripted work of the economy and coordinator benchmarks: the 200 tool
// calls of testdata/economy.txt, the workspace they run in, and the fake
// model that asks for them one per turn and notes what each really printed.

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
)

//go:embed testdata/economy.txt
var econScriptText string

// econCall is one tool call of the script.
type econCall struct {
	Kind  string // "cat", "run", "glance" or "write"
	Path  string // cat, write: the file, relative to the workspace
	Bytes int    // cat: the file's size; write: the content's size
	Suite int    // run: the report's suite number
	Lines int    // run: how many cases it reports
	Cmd   string // cat, run, glance: the Bash command
}

// econID is the tool_use id the fake model gives call i: fixed, so that two
// variants send the same bytes for the same call.
func econID(i int) string { return fmt.Sprintf("toolu_econ_%03d", i) }

// econParse reads the script's format (see testdata/economy.txt).
func econParse(text string) ([]econCall, error) {
	var calls []econCall
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		bad := func(want string) error {
			return fmt.Errorf("economy script line %d %q: want %s", n, line, want)
		}
		var c econCall
		switch c.Kind = f[0]; c.Kind {
		case "cat", "write":
			if len(f) != 3 {
				return nil, bad(c.Kind + " PATH BYTES")
			}
			b, err := strconv.Atoi(f[2])
			if err != nil || b <= 0 || !filepath.IsLocal(f[1]) {
				return nil, bad("a relative PATH and a positive BYTES")
			}
			c.Path, c.Bytes = f[1], b
			if c.Kind == "cat" {
				c.Cmd = "cat " + c.Path
			}
		case "run":
			if len(f) != 3 {
				return nil, bad("run SUITE LINES")
			}
			s, err1 := strconv.Atoi(f[1])
			l, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil || s < 0 || l <= 0 {
				return nil, bad("two numbers")
			}
			c.Suite, c.Lines = s, l
			c.Cmd = fmt.Sprintf("bash tools/report.sh %d %d", s, l)
		case "glance":
			if len(f) < 2 {
				return nil, bad("glance COMMAND")
			}
			c.Cmd = strings.Join(f[1:], " ")
		default:
			return nil, bad("cat, run, glance or write")
		}
		calls = append(calls, c)
	}
	return calls, sc.Err()
}

// econReportScript prints a test log: LINES cases of suite SUITE, 72
// bytes each. It is no glance (ephemeral.Is does not know it), as a real
// build or test run is not.
const econReportScript = `#!/bin/sh
# desc: prints the test log of suite $1, $2 cases
awk -v s="$1" -v n="$2" 'BEGIN { for (i = 1; i <= n; i++) printf "=== RUN   TestSuite%03d/case_%04d\n--- PASS: TestSuite%03d/case_%04d (0.%02ds)\n", s, i, s, i, (i * s) % 100 }'
`

// econText is n bytes of deterministic prose-like text for file name.
func econText(name string, n int) string {
	seed := uint64(0)
	for _, r := range name {
		seed = seed*131 + uint64(r)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	words := []string{"store", "session", "flower", "resume", "worker", "report", "spill", "trim",
		"context", "budget", "handoff", "guard", "index", "the", "a", "of", "and", "to", "is", "keeps"}
	var b strings.Builder
	for line := 1; b.Len() < n; line++ {
		fmt.Fprintf(&b, "%s:%d:", name, line)
		for w := 0; w < 8+rng.IntN(6); w++ {
			b.WriteByte(' ')
			b.WriteString(words[rng.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	// No blank or newline before the last newline: the CLI strips every
	// trailing blank of an output, which the read-back forgives only for
	// one newline.
	s := strings.TrimRight(b.String()[:n-1], " \n")
	s += strings.Repeat(".", n-1-len(s))
	return s + "\n"
}

// econWorkspace makes dir a git repository holding the files the calls
// read and the report script, committed.
func econWorkspace(ctx context.Context, dir string, calls []econCall) error {
	files := map[string]string{"tools/report.sh": econReportScript, "README.md": "# bench workspace\n"}
	for _, c := range calls {
		if c.Kind == "cat" {
			files[c.Path] = econText(c.Path, c.Bytes)
		}
	}
	for p, body := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "bench workspace"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.invalid",
			"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.invalid")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in %s: %w: %s (git must be installed)", args[0], dir, err, out)
		}
	}
	return nil
}

// econFake is the scripted model. It answers each turn with the next call
// and, before that, runs the call just done again in the workspace to note
// its output: the workspace is then as the tool left it, so that output is
// what the tool printed, the truth the read-back check compares with.
type econFake struct {
	ws    string
	calls []econCall
	// failAt, when positive, answers the failAt-th request (1-based) with
	// fault instead: the bad-input case of a fake failing mid-run.
	failAt int
	fault  *claudetest.Fault

	mu      sync.Mutex
	n       int
	outputs map[string]string // tool_use id -> what the command printed
	errs    []error
}

func newEconFake(ws string, calls []econCall) *econFake {
	return &econFake{ws: ws, calls: calls, outputs: map[string]string{}}
}

// handler answers by script, which maps each prompt marker to its turns.
func (f *econFake) handler(script claudetest.Script) claudetest.Handler {
	return func(ctx context.Context, req *claudetest.Request) claudetest.Reply {
		f.mu.Lock()
		f.n++
		n := f.n
		f.mu.Unlock()
		if f.failAt > 0 && n >= f.failAt {
			return claudetest.Reply{Fault: f.fault}
		}
		f.observe(ctx, req)
		return script.Reply(req)
	}
}

// observe notes the output of every call of ours whose result the request
// carries after its last assistant message (the CLI may add a system entry
// after the results) and that was not noted yet.
func (f *econFake) observe(ctx context.Context, req *claudetest.Request) {
	for m := len(req.Messages) - 1; m >= 0 && req.Messages[m].Role != "assistant"; m-- {
		for _, b := range req.Messages[m].Content {
			if b.Type == "tool_result" {
				f.note(ctx, b.ToolUseID)
			}
		}
	}
}

func (f *econFake) note(ctx context.Context, id string) {
	i, ok := econIndex(id)
	if !ok || i >= len(f.calls) || f.calls[i].Cmd == "" {
		return
	}
	f.mu.Lock()
	_, done := f.outputs[id]
	f.mu.Unlock()
	if done {
		return
	}
	out, err := f.rerun(ctx, f.calls[i].Cmd)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.errs = append(f.errs, fmt.Errorf("call %d (%s): %w", i, f.calls[i].Cmd, err))
		return
	}
	f.outputs[id] = out
}

// rerun runs cmd in the workspace without writing anything (git takes no
// optional lock), bounded in time.
func (f *econFake) rerun(ctx context.Context, cmd string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = f.ws
	c.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := c.Output()
	return string(out), err
}

// noted returns a copy of the outputs noted, or an error when one of the
// Bash calls in want (call indexes) has none: a result the fake never saw
// cannot be checked, and must not pass unchecked.
func (f *econFake) noted(want []int) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := append([]error(nil), f.errs...)
	for _, i := range want {
		if _, ok := f.outputs[econID(i)]; !ok && f.calls[i].Cmd != "" {
			errs = append(errs, fmt.Errorf("call %d (%s): no request carried its result", i, f.calls[i].Cmd))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the fake could not note the calls' outputs: %w", errors.Join(errs...))
	}
	out := make(map[string]string, len(f.outputs))
	for k, v := range f.outputs {
		out[k] = v
	}
	return out, nil
}

// econIndex reads the call index back from an econID.
func econIndex(id string) (int, bool) {
	s, ok := strings.CutPrefix(id, "toolu_econ_")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// reply is the fake model's turn asking for call i.
func (f *econFake) reply(i int) claudetest.Reply {
	c := f.calls[i]
	if c.Kind == "write" {
		return claudetest.NewReply(claudetest.ToolUse(econID(i), "Write", map[string]any{
			"file_path": filepath.Join(f.ws, c.Path), "content": econText(c.Path, c.Bytes)}))
	}
	return claudetest.NewReply(claudetest.ToolUse(econID(i), "Bash", map[string]any{
		"command": c.Cmd, "description": "call " + strconv.Itoa(i)}))
}

// turns are the replies asking for calls from..to-1, then the closing text.
func (f *econFake) turns(from, to int, closing string) []claudetest.Responder {
	var out []claudetest.Responder
	for i := from; i < to; i++ {
		out = append(out, f.reply(i))
	}
	return append(out, claudetest.Say(closing))
}
