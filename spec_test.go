package flower

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/workbench"
)

// matches reports whether a matcher of the "A|B" form (the only form the
// guards use) or the match-all form selects the tool.
func matches(m claude.HookMatcher, tool string) bool {
	return m.Matcher == "" || m.Matcher == "*" || slices.Contains(strings.Split(m.Matcher, "|"), tool)
}

// answers calls every hook of event whose matcher selects in.ToolName, as
// the CLI would, and returns the answers that are not "no opinion".
func answers(t *testing.T, hooks map[string][]claude.HookMatcher, event string, in *claude.HookInput) []*claude.HookOutput {
	t.Helper()
	in.HookEventName = event
	var out []*claude.HookOutput
	for _, m := range hooks[event] {
		if !matches(m, in.ToolName) {
			continue
		}
		for _, h := range m.Hooks {
			o, err := h(context.Background(), in)
			if err != nil {
				t.Fatalf("%s hook for %s: %v", event, in.ToolName, err)
			}
			if o != nil {
				out = append(out, o)
			}
		}
	}
	return out
}

// denials returns the reasons of the deny answers.
func denials(outs []*claude.HookOutput) []string {
	var r []string
	for _, o := range outs {
		if o.HookSpecificOutput != nil && o.HookSpecificOutput.PermissionDecision == claude.DecisionDeny {
			r = append(r, o.HookSpecificOutput.PermissionDecisionReason)
		}
	}
	return r
}

// toolCall is a PreToolUse or PostToolUse input on the main thread
// (agent "") or in a subagent.
func toolCall(agent, tool string, input any) *claude.HookInput {
	raw, _ := json.Marshal(input)
	return &claude.HookInput{SessionID: "s", AgentID: agent, ToolName: tool, ToolInput: raw, ToolUseID: "toolu_1"}
}

func bash(agent, command string) *claude.HookInput {
	return toolCall(agent, "Bash", map[string]any{"command": command})
}

// newWorkbench returns a refreshed workbench inside a fresh workspace, or
// outside it (Home) when external.
func newWorkbench(t *testing.T, external bool) *workbench.Workbench {
	t.Helper()
	wb := workbench.New(t.TempDir())
	if external {
		wb.Home = filepath.Join(t.TempDir(), "bench")
	}
	if _, err := wb.Refresh(); err != nil {
		t.Fatal(err)
	}
	return wb
}

func build(t *testing.T, spec AgentSpec, cfg BuildConfig) claude.Options {
	t.Helper()
	o, err := BuildOptions(spec, cfg)
	if err != nil {
		t.Fatalf("BuildOptions(%s): %v", spec.Name, err)
	}
	return o
}

const (
	delegateZh  = "协调者不直接使用"
	whitelistZh = "**这是有意的,不是配置漏了。**"
)

