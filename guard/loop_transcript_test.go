package guard

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// transcriptStep is one line of a testdata/loop transcript: the files that
// change before it (write, append, mkdir, relative to the session's cwd),
// then a tool call and its result, or a subagent's end.
type transcriptStep struct {
	Agent        string            `json:"agent"`
	Tool         string            `json:"tool"`
	Input        json.RawMessage   `json:"input"`
	Result       json.RawMessage   `json:"result"`
	Write        map[string]string `json:"write"`
	Append       map[string]string `json:"append"`
	Mkdir        []string          `json:"mkdir"`
	SubagentStop string            `json:"subagent_stop"`
}

// playTranscript plays a transcript through a loop guard as the CLI would,
// in a fresh cwd ($CWD in inputs and results), and returns the refusals.
func playTranscript(t *testing.T, path string, l Loop) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cwd := t.TempDir()
	hooks := LoopHooks(l)
	var refused []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var st transcriptStep
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		for _, d := range st.Mkdir {
			os.MkdirAll(filepath.Join(cwd, d), 0o755)
		}
		for name, text := range st.Write {
			os.MkdirAll(filepath.Dir(filepath.Join(cwd, name)), 0o755)
			os.WriteFile(filepath.Join(cwd, name), []byte(text), 0o644)
		}
		for name, text := range st.Append {
			p := filepath.Join(cwd, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			af, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			af.WriteString(text)
			af.Close()
		}
		if st.SubagentStop != "" {
			if len(hooks[claude.SubagentStop]) == 0 {
				t.Fatal("the loop guard has no SubagentStop hook: a background agent's end would go unseen")
			}
			call(t, hooks[claude.SubagentStop][0], &claude.HookInput{HookEventName: claude.SubagentStop, AgentID: st.SubagentStop, Cwd: cwd})
			continue
		}
		input := json.RawMessage(strings.ReplaceAll(string(st.Input), "$CWD", cwd))
		result := json.RawMessage(strings.ReplaceAll(string(st.Result), "$CWD", cwd))
		id := fmt.Sprintf("toolu_%d", n)
		pre := &claude.HookInput{HookEventName: claude.PreToolUse, AgentID: st.Agent, ToolName: st.Tool, ToolInput: input, ToolUseID: id, Cwd: cwd}
		if reason, denied := denial(call(t, hooks[claude.PreToolUse][0], pre)); denied {
			refused = append(refused, fmt.Sprintf("line %d (%s %s): %s", n, st.Tool, st.Input, reason))
			continue
		}
		post := *pre
		post.HookEventName, post.ToolResponse = claude.PostToolUse, result
		call(t, hooks[claude.PostToolUse][0], &post)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return refused
}

// The loop guard on a transcript of plausible long work (polling a build's
// log, waiting on a background task, re-reading a file that changed,
// re-listing the artifacts while a dispatched worker runs, glances between
// dispatches, an edit-test loop, re-reading a log a human writes into): it
// must refuse nothing. The guard before it knew waiting and changed files
// refused 9 of these 57 steps.
func TestLoopRefusesNothingOnPlausibleLongWork(t *testing.T) {
	refused := playTranscript(t, filepath.Join("testdata", "loop", "long-work.jsonl"),
		Loop{MainThread: true, Offered: func() []string { return []string{"Agent", "Bash", "Read", "Edit", "TaskStop"} }})
	if len(refused) != 0 {
		t.Errorf("%d false refusals:\n%s", len(refused), strings.Join(refused, "\n"))
	}
}
