package claude_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowerrun/flower/claude"
)

func strp(s string) *string { return &s }

func TestArgsFollowTheSDKTable(t *testing.T) {
	budget := 0.5
	tests := []struct {
		name string
		opts claude.Options
		want []string // a contiguous run expected in argv
		not  []string // flags that must be absent
	}{
		{"no system prompt sends an empty one", claude.Options{}, []string{"--system-prompt", ""}, []string{"--append-system-prompt"}},
		{"text prompt", claude.Options{SystemPrompt: claude.TextPrompt("be brief")}, []string{"--system-prompt", "be brief"}, nil},
		{"preset sends nothing", claude.Options{SystemPrompt: claude.PresetPrompt("")}, nil, []string{"--system-prompt", "--append-system-prompt"}},
		{"preset with append", claude.Options{SystemPrompt: claude.PresetPrompt("RULES")}, []string{"--append-system-prompt", "RULES"}, []string{"--system-prompt"}},
		{"prompt file", claude.Options{SystemPrompt: claude.SystemPrompt{File: "/p.md"}}, []string{"--system-prompt-file", "/p.md"}, nil},
		{"tools list", claude.Options{Tools: []string{"Read", "Bash"}}, []string{"--tools", "Read,Bash"}, nil},
		{"empty tools disables all", claude.Options{Tools: []string{}}, []string{"--tools", ""}, nil},
		{"nil tools omitted", claude.Options{}, nil, []string{"--tools"}},
		{"allowed and disallowed", claude.Options{AllowedTools: []string{"Read", "Glob"}, DisallowedTools: []string{"Bash"}}, []string{"--allowedTools", "Read,Glob"}, nil},
		{"disallowed", claude.Options{DisallowedTools: []string{"Bash", "Write"}}, []string{"--disallowedTools", "Bash,Write"}, nil},
		{"model and effort", claude.Options{Model: "sonnet", Effort: "high"}, []string{"--model", "sonnet"}, nil},
		{"effort", claude.Options{Effort: "high"}, []string{"--effort", "high"}, nil},
		{"max turns", claude.Options{MaxTurns: 7}, []string{"--max-turns", "7"}, nil},
		{"zero max turns omitted", claude.Options{}, nil, []string{"--max-turns"}},
		{"budget", claude.Options{MaxBudgetUSD: budget}, []string{"--max-budget-usd", "0.5"}, nil},
		{"permission mode", claude.Options{PermissionMode: "acceptEdits"}, []string{"--permission-mode", "acceptEdits"}, nil},
		{"can_use_tool forces stdio", claude.Options{CanUseTool: func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
			return claude.Allow(), nil
		}}, []string{"--permission-prompt-tool", "stdio"}, nil},
		{"resume uses the equals form", claude.Options{Resume: "-weird"}, []string{"--resume=-weird"}, nil},
		{"fork and resume-at", claude.Options{Resume: "abc", ForkSession: true, ResumeSessionAt: "u1"}, []string{"--fork-session", "--resume-session-at=u1"}, nil},
		{"session id", claude.Options{SessionID: "11111111-2222-3333-4444-555555555555"}, []string{"--session-id=11111111-2222-3333-4444-555555555555"}, nil},
		{"continue", claude.Options{ContinueConversation: true}, []string{"--continue"}, nil},
		{"empty setting sources", claude.Options{SettingSources: []string{}}, []string{"--setting-sources="}, nil},
		{"setting sources", claude.Options{SettingSources: []string{"project"}}, []string{"--setting-sources=project"}, nil},
		{"nil setting sources omitted", claude.Options{}, nil, []string{"--setting-sources="}},
		{"plugin dirs repeat", claude.Options{PluginDirs: []string{"/a", "/b"}}, []string{"--plugin-dir", "/a", "--plugin-dir", "/b"}, nil},
		{"add dirs repeat", claude.Options{AddDirs: []string{"/x", "/y"}}, []string{"--add-dir", "/x", "--add-dir", "/y"}, nil},
		{"partial messages", claude.Options{IncludePartialMessages: true}, []string{"--include-partial-messages"}, nil},
		{"session store mirrors", claude.Options{SessionStore: nopStore{}}, []string{"--session-mirror"}, nil},
		{"mcp config string", claude.Options{MCPConfig: `{"mcpServers":{}}`}, []string{"--mcp-config", `{"mcpServers":{}}`}, nil},
		{"extra args", claude.Options{ExtraArgs: map[string]*string{"replay-user-messages": nil, "debug-file": strp("/tmp/d"), "x": strp("-dash")}},
			[]string{"--debug-file", "/tmp/d", "--replay-user-messages", "--x=-dash"}, nil},
		{"settings", claude.Options{Settings: `{"a":1}`}, []string{"--settings", `{"a":1}`}, nil},
		{"betas", claude.Options{Betas: []string{"b1", "b2"}}, []string{"--betas", "b1,b2"}, nil},
		{"fallback model", claude.Options{FallbackModel: "haiku"}, []string{"--fallback-model", "haiku"}, nil},
		{"json schema", claude.Options{JSONSchema: json.RawMessage(`{"type":"object"}`)}, []string{"--json-schema", `{"type":"object"}`}, nil},
		{"adaptive thinking", claude.Options{Thinking: "adaptive"}, []string{"--thinking", "adaptive"}, []string{"--max-thinking-tokens"}},
		{"thinking budget wins", claude.Options{Thinking: "adaptive", MaxThinkingTokens: 8000}, []string{"--max-thinking-tokens", "8000"}, []string{"--thinking"}},
		{"task budget", claude.Options{TaskBudget: 50000}, []string{"--task-budget", "50000"}, nil},
		{"resume drops turn", claude.Options{Resume: "r", ResumeDropsTurn: strp("u9")}, []string{"--resume-drops-turn=u9"}, nil},
		{"empty resume drops turn is still sent", claude.Options{Resume: "r", ResumeDropsTurn: strp("")}, []string{"--resume-drops-turn="}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := tt.opts.Args()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(args[:3], []string{"--output-format", "stream-json", "--verbose"}) {
				t.Errorf("argv starts %q", args[:3])
			}
			if !slices.Equal(args[len(args)-2:], []string{"--input-format", "stream-json"}) {
				t.Errorf("argv ends %q", args[len(args)-2:])
			}
			if tt.want != nil && !containsRun(args, tt.want) {
				t.Errorf("argv %q lacks %q", args, tt.want)
			}
			for _, flag := range tt.not {
				if slices.Contains(args, flag) {
					t.Errorf("argv %q has %q", args, flag)
				}
			}
			for _, a := range args {
				if strings.HasPrefix(a, "--agents") {
					t.Errorf("agents must never be passed as a flag: %q", args)
				}
			}
		})
	}
}