// TestGuardMatrix installs the guards for {workbench, none} × {delegate-only,
// not} × {isolated worker, none} and proves, by calling the hooks, that the
// delegate and isolate guards stand with or without a workbench, each
// exactly once (the original left a coordinator without a workbench
// unguarded), and that the whitelist guard replaces the delegate guard.
func TestGuardMatrix(t *testing.T) {
	for _, withWB := range []bool{true, false} {
		for _, delegateOnly := range []bool{true, false} {
			for _, isolated := range []bool{true, false} {
				name := fmt.Sprintf("workbench=%v/delegate-only=%v/isolated=%v", withWB, delegateOnly, isolated)
				t.Run(name, func(t *testing.T) {
					var wb *workbench.Workbench
					if withWB {
						wb = newWorkbench(t, false)
					}
					var coderOpts []RoleOption
					if isolated {
						coderOpts = append(coderOpts, Isolate())
					}
					spec := AgentSpec{
						Name:         "agent",
						AllowedTools: []string{"Agent", "Read"},
						DelegateOnly: delegateOnly,
						Glance:       true,
						Agents: map[string]claude.AgentDefinition{
							"coder": Worker("writes code", "implement", coderOpts...),
							"plain": Worker("reads", "read"),
						},
					}
					o := build(t, spec, BuildConfig{Workbench: wb, SpillThreshold: guard.DefaultSpillThreshold, Lang: Chinese})

					// Matchers per event: delegate or whitelist, loop,
					// isolate; loop, then index and spill with a workbench.
					wantPre := 2
					if isolated {
						wantPre++
					}
					if got := len(o.Hooks[claude.PreToolUse]); got != wantPre {
						t.Errorf("PreToolUse matchers = %d, want %d", got, wantPre)
					}
					wantPost := 1
					if withWB {
						wantPost = 3
					}
					if got := len(o.Hooks[claude.PostToolUse]); got != wantPost {
						t.Errorf("PostToolUse matchers = %d, want %d", got, wantPost)
					}
					if got := len(o.Hooks[claude.PostToolUseFailure]); got != 1 {
						t.Errorf("PostToolUseFailure matchers = %d, want the loop guard's", got)
					}
					if got := len(o.Hooks[claude.SubagentStop]); got != 1 {
						t.Errorf("SubagentStop matchers = %d, want the loop guard's (a background agent's end)", got)
					}
					if len(o.Hooks) != 4 {
						t.Errorf("hook events %v", slices.Collect(maps.Keys(o.Hooks)))
					}

					// Hands on, main thread: exactly one refusal, from the
					// guard the spec asks for.
					for _, tool := range []string{"Bash", "Write", "Edit", "NotebookEdit"} {
						in := toolCall("", tool, map[string]any{"command": "rm -rf build", "file_path": "x.go"})
						d := denials(answers(t, o.Hooks, claude.PreToolUse, in))
						if len(d) != 1 {
							t.Fatalf("main-thread %s: %d refusals %q, want exactly 1", tool, len(d), d)
						}
						want := whitelistZh
						if delegateOnly {
							want = delegateZh
						}
						if !strings.Contains(d[0], want) {
							t.Errorf("main-thread %s refused with %q, want the text containing %q", tool, d[0], want)
						}
						if delegateOnly && withWB && !strings.Contains(d[0], ".flower/artifacts/") {
							t.Errorf("delegate refusal does not name the workbench's artifacts: %q", d[0])
						}
						// Subagents keep their tools.
						in.AgentID = "agent-1"
						if d := denials(answers(t, o.Hooks, claude.PreToolUse, in)); len(d) != 0 {
							t.Errorf("subagent %s refused: %q", tool, d)
						}
					}

					// A glance passes either wall when the spec has Glance,
					// with one answer: the bounded input.
					outs := answers(t, o.Hooks, claude.PreToolUse, bash("", "git status"))
					if d := denials(outs); len(d) != 0 || len(outs) != 1 || !bytes.Contains(outs[0].HookSpecificOutput.UpdatedInput, []byte(` -k 5 30 `)) || !bytes.Contains(outs[0].HookSpecificOutput.UpdatedInput, []byte(` -c 'git status'`)) {
						t.Errorf("glance: refusals %q, %d answers", d, len(outs))
					}
					// An Agent call must name a worker of the spec.
					for _, typ := range []string{"general-purpose", "fork", ""} {
						d := denials(answers(t, o.Hooks, claude.PreToolUse, toolCall("", "Agent", map[string]any{"subagent_type": typ, "prompt": "go"})))
						if len(d) != 1 {
							t.Errorf("Agent(%q): refusals %q, want exactly 1", typ, d)
						}
					}

					// Dispatching the marked worker: isolated exactly once.
					outs = answers(t, o.Hooks, claude.PreToolUse, toolCall("", "Agent",
						map[string]any{"subagent_type": "coder", "description": "build", "prompt": "go"}))
					var injected int
					for _, out := range outs {
						if hs := out.HookSpecificOutput; hs != nil && hs.PermissionDecision == claude.DecisionAllow &&
							bytes.Contains(hs.UpdatedInput, []byte(`"isolation":"worktree"`)) {
							injected++
						}
					}
					if want := map[bool]int{true: 1, false: 0}[isolated]; injected != want || len(outs) != want {
						t.Errorf("Agent(coder): %d isolations in %d answers, want %d", injected, len(outs), want)
					}
					if outs := answers(t, o.Hooks, claude.PreToolUse, toolCall("", "Agent",
						map[string]any{"subagent_type": "plain", "prompt": "go"})); len(outs) != 0 {
						t.Errorf("Agent(plain) answered %v", outs)
					}

					// The spill guard answers once, for subagents too.
					if withWB {
						in := bash("agent-1", "cat big")
						in.ToolResponse, _ = json.Marshal(map[string]any{"stdout": strings.Repeat("x", 5000), "stderr": "", "interrupted": false})
						outs := answers(t, o.Hooks, claude.PostToolUse, in)
						if len(outs) != 1 || outs[0].HookSpecificOutput == nil || len(outs[0].HookSpecificOutput.UpdatedToolOutput) == 0 {
							t.Errorf("big Bash result: %d answers", len(outs))
						}
					}
				})
			}
		}
	}
}

// roleCase is one role's expected options.
type roleCase struct {
	name      string
	spec      AgentSpec
	allowed   []string
	mode      string
	channel   bool
	pre, post int // matchers with a workbench, the loop guard's included
	workbench bool
}

