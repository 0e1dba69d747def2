package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
)

const (
	delegateZh  = "协调者不直接使用 %s。用 Agent 工具派一个 subagent 去做,任务里写清目标与验收标准,并要求它把长产出写进 .flower/artifacts/、回话只给路径与结论。"
	whitelistZh = "%s没有 %s。**这是有意的,不是配置漏了。**把结论写进你的回话正文里,框架会从那里取 —— 不要试别的写法绕过去。"
)

func bashInput(cmd string) json.RawMessage {
	raw, _ := json.Marshal(map[string]string{"command": cmd})
	return raw
}

// coordinatorWall is the wall flower's Coordinator role gets.
func coordinatorWall() Wall {
	return Wall{
		Tools:    []string{"Agent", "TodoWrite", "Read", "Bash", "mcp__human__inbox", "mcp__human__ask", "WebFetch"},
		Workers:  []string{"tester", "coder"},
		Glance:   true,
		Delegate: true,
	}
}

func TestWallLetsThroughOnlyWhatTheRoleHas(t *testing.T) {
	tests := []struct {
		name string
		in   claude.HookInput
		want string // "" = no opinion, "allow" = allowed with an answer, else the refusal
	}{
		{"allowed Read", claude.HookInput{ToolName: "Read"}, ""},
		{"allowed TodoWrite", claude.HookInput{ToolName: "TodoWrite"}, ""},
		{"allowed MCP tool", claude.HookInput{ToolName: "mcp__human__ask"}, ""},
		{"ToolSearch, which deferred tools need", claude.HookInput{ToolName: "ToolSearch"}, ""},
		{"deferred web tool", claude.HookInput{ToolName: "WebFetch"}, ""},
		{"Write", claude.HookInput{ToolName: "Write"}, fmt.Sprintf(delegateZh, "Write")},
		{"NotebookEdit", claude.HookInput{ToolName: "NotebookEdit"}, fmt.Sprintf(delegateZh, "NotebookEdit")},
		{"CronCreate", claude.HookInput{ToolName: "CronCreate", ToolInput: json.RawMessage(`{"cron":"* * * * *","prompt":"x","durable":true}`)}, fmt.Sprintf(delegateZh, "CronCreate")},
		{"EnterWorktree", claude.HookInput{ToolName: "EnterWorktree"}, fmt.Sprintf(delegateZh, "EnterWorktree")},
		{"Monitor", claude.HookInput{ToolName: "Monitor", ToolInput: bashInput("git status")}, fmt.Sprintf(delegateZh, "Monitor")},
		{"a tool from next month", claude.HookInput{ToolName: "RewriteHistory"}, fmt.Sprintf(delegateZh, "RewriteHistory")},
		{"another server's MCP tool", claude.HookInput{ToolName: "mcp__fs__write"}, fmt.Sprintf(delegateZh, "mcp__fs__write")},
		{"a prefix of an allowed name", claude.HookInput{ToolName: "Rea"}, fmt.Sprintf(delegateZh, "Rea")},
		{"no tool name", claude.HookInput{}, fmt.Sprintf(delegateZh, "?")},
		{"glance", claude.HookInput{ToolName: "Bash", ToolInput: bashInput("git status")}, "allow"},
		{"not a glance", claude.HookInput{ToolName: "Bash", ToolInput: bashInput("rm -rf x")}, fmt.Sprintf(delegateZh, "Bash")},
		{"redirect", claude.HookInput{ToolName: "Bash", ToolInput: bashInput("git status > f")}, fmt.Sprintf(delegateZh, "Bash")},
		{"empty command", claude.HookInput{ToolName: "Bash", ToolInput: bashInput("")}, fmt.Sprintf(delegateZh, "Bash")},
		{"unreadable Bash input", claude.HookInput{ToolName: "Bash", ToolInput: json.RawMessage(`"git status"`)}, fmt.Sprintf(delegateZh, "Bash")},
		{"no Bash input", claude.HookInput{ToolName: "Bash"}, fmt.Sprintf(delegateZh, "Bash")},
		{"command not a string", claude.HookInput{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":["git","status"]}`)}, fmt.Sprintf(delegateZh, "Bash")},
		{"control bytes", claude.HookInput{ToolName: "Bash", ToolInput: bashInput("git status\x00; rm -rf x")}, fmt.Sprintf(delegateZh, "Bash")},
		{"10 MB command", claude.HookInput{ToolName: "Bash", ToolInput: bashInput("ls " + strings.Repeat("a", 10<<20) + " && rm x")}, fmt.Sprintf(delegateZh, "Bash")},
		{"background glance", claude.HookInput{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"git status","run_in_background":true}`)}, ChineseTexts.GlanceBackground},
		{"background as a string", claude.HookInput{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"git status","run_in_background":"yes"}`)}, ChineseTexts.GlanceBackground},
		{"defined worker", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"coder","prompt":"p","description":"d"}`)}, ""},
		{"Task, the older name", claude.HookInput{ToolName: "Task", ToolInput: json.RawMessage(`{"subagent_type":"tester","prompt":"p"}`)}, ""},
		{"fork", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"fork","prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerDeny, "fork", "coder, tester")},
		{"general-purpose", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"general-purpose","prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerDeny, "general-purpose", "coder, tester")},
		{"Explore", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"Explore","prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerDeny, "Explore", "coder, tester")},
		{"unknown type", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"hacker","prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerDeny, "hacker", "coder, tester")},
		{"a worker's name in another case", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"Coder","prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerDeny, "Coder", "coder, tester")},
		{"no type", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerMissing, "coder, tester")},
		{"blank type", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"  ","prompt":"p"}`)}, fmt.Sprintf(ChineseTexts.WorkerMissing, "coder, tester")},
		{"type not a string", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":7}`)}, fmt.Sprintf(ChineseTexts.WorkerMissing, "coder, tester")},
		{"unreadable Agent input", claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":`)}, fmt.Sprintf(ChineseTexts.WorkerMissing, "coder, tester")},
		{"subagent's Write", claude.HookInput{ToolName: "Write", AgentID: "a1"}, ""},
		{"subagent's Bash", claude.HookInput{ToolName: "Bash", AgentID: "a1", ToolInput: bashInput("rm -rf x")}, ""},
		{"subagent's own Agent call", claude.HookInput{ToolName: "Agent", AgentID: "a1", ToolInput: json.RawMessage(`{"subagent_type":"general-purpose"}`)}, ""},
	}
	m := coordinatorWall().Matcher()
	if m.Matcher != "" {
		t.Fatalf("Matcher = %q, want the empty matcher (every tool)", m.Matcher)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := call(t, m, &tt.in)
			switch tt.want {
			case "":
				if out != nil {
					t.Fatalf("answer %s, want none", mustJSON(out))
				}
			case "allow":
				if out == nil || out.HookSpecificOutput == nil || out.HookSpecificOutput.PermissionDecision != claude.DecisionAllow {
					t.Fatalf("answer %s, want allow", mustJSON(out))
				}
			default:
				if reason, ok := denial(out); !ok || reason != tt.want {
					t.Fatalf("answer %s\nwant the refusal %q", mustJSON(out), tt.want)
				}
			}
		})
	}
}

