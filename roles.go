package flower

import (
	"maps"
	"slices"
	"strings"

	"github.com/flowerrun/flower/claude"
)

// The five roles. Each is a rule text (Prompts), a set of tools and, through
// BuildOptions, a set of guards: a role installs no hook itself, the spec's
// DelegateOnly and AllowedTools decide them. Worker returns a subagent
// definition; the other four return an AgentSpec that runs in a session of
// its own.
//
// The factories take the role's own choices as RoleOptions. The knobs every
// spec shares (Model, Effort, MaxTurns, MaxBudgetUSD, Compact, Hooks, Env)
// are fields of the result: set them there.

// Oracle defaults.
const (
	// OracleNameChinese is the oracle's default name in Chinese, also the
	// name of its step.
	OracleNameChinese = "旁路问答"
	// OracleNameEnglish is the oracle's default name in English.
	OracleNameEnglish = "aside"
	// OracleMaxTurns caps an oracle's turns: it looks, then answers.
	OracleMaxTurns = 12
	// OracleMaxBudgetUSD caps an oracle's cost.
	OracleMaxBudgetUSD = 0.5
)

// OracleName returns the oracle's default name in lang.
func OracleName(lang Lang) string {
	if lang.IsEnglish() {
		return OracleNameEnglish
	}
	return OracleNameChinese
}

// DefaultWorkerTools returns the tools a Worker gets unless WithTools says
// otherwise: Read, Write, Edit, Bash, Glob, Grep, WebFetch, WebSearch.
func DefaultWorkerTools() []string {
	return []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"}
}

// webTools are the workers' tools a coordinator approves for the whole
// session: read-only and free of side effects. Write, Edit and Bash are
// never merged: approving them for the session would make the
// coordinator's wall moot, and the subagents' own calls to them pass
// anyway.
var webTools = []string{"WebFetch", "WebSearch"}

// readTools are what a clarifier reads with before it asks.
var readTools = []string{"Read", "Glob", "Grep", "WebFetch", "WebSearch"}

// RoleOption adjusts what a role factory builds. Each option says which
// roles read it; the other roles ignore it.
type RoleOption func(*roleConfig)

type roleConfig struct {
	lang         Lang
	channel      Channel
	instructions string
	rules        *string
	tools        []string
	noRead       bool
	noGlance     bool
	canRun       bool
	noDiscipline bool
	isolate      bool
}