func roleCases(lang Lang) []roleCase {
	workers := map[string]claude.AgentDefinition{
		"coder":    Worker("writes code", "implement", Isolate(), WithLang(lang)),
		"reviewer": Worker("reviews", "review", WithTools("Read", "Grep"), WithLang(lang)),
	}
	ch := fakeChannel{}
	return []roleCase{
		{"coordinator", Coordinator("协调者", "build it", workers, WithChannel(ch), WithLang(lang)),
			[]string{"Agent", "TodoWrite", "Read", "Bash", InboxTool, AskTool, "WebFetch", "WebSearch"},
			"acceptEdits", true, 3, 3, true},
		{"clarify", Clarify("确认需求", ch, WithLang(lang)),
			[]string{AskTool, "Read", "Glob", "Grep", "WebFetch", "WebSearch"}, "", true, 2, 3, false},
		{"judge", Judge("设定目标", ch, WithLang(lang)),
			[]string{AskTool, "Read", "Glob", "Grep"}, "", true, 2, 3, false},
		{"judge can run", Judge("干活·判定", ch, CanRun(), WithLang(lang)),
			[]string{AskTool, "Read", "Glob", "Grep", "Bash"}, "", true, 2, 3, false},
		{"oracle", Oracle("", WithLang(lang)),
			[]string{"Read", "Glob", "Grep"}, "", false, 2, 3, true},
	}
}

// TestBuildOptionsForEveryRole compiles each role with a store, an external
// workbench and handoff on, in both languages, and checks what reaches the
// driver.
func TestBuildOptionsForEveryRole(t *testing.T) {
	for _, lang := range langs {
		for _, c := range roleCases(lang) {
			t.Run(string(lang)+"/"+c.name, func(t *testing.T) {
				wb := newWorkbench(t, true)
				store := claudetest.NewMemoryStore()
				cfg := BuildConfig{Cwd: wb.Workspace, Store: store, Workbench: wb, SpillThreshold: guard.DefaultSpillThreshold, Handoff: true, Lang: lang}
				o := build(t, c.spec, cfg)

				if !slices.Equal(o.AllowedTools, c.allowed) {
					t.Errorf("AllowedTools = %v, want %v", o.AllowedTools, c.allowed)
				}
				// Disallowed tools reach the workers too: only the tools no
				// role uses and that act beyond the turn, never a hands-on one.
				if !slices.Equal(o.DisallowedTools, outlivingTools) {
					t.Errorf("DisallowedTools = %v, want the outliving tools %v", o.DisallowedTools, outlivingTools)
				}
				if o.PermissionMode != c.mode {
					t.Errorf("PermissionMode = %q, want %q", o.PermissionMode, c.mode)
				}
				if o.SettingSources == nil || len(o.SettingSources) != 0 {
					t.Errorf("portable SettingSources = %#v, want empty non-nil", o.SettingSources)
				}
				wantEnv := map[string]string{"DISABLE_AUTO_COMPACT": "1"}
				if c.spec.Glance {
					wantEnv["GIT_OPTIONAL_LOCKS"] = "0"
				}
				if !maps.Equal(o.Env, wantEnv) {
					t.Errorf("Env = %v, want %v", o.Env, wantEnv)
				}
				if !o.SystemPrompt.Preset || o.SystemPrompt.Append != c.spec.Instructions || o.SystemPrompt.Text != "" {
					t.Errorf("SystemPrompt = %+v", o.SystemPrompt)
				}
				rules := map[string]string{
					"coordinator":   PromptsFor(lang).CoordinatorRules,
					"clarify":       PromptsFor(lang).ClarifierRules,
					"judge":         PromptsFor(lang).JudgeRules,
					"judge can run": PromptsFor(lang).JudgeRules,
					"oracle":        PromptsFor(lang).OracleRules,
				}[c.name]
				if !strings.HasPrefix(o.SystemPrompt.Append, rules) {
					t.Errorf("system prompt does not start with the %s rules", c.name)
				}
				if strings.Contains(o.SystemPrompt.Append, wb.Root()) {
					t.Error("the workbench is in the system prompt")
				}
				if _, ok := o.MCPServers[ChannelServer]; ok != c.channel {
					t.Errorf("MCPServers = %v", o.MCPServers)
				}
				if o.SessionStore != claude.SessionStore(store) || o.SessionStoreFlush != claude.FlushEager {
					t.Errorf("store %v flush %q", o.SessionStore, o.SessionStoreFlush)
				}
				if !slices.Equal(o.AddDirs, []string{wb.Root()}) {
					t.Errorf("AddDirs = %v, want the external workbench %s", o.AddDirs, wb.Root())
				}
				if o.Cwd != wb.Workspace || o.Resume != "" || o.ForkSession || len(o.PluginDirs) != 0 {
					t.Errorf("Cwd %q Resume %q Fork %v Plugins %v", o.Cwd, o.Resume, o.ForkSession, o.PluginDirs)
				}
				if got := len(o.Hooks[claude.PreToolUse]); got != c.pre {
					t.Errorf("PreToolUse matchers = %d, want %d", got, c.pre)
				}
				if got := len(o.Hooks[claude.PostToolUse]); got != c.post {
					t.Errorf("PostToolUse matchers = %d, want %d", got, c.post)
				}
				if c.name == "coordinator" && (len(o.Agents) != 2 || o.Agents["coder"].Isolation != claude.IsolationWorktree) {
					t.Errorf("Agents = %+v", o.Agents)
				}
				if c.name == "oracle" && (o.MaxTurns != 12 || o.MaxBudgetUSD != 0.5) {
					t.Errorf("oracle caps %d $%v", o.MaxTurns, o.MaxBudgetUSD)
				}
				first := FirstMessage(wb, c.spec, "do it")
				if got := strings.HasPrefix(first, wb.PromptBlock()); got != c.workbench {
					t.Errorf("first message carries the workbench: %v, want %v", got, c.workbench)
				}
				if !strings.HasSuffix(first, "do it") {
					t.Errorf("first message %q", first)
				}
				if !c.spec.DelegateOnly && !c.workbench {
					// The whitelist refuses the hands-on tools the role
					// lacks, in the role's name and language; subagents pass.
					d := denials(answers(t, o.Hooks, claude.PreToolUse, toolCall("", "Write", map[string]any{"file_path": "a"})))
					want := guard.TextsFor(lang).WhitelistDeny
					if len(d) != 1 || d[0] != fmt.Sprintf(want, c.spec.Name, "Write") {
						t.Errorf("main-thread Write: %q", d)
					}
				}
			})
		}
	}
}

