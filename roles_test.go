package flower

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/human"
)

// fakeChannel serves one stdio server under the channel's name; what it
// runs does not matter, only that the roles pass it on.
type fakeChannel struct{}

func (fakeChannel) MCPServers() map[string]claude.MCPServer {
	return map[string]claude.MCPServer{ChannelServer: claude.MCPStdioServer{Command: "human-channel"}}
}

func TestChannelToolNames(t *testing.T) {
	if AskTool != "mcp__human__ask" || InboxTool != "mcp__human__inbox" {
		t.Errorf("tool names %q %q", AskTool, InboxTool)
	}
}

func TestCoordinatorTools(t *testing.T) {
	coder := Worker("writes code", "implement")
	researcher := Worker("reads the web", "research", WithTools("Read", "WebSearch"))
	fetcher := Worker("fetches", "fetch", WithTools("WebFetch", "Bash", "Write"))
	cases := []struct {
		name    string
		workers map[string]claude.AgentDefinition
		opts    []RoleOption
		want    []string
		glance  bool
	}{
		{"defaults, no web worker", map[string]claude.AgentDefinition{"x": Worker("x", "x", WithTools("Read", "Bash"))}, nil,
			[]string{"Agent", "TodoWrite", "Read", "Bash"}, true},
		{"default worker brings both web tools", map[string]claude.AgentDefinition{"coder": coder}, nil,
			[]string{"Agent", "TodoWrite", "Read", "Bash", "WebFetch", "WebSearch"}, true},
		{"web tools merged once, in a fixed order", map[string]claude.AgentDefinition{"r": researcher, "f": fetcher, "c": coder}, nil,
			[]string{"Agent", "TodoWrite", "Read", "Bash", "WebFetch", "WebSearch"}, true},
		{"only the web tool a worker has", map[string]claude.AgentDefinition{"r": researcher}, nil,
			[]string{"Agent", "TodoWrite", "Read", "Bash", "WebSearch"}, true},
		{"channel brings inbox and ask", nil, []RoleOption{WithChannel(fakeChannel{})},
			[]string{"Agent", "TodoWrite", "Read", "Bash", InboxTool, AskTool}, true},
		{"no read, no glance", nil, []RoleOption{NoRead(), NoGlance()},
			[]string{"Agent", "TodoWrite"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Coordinator("协调者", "", c.workers, c.opts...)
			if !slices.Equal(s.AllowedTools, c.want) {
				t.Errorf("AllowedTools = %v, want %v", s.AllowedTools, c.want)
			}
			for _, never := range []string{"Write", "Edit", "NotebookEdit"} {
				if slices.Contains(s.AllowedTools, never) {
					t.Errorf("%s merged into the coordinator's tools", never)
				}
			}
			if s.Glance != c.glance || !s.DelegateOnly || s.NoWorkbench || s.PermissionMode != "acceptEdits" {
				t.Errorf("Glance %v DelegateOnly %v NoWorkbench %v PermissionMode %q", s.Glance, s.DelegateOnly, s.NoWorkbench, s.PermissionMode)
			}
			if s.DisallowedTools != nil {
				t.Errorf("DisallowedTools = %v: hands off must never be built from them", s.DisallowedTools)
			}
			if len(s.Agents) != len(c.workers) {
				t.Errorf("Agents = %v", s.Agents)
			}
		})
	}
}

