package guard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/flowerrun/flower/internal/lang"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/workbench"
)

// TestMain keeps the guards' logs out of the test output.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	if dir := os.Getenv(fsizeHelperEnv); dir != "" {
		os.Exit(fsizeHelper(dir))
	}
	goleak.VerifyTestMain(m)
}

// call runs the single hook of m.
func call(t *testing.T, m claude.HookMatcher, in *claude.HookInput) *claude.HookOutput {
	t.Helper()
	if len(m.Hooks) != 1 {
		t.Fatalf("matcher %q has %d hooks, want 1", m.Matcher, len(m.Hooks))
	}
	out, err := m.Hooks[0](context.Background(), in)
	if err != nil {
		t.Fatalf("hook returned error %v", err)
	}
	return out
}

// denial returns the reason of a deny answer, or "" with ok false.
func denial(out *claude.HookOutput) (string, bool) {
	if out == nil || out.HookSpecificOutput == nil || out.HookSpecificOutput.PermissionDecision != claude.DecisionDeny {
		return "", false
	}
	if out.HookSpecificOutput.HookEventName != claude.PreToolUse {
		return "", false
	}
	return out.HookSpecificOutput.PermissionDecisionReason, true
}

// captureLog sends slog.Default to a buffer for the test's duration.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// spillCase is one call of the spill guard.
type spillCase struct {
	name     string
	tool     string
	agent    string
	input    string
	response string
	// want is the expected updatedToolOutput ("" = no answer); SPILL(s)
	// stands for the pointer that replaces the string s of long.
	want string
}

func TestSpill(t *testing.T) {
	ws := t.TempDir()
	wb := &workbench.Workbench{Workspace: ws}
	long := strings.Repeat("line of output\n", 300) // 4500 characters
	wide := strings.Repeat("长", 4000)               // 4000 characters, 12000 bytes
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tests := []spillCase{
		{"bash keeps its shape", "Bash", "", `{"command":"make"}`,
			`{"stdout":` + q(long) + `,"stderr":"warning","interrupted":false,"isImage":false,"noOutputExpected":false}`,
			`{"interrupted":false,"isImage":false,"noOutputExpected":false,"stderr":"warning","stdout":SPILL}`},
		{"bare string", "WebFetch", "", `{"url":"https://x"}`, q(long), `SPILL`},
		{"nested object", "Read", "", `{"file_path":"/etc/big"}`,
			`{"type":"text","file":{"filePath":"/etc/big","content":` + q(long) + `,"numLines":300,"startLine":1}}`,
			`{"file":{"content":SPILL,"filePath":"/etc/big","numLines":300,"startLine":1},"type":"text"}`},
		{"numbers kept", "Grep", "", `{"pattern":"x"}`,
			`{"n":12345678901234567890,"f":1.50,"content":` + q(long) + `}`,
			`{"content":SPILL,"f":1.50,"n":12345678901234567890}`},
		{"list untouched", "Read", "", `{"file_path":"/img.png"}`,
			`{"content":[{"type":"text","text":` + q(long) + `}],"type":"image"}`, ""},
		{"top-level list untouched", "WebSearch", "", `{"query":"q"}`, `[` + q(long) + `]`, ""},
		{"below threshold", "Bash", "", `{"command":"ls"}`, `{"stdout":"short","stderr":"","interrupted":false}`, ""},
		{"exactly the threshold in characters", "Bash", "", `{"command":"ls"}`, `{"stdout":` + q(wide) + `}`, ""},
		{"one over the threshold", "Bash", "", `{"command":"ls"}`, `{"stdout":` + q(wide+"x") + `}`, `{"stdout":SPILL}`},
		{"subagent spilled too", "Bash", "a1", `{"command":"make"}`, `{"stdout":` + q(long) + `}`, `{"stdout":SPILL}`},
		{"reading a spill file by absolute path", "Read", "", `{"file_path":` + q(filepath.Join(ws, ".flower", "spill", "0123456789abcdef.txt")) + `}`, q(long), ""},
		{"grep in the spill folder", "Grep", "", `{"pattern":"err","path":".flower/spill"}`, `{"content":` + q(long) + `}`, ""},
		{"cat of a spill file", "Bash", "", `{"command":"cat ./.flower/spill/0123456789abcdef.txt"}`, `{"stdout":` + q(long) + `}`, ""},
		{"no tool input", "Bash", "", ``, `{"stdout":` + q(long) + `}`, `{"stdout":SPILL}`},
		{"number", "Bash", "", `{}`, `42`, ""},
		{"null", "Bash", "", `{}`, `null`, ""},
		{"boolean", "Bash", "", `{}`, `true`, ""},
		{"invalid response", "Bash", "", `{}`, `{"stdout":`, ""},
		{"trailing garbage", "Bash", "", `{}`, q(long) + ` x`, ""},
		{"no response", "Bash", "", `{}`, ``, ""},
		{"tool input not JSON", "Bash", "", `{command`, `{"stdout":` + q(long) + `}`, ""},
	}
	runSpill(t, Spill(wb, DefaultSpillThreshold, "", false), wb, tests, long, wide+"x")
}