func TestRoleHandsOnAnswers(t *testing.T) {
	ch := fakeChannel{}
	cases := []struct {
		spec    AgentSpec
		call    *claude.HookInput
		refused bool
	}{
		{Judge("j", ch), bash("", "uname -a"), true},
		{Judge("j", ch, CanRun()), bash("", "uname -a"), false},
		{Judge("j", ch, CanRun()), bash("", "make test"), false},
		{Judge("j", ch, CanRun()), toolCall("", "Write", map[string]any{"file_path": "a"}), true},
		{Judge("j", ch, CanRun()), toolCall("", "Edit", map[string]any{"file_path": "a"}), true},
		{Clarify("c", ch), bash("", "ls"), true},
		{Clarify("c", ch), toolCall("", "Edit", map[string]any{"file_path": "a"}), true},
		{Oracle(""), toolCall("", "Write", map[string]any{"file_path": "a"}), true},
		{Coordinator("co", "", nil), bash("", "ls -la && git status"), false},
		{Coordinator("co", "", nil), bash("", "go build ./..."), true},
		{Coordinator("co", "", nil), bash("agent-7", "go build ./..."), false},
		{Coordinator("co", "", nil, NoGlance()), bash("", "git status"), true},
		{Coordinator("co", "", nil), toolCall("", "Write", map[string]any{"file_path": "a"}), true},
		{Coordinator("co", "", nil), toolCall("agent-7", "Write", map[string]any{"file_path": "a"}), false},
	}
	for i, c := range cases {
		o := build(t, c.spec, BuildConfig{})
		d := denials(answers(t, o.Hooks, claude.PreToolUse, c.call))
		if (len(d) == 1) != c.refused || len(d) > 1 {
			t.Errorf("%d: %s, %s by %q: refusals %q, want refused=%v", i, c.spec.Name, c.call.ToolName, c.call.AgentID, d, c.refused)
		}
	}
}

func TestSettingSources(t *testing.T) {
	if got := build(t, Oracle(""), BuildConfig{}).SettingSources; got == nil || len(got) != 0 {
		t.Errorf("portable: %#v", got)
	}
	if got := build(t, Oracle(""), BuildConfig{NotPortable: true}).SettingSources; !slices.Equal(got, []string{"project"}) {
		t.Errorf("not portable: %#v", got)
	}
}

func TestSystemPromptIsByteStableAcrossWorkbenchStates(t *testing.T) {
	wb := newWorkbench(t, false)
	spec := Coordinator("协调者", "build it", nil)
	before := build(t, spec, BuildConfig{Workbench: wb, Prelude: "house rules"})
	firstBefore := FirstMessage(wb, spec, "go")

	script := filepath.Join(wb.Scripts(), "check.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n# desc: runs the checks\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := wb.Refresh(); err != nil {
		t.Fatal(err)
	}
	after := build(t, spec, BuildConfig{Workbench: wb, Prelude: "house rules"})
	firstAfter := FirstMessage(wb, spec, "go")

	if before.SystemPrompt != after.SystemPrompt {
		t.Errorf("system prompt changed with the workbench:\n%q\n%q", before.SystemPrompt.Append, after.SystemPrompt.Append)
	}
	if after.SystemPrompt.Append != spec.Instructions+"\n\nhouse rules" {
		t.Errorf("system prompt %q", after.SystemPrompt.Append)
	}
	if firstBefore == firstAfter || !strings.Contains(firstAfter, "check.sh") || strings.Contains(firstBefore, "check.sh") {
		t.Errorf("the first message does not follow the workbench:\n%s\n---\n%s", firstBefore, firstAfter)
	}
}