func TestWallNilInputIsRefused(t *testing.T) {
	if _, ok := denial(call(t, coordinatorWall().Matcher(), nil)); !ok {
		t.Fatal("a nil input was not refused: the wall must fail closed")
	}
}

func TestWallBoundsAGlance(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		limit     time.Duration
		wantLimit string // the wrapper's, in seconds
		wantCLI   json.Number
	}{
		{"no timeout given", `{"command":"git status","description":"d"}`, 0, "30", "36000"},
		{"a longer timeout", `{"command":"git status","timeout":600000}`, 0, "30", "36000"},
		{"a shorter timeout kept", `{"command":"git status","timeout":5000}`, 0, "5", "11000"},
		{"zero timeout", `{"command":"git status","timeout":0}`, 0, "30", "36000"},
		{"a timeout that is not a number", `{"command":"git status","timeout":"forever"}`, 0, "30", "36000"},
		{"a configured limit", `{"command":"git status","timeout":9000}`, 2 * time.Second, "2", "8000"},
		{"background false", `{"command":"git status","run_in_background":false}`, 1500 * time.Millisecond, "1.5", "7500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := coordinatorWall()
			w.GlanceTimeout = tt.limit
			out := call(t, w.Matcher(), &claude.HookInput{ToolName: "Bash", ToolInput: json.RawMessage(tt.input)})
			if out == nil || out.HookSpecificOutput.PermissionDecision != claude.DecisionAllow {
				t.Fatalf("answer %s, want allow", mustJSON(out))
			}
			var got map[string]any
			dec := json.NewDecoder(strings.NewReader(string(out.HookSpecificOutput.UpdatedInput)))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if got["timeout"] != tt.wantCLI {
				t.Errorf("timeout = %v, want %v", got["timeout"], tt.wantCLI)
			}
			if got["run_in_background"] != false {
				t.Errorf("run_in_background = %v", got["run_in_background"])
			}
			cmd, _ := got["command"].(string)
			if !strings.Contains(cmd, " -k 5 "+tt.wantLimit+" ") || !strings.Contains(cmd, " -c 'git status';") {
				t.Errorf("command %q does not bound git status at %s s", cmd, tt.wantLimit)
			}
			if strings.Contains(tt.input, "description") && got["description"] != "d" {
				t.Errorf("description lost: %v", got)
			}
		})
	}
}