// runSpill runs cases against the hook of m, checking answers and files.
func runSpill(t *testing.T, m claude.HookMatcher, wb *workbench.Workbench, tests []spillCase, longs ...string) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &claude.HookInput{HookEventName: claude.PostToolUse, ToolName: tt.tool, AgentID: tt.agent,
				ToolInput: json.RawMessage(tt.input), ToolResponse: json.RawMessage(tt.response)}
			out := call(t, m, in)
			if tt.want == "" {
				if out != nil {
					t.Fatalf("answer %s, want none", mustJSON(out))
				}
				return
			}
			if out == nil || out.HookSpecificOutput == nil || out.HookSpecificOutput.HookEventName != claude.PostToolUse {
				t.Fatalf("answer %s, want updatedToolOutput", mustJSON(out))
			}
			got := string(out.HookSpecificOutput.UpdatedToolOutput)
			var spilled string
			for _, l := range longs {
				if strings.Contains(tt.response, mustQuote(l)) {
					spilled = l
				}
			}
			sum := sha256.Sum256([]byte(spilled))
			file := filepath.Join(wb.Root(), "spill", hex.EncodeToString(sum[:])[:16]+".txt")
			head := []rune(spilled)
			if len(head) > 400 {
				head = head[:400]
			}
			pointer := "[输出 " + strconv.Itoa(len([]rune(spilled))) + " 字符,已落盘到 " + wb.Show(file) +
				" —— 需要全文用 Read 读它,需要找东西用 Grep 搜它]\n开头 400 字符:" + strings.ReplaceAll(string(head), "\n", " ")
			want := strings.Replace(tt.want, "SPILL", mustQuote(pointer), 1)
			if got != want {
				t.Errorf("updatedToolOutput =\n%s\nwant\n%s", got, want)
			}
			data, err := os.ReadFile(file)
			if err != nil || string(data) != spilled {
				t.Errorf("spill file %s: %d bytes, err %v; want the original %d bytes", file, len(data), err, len(spilled))
			}
		})
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func mustQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func TestSpillMainOnlyAndExternal(t *testing.T) {
	tmp := t.TempDir()
	wb := &workbench.Workbench{Workspace: filepath.Join(tmp, "repo"), Home: filepath.Join(tmp, "bench")}
	long := strings.Repeat("x", 101)
	q := mustQuote(long)
	m := Spill(wb, 100, "Bash", true)
	if m.Matcher != "Bash" {
		t.Errorf("Matcher = %q", m.Matcher)
	}
	runSpill(t, m, wb, []spillCase{
		{"main thread spilled, absolute path", "Bash", "", `{"command":"x"}`, `{"stdout":` + q + `}`, `{"stdout":SPILL}`},
		{"subagent skipped", "Bash", "a1", `{"command":"x"}`, `{"stdout":` + q + `}`, ""},
		{"spill folder by absolute path", "Grep", "", `{"path":` + mustQuote(filepath.Join(tmp, "bench", "spill")) + `}`, `{"stdout":` + q + `}`, ""},
	}, long)
	sum := sha256.Sum256([]byte(long))
	abs := filepath.Join(tmp, "bench", "spill", hex.EncodeToString(sum[:])[:16]+".txt")
	out := call(t, m, &claude.HookInput{ToolName: "Bash", ToolResponse: json.RawMessage(`"` + long + `"`)})
	if out == nil || !strings.Contains(string(out.HookSpecificOutput.UpdatedToolOutput), "已落盘到 "+abs+" ") {
		t.Errorf("external pointer does not name %s: %s", abs, mustJSON(out))
	}
	if def := Spill(wb, DefaultSpillThreshold, "", false); def.Matcher != Bulky {
		t.Errorf("default Matcher = %q, want %q", def.Matcher, Bulky)
	}
}