func TestFirstMessage(t *testing.T) {
	wb := newWorkbench(t, false)
	spec := AgentSpec{Name: "a"}
	if got := FirstMessage(nil, spec, "p"); got != "p" {
		t.Errorf("no workbench: %q", got)
	}
	if got := FirstMessage(wb, AgentSpec{Name: "a", NoWorkbench: true}, "p"); got != "p" {
		t.Errorf("NoWorkbench: %q", got)
	}
	if got := FirstMessage(wb, spec, "p"); got != wb.PromptBlock()+"\n\n---\n\np" {
		t.Errorf("with workbench: %q", got)
	}
}

func TestAddDirs(t *testing.T) {
	inside := newWorkbench(t, false)
	if got := build(t, Oracle(""), BuildConfig{Workbench: inside}).AddDirs; got != nil {
		t.Errorf("internal workbench added %v", got)
	}
	outside := newWorkbench(t, true)
	got := build(t, Oracle(""), BuildConfig{Workbench: outside, AddDirs: []string{"/data", outside.Root() + "/"}}).AddDirs
	if !slices.Equal(got, []string{"/data", outside.Root() + "/"}) {
		t.Errorf("AddDirs = %v: the root is given once", got)
	}
	// Specs that do not inject the index still reach spilled files.
	if got := build(t, Judge("j", nil), BuildConfig{Workbench: outside}).AddDirs; !slices.Equal(got, []string{outside.Root()}) {
		t.Errorf("judge AddDirs = %v", got)
	}
}

func TestEnv(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		compact *CompactPolicy
		handoff bool
		want    map[string]string
	}{
		{"nothing", nil, nil, false, nil},
		{"handoff forces no_summary", nil, nil, true, map[string]string{"DISABLE_AUTO_COMPACT": "1"}},
		{"spec env kept", map[string]string{"A": "1"}, nil, true, map[string]string{"A": "1", "DISABLE_AUTO_COMPACT": "1"}},
		{"spec env alone", map[string]string{"A": "1"}, nil, false, map[string]string{"A": "1"}},
		{"a policy wins over handoff", nil, &CompactPolicy{Mode: CompactAuto}, true, nil},
		{"policy on top of the spec env", map[string]string{"DISABLE_COMPACT": "0", "B": "2"},
			&CompactPolicy{Mode: CompactOff, Window: 300000}, true,
			map[string]string{"DISABLE_COMPACT": "1", "B": "2", "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "300000"}},
	}
	for _, c := range cases {
		spec := AgentSpec{Name: "a", Env: c.env, Compact: c.compact}
		got := build(t, spec, BuildConfig{Handoff: c.handoff}).Env
		if !maps.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("%s: Env = %v, want %v", c.name, got, c.want)
		}
	}
	spec := AgentSpec{Name: "a", Env: map[string]string{"A": "1"}}
	o := build(t, spec, BuildConfig{Handoff: true})
	o.Env["A"] = "changed"
	if spec.Env["A"] != "1" {
		t.Error("options share the spec's env")
	}
	_, err := BuildOptions(AgentSpec{Name: "a", Compact: &CompactPolicy{Mode: "sometimes"}}, BuildConfig{})
	if !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("bad compact mode: %v", err)
	}
}

func TestStoreAndFlush(t *testing.T) {
	store := claudetest.NewMemoryStore()
	cases := []struct {
		cfg   BuildConfig
		store bool
		flush claude.FlushMode
	}{
		{BuildConfig{}, false, ""},
		{BuildConfig{Flush: claude.FlushBatched}, false, ""},
		{BuildConfig{Store: store}, true, claude.FlushEager},
		{BuildConfig{Store: store, Flush: claude.FlushBatched}, true, claude.FlushBatched},
	}
	for i, c := range cases {
		o := build(t, Oracle(""), c.cfg)
		if (o.SessionStore != nil) != c.store || o.SessionStoreFlush != c.flush {
			t.Errorf("%d: store %v flush %q", i, o.SessionStore, o.SessionStoreFlush)
		}
	}
}

func TestResume(t *testing.T) {
	o := build(t, Oracle(""), BuildConfig{Resume: "s1", Fork: true, ResumeAt: "u1"})
	if o.Resume != "s1" || !o.ForkSession || o.ResumeSessionAt != "u1" {
		t.Errorf("resume %q fork %v at %q", o.Resume, o.ForkSession, o.ResumeSessionAt)
	}
}