func roleOptions(opts []RoleOption) roleConfig {
	var c roleConfig
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// rulesOr returns the rule text WithRules set, or def.
func (c roleConfig) rulesOr(def string) string {
	if c.rules != nil {
		return *c.rules
	}
	return def
}

// WithLang chooses the language of the role's rule text and of the
// oracle's default name (all roles), and for a coordinator that of its
// workers built without one. Without it (or with the zero Lang) the role
// takes the language of the Runtime that runs it: English until then, the
// Runtime's (WithLanguage) when it runs, the role's texts built again in
// that language from the role and the caller's instructions. A caller who
// changes the spec's Instructions or Name (or a worker's Prompt) after the
// factory keeps them as written: add to the rules with WithInstructions.
func WithLang(lang Lang) RoleOption { return func(c *roleConfig) { c.lang = lang } }

// WithChannel gives the coordinator a human channel: both its tools
// (InboxTool, AskTool) are approved and its MCP servers added. Clarify and
// Judge take their channel as an argument.
func WithChannel(ch Channel) RoleOption {
	return func(c *roleConfig) {
		if noChannel(ch) {
			ch = nil
		}
		c.channel = ch
	}
}

// WithInstructions adds the caller's instructions after the rule text
// (Clarify, Judge, Oracle; Coordinator and Worker take theirs as an
// argument).
func WithInstructions(text string) RoleOption {
	return func(c *roleConfig) { c.instructions = text }
}

// WithRules replaces the role's rule text (all roles), e.g. with an
// extended PromptsFor(lang).JudgeRules; "" leaves the role without one.
func WithRules(text string) RoleOption { return func(c *roleConfig) { c.rules = &text } }

// WithTools replaces a worker's tools (Worker). Without a tool it keeps
// DefaultWorkerTools: an empty list would give the subagent every tool.
func WithTools(tools ...string) RoleOption {
	return func(c *roleConfig) { c.tools = slices.Clone(tools) }
}

// NoRead takes the read tools away (Coordinator: Read; Clarify: Read, Glob,
// Grep, WebFetch, WebSearch).
func NoRead() RoleOption { return func(c *roleConfig) { c.noRead = true } }

// NoGlance takes the coordinator's read-only Bash away (Coordinator).
func NoGlance() RoleOption { return func(c *roleConfig) { c.noGlance = true } }

// CanRun gives the judge Bash so that it can run the checks itself (Judge).
// Write and Edit stay denied, but Bash can change the workspace too: leave
// it off for a strictly neutral judge.
func CanRun() RoleOption { return func(c *roleConfig) { c.canRun = true } }

// NoDiscipline leaves the worker rules out of a worker's prompt (Worker).
func NoDiscipline() RoleOption { return func(c *roleConfig) { c.noDiscipline = true } }

// Isolate marks a worker to run in its own git worktree (Worker). The
// workspace must be a git repository (the Agent tool fails with "not in a
// git repository" otherwise) and the workbench should lie outside it.
func Isolate() RoleOption { return func(c *roleConfig) { c.isolate = true } }

// Coordinator builds the main-thread dispatcher: it breaks the work down,
// dispatches workers with the Agent tool, reads their reports and decides,
// but never touches files itself. Its instructions are the coordinator
// rules followed by instructions.
//
// Tools: Agent, TodoWrite, Read (unless NoRead), Bash (unless NoGlance; the
// wall lets only glances through, bounded in time), the
// channel's inbox and ask (WithChannel; both, since an MCP server exposes
// both anyway), and any WebFetch or WebSearch of the workers' tools:
// approval is session-wide, and a worker tool missing from it is refused
// over and over in an unattended run. Write, Edit and Bash are never merged
// from the workers.
//
// The spec is DelegateOnly (its wall refuses every other tool with the
// delegate text, and an Agent call naming anything but one of workers;
// hands off never comes from disallowed tools, which would disarm the
// workers), dispatches workers, wants the workbench and runs in permission
// mode acceptEdits. Options:
// WithLang, WithChannel, NoRead, NoGlance, WithRules.
func Coordinator(name, instructions string, workers map[string]claude.AgentDefinition, opts ...RoleOption) AgentSpec {
	c := roleOptions(opts)
	tools := []string{"Agent", "TodoWrite"}
	if !c.noRead {
		tools = append(tools, "Read")
	}
	if !c.noGlance {
		tools = append(tools, "Bash")
	}
	var servers map[string]claude.MCPServer
	if c.channel != nil {
		tools = append(tools, InboxTool, AskTool)
		servers = maps.Clone(c.channel.MCPServers())
	}
	env := channelEnv(c.channel)
	for _, web := range webTools {
		for _, w := range workers {
			if slices.Contains(w.Tools, web) && !slices.Contains(tools, web) {
				tools = append(tools, web)
			}
		}
	}
	spec := AgentSpec{
		Name:           name,
		Instructions:   paragraphs(c.rulesOr(PromptsFor(c.lang).CoordinatorRules), instructions),
		AllowedTools:   tools,
		PermissionMode: "acceptEdits",
		Agents:         maps.Clone(workers),
		MCPServers:     servers,
		Env:            env,
		Glance:         !c.noGlance,
		DelegateOnly:   true,
	}
	// Workers built without a language speak the coordinator's: the one it
	// was given now, else the Runtime's when it runs (spec.texts).
	if c.lang != "" {
		for name, def := range spec.Agents {
			if prompt, ok := builtWithoutLanguage(def); ok {
				def.Prompt = workerPrompt(prompt, c.lang)
				spec.Agents[name] = def
			}
		}
	}
	spec.texts = c.texts(coordinatorRole, instructions, spec, false)
	return spec
}

// Worker builds a subagent definition for Coordinator's workers: the
// description tells the coordinator when to dispatch it, the prompt is
// followed by the worker rules (the four-part report of at most 30 lines;
// NoDiscipline leaves them out). Tools default to DefaultWorkerTools, the
// model to "inherit". Options: WithLang, WithTools, NoDiscipline, Isolate,
// WithRules. Effort, MaxTurns, PermissionMode and Skills are fields of the
// result.
func Worker(description, prompt string, opts ...RoleOption) claude.AgentDefinition {
	c := roleOptions(opts)
	tools := c.tools
	if len(tools) == 0 {
		tools = DefaultWorkerTools()
	}
	if !c.noDiscipline {
		prompt = paragraphs(prompt, c.rulesOr(PromptsFor(c.lang).WorkerRules))
	}
	return claude.AgentDefinition{
		Description: description,
		Prompt:      prompt,
		Tools:       tools,
		Model:       "inherit",
		Isolation:   isolation(c.isolate),
	}
}

// Clarify builds the clarifier: it asks the human what it needs before any
// work starts, then writes the four-part brief. It only asks and reads:
// its tools are the channel's ask (ch may be nil for none) and, unless
// NoRead, Read, Glob, Grep, WebFetch and WebSearch; its wall refuses it
// every other tool. No inbox, no workbench, the CLI's
// default permission mode, no turn cap. Options: WithLang,
// WithInstructions, NoRead, WithRules.
func Clarify(name string, ch Channel, opts ...RoleOption) AgentSpec {
	c := roleOptions(opts)
	tools, servers := channelTools(ch)
	if cc, ok := ch.(clarifierChannel); ok && servers != nil {
		// Only the clarifier is told to write unanswered questions into
		// the brief's "Unknowns and assumptions".
		servers = maps.Clone(cc.ClarifierMCPServers())
	}
	if !c.noRead {
		tools = append(tools, readTools...)
	}
	spec := AgentSpec{
		Name:         name,
		Instructions: paragraphs(c.rulesOr(PromptsFor(c.lang).ClarifierRules), c.instructions),
		AllowedTools: tools,
		MCPServers:   servers,
		Env:          channelEnv(ch),
		NoWorkbench:  true,
	}
	spec.texts = c.texts(clarifyRole, c.instructions, spec, false)
	return spec
}

// Judge builds the judge that sets a goal from a brief and rules on each
// round: achieved, not yet or unreachable. Its tools are the channel's ask
// (ch may be nil for none), Read, Glob and Grep, and Bash with CanRun; its
// wall refuses it every other tool (Write, Edit, and Bash without CanRun). No
// inbox, no workbench, the CLI's default permission mode. Options:
// WithLang, WithInstructions, CanRun, WithRules.
func Judge(name string, ch Channel, opts ...RoleOption) AgentSpec {
	c := roleOptions(opts)
	tools, servers := channelTools(ch)
	tools = append(tools, "Read", "Glob", "Grep")
	if c.canRun {
		tools = append(tools, "Bash")
	}
	spec := AgentSpec{
		Name:         name,
		Instructions: paragraphs(c.rulesOr(PromptsFor(c.lang).JudgeRules), c.instructions),
		AllowedTools: tools,
		MCPServers:   servers,
		Env:          channelEnv(ch),
		NoWorkbench:  true,
	}
	spec.texts = c.texts(judgeRole, c.instructions, spec, false)
	return spec
}

// Oracle builds the side-question agent: while a run goes on, it reads the
// recent events and the workbench and answers a human's question without
// entering the run. name "" means OracleName(lang). Tools Read, Glob and
// Grep, no channel, the workbench on (the only role besides the
// coordinator that wants it), OracleMaxTurns turns and OracleMaxBudgetUSD
// dollars. Options: WithLang, WithInstructions, WithRules.
func Oracle(name string, opts ...RoleOption) AgentSpec {
	c := roleOptions(opts)
	defaultName := name == ""
	if defaultName {
		name = OracleName(c.lang)
	}
	spec := AgentSpec{
		Name:         name,
		Instructions: paragraphs(c.rulesOr(PromptsFor(c.lang).OracleRules), c.instructions),
		AllowedTools: DefaultAllowedTools(),
		MaxTurns:     OracleMaxTurns,
		MaxBudgetUSD: OracleMaxBudgetUSD,
	}
	spec.texts = c.texts(oracleRole, c.instructions, spec, defaultName)
	return spec
}

// ruleRole names the role whose default rule text opens a spec's
// Instructions.
type ruleRole int

const (
	noRole ruleRole = iota
	coordinatorRole
	clarifyRole
	judgeRole
	oracleRole
)

// rules is the role's rule text in p.
func (r ruleRole) rules(p Prompts) string {
	switch r {
	case coordinatorRole:
		return p.CoordinatorRules
	case clarifyRole:
		return p.ClarifierRules
	case judgeRole:
		return p.JudgeRules
	case oracleRole:
		return p.OracleRules
	}
	return ""
}

// roleTexts is what a role factory given no language built a spec's texts
// from, kept apart from the texts themselves, so that the Runtime that runs
// the spec builds them again in its own language (AgentSpec.inLang): the
// rules are chosen for the language, never found and replaced inside a
// text.
type roleTexts struct {
	// role heads Instructions with its rules; noRole when WithRules gave
	// the spec rules of its own, which no language changes.
	role ruleRole
	// instructions are the caller's, after the rules.
	instructions string
	// builtInstructions and builtName are the spec's as the factory built
	// them: a caller who changed either since keeps the change.
	builtInstructions, builtName string
	// defaultName: the oracle was given no name and takes the language's.
	defaultName bool
	// workers are a coordinator's workers built by Worker without a
	// language or rules of their own, by name.
	workers map[string]workerTexts
}

// workerTexts is a worker that speaks its coordinator's language: the
// prompt the caller gave Worker, and the definition's prompt as built.
type workerTexts struct {
	prompt, built string
}

// workerPrompt is a worker's prompt in lang: the caller's prompt, then the
// worker rules in lang (Worker builds it so).
func workerPrompt(prompt string, lang Lang) string {
	return paragraphs(prompt, PromptsFor(lang).WorkerRules)
}

// texts records what spec's texts were built from when the role takes the
// Runtime's language; nil when its language is fixed (WithLang) or nothing
// in it depends on the language.
func (c roleConfig) texts(role ruleRole, instructions string, spec AgentSpec, defaultName bool) *roleTexts {
	if c.lang != "" {
		return nil
	}
	t := &roleTexts{role: role, instructions: instructions, builtInstructions: spec.Instructions,
		builtName: spec.Name, defaultName: defaultName}
	if c.rules != nil {
		t.role = noRole
	}
	if role == coordinatorRole {
		for name, def := range spec.Agents {
			if prompt, ok := builtWithoutLanguage(def); ok {
				if t.workers == nil {
					t.workers = map[string]workerTexts{}
				}
				t.workers[name] = workerTexts{prompt: prompt, built: def.Prompt}
			}
		}
	}
	if t.role == noRole && !t.defaultName && len(t.workers) == 0 {
		return nil
	}
	return t
}

// builtWithoutLanguage returns the prompt Worker was given when def is a
// worker it built without WithLang or WithRules: that prompt, then the
// English worker rules (a worker given English is read the same: the two
// cannot be told apart). A definition carries no mark of its own, so its
// prompt is read once, when the coordinator is built; from then on the
// worker's prompt is built for a language (workerPrompt).
func builtWithoutLanguage(def claude.AgentDefinition) (string, bool) {
	rules := strings.TrimSpace(PromptsFor(English).WorkerRules)
	if def.Prompt == rules {
		return "", true
	}
	return strings.CutSuffix(def.Prompt, "\n\n"+rules)
}

// inLang is the spec as it runs on a Runtime speaking l: a role given no
// language gets its texts built again in l (its rules, the oracle its
// default name, a coordinator its workers' rules), unless the caller
// changed them since the factory built them. A spec built with a language,
// or by hand, is returned as it is. The result no longer follows: a spec
// runs in one language.
func (s AgentSpec) inLang(l Lang) AgentSpec {
	t := s.texts
	s.texts = nil
	if t == nil {
		return s
	}
	p := PromptsFor(l)
	if t.role != noRole && s.Instructions == t.builtInstructions {
		s.Instructions = paragraphs(t.role.rules(p), t.instructions)
	}
	if t.defaultName && s.Name == t.builtName {
		s.Name = OracleName(l)
	}
	if len(t.workers) > 0 && len(s.Agents) > 0 {
		agents := maps.Clone(s.Agents)
		for name, w := range t.workers {
			if def, ok := agents[name]; ok && def.Prompt == w.built {
				def.Prompt = workerPrompt(w.prompt, l)
				agents[name] = def
			}
		}
		s.Agents = agents
	}
	return s
}

// isolation is the definition's isolation for the Isolate option.
func isolation(isolate bool) string {
	if isolate {
		return claude.IsolationWorktree
	}
	return ""
}

// clarifierChannel is a channel with a server of its own for the
// clarifier (human.Channel has one).
type clarifierChannel interface {
	ClarifierMCPServers() map[string]claude.MCPServer
}

// channelTools returns the channel's ask tool and a copy of its servers,
// or an empty tool list and nil without a channel. The list is non-nil: an
// AgentSpec reads nil AllowedTools as the default set.
func channelTools(ch Channel) ([]string, map[string]claude.MCPServer) {
	if noChannel(ch) {
		return []string{}, nil
	}
	return []string{AskTool}, maps.Clone(ch.MCPServers())
}

// EnvChannel is a Channel that needs variables in the CLI's environment:
// the *human.Channel sets the CLI's MCP tool timeout above its own ask
// timeout, so that a long wait for a human is never cut by the CLI. The
// roles that take a channel put them into the spec's Env.
type EnvChannel interface {
	Channel
	Env() map[string]string
}

// channelEnv is the channel's variables, nil without any.
func channelEnv(ch Channel) map[string]string {
	if noChannel(ch) {
		return nil
	}
	if ec, ok := ch.(EnvChannel); ok {
		if env := ec.Env(); len(env) > 0 {
			return maps.Clone(env)
		}
	}
	return nil
}