func TestSpillKeepsExistingFile(t *testing.T) {
	wb := &workbench.Workbench{Workspace: t.TempDir()}
	long := strings.Repeat("y", 5000)
	sum := sha256.Sum256([]byte(long))
	file := filepath.Join(wb.Root(), "spill", hex.EncodeToString(sum[:])[:16]+".txt")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("already here"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := call(t, Spill(wb, DefaultSpillThreshold, "", false), &claude.HookInput{ToolName: "Bash", ToolResponse: json.RawMessage(`{"stdout":"` + long + `"}`)})
	if out == nil {
		t.Fatal("no answer")
	}
	if data, _ := os.ReadFile(file); string(data) != "already here" {
		t.Errorf("existing spill file rewritten")
	}
}

func TestSpillUnwritableWorkbenchLeavesResult(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("a file, not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := captureLog(t)
	wb := &workbench.Workbench{Workspace: tmp, Home: filepath.Join(file, "wb")}
	m := Spill(wb, 10, "", false)
	out, err := m.Hooks[0](context.Background(), &claude.HookInput{ToolName: "Bash",
		ToolResponse: json.RawMessage(`{"stdout":"` + strings.Repeat("z", 50) + `"}`)})
	if out != nil || err != nil {
		t.Fatalf("answer %s, err %v; want none", mustJSON(out), err)
	}
	if !strings.Contains(logs.String(), "cannot write the spill file") {
		t.Errorf("nothing logged: %q", logs.String())
	}
}

func TestSpillLogsWhy(t *testing.T) {
	tests := []struct{ name, input, response, log string }{
		{"invalid response", `{}`, `{"stdout":`, "tool response is not JSON"},
		{"number", `{}`, `7`, "neither a string nor an object"},
		{"list", `{}`, `[]`, "neither a string nor an object"},
		{"invalid input", `{x`, `"s"`, "tool input is not JSON"},
	}
	wb := &workbench.Workbench{Workspace: t.TempDir()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := captureLog(t)
			out := call(t, Spill(wb, DefaultSpillThreshold, "", false), &claude.HookInput{ToolName: "Bash",
				ToolInput: json.RawMessage(tt.input), ToolResponse: json.RawMessage(tt.response)})
			if out != nil {
				t.Errorf("answer %s, want none", mustJSON(out))
			}
			if !strings.Contains(logs.String(), tt.log) {
				t.Errorf("log %q lacks %q", logs.String(), tt.log)
			}
		})
	}
}

func TestIndexRefreshesInsideWorkbenchOnly(t *testing.T) {
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	tests := []struct {
		name        string
		cwd         string
		input       string
		wantRefresh bool
	}{
		{"script in the workbench", "", `{"file_path":` + mustQuote(filepath.Join(ws, ".flower", "scripts", "a.sh")) + `,"content":"# desc: a\n"}`, true},
		{"relative to cwd", ws, `{"file_path":".flower/notes/n.md"}`, true},
		{"relative without cwd", "", `{"file_path":".flower/notes/n.md"}`, true},
		{"dots leaving the workbench", "", `{"file_path":` + mustQuote(filepath.Join(ws, ".flower", "..", "main.go")) + `}`, false},
		{"workspace file", "", `{"file_path":` + mustQuote(filepath.Join(ws, "main.go")) + `}`, false},
		{"look-alike prefix", "", `{"file_path":` + mustQuote(filepath.Join(ws, ".flower-old", "x")) + `}`, false},
		{"no file_path", "", `{"content":"x"}`, false},
		{"not JSON", "", `{file_path`, false},
		{"no input", "", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.RemoveAll(ws); err != nil {
				t.Fatal(err)
			}
			wb := &workbench.Workbench{Workspace: ws}
			m := Index(wb)
			if m.Matcher != "Write|Edit" {
				t.Errorf("Matcher = %q", m.Matcher)
			}
			out := call(t, m, &claude.HookInput{ToolName: "Write", Cwd: tt.cwd, ToolInput: json.RawMessage(tt.input)})
			if out != nil {
				t.Errorf("answer %s, want none", mustJSON(out))
			}
			_, err := os.Stat(wb.IndexPath())
			if refreshed := err == nil; refreshed != tt.wantRefresh {
				t.Errorf("INDEX.md written: %v, want %v", refreshed, tt.wantRefresh)
			}
		})
	}
	// The refreshed index lists the new file.
	wb := &workbench.Workbench{Workspace: ws}
	script := filepath.Join(ws, ".flower", "scripts", "check.sh")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("# desc: checks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	call(t, Index(wb), &claude.HookInput{ToolName: "Edit", ToolInput: json.RawMessage(`{"file_path":` + mustQuote(script) + `}`)})
	if data, _ := os.ReadFile(wb.IndexPath()); !strings.Contains(string(data), "- `.flower/scripts/check.sh` — checks (15B)") {
		t.Errorf("INDEX.md:\n%s", data)
	}
}