func TestBuildOptionsRefuses(t *testing.T) {
	ok := AgentSpec{Name: "a"}
	cases := []struct {
		name string
		spec AgentSpec
		cfg  BuildConfig
		says string
	}{
		{"no name", AgentSpec{Name: " "}, BuildConfig{}, "Name"},
		{"negative turns", AgentSpec{Name: "a", MaxTurns: -1}, BuildConfig{}, "MaxTurns"},
		{"negative budget", AgentSpec{Name: "a", MaxBudgetUSD: -0.5}, BuildConfig{}, "MaxBudgetUSD"},
		{"NaN budget", AgentSpec{Name: "a", MaxBudgetUSD: math.NaN()}, BuildConfig{}, "MaxBudgetUSD"},
		{"fork without resume", ok, BuildConfig{Fork: true}, "Fork without Resume"},
		{"resume-at without resume", ok, BuildConfig{ResumeAt: "u1"}, "ResumeAt without Resume"},
		{"unknown flush", ok, BuildConfig{Store: claudetest.NewMemoryStore(), Flush: "sometimes"}, "Flush"},
	}
	for _, c := range cases {
		_, err := BuildOptions(c.spec, c.cfg)
		if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestPermissionMode(t *testing.T) {
	for mode, want := range map[string]string{"": "", "default": "", "manual": "manual", "plan": "plan", "acceptEdits": "acceptEdits"} {
		if got := build(t, AgentSpec{Name: "a", PermissionMode: mode}, BuildConfig{}).PermissionMode; got != want {
			t.Errorf("PermissionMode %q → %q, want %q", mode, got, want)
		}
	}
}

func TestSpecFieldsReachTheOptions(t *testing.T) {
	spec := AgentSpec{
		Name: "a", Instructions: "do", AllowedTools: []string{"Read", "Bash"}, DisallowedTools: []string{"WebFetch"},
		Model: "opus", Effort: "high", MaxTurns: 7, MaxBudgetUSD: 1.5,
		Agents:     map[string]claude.AgentDefinition{"w": Worker("w", "w")},
		MCPServers: map[string]claude.MCPServer{"x": claude.MCPStdioServer{Command: "x"}},
	}
	o := build(t, spec, BuildConfig{})
	if !slices.Equal(o.AllowedTools, []string{"Read", "Bash"}) || !slices.Equal(o.DisallowedTools, append([]string{"WebFetch"}, outlivingTools...)) ||
		o.Model != "opus" || o.Effort != "high" || o.MaxTurns != 7 || o.MaxBudgetUSD != 1.5 ||
		len(o.Agents) != 1 || len(o.MCPServers) != 1 || o.SystemPrompt.Append != "do" {
		t.Errorf("options %+v", o)
	}
	o.AllowedTools[0] = "changed"
	o.Agents["v"] = Worker("v", "v")
	delete(o.MCPServers, "x")
	if spec.AllowedTools[0] != "Read" || len(spec.Agents) != 1 || len(spec.MCPServers) != 1 {
		t.Error("options share the spec's slices or maps")
	}

	empty := build(t, AgentSpec{Name: "a"}, BuildConfig{})
	if !slices.Equal(empty.AllowedTools, []string{"Read", "Glob", "Grep"}) || empty.Agents != nil || empty.MCPServers != nil || empty.Env != nil {
		t.Errorf("zero spec options %+v", empty)
	}
	if none := build(t, AgentSpec{Name: "a", AllowedTools: []string{}}, BuildConfig{}); len(none.AllowedTools) != 0 {
		t.Errorf("an empty non-nil AllowedTools gave %v", none.AllowedTools)
	}
}

func TestSpecHooksComeFirst(t *testing.T) {
	mine := func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
		return claude.Deny("mine"), nil
	}
	spec := Coordinator("co", "", nil)
	spec.Hooks = map[string][]claude.HookMatcher{
		claude.PreToolUse: {{Matcher: "Write", Hooks: []claude.HookFunc{mine}}},
		claude.Stop:       nil,
	}
	o := build(t, spec, BuildConfig{Lang: Chinese})
	d := denials(answers(t, o.Hooks, claude.PreToolUse, toolCall("", "Write", map[string]any{"file_path": "a"})))
	if len(d) != 2 || d[0] != "mine" || !strings.Contains(d[1], delegateZh) {
		t.Errorf("refusals in order %q", d)
	}
	if _, ok := o.Hooks[claude.Stop]; ok {
		t.Error("an event without a matcher was kept")
	}
	if len(spec.Hooks[claude.PreToolUse]) != 1 {
		t.Error("BuildOptions changed the spec's hooks")
	}
}

func TestEnglishGuardTexts(t *testing.T) {
	o := build(t, Coordinator("co", "", nil), BuildConfig{Lang: English})
	d := denials(answers(t, o.Hooks, claude.PreToolUse, toolCall("", "Edit", map[string]any{"file_path": "a"})))
	if len(d) != 1 || !strings.HasPrefix(d[0], "The coordinator does not use Edit") {
		t.Errorf("refusal %q", d)
	}
}

func TestSpillThreshold(t *testing.T) {
	big := func(n int) *claude.HookInput {
		in := bash("", "cat log")
		in.ToolResponse, _ = json.Marshal(map[string]any{"stdout": strings.Repeat("y", n), "stderr": "", "interrupted": false})
		return in
	}
	cases := []struct {
		threshold, size int
		spilled         bool
	}{
		// 0 is no spill guard, as in the seed and guard.WorkbenchHooks.
		{0, guard.DefaultSpillThreshold + 1, false},
		{guard.DefaultSpillThreshold, guard.DefaultSpillThreshold + 1, true},
		{100, 101, true},
		{100, 100, false},
		{-1, 100000, false},
	}
	for _, c := range cases {
		wb := newWorkbench(t, false)
		o := build(t, Oracle(""), BuildConfig{Workbench: wb, SpillThreshold: c.threshold})
		outs := answers(t, o.Hooks, claude.PostToolUse, big(c.size))
		if (len(outs) == 1) != c.spilled {
			t.Errorf("threshold %d, %d chars: %d answers, want spilled=%v", c.threshold, c.size, len(outs), c.spilled)
		}
		if c.threshold <= 0 && len(o.Hooks[claude.PostToolUse]) != 2 {
			t.Errorf("spill off: %d PostToolUse matchers, want the loop and index guards alone", len(o.Hooks[claude.PostToolUse]))
		}
	}
}

func TestPluginDirs(t *testing.T) {
	root := t.TempDir()
	present := filepath.Join(root, "plugin")
	rel := filepath.Join(root, "rel")
	for _, d := range []string{present, rel} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(root, "absent")

	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(old)

	o := build(t, Oracle(""), BuildConfig{Cwd: root, PluginDirs: []string{present, missing, "rel", "", present}})
	if !slices.Equal(o.PluginDirs, []string{present, rel}) {
		t.Errorf("PluginDirs = %v", o.PluginDirs)
	}
	if !strings.Contains(logged.String(), missing) {
		t.Errorf("the missing folder was not logged: %q", logged.String())
	}

	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildOptions(Oracle(""), BuildConfig{PluginDirs: []string{file}}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a file as plugin folder: %v", err)
	}

	if os.Geteuid() == 0 {
		t.Log("running as root: an unreadable folder cannot be made")
		return
	}
	locked := filepath.Join(root, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(locked, 0o755)
	if _, err := BuildOptions(Oracle(""), BuildConfig{PluginDirs: []string{locked}}); err == nil || !strings.Contains(err.Error(), locked) {
		t.Errorf("an unreadable plugin folder: %v", err)
	}
}

// TestRealCoordinatorOptions runs a coordinator compiled by BuildOptions in
// the pinned CLI against the fake Messages API: the CLI accepts the
// options, the workbench block heads the first message and stays out of
// the system prompt, a hands-on Bash on the main thread is refused by the
// delegate guard, and a glance passes.
func TestRealCoordinatorOptions(t *testing.T) {
	cli := claudetest.CLIPath(t)
	t.Parallel()
	run := func(cmd string) claudetest.Reply {
		return claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": cmd, "description": "step"}))
	}
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:wall": {
		run("touch DENIED && echo touched"), run("ls"), claudetest.Say("done"),
	}}.Handler())

	wb := newWorkbench(t, false)
	spec := Coordinator("协调者", "", map[string]claude.AgentDefinition{"coder": Worker("writes code", "implement")})
	store := claudetest.NewMemoryStore()
	o := build(t, spec, BuildConfig{Cwd: wb.Workspace, Workbench: wb, Store: store, Handoff: true, Lang: Chinese})
	o.CLIPath = cli
	o.BaseEnv = claudetest.BaseEnv()
	maps.Copy(o.Env, claudetest.Env(t, srv))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var result *claude.ResultMessage
	for m, err := range claude.Query(ctx, FirstMessage(wb, spec, "SCENARIO:wall go"), o) {
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := m.(*claude.ResultMessage); ok {
			result = r
		}
	}
	if result == nil || result.IsError || result.Result != "done" {
		t.Fatalf("result %+v", result)
	}
	if _, err := os.Stat(filepath.Join(wb.Workspace, "DENIED")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the coordinator's Bash ran: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) < 3 {
		t.Fatalf("the fake saw %d requests", len(reqs))
	}
	first := reqs[0]
	system := strings.Join(first.System, "\n")
	if !strings.Contains(system, "# 你是协调者") || strings.Contains(system, wb.Root()) || strings.Contains(system, "# 工作台") {
		t.Errorf("system prompt: rules present %v, workbench present %v",
			strings.Contains(system, "# 你是协调者"), strings.Contains(system, "# 工作台"))
	}
	if !first.HasText("# 工作台 .flower/") {
		t.Error("the first message does not carry the workbench block")
	}
	results := reqs[len(reqs)-1].ToolResults()
	if len(results) != 2 {
		t.Fatalf("tool results %+v", results)
	}
	if !results[0].IsError || !strings.Contains(results[0].Content, "协调者不直接使用 Bash") {
		t.Errorf("hands-on Bash: %+v", results[0])
	}
	if results[1].IsError {
		t.Errorf("the glance was refused: %+v", results[1])
	}
}