func TestCoordinatorChannelServersAndInstructions(t *testing.T) {
	workers := map[string]claude.AgentDefinition{"coder": Worker("writes code", "implement")}
	s := Coordinator("协调者", "  build the thing  ", workers, WithChannel(fakeChannel{}))
	if _, ok := s.MCPServers[ChannelServer]; !ok || len(s.MCPServers) != 1 {
		t.Errorf("MCPServers = %v", s.MCPServers)
	}
	rules := PromptsFor(English).CoordinatorRules
	if s.Instructions != rules+"\n\nbuild the thing" {
		t.Errorf("Instructions = %q", s.Instructions)
	}
	if got := Coordinator("c", "", nil).Instructions; got != rules {
		t.Errorf("empty instructions give %q", got)
	}
	if got := Coordinator("c", "", nil, WithLang(Chinese)).Instructions; got != PromptsFor(Chinese).CoordinatorRules {
		t.Errorf("Chinese coordinator instructions %q", got)
	}
	if got := Coordinator("c", "mine", nil, WithRules("MY RULES")).Instructions; got != "MY RULES\n\nmine" {
		t.Errorf("WithRules: %q", got)
	}
	// The spec holds its own copy of the workers.
	workers["other"] = Worker("o", "o")
	if len(s.Agents) != 1 {
		t.Error("the spec shares the caller's workers map")
	}
}

func TestWorker(t *testing.T) {
	w := Worker("writes code", "implement it")
	if w.Description != "writes code" || w.Model != "inherit" || w.Isolation != "" {
		t.Errorf("worker %+v", w)
	}
	if !slices.Equal(w.Tools, DefaultWorkerTools()) ||
		!slices.Equal(w.Tools, []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"}) {
		t.Errorf("Tools = %v", w.Tools)
	}
	if w.Prompt != "implement it\n\n"+PromptsFor(English).WorkerRules {
		t.Errorf("Prompt = %q", w.Prompt)
	}
	if got := Worker("d", "p", WithLang(Chinese)).Prompt; got != "p\n\n"+PromptsFor(Chinese).WorkerRules {
		t.Errorf("Chinese prompt %q", got)
	}
	if got := Worker("d", "p", NoDiscipline()).Prompt; got != "p" {
		t.Errorf("NoDiscipline prompt %q", got)
	}
	if got := Worker("d", "p", WithTools("Read")).Tools; !slices.Equal(got, []string{"Read"}) {
		t.Errorf("WithTools: %v", got)
	}
	if got := Worker("d", "p", WithTools()).Tools; !slices.Equal(got, DefaultWorkerTools()) {
		t.Errorf("WithTools() with no tool: %v", got)
	}
	if Worker("d", "p", Isolate()).Isolation != claude.IsolationWorktree {
		t.Error("Isolate does not mark the worker")
	}
}

func TestClarify(t *testing.T) {
	cases := []struct {
		name string
		ch   Channel
		opts []RoleOption
		want []string
	}{
		{"defaults", fakeChannel{}, nil, []string{AskTool, "Read", "Glob", "Grep", "WebFetch", "WebSearch"}},
		{"no read", fakeChannel{}, []RoleOption{NoRead()}, []string{AskTool}},
		{"no channel", nil, nil, []string{"Read", "Glob", "Grep", "WebFetch", "WebSearch"}},
		{"nothing at all", nil, []RoleOption{NoRead()}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Clarify("确认需求", c.ch, c.opts...)
			if !slices.Equal(s.AllowedTools, c.want) || s.AllowedTools == nil {
				t.Errorf("AllowedTools = %#v, want %v", s.AllowedTools, c.want)
			}
			if slices.Contains(s.AllowedTools, InboxTool) {
				t.Error("the clarifier got the inbox")
			}
			if !s.NoWorkbench || s.DelegateOnly || s.PermissionMode != "" || s.MaxTurns != 0 || s.MaxBudgetUSD != 0 {
				t.Errorf("spec %+v", s)
			}
			if (c.ch != nil) != (s.MCPServers[ChannelServer] != nil) {
				t.Errorf("MCPServers = %v", s.MCPServers)
			}
		})
	}
	s := Clarify("c", nil, WithInstructions("only the CLI"), WithLang(English))
	if s.Instructions != PromptsFor(English).ClarifierRules+"\n\nonly the CLI" {
		t.Errorf("Instructions = %q", s.Instructions)
	}
}