func containsRun(args, run []string) bool {
	for i := 0; i+len(run) <= len(args); i++ {
		if slices.Equal(args[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

func TestMCPConfigCarriesExternalAndSDKServers(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, nil)
	opts := claude.Options{MCPServers: map[string]claude.MCPServer{
		"calc": claude.SDKServer{Server: srv},
		"fs":   claude.MCPStdioServer{Command: "fs-server", Args: []string{"--root", "/"}},
		"web":  claude.MCPRemoteServer{Type: "http", URL: "http://127.0.0.1:1/mcp"},
	}}
	args, err := opts.Args()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args, "--mcp-config")
	if i < 0 {
		t.Fatalf("no --mcp-config in %q", args)
	}
	var cfg struct {
		Servers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(args[i+1]), &cfg); err != nil {
		t.Fatal(err)
	}
	if c := cfg.Servers["calc"]; c["type"] != "sdk" || c["name"] != "calc" || len(c) != 2 {
		t.Errorf("sdk server config = %v (the in-process instance must be stripped)", c)
	}
	if c := cfg.Servers["fs"]; c["type"] != "stdio" || c["command"] != "fs-server" {
		t.Errorf("stdio config = %v", c)
	}
	if c := cfg.Servers["web"]; c["type"] != "http" || c["url"] != "http://127.0.0.1:1/mcp" {
		t.Errorf("http config = %v", c)
	}
}

func TestInvalidOptionsAreRefused(t *testing.T) {
	perm := func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return claude.Allow(), nil
	}
	for name, o := range map[string]claude.Options{
		"can_use_tool with a prompt tool":       {CanUseTool: perm, PermissionPromptTool: "mcp__x__y"},
		"session id with resume, no fork":       {SessionID: "s", Resume: "r"},
		"continue with a store that can't list": {ContinueConversation: true, SessionStore: nopStore{}},
		"unknown flush mode":                    {SessionStoreFlush: "sometimes"},
		"unknown thinking mode":                 {Thinking: "deep"},
		"nil MCP server":                        {MCPServers: map[string]claude.MCPServer{"x": nil}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := claude.Connect(context.Background(), o)
			if !errors.Is(err, claude.ErrInvalidOptions) {
				t.Fatalf("err = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

func TestChildEnvironment(t *testing.T) {
	o := claude.Options{
		Cwd:     "/work/x",
		BaseEnv: []string{"PATH=/bin", "CLAUDECODE=1", "KEEP=me"},
		Env:     map[string]string{"CLAUDE_CODE_ENTRYPOINT": "custom", "CLAUDE_AGENT_SDK_VERSION": "spoofed", "FOO": "bar"},
	}
	env := map[string]string{}
	for _, kv := range o.ChildEnv() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	if _, ok := env["CLAUDECODE"]; ok {
		t.Error("CLAUDECODE must be removed so the child does not think it is nested")
	}
	want := map[string]string{"PATH": "/bin", "KEEP": "me", "FOO": "bar", "CLAUDE_CODE_ENTRYPOINT": "custom",
		"CLAUDE_AGENT_SDK_VERSION": claude.Version, "PWD": "/work/x"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}

func TestProjectKey(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "a.b_c")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	want := strings.NewReplacer("/", "-", ".", "-", "_", "-").Replace(realDir)
	if got := claude.ProjectKey(real); got != want {
		t.Errorf("ProjectKey(%s) = %q, want %q", real, got, want)
	}
	if got := claude.ProjectKey(link); got != want {
		t.Errorf("a symlink must resolve: ProjectKey(%s) = %q, want %q", link, got, want)
	}
	if got := claude.ProjectKey(real + "/"); got != want {
		t.Errorf("a trailing slash must not matter: %q", got)
	}
	if got := claude.ProjectKey("/srv/a.b/work"); got != "-srv-a-b-work" {
		t.Errorf("got %q", got)
	}
	// NFD input normalizes to NFC before replacement: é is one character.
	if got := claude.ProjectKey("/tmp/cafe\u0301"); got != "-tmp-caf-" {
		t.Errorf("NFD path: got %q", got)
	}
	long := "/" + strings.Repeat("x", 250)
	got := claude.ProjectKey(long)
	if len(got) <= 200 || got[:200] != "-"+strings.Repeat("x", 199) || got[200] != '-' {
		t.Errorf("long key = %q", got)
	}
	if claude.ProjectKey(long) != got || claude.ProjectKey(long+"y") == got {
		t.Error("the hash suffix must be stable and depend on the whole path")
	}
}

func TestSafeSubpath(t *testing.T) {
	base := "/tmp/s"
	for sub, ok := range map[string]bool{
		"subagents/agent-1":             true,
		"subagents/workflows/r/agent-2": true,
		"":                              false,
		"/etc/passwd":                   false,
		"../escape":                     false,
		"subagents/../../x":             false,
		"C:/windows":                    false,
		"a\x00b":                        false,
		`..\x`:                          false,
	} {
		_, err := claude.SafeSubpath(base, sub)
		if (err == nil) != ok {
			t.Errorf("SafeSubpath(%q) err = %v, want ok=%v", sub, err, ok)
		}
		if err != nil && !errors.Is(err, claude.ErrUnsafeSubpath) {
			t.Errorf("error %v is not ErrUnsafeSubpath", err)
		}
	}
}

type nopStore struct{}

func (nopStore) Append(context.Context, claude.SessionKey, []json.RawMessage) error { return nil }
func (nopStore) Load(context.Context, claude.SessionKey) ([]json.RawMessage, error) {
	return nil, nil
}