func TestIndexUnwritableWorkbench(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := captureLog(t)
	wb := &workbench.Workbench{Workspace: tmp, Home: filepath.Join(file, "wb")}
	out := call(t, Index(wb), &claude.HookInput{ToolName: "Write",
		ToolInput: json.RawMessage(`{"file_path":` + mustQuote(filepath.Join(file, "wb", "notes", "n.md")) + `}`)})
	if out != nil {
		t.Errorf("answer %s, want none", mustJSON(out))
	}
	if !strings.Contains(logs.String(), "refresh failed") {
		t.Errorf("nothing logged: %q", logs.String())
	}
}

func TestIsolate(t *testing.T) {
	agents := map[string]claude.AgentDefinition{
		"coder":    {Description: "writes code", Prompt: "p", Isolation: claude.IsolationWorktree},
		"reviewer": {Description: "reads code", Prompt: "p"},
	}
	tests := []struct {
		name  string
		tool  string
		input string
		want  string // "" = no answer
	}{
		{"marked agent", "Agent",
			`{"description":"fix bug","prompt":"do it","subagent_type":"coder","run_in_background":false,"max":12345678901234567890,"ratio":0.10}`,
			`{"description":"fix bug","isolation":"worktree","max":12345678901234567890,"prompt":"do it","ratio":0.10,"run_in_background":false,"subagent_type":"coder"}`},
		{"older tool name", "Task", `{"description":"d","subagent_type":"coder"}`,
			`{"description":"d","isolation":"worktree","subagent_type":"coder"}`},
		{"unmarked agent", "Agent", `{"description":"d","subagent_type":"reviewer"}`, ""},
		{"unknown agent", "Agent", `{"description":"d","subagent_type":"general-purpose"}`, ""},
		{"no subagent_type", "Agent", `{"description":"d"}`, ""},
		{"cwd set", "Agent", `{"subagent_type":"coder","cwd":"/elsewhere"}`, ""},
		{"isolation set", "Agent", `{"subagent_type":"coder","isolation":"none"}`, ""},
		{"empty cwd counts as unset", "Agent", `{"subagent_type":"coder","cwd":""}`,
			`{"cwd":"","isolation":"worktree","subagent_type":"coder"}`},
		{"other tool", "Bash", `{"subagent_type":"coder"}`, ""},
		{"input not an object", "Agent", `["coder"]`, ""},
		{"input not JSON", "Agent", `{subagent_type`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			m := Isolate(agents, func(typ, desc string) { calls = append(calls, typ+"/"+desc) })
			if m.Matcher != "Agent|Task" {
				t.Errorf("Matcher = %q", m.Matcher)
			}
			out := call(t, m, &claude.HookInput{ToolName: tt.tool, ToolInput: json.RawMessage(tt.input)})
			if tt.want == "" {
				if out != nil || len(calls) != 0 {
					t.Fatalf("answer %s, onInject %v; want neither", mustJSON(out), calls)
				}
				return
			}
			if out == nil || out.HookSpecificOutput == nil {
				t.Fatal("no answer")
			}
			h := out.HookSpecificOutput
			if h.HookEventName != claude.PreToolUse || h.PermissionDecision != claude.DecisionAllow {
				t.Errorf("answer %s, want allow", mustJSON(out))
			}
			if string(h.UpdatedInput) != tt.want {
				t.Errorf("updatedInput =\n%s\nwant\n%s", h.UpdatedInput, tt.want)
			}
			var in map[string]any
			_ = json.Unmarshal([]byte(tt.input), &in)
			desc, _ := in["description"].(string)
			if want := []string{"coder/" + desc}; !reflect.DeepEqual(calls, want) {
				t.Errorf("onInject calls %v, want %v", calls, want)
			}
		})
	}
	// A nil onInject is fine.
	out := call(t, Isolate(agents, nil), &claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"coder"}`)})
	if out == nil {
		t.Error("no answer with a nil onInject")
	}
}

func TestIsolateConcurrentCalls(t *testing.T) {
	var mu sync.Mutex
	n := 0
	m := Isolate(map[string]claude.AgentDefinition{"coder": {Isolation: claude.IsolationWorktree}}, func(string, string) { mu.Lock(); n++; mu.Unlock() })
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, _ = m.Hooks[0](context.Background(), &claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"coder"}`)})
		})
	}
	wg.Wait()
	if n != 20 {
		t.Errorf("onInject called %d times, want 20", n)
	}
}