func TestOutlivingToolsStayForTheWorkerThatNamesThem(t *testing.T) {
	spec := Coordinator("co", "", map[string]claude.AgentDefinition{
		"scheduler": Worker("schedules", "s", WithTools("Read", "CronCreate", "Monitor")),
	})
	o := build(t, spec, BuildConfig{})
	for _, tool := range []string{"CronCreate", "Monitor"} {
		if slices.Contains(o.DisallowedTools, tool) {
			t.Errorf("%s disallowed although the scheduler worker names it: %v", tool, o.DisallowedTools)
		}
	}
	if !slices.Contains(o.DisallowedTools, "EnterWorktree") || !slices.Contains(o.DisallowedTools, "CronDelete") {
		t.Errorf("DisallowedTools = %v, want the other outliving tools", o.DisallowedTools)
	}
	// The main thread is still refused them: the wall is the first line.
	d := denials(answers(t, o.Hooks, claude.PreToolUse, toolCall("", "CronCreate", map[string]any{"cron": "* * * * *"})))
	if len(d) != 1 {
		t.Errorf("main-thread CronCreate: refusals %q", d)
	}
	// A user's own setting of the variable wins.
	spec.Env = map[string]string{"GIT_OPTIONAL_LOCKS": "1"}
	if got := build(t, spec, BuildConfig{}).Env["GIT_OPTIONAL_LOCKS"]; got != "1" {
		t.Errorf("GIT_OPTIONAL_LOCKS = %q, want the spec's 1", got)
	}
}