func TestJudge(t *testing.T) {
	s := Judge("设定目标", fakeChannel{})
	if !slices.Equal(s.AllowedTools, []string{AskTool, "Read", "Glob", "Grep"}) {
		t.Errorf("AllowedTools = %v", s.AllowedTools)
	}
	if !s.NoWorkbench || s.DelegateOnly || s.PermissionMode != "" || s.MCPServers[ChannelServer] == nil {
		t.Errorf("spec %+v", s)
	}
	run := Judge("判定", fakeChannel{}, CanRun())
	if !slices.Equal(run.AllowedTools, []string{AskTool, "Read", "Glob", "Grep", "Bash"}) {
		t.Errorf("CanRun AllowedTools = %v", run.AllowedTools)
	}
	if run.DisallowedTools != nil {
		t.Errorf("DisallowedTools = %v", run.DisallowedTools)
	}
	if got := Judge("j", nil).AllowedTools; !slices.Equal(got, []string{"Read", "Glob", "Grep"}) {
		t.Errorf("no channel: %v", got)
	}
	if got := Judge("j", nil, WithInstructions("strict")).Instructions; got != PromptsFor(English).JudgeRules+"\n\nstrict" {
		t.Errorf("Instructions = %q", got)
	}
}

func TestOracle(t *testing.T) {
	s := Oracle("")
	if s.Name != "aside" || s.Name != OracleName(English) {
		t.Errorf("Name = %q", s.Name)
	}
	if zh := Oracle("", WithLang(Chinese)); zh.Name != "旁路问答" || !strings.HasPrefix(zh.Instructions, PromptsFor(Chinese).OracleRules) {
		t.Errorf("Chinese oracle %+v", zh)
	}
	if !slices.Equal(s.AllowedTools, []string{"Read", "Glob", "Grep"}) || s.MCPServers != nil {
		t.Errorf("tools %v servers %v", s.AllowedTools, s.MCPServers)
	}
	if s.MaxTurns != 12 || s.MaxBudgetUSD != 0.5 || s.NoWorkbench || s.DelegateOnly || s.PermissionMode != "" {
		t.Errorf("spec %+v", s)
	}
	if s.Instructions != PromptsFor(English).OracleRules {
		t.Errorf("Instructions = %q", s.Instructions)
	}
	if got := Oracle("side").Name; got != "side" {
		t.Errorf("Name = %q", got)
	}
}