func matchers(ms []claude.HookMatcher) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Matcher)
	}
	return out
}

func TestWorkbenchHooks(t *testing.T) {
	wb := &workbench.Workbench{Workspace: t.TempDir()}
	marked := map[string]claude.AgentDefinition{"coder": {Isolation: claude.IsolationWorktree}, "reviewer": {}}
	unmarked := map[string]claude.AgentDefinition{"reviewer": {}}
	tests := []struct {
		name     string
		wb       *workbench.Workbench
		spill    int
		agents   map[string]claude.AgentDefinition
		wantPre  []string
		wantPost []string
	}{
		{"marked worker", wb, 4000, marked, []string{"Agent|Task"}, []string{"Write|Edit", Bulky}},
		{"no marks", wb, 4000, unmarked, nil, []string{"Write|Edit", Bulky}},
		{"no spill", wb, 0, nil, nil, []string{"Write|Edit"}},
		{"negative spill", wb, -1, nil, nil, []string{"Write|Edit"}},
		{"no workbench", nil, 4000, marked, []string{"Agent|Task"}, nil},
		{"no workbench, nothing", nil, 4000, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WorkbenchHooks(tt.wb, tt.spill, tt.agents)
			if pre, ok := got[claude.PreToolUse]; ok != (tt.wantPre != nil) || !reflect.DeepEqual(matchers(pre), tt.wantPre) {
				t.Errorf("PreToolUse = %v (present %v), want %v", matchers(pre), ok, tt.wantPre)
			}
			if post, ok := got[claude.PostToolUse]; ok != (tt.wantPost != nil) || !reflect.DeepEqual(matchers(post), tt.wantPost) {
				t.Errorf("PostToolUse = %v (present %v), want %v", matchers(post), ok, tt.wantPost)
			}
			if want := btoi(tt.wantPre != nil) + btoi(tt.wantPost != nil); len(got) != want {
				t.Errorf("%d events, want %d", len(got), want)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestWorkbenchHooksWireTheirParameters(t *testing.T) {
	tmp := t.TempDir()
	external := &workbench.Workbench{Workspace: filepath.Join(tmp, "repo"), Home: filepath.Join(tmp, "bench")}
	hooks := WorkbenchHooks(external, 10, nil)
	// spillThreshold reaches Spill, which spills subagents' results too.
	spill := hooks[claude.PostToolUse][1]
	if out := call(t, spill, &claude.HookInput{ToolName: "Bash", AgentID: "a1", ToolResponse: json.RawMessage(`"12345678901"`)}); out == nil {
		t.Error("11 characters over a threshold of 10 not spilled")
	}
	if out := call(t, spill, &claude.HookInput{ToolName: "Bash", ToolResponse: json.RawMessage(`"1234567890"`)}); out != nil {
		t.Error("10 characters at a threshold of 10 spilled")
	}
}

func TestMergeHooks(t *testing.T) {
	a := claude.HookMatcher{Matcher: "A"}
	b := claude.HookMatcher{Matcher: "B"}
	c := claude.HookMatcher{Matcher: "C"}
	spec := map[string][]claude.HookMatcher{claude.PreToolUse: {a}, claude.Stop: {b}}
	wbh := map[string][]claude.HookMatcher{claude.PreToolUse: {b, c}, claude.PostToolUse: {c}}
	wl := map[string][]claude.HookMatcher{claude.PreToolUse: {a}}
	got := MergeHooks(spec, nil, wbh, wl)
	want := map[string][]string{
		claude.PreToolUse:  {"A", "B", "C", "A"},
		claude.PostToolUse: {"C"},
		claude.Stop:        {"B"},
	}
	if len(got) != len(want) {
		t.Errorf("%d events, want %d", len(got), len(want))
	}
	for ev, w := range want {
		if m := matchers(got[ev]); !reflect.DeepEqual(m, w) {
			t.Errorf("%s = %v, want %v", ev, m, w)
		}
	}
	// The result shares nothing with the arguments.
	got[claude.PreToolUse][0].Matcher = "changed"
	if spec[claude.PreToolUse][0].Matcher != "A" {
		t.Error("MergeHooks aliases its argument")
	}
	if got := MergeHooks(); len(got) != 0 {
		t.Errorf("MergeHooks() = %v", got)
	}
	if got := MergeHooks(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("MergeHooks(nil, nil) = %v, want an empty map", got)
	}
}

func TestTexts(t *testing.T) {
	tests := []struct {
		lang lang.Lang
		want Texts
	}{{"", EnglishTexts}, {"zh", ChineseTexts}, {"zh-TW", ChineseTexts}, {"en", EnglishTexts}, {"en-US", EnglishTexts}, {"EN_gb", EnglishTexts}}
	for _, tt := range tests {
		if got := TextsFor(tt.lang); got != tt.want {
			t.Errorf("TextsFor(%q) = %q…", tt.lang, got.DefaultRole)
		}
	}
	if EnglishTexts.withDefaults() != EnglishTexts {
		t.Error("EnglishTexts has an empty field")
	}
	en := EnglishTexts
	reason, _ := denial(call(t, en.Whitelist(nil, ""), &claude.HookInput{ToolName: "Edit"}))
	if !strings.HasPrefix(reason, "This role has no Edit. **This is deliberate") {
		t.Errorf("English whitelist: %q", reason)
	}
	reason, _ = denial(call(t, en.Delegate(nil, nil, false), &claude.HookInput{ToolName: "Bash"}))
	if !strings.HasPrefix(reason, "The coordinator does not use Bash itself.") || !strings.Contains(reason, ".flower/artifacts/") {
		t.Errorf("English delegate: %q", reason)
	}
	wb := &workbench.Workbench{Workspace: t.TempDir()}
	out := call(t, en.Spill(wb, 5, "", false), &claude.HookInput{ToolName: "Bash", ToolResponse: json.RawMessage(`"a\nbcdef"`)})
	var s string
	if out == nil || json.Unmarshal(out.HookSpecificOutput.UpdatedToolOutput, &s) != nil ||
		!strings.HasPrefix(s, "[Output of 7 chars saved to .flower/spill/") || !strings.HasSuffix(s, "]\nFirst 400 chars: a bcdef") {
		t.Errorf("English spill: %q", s)
	}
	reason, _ = denial(call(t, en.Delegate([]string{"Agent"}, []string{"coder"}, false), &claude.HookInput{ToolName: "Agent", ToolInput: json.RawMessage(`{"subagent_type":"fork"}`)}))
	if !strings.HasPrefix(reason, "There is no worker named fork: only the workers defined here can be dispatched (coder)") {
		t.Errorf("English worker refusal: %q", reason)
	}
	// A partial Texts falls back to Chinese field by field.
	partial := Texts{DefaultRole: "判定者"}
	reason, _ = denial(call(t, partial.Whitelist(nil, ""), &claude.HookInput{ToolName: "Bash"}))
	if !strings.HasPrefix(reason, "判定者没有 Bash。**这是有意的") {
		t.Errorf("partial texts: %q", reason)
	}
}

func TestNilInputIsNoOpinion(t *testing.T) {
	wb := &workbench.Workbench{Workspace: t.TempDir()}
	for _, m := range []claude.HookMatcher{Spill(wb, DefaultSpillThreshold, "", false), Index(wb), Isolate(map[string]claude.AgentDefinition{"c": {Isolation: claude.IsolationWorktree}}, nil), Spill(nil, DefaultSpillThreshold, "", false), Index(nil)} {
		if out := call(t, m, nil); out != nil {
			t.Errorf("%s: answer %s for a nil input", m.Matcher, mustJSON(out))
		}
	}
}

func TestSpillThresholdZeroSpillsNothing(t *testing.T) {
	wb := &workbench.Workbench{Workspace: t.TempDir()}
	long := strings.Repeat("x", 10*DefaultSpillThreshold)
	for _, threshold := range []int{0, -1} {
		out := call(t, Spill(wb, threshold, "", false), &claude.HookInput{ToolName: "Bash", ToolResponse: json.RawMessage(`{"stdout":"` + long + `"}`)})
		if out != nil {
			t.Errorf("threshold %d spilled: %.200s", threshold, mustJSON(out))
		}
	}
}
