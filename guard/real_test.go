package guard

// Real-CLI tests: the guards answering the pinned Claude Code CLI, which
// talks to claudetest's fake Messages API.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/workbench"
)

func realRun(t *testing.T, prompt string, opts claude.Options) []claude.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var msgs []claude.Message
	for m, err := range claude.Query(ctx, prompt, opts) {
		if err != nil {
			t.Fatalf("%s: %v", prompt, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func realOptions(t *testing.T, srv *claudetest.Server, cwd string, hooks map[string][]claude.HookMatcher) claude.Options {
	return claude.Options{
		CLIPath: claudetest.CLIPath(t), Cwd: cwd, BaseEnv: claudetest.BaseEnv(), Env: claudetest.Env(t, srv),
		PermissionMode: "acceptEdits", SystemPrompt: claude.PresetPrompt(""), Hooks: hooks,
	}
}

func toolTurn(name string, input map[string]any) claudetest.Reply {
	return claudetest.NewReply(claudetest.ToolUse("", name, input))
}

func bashTurn(cmd string) claudetest.Reply {
	return toolTurn("Bash", map[string]any{"command": cmd, "description": "step"})
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// resultsOf lists every tool result the fake API received, oldest first,
// from the last request (which carries the whole history).
func resultsOf(srv *claudetest.Server) []claudetest.Block {
	reqs := srv.Requests()
	var main *claudetest.Request
	for _, r := range reqs {
		if !r.Subagent {
			main = r
		}
	}
	if main == nil {
		return nil
	}
	return main.ToolResults()
}

func TestRealCoordinatorCannotTouchButItsWorkerCan(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:coord": {
			toolTurn("Write", map[string]any{"file_path": filepath.Join(cwd, "main.txt"), "content": "by the coordinator"}),
			bashTurn("rm -rf important && echo removed"),
			toolTurn("Agent", map[string]any{"description": "write it", "prompt": "SUBAGENT:write", "subagent_type": "coder", "run_in_background": false}),
			claudetest.Say("coordinated"),
		},
		"SUBAGENT:write": {
			toolTurn("Write", map[string]any{"file_path": filepath.Join(cwd, "worker.txt"), "content": "by the worker"}),
			claudetest.Say("worker done"),
		},
	}.Handler())
	if err := os.Mkdir(filepath.Join(cwd, "important"), 0o755); err != nil {
		t.Fatal(err)
	}
	wb := workbench.New(cwd)
	agents := map[string]claude.AgentDefinition{"coder": {Description: "writes code", Prompt: "You write.", Tools: []string{"Write", "Bash", "Read"}}}
	wall := map[string][]claude.HookMatcher{claude.PreToolUse: {Delegate([]string{"Agent", "Read"}, []string{"coder"}, false)}}
	opts := realOptions(t, srv, cwd, MergeHooks(wall, WorkbenchHooks(wb, DefaultSpillThreshold, agents)))
	opts.Agents = agents
	realRun(t, "SCENARIO:coord", opts)

	if _, err := os.Stat(filepath.Join(cwd, "main.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the coordinator's Write went through: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "important")); err != nil {
		t.Errorf("the coordinator's rm went through: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "worker.txt")); err != nil || string(b) != "by the worker" {
		t.Errorf("the worker's Write: %q, %v", b, err)
	}
	denied := 0
	for _, r := range resultsOf(srv) {
		if r.IsError && strings.Contains(r.Content, "协调者不直接使用") && strings.Contains(r.Content, "Agent") {
			denied++
		}
	}
	if denied != 2 {
		t.Errorf("delegate denials the model received = %d, want 2 (Write and Bash)", denied)
	}
}

func TestRealGlanceLetsTheCoordinatorRunGitStatus(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	gitInit(t, cwd)
	if err := os.WriteFile(filepath.Join(cwd, "untracked.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:glance": {
		bashTurn("git status --short"), bashTurn("git status > status.txt"), claudetest.Say("glanced")}}.Handler())
	wall := map[string][]claude.HookMatcher{claude.PreToolUse: {Delegate([]string{"Read"}, nil, true)}}
	realRun(t, "SCENARIO:glance", realOptions(t, srv, cwd, MergeHooks(wall, WorkbenchHooks(workbench.New(cwd), DefaultSpillThreshold, nil))))
	results := resultsOf(srv)
	if len(results) != 2 {
		t.Fatalf("tool results = %+v", results)
	}
	if results[0].IsError || !strings.Contains(results[0].Content, "untracked.txt") {
		t.Errorf("git status should run on the main thread with glance: %+v", results[0])
	}
	if !results[1].IsError || !strings.Contains(results[1].Content, "协调者不直接使用") {
		t.Errorf("a redirect is not a glance: %+v", results[1])
	}
	if _, err := os.Stat(filepath.Join(cwd, "status.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the redirected command ran")
	}
}

var pointerRE = regexp.MustCompile(`已落盘到 (\S+\.txt)`)

func TestRealSpillKeepsBulkyOutputOnDisk(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	wb := workbench.New(cwd)
	var spillPath string
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:bulky": {
		bashTurn("seq 1 2400"),
		claudetest.Func(func(r *claudetest.Request) claudetest.Reply {
			res, _ := r.LastToolResult()
			m := pointerRE.FindStringSubmatch(res.Content)
			if m == nil {
				return claudetest.Say("no pointer")
			}
			spillPath = m[1]
			if !filepath.IsAbs(spillPath) {
				spillPath = filepath.Join(cwd, spillPath)
			}
			return toolTurn("Read", map[string]any{"file_path": spillPath})
		}),
		claudetest.Say("read it"),
	}}.Handler())
	realRun(t, "SCENARIO:bulky", realOptions(t, srv, cwd, WorkbenchHooks(wb, DefaultSpillThreshold, nil)))

	full, err := exec.Command("seq", "1", "2400").Output()
	if err != nil {
		t.Fatal(err)
	}
	results := resultsOf(srv)
	if len(results) != 2 {
		t.Fatalf("tool results = %d, want the Bash and the Read", len(results))
	}
	pointer := results[0].Content
	if !strings.Contains(pointer, "已落盘到") || strings.Contains(pointer, "\n2400") || len([]rune(pointer)) > 700 {
		t.Errorf("the model got %d chars, want a pointer and a 400-char preview: %.200q", len(pointer), pointer)
	}
	if !strings.Contains(pointer, "1 2 3 4 5") {
		t.Errorf("the preview should show the start with newlines as spaces: %.300q", pointer)
	}
	b, err := os.ReadFile(spillPath)
	if err != nil || strings.TrimSpace(string(b)) != strings.TrimSpace(string(full)) {
		t.Fatalf("spill file %s holds %d bytes (%v), want all %d", spillPath, len(b), err, len(full))
	}
	if !strings.HasPrefix(spillPath, filepath.Join(wb.Root(), "spill")) {
		t.Errorf("spill file %s is not in the workbench's spill folder", spillPath)
	}
	read := results[1].Content
	if strings.Contains(read, "已落盘到") || !strings.Contains(read, "2400") || len(read) < len(full) {
		t.Errorf("reading the spill file must give it whole, got %d chars: %.200q", len(read), read)
	}
}