// TestRolesCarryTheChannelsEnv: a role given a *human.Channel carries its
// variables, so the CLI's MCP tool timeout lies above the ask timeout and a
// long wait for a human is not cut by the CLI.
func TestRolesCarryTheChannelsEnv(t *testing.T) {
	ch := human.New(human.WithTimeout(2 * time.Hour))
	want := strconv.FormatInt((2*time.Hour + time.Minute).Milliseconds(), 10)
	for _, spec := range []AgentSpec{
		Coordinator("c", "", map[string]claude.AgentDefinition{"coder": Worker("x", "x")}, WithChannel(ch)),
		Clarify("q", ch),
		Judge("j", ch),
	} {
		if got := spec.Env[human.ToolTimeoutEnv]; got != want {
			t.Errorf("%s: %s = %q, want %q (above the ask timeout)", spec.Name, human.ToolTimeoutEnv, got, want)
		}
		opts, err := BuildOptions(spec, BuildConfig{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if opts.Env[human.ToolTimeoutEnv] != want {
			t.Errorf("%s: the session's env lacks the channel's timeout: %v", spec.Name, opts.Env)
		}
	}
	if env := Judge("j", fakeChannel{}).Env; env != nil {
		t.Errorf("a channel without Env gave %v", env)
	}
}

func TestOnlyTheClarifierGetsTheChannelThatNamesTheBriefsSections(t *testing.T) {
	ch := human.New()
	server := func(s AgentSpec) any { return s.MCPServers[ChannelServer].(claude.SDKServer).Server }
	clar := ch.ClarifierMCPServers()[ChannelServer].(claude.SDKServer).Server
	general := ch.MCPServers()[ChannelServer].(claude.SDKServer).Server
	if server(Clarify("c", ch)) != clar {
		t.Error("the clarifier does not get its own server")
	}
	for _, s := range []AgentSpec{Judge("j", ch), Coordinator("co", "", nil, WithChannel(ch))} {
		if server(s) != general {
			t.Errorf("%s gets the clarifier's server", s.Name)
		}
	}
}

// A role given no language speaks the language of the Runtime that runs
// it (Runtime.Run renders it through inLang); one given a language, or its
// own rules, keeps them.
func TestRolesWithoutALanguageFollowTheRuntime(t *testing.T) {
	zh, en := PromptsFor(Chinese), PromptsFor(English)
	workers := map[string]claude.AgentDefinition{"coder": Worker("d", "p"), "fixed": Worker("d", "q", WithRules("OWN"))}
	c := Coordinator("c", "build it", workers).inLang(Chinese)
	if c.Instructions != zh.CoordinatorRules+"\n\nbuild it" {
		t.Errorf("coordinator in a Chinese runtime: %q", c.Instructions)
	}
	if got := c.Agents["coder"].Prompt; got != "p\n\n"+zh.WorkerRules {
		t.Errorf("worker in a Chinese runtime: %q", got)
	}
	if got := c.Agents["fixed"].Prompt; got != "q\n\nOWN" {
		t.Errorf("a worker with its own rules changed: %q", got)
	}
	if workers["coder"].Prompt != "p\n\n"+en.WorkerRules {
		t.Error("inLang changed the caller's workers map")
	}
	for name, s := range map[string]AgentSpec{
		"clarify": Clarify("x", nil, WithInstructions("ask")), "judge": Judge("x", nil), "oracle": Oracle(""),
	} {
		got := s.inLang(Chinese)
		if got.Instructions == s.Instructions || !strings.HasPrefix(got.Instructions, "#") || strings.Contains(got.Instructions, "You ") {
			t.Errorf("%s in a Chinese runtime: %q", name, got.Instructions)
		}
	}
	if got := Oracle("").inLang(Chinese).Name; got != OracleNameChinese {
		t.Errorf("oracle name in a Chinese runtime: %q", got)
	}
	for name, s := range map[string]AgentSpec{
		"English chosen": Coordinator("c", "x", nil, WithLang(English)),
		"own rules":      Coordinator("c", "x", nil, WithRules("MINE")),
	} {
		if got := s.inLang(Chinese); got.Instructions != s.Instructions {
			t.Errorf("%s: changed in a Chinese runtime: %q", name, got.Instructions)
		}
	}
	if got := Coordinator("c", "x", nil).inLang(English); got.Instructions != en.CoordinatorRules+"\n\nx" {
		t.Errorf("English runtime: %q", got.Instructions)
	}
}

// The texts of a role given no language are chosen for the Runtime's
// language from the role and the caller's instructions, kept apart: never
// found inside the text. What the caller set or changed is theirs.
func TestRolesBuildTheirTextsForTheRuntimesLanguage(t *testing.T) {
	zh, en := PromptsFor(Chinese), PromptsFor(English)
	for name, c := range map[string]struct {
		spec  AgentSpec
		rules func(Prompts) string
		extra string
	}{
		"judge":       {Judge("j", nil, WithInstructions("be strict")), func(p Prompts) string { return p.JudgeRules }, "be strict"},
		"clarify":     {Clarify("c", nil), func(p Prompts) string { return p.ClarifierRules }, ""},
		"oracle":      {Oracle("", WithInstructions("look at the log")), func(p Prompts) string { return p.OracleRules }, "look at the log"},
		"coordinator": {Coordinator("co", "build it", nil), func(p Prompts) string { return p.CoordinatorRules }, "build it"},
	} {
		if got, want := c.spec.inLang(Chinese).Instructions, paragraphs(c.rules(zh), c.extra); got != want {
			t.Errorf("%s in a Chinese runtime: %q, want %q", name, got, want)
		}
		// The spec itself is untouched, and a rendered spec keeps its
		// language: it runs in one.
		if got, want := c.spec.inLang(English).Instructions, paragraphs(c.rules(en), c.extra); got != want {
			t.Errorf("%s in an English runtime after a Chinese one: %q", name, got)
		}
		if got := c.spec.inLang(Chinese).inLang(English).Instructions; got != paragraphs(c.rules(zh), c.extra) {
			t.Errorf("%s rendered twice: %q", name, got)
		}
		// Instructions changed after the factory are the caller's.
		changed := c.spec
		changed.Instructions += "\n\nmine"
		if got := changed.inLang(Chinese).Instructions; got != changed.Instructions {
			t.Errorf("%s: changed instructions rebuilt: %q", name, got)
		}
	}

	// The oracle's name follows only when it was left to the factory.
	if got := Oracle(OracleNameEnglish).inLang(Chinese).Name; got != OracleNameEnglish {
		t.Errorf("an oracle named %q by its caller was renamed %q", OracleNameEnglish, got)
	}
	renamed := Oracle("")
	renamed.Name = "mine"
	if got := renamed.inLang(Chinese).Name; got != "mine" {
		t.Errorf("a renamed oracle became %q", got)
	}
	if got := Oracle("", WithRules("OWN")).inLang(Chinese); got.Name != OracleNameChinese || got.Instructions != "OWN" {
		t.Errorf("an oracle with its own rules in a Chinese runtime: %q, %q", got.Name, got.Instructions)
	}
}

// A coordinator's workers built without a language speak the
// coordinator's: the one it was given, else the Runtime's; a worker with
// its own language or rules, or whose prompt the caller changed, keeps
// them.
func TestWorkersSpeakTheirCoordinatorsLanguage(t *testing.T) {
	zh, en := PromptsFor(Chinese), PromptsFor(English)
	changed := Worker("d", "r")
	changed.Prompt += "\n\nmore"
	workers := map[string]claude.AgentDefinition{
		"plain":   Worker("d", "p"),
		"empty":   Worker("d", ""),
		"chinese": Worker("d", "q", WithLang(Chinese)),
		"own":     Worker("d", "s", WithRules("OWN")),
		"changed": changed,
	}
	want := func(lang Lang) map[string]string {
		return map[string]string{
			"plain": "p\n\n" + PromptsFor(lang).WorkerRules, "empty": PromptsFor(lang).WorkerRules,
			"chinese": "q\n\n" + zh.WorkerRules, "own": "s\n\nOWN", "changed": changed.Prompt,
		}
	}
	for name, c := range map[string]struct {
		spec AgentSpec
		lang Lang
	}{
		"Chinese coordinator":                    {Coordinator("c", "", workers, WithLang(Chinese)), Chinese},
		"Chinese coordinator, English runtime":   {Coordinator("c", "", workers, WithLang(Chinese)).inLang(English), Chinese},
		"following coordinator, Chinese runtime": {Coordinator("c", "", workers).inLang(Chinese), Chinese},
		"own rules, Chinese runtime":             {Coordinator("c", "", workers, WithRules("MINE")).inLang(Chinese), Chinese},
		"following coordinator, English runtime": {Coordinator("c", "", workers).inLang(English), English},
		"English coordinator, Chinese runtime":   {Coordinator("c", "", workers, WithLang(English)).inLang(Chinese), English},
	} {
		for w, prompt := range want(c.lang) {
			if got := c.spec.Agents[w].Prompt; got != prompt {
				t.Errorf("%s: worker %s: %q, want %q", name, w, got, prompt)
			}
		}
	}
	if workers["plain"].Prompt != "p\n\n"+en.WorkerRules {
		t.Error("a coordinator changed the caller's workers map")
	}
}