// TestBoundedCommandRuns runs the wrapper bash is given: a quick glance
// keeps its output and status, one that would run for a minute ends at
// the limit with the note.
func TestBoundedCommandRuns(t *testing.T) {
	w := &wall{texts: ChineseTexts, w: Wall{GlanceTimeout: time.Second}, timeoutCmd: mustLookPath(t, "timeout")}
	out, err := exec.Command("bash", "-c", w.bounded(`printf '%s\n' "it's" && exit 3`, time.Second)).CombinedOutput()
	if code := exitCode(err); string(out) != "it's\n" || code != 3 {
		t.Errorf("quick glance: %q, exit %d", out, code)
	}
	start := time.Now()
	out, err = exec.Command("bash", "-c", w.bounded("sleep 60", time.Second)).CombinedOutput()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the bounded sleep took %v", took)
	}
	if code := exitCode(err); code != 124 || !strings.Contains(string(out), fmt.Sprintf(ChineseTexts.GlanceTimedOut, "1")) {
		t.Errorf("slow glance: %q, exit %d", out, code)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed to bound glances: %v", name, err)
	}
	return p
}

func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestWhitelistWall(t *testing.T) {
	judge := Whitelist([]string{"mcp__human__ask", "Read", "Glob", "Grep"}, "设定目标")
	for _, tool := range []string{"Read", "Grep", "mcp__human__ask", "ToolSearch"} {
		if out := call(t, judge, &claude.HookInput{ToolName: tool}); out != nil {
			t.Errorf("%s refused: %s", tool, mustJSON(out))
		}
	}
	for _, tool := range []string{"Bash", "Write", "Edit", "CronCreate", "EnterWorktree", "Agent", "mcp__human__inbox", "Skill"} {
		reason, ok := denial(call(t, judge, &claude.HookInput{ToolName: tool, ToolInput: bashInput("ls")}))
		if want := fmt.Sprintf(whitelistZh, "设定目标", tool); !ok || reason != want {
			t.Errorf("%s: %q, want %q", tool, reason, want)
		}
	}
	// The default role name.
	reason, _ := denial(call(t, Whitelist(nil, ""), &claude.HookInput{ToolName: "Write"}))
	if want := fmt.Sprintf(whitelistZh, "这个角色", "Write"); reason != want {
		t.Errorf("default role: %q, want %q", reason, want)
	}
	// A judge that can run has Bash outright, unbounded.
	runner := Whitelist([]string{"Read", "Bash"}, "j")
	if out := call(t, runner, &claude.HookInput{ToolName: "Bash", ToolInput: bashInput("go test ./... > out.txt")}); out != nil {
		t.Errorf("a role with Bash was refused a command: %s", mustJSON(out))
	}
	// An Agent call needs workers even when Agent is allowed.
	reason, ok := denial(call(t, Whitelist([]string{"Agent"}, "j"), &claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"general-purpose"}`)}))
	if want := fmt.Sprintf(ChineseTexts.WorkerDeny, "general-purpose", ChineseTexts.NoWorkers); !ok || reason != want {
		t.Errorf("Agent without workers: %q, want %q", reason, want)
	}
}

func TestWallToolNames(t *testing.T) {
	w := Wall{Tools: []string{"Task", "mcp__human", "Bash(git log:*)"}, Workers: []string{"coder"}}
	m := w.Matcher()
	for _, tool := range []string{"Agent", "mcp__human__ask", "mcp__human__inbox"} {
		in := &claude.HookInput{ToolName: tool, ToolInput: json.RawMessage(`{"subagent_type":"coder"}`)}
		if out := call(t, m, in); out != nil {
			t.Errorf("%s refused: %s", tool, mustJSON(out))
		}
	}
	for _, tool := range []string{"mcp__human", "mcp__human__", "mcp__humanoid__ask", "Bash"} {
		if _, ok := denial(call(t, m, &claude.HookInput{ToolName: tool, ToolInput: bashInput("git log")})); !ok {
			t.Errorf("%s passed", tool)
		}
	}
}

func TestWallArtifactsAndEnglish(t *testing.T) {
	w := Wall{Delegate: true, Artifacts: "/srv/bench/artifacts/"}
	reason, _ := denial(call(t, w.Matcher(), &claude.HookInput{ToolName: "Write"}))
	if !strings.Contains(reason, "写进 /srv/bench/artifacts/、回话") {
		t.Errorf("artifacts folder not named: %q", reason)
	}
	reason, _ = denial(call(t, EnglishTexts.Wall(Wall{Glance: true, Delegate: true}), &claude.HookInput{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"ls","run_in_background":true}`)}))
	if reason != EnglishTexts.GlanceBackground {
		t.Errorf("English background refusal: %q", reason)
	}
	reason, _ = denial(call(t, EnglishTexts.Wall(Wall{Tools: []string{"Agent"}, Delegate: true}), &claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{}`)}))
	if want := "An Agent call must name a worker in subagent_type (this role has no workers to dispatch)"; !strings.HasPrefix(reason, want) {
		t.Errorf("English missing worker: %q", reason)
	}
}

func TestWallRefusesAGlanceAtASpecialFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := coordinatorWall().Matcher()
	for cmd, refused := range map[string]bool{
		"cat pipe":               true,
		"head -n 1 'pipe'":       true,
		"wc -l " + dir + "/pipe": true,
		"grep --file=pipe x f":   true,
		"cat file":               false,
		"ls -la " + dir:          false,
		"cat /dev/null":          false,
		"cat missing":            false,
	} {
		out := call(t, m, &claude.HookInput{ToolName: "Bash", Cwd: dir, ToolInput: bashInput(cmd)})
		if _, denied := denial(out); denied != refused {
			t.Errorf("%s: refused %v, want %v (%s)", cmd, denied, refused, mustJSON(out))
		}
	}
}

// TestWallRefusesAGlanceAtACredentialFile: where no sandbox hides them, a
// glance must not print a key file into the model's context.
func TestWallRefusesAGlanceAtACredentialFile(t *testing.T) {
	m := coordinatorWall().Matcher()
	for cmd, refused := range map[string]bool{
		"cat .env":                  true,
		"cat ~/.config/flower/.env": true,
		"head -n 3 /home/u/.claude/.credentials.json": true,
		"cat ~/.claude.json":                          true,
		"cat .e*":                                     true,
		"grep KEY .env.local":                         true,
		"cat ~/.claude/.cred?ntials.json":             true,
		"cat README.md":                               false,
		"ls -la":                                      false,
		"cat env.go":                                  false,
	} {
		out := call(t, m, &claude.HookInput{ToolName: "Bash", ToolInput: bashInput(cmd)})
		if _, denied := denial(out); denied != refused {
			t.Errorf("%s: refused %v, want %v (%s)", cmd, denied, refused, mustJSON(out))
		}
	}
}

// TestWallWithoutASandboxRefusesIndexWritingDiffs: git diff against the
// working tree rewrites .git/index; where no sandbox makes that write
// fail, the wall refuses it, and lets it through where one does.
func TestWallWithoutASandboxRefusesIndexWritingDiffs(t *testing.T) {
	m := coordinatorWall()
	for _, sb := range []Sandbox{{Reason: SandboxMissing}, {Program: "/usr/bin/bwrap"}} {
		g := &wall{texts: ChineseTexts, w: m, tools: map[string]bool{"Agent": true}, sandbox: sb, bashCmd: "/bin/bash", envCmd: "/usr/bin/env"}
		g.w.GlanceTimeout = DefaultGlanceTimeout
		for cmd, refusedBare := range map[string]bool{"git diff --stat": true, "git status && git diff": true, "git diff --cached": false, "git status": false} {
			out, _ := g.check(context.Background(), &claude.HookInput{ToolName: "Bash", ToolInput: bashInput(cmd)})
			_, denied := denial(out)
			if want := refusedBare && !sb.Active(); denied != want {
				t.Errorf("sandbox %v, %s: refused %v, want %v", sb.Active(), cmd, denied, want)
			}
		}
	}
}