func TestRealIsolatedWorkerRunsInAWorktree(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	gitInit(t, cwd)
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:iso": {
			toolTurn("Agent", map[string]any{"description": "isolated work", "prompt": "SUBAGENT:where", "subagent_type": "coder", "run_in_background": false}),
			claudetest.Say("dispatched"),
		},
		"SUBAGENT:where": {bashTurn("pwd"), claudetest.Say("worker done")},
	}.Handler())
	agents := map[string]claude.AgentDefinition{"coder": {Description: "writes code", Prompt: "You write.", Tools: []string{"Bash"}, Isolation: claude.IsolationWorktree}}
	iso := Isolate(agents, nil)
	var mu sync.Mutex
	var replies []*claude.HookOutput
	record := iso.Hooks[0]
	iso.Hooks = []claude.HookFunc{func(ctx context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
		out, err := record(ctx, in)
		mu.Lock()
		replies = append(replies, out)
		mu.Unlock()
		return out, err
	}}
	opts := realOptions(t, srv, cwd, map[string][]claude.HookMatcher{claude.PreToolUse: {iso}})
	opts.Agents = agents
	realRun(t, "SCENARIO:iso", opts)

	if len(replies) != 1 || replies[0] == nil || replies[0].HookSpecificOutput == nil {
		t.Fatalf("isolate replies = %+v", replies)
	}
	var in map[string]any
	if err := json.Unmarshal(replies[0].HookSpecificOutput.UpdatedInput, &in); err != nil || in["isolation"] != "worktree" || in["subagent_type"] != "coder" {
		t.Fatalf("updatedInput = %s", replies[0].HookSpecificOutput.UpdatedInput)
	}
	var pwd string
	for _, r := range srv.Requests() {
		if r.Subagent {
			if res, ok := r.LastToolResult(); ok {
				pwd = strings.TrimSpace(res.Content)
			}
		}
	}
	realCwd, _ := filepath.EvalSymlinks(cwd)
	if pwd == "" || pwd == cwd || pwd == realCwd {
		t.Fatalf("the isolated worker ran in %q, want a worktree other than %s", pwd, cwd)
	}
	// The CLI removes a worktree left without changes when the worker ends,
	// so the path is the evidence: a worktree folder of this repository.
	if !strings.HasPrefix(pwd, filepath.Join(realCwd, ".claude", "worktrees")+"/") && !strings.HasPrefix(pwd, filepath.Join(cwd, ".claude", "worktrees")+"/") {
		t.Errorf("the worker ran in %s, not in a worktree of %s", pwd, cwd)
	}
}

// TestRealTheDefinitionsIsolationReachesTheCLI: the definition's isolation
// is a field of the CLI's own agent schema, sent with the agents at
// initialize; without any hook the CLI itself runs the agent in a worktree.
func TestRealTheDefinitionsIsolationReachesTheCLI(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	gitInit(t, cwd)
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:iso": {
			toolTurn("Agent", map[string]any{"description": "isolated work", "prompt": "SUBAGENT:where", "subagent_type": "coder", "run_in_background": false}),
			claudetest.Say("dispatched"),
		},
		"SUBAGENT:where": {bashTurn("pwd"), claudetest.Say("worker done")},
	}.Handler())
	opts := realOptions(t, srv, cwd, nil)
	opts.Agents = map[string]claude.AgentDefinition{"coder": {Description: "writes code", Prompt: "You write.", Tools: []string{"Bash"}, Isolation: claude.IsolationWorktree}}
	realRun(t, "SCENARIO:iso", opts)
	var pwd string
	for _, r := range srv.Requests() {
		if r.Subagent {
			if res, ok := r.LastToolResult(); ok {
				pwd = strings.TrimSpace(res.Content)
			}
		}
	}
	realCwd, _ := filepath.EvalSymlinks(cwd)
	if !strings.HasPrefix(pwd, filepath.Join(realCwd, ".claude", "worktrees")+"/") && !strings.HasPrefix(pwd, filepath.Join(cwd, ".claude", "worktrees")+"/") {
		t.Errorf("the worker ran in %q, not in a worktree of %s", pwd, cwd)
	}
}
