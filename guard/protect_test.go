package guard

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowerrun/flower/claude"
)

func TestProtectRefusesWritesOfTheGoalAndTheBriefOnly(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, ".flower", "notes")
	os.MkdirAll(notes, 0o755)
	goal, brief := filepath.Join(notes, "goal.md"), filepath.Join(notes, "brief.md")
	os.WriteFile(goal, []byte("g"), 0o644)
	link := filepath.Join(dir, "g.md")
	os.Symlink(goal, link)
	m := Protect([]string{goal, brief}, "no: %s")
	cases := []struct {
		tool  string
		input map[string]any
		deny  bool
	}{
		{"Write", map[string]any{"file_path": goal}, true},
		{"Edit", map[string]any{"file_path": ".flower/notes/brief.md"}, true},
		{"MultiEdit", map[string]any{"file_path": brief}, true},
		{"Write", map[string]any{"file_path": link}, true},
		{"NotebookEdit", map[string]any{"notebook_path": goal}, true},
		{"Bash", map[string]any{"command": "echo x >> .flower/notes/goal.md"}, true},
		{"Bash", map[string]any{"command": "sed -i s/a/b/ " + brief}, true},
		{"Bash", map[string]any{"command": "cat .flower/notes/goal.md"}, false},
		{"Read", map[string]any{"file_path": goal}, false},
		{"Write", map[string]any{"file_path": filepath.Join(dir, "goal.md")}, false},
		{"Bash", map[string]any{"command": "go test ./..."}, false},
	}
	for _, c := range cases {
		raw, _ := json.Marshal(c.input)
		out, err := m.Hooks[0](context.Background(), &claude.HookInput{ToolName: c.tool, ToolInput: raw, Cwd: dir, AgentID: "a1"})
		if err != nil {
			t.Fatal(err)
		}
		denied := out != nil && out.HookSpecificOutput != nil && out.HookSpecificOutput.PermissionDecision == claude.DecisionDeny
		if denied != c.deny {
			t.Errorf("%s %v: denied %v, want %v", c.tool, c.input, denied, c.deny)
		}
	}
}

// A protected folder (the human's side of a run: replies, pending
// questions, flower's copy of the Q&A log) covers everything under it,
// whatever the form of the name: a file that does not exist yet, a
// relative name with "..", a link to the folder.
func TestProtectCoversEverythingUnderAProtectedFolder(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state", "runs", "ws-runs-0123abcd")
	os.MkdirAll(filepath.Join(state, "replies"), 0o700)
	link := filepath.Join(dir, "h")
	os.Symlink(state, link)
	m := Protect([]string{state}, "no: %s")
	cases := []struct {
		tool  string
		input map[string]any
		deny  bool
	}{
		{"Write", map[string]any{"file_path": filepath.Join(state, "replies", "q9.json")}, true},
		{"Write", map[string]any{"file_path": filepath.Join(state, "qa-log.md")}, true},
		{"Edit", map[string]any{"file_path": "state/runs/x/../ws-runs-0123abcd/pending.json"}, true},
		{"Write", map[string]any{"file_path": filepath.Join(link, "replies", "q9.json")}, true},
		{"Write", map[string]any{"file_path": "h/new.json"}, true},
		{"Bash", map[string]any{"command": "echo '{}' > " + filepath.Join(state, "replies", "q9.json")}, true},
		{"Read", map[string]any{"file_path": filepath.Join(state, "qa-log.md")}, false},
		{"Write", map[string]any{"file_path": filepath.Join(dir, "state", "runs", "ws-runs-0123abcd-other", "x")}, false},
		{"Write", map[string]any{"file_path": filepath.Join(dir, "state", "x")}, false},
	}
	for _, c := range cases {
		raw, _ := json.Marshal(c.input)
		out, err := m.Hooks[0](context.Background(), &claude.HookInput{ToolName: c.tool, ToolInput: raw, Cwd: dir, AgentID: "a1"})
		if err != nil {
			t.Fatal(err)
		}
		denied := out != nil && out.HookSpecificOutput != nil && out.HookSpecificOutput.PermissionDecision == claude.DecisionDeny
		if denied != c.deny {
			t.Errorf("%s %v: denied %v, want %v", c.tool, c.input, denied, c.deny)
		}
	}
}