func TestGlanceTimeoutReachesTheWall(t *testing.T) {
	spec := Coordinator("co", "", nil)
	spec.GlanceTimeout = 1500 * time.Millisecond
	outs := answers(t, build(t, spec, BuildConfig{}).Hooks, claude.PreToolUse, bash("", "git status"))
	if len(outs) != 1 || !bytes.Contains(outs[0].HookSpecificOutput.UpdatedInput, []byte(` -k 5 1.5 `)) {
		t.Errorf("glance answers %v, want one bounded at 1.5 s", outs)
	}
	spec.GlanceTimeout = -time.Second
	if _, err := BuildOptions(spec, BuildConfig{}); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "GlanceTimeout") {
		t.Errorf("negative GlanceTimeout: %v", err)
	}
}

// TestTheCLIOffersOnlyTheToolsSomeThreadMayUse: every tool schema costs
// bytes in every request (the economy benchmark measured 22.5 KB of them a
// request, half for tools the wall refuses), so the session offers the
// tools the main thread's wall lets through and those its workers name,
// and no other; a worker that names no tool (every tool) leaves the CLI's
// set as it is.
func TestTheCLIOffersOnlyTheToolsSomeThreadMayUse(t *testing.T) {
	cases := []struct {
		name string
		spec AgentSpec
		want []string
	}{
		{"default tools", AgentSpec{Name: "a"}, []string{"Read", "Glob", "Grep", "ToolSearch"}},
		{"own tools, rules and MCP", AgentSpec{Name: "a", AllowedTools: []string{"Bash(git log:*)", "Write", "mcp__human__ask", "Write"}},
			[]string{"Bash", "Write", "ToolSearch"}},
		{"glance", AgentSpec{Name: "a", AllowedTools: []string{"Read"}, Glance: true}, []string{"Read", "ToolSearch", "Bash"}},
		{"coordinator and its workers", Coordinator("lead", "", map[string]claude.AgentDefinition{
			"coder":  Worker("codes", "c", WithTools("Read", "Write", "Edit", "Bash")),
			"tester": Worker("tests", "t", WithTools("Bash", "WebFetch")),
		}), []string{"Agent", "TodoWrite", "Read", "Bash", "WebFetch", "ToolSearch", "Write", "Edit"}},
		{"a worker with every tool", AgentSpec{Name: "a", Agents: map[string]claude.AgentDefinition{"any": {Description: "d", Prompt: "p"}}}, nil},
		{"a worker with skills", AgentSpec{Name: "a", AllowedTools: []string{"Agent"}, Agents: map[string]claude.AgentDefinition{
			"w": {Description: "d", Prompt: "p", Tools: []string{"Read"}, Skills: []string{"pdf"}}}}, []string{"Agent", "ToolSearch", "Read", "Skill"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := build(t, c.spec, BuildConfig{})
			if !slices.Equal(o.Tools, c.want) {
				t.Errorf("Tools = %#v, want %#v", o.Tools, c.want)
			}
		})
	}
	// A plugin's skills reach the model through the Skill tool: a session
	// that loads plugins keeps it offered.
	plugin := t.TempDir()
	o := build(t, AgentSpec{Name: "a", AllowedTools: []string{"Read"}}, BuildConfig{PluginDirs: []string{plugin}})
	if want := []string{"Read", "ToolSearch", "Skill"}; !slices.Equal(o.Tools, want) {
		t.Errorf("with a plugin folder, Tools = %#v, want %#v", o.Tools, want)
	}
}
