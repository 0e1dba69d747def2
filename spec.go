package flower

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/workbench"
)

// ErrInvalidSpec marks an AgentSpec or a BuildConfig that BuildOptions
// refuses; the error's text says which field is wrong and what to do.
var ErrInvalidSpec = errors.New("flower: invalid agent spec")

// DefaultAllowedTools returns the tools an AgentSpec with nil AllowedTools
// may use without approval: Read, Glob and Grep.
func DefaultAllowedTools() []string { return []string{"Read", "Glob", "Grep"} }

// AgentSpec declares one agent that runs in a session of its own. The role
// factories (Coordinator, Clarify, Judge, Oracle) return one; build one by
// hand for a combination they do not offer. BuildOptions compiles it to the
// driver's options.
//
// The zero value of every field but Name is a useful default: Read, Glob
// and Grep approved, the CLI's model and permission mode, no limits, the
// workbench index injected, the wall (whitelist refusals) installed.
type AgentSpec struct {
	// texts is set by a role factory that was given no language: what its
	// texts were built from, so that the Runtime that runs the spec builds
	// them in its own language (inLang).
	texts *roleTexts

	// Name labels the agent: its step, its refusals ("<name> has no
	// Write"). Required.
	Name string
	// Instructions are appended to Claude Code's own system prompt, never
	// replacing it, so specialising an agent costs none of its general
	// abilities. A role factory given no language builds them again in the
	// language of the Runtime that runs the spec, unless they were changed
	// since (see WithLang).
	Instructions string

	// AllowedTools are the tools used without asking for approval. nil
	// means DefaultAllowedTools (Read, Glob, Grep); an empty non-nil slice
	// means none. The list is not exclusive in the CLI, and it is
	// session-scoped: it applies to the subagents too, which is why a
	// coordinator carries its workers' web tools. The wall BuildOptions
	// installs makes it exclusive on the main thread: every tool not in
	// this list (and not guard.AlwaysAllowed) is refused there, including
	// the tools the CLI adds later; an MCP tool is listed by its full name
	// or its server ("mcp__human").
	AllowedTools []string
	// DisallowedTools are removed for the whole session, subagents
	// included ("Bash is disabled for this session, in subagents as well as
	// here"). Never use it to keep a coordinator's hands off: it would
	// disarm its workers too; DelegateOnly does that on the main thread
	// only.
	DisallowedTools []string

	// Model is a model alias or id; "" means the CLI's default.
	Model string
	// Effort is low, medium, high, xhigh or max; "" means the CLI's default.
	Effort string
	// OutputSchema, when set, asks for the answer in structure: the CLI's
	// --json-schema, read back as StepResult.Structured. The CLI makes the
	// model call its StructuredOutput tool, which AllowedTools need not name.
	OutputSchema json.RawMessage
	// MaxTurns caps the agentic turns of a run; 0 means no cap.
	MaxTurns int
	// MaxBudgetUSD caps a session's cost; 0 means no cap.
	MaxBudgetUSD float64
	// PermissionMode is passed to the CLI: acceptEdits, auto,
	// bypassPermissions, manual, dontAsk or plan. "" means the CLI's own
	// default (the original's "default", which CLI 2.1.332 names manual);
	// "default" is read the same way and never sent.
	PermissionMode string

	// Agents are the subagents this agent may dispatch with the Agent tool.
	// A definition whose Isolation is claude.IsolationWorktree runs in its
	// own git worktree: the CLI reads the field, and the isolate guard adds
	// the same choice to each Agent call.
	Agents map[string]claude.AgentDefinition
	// MCPServers maps server names to their configuration; a Channel's
	// servers go here.
	MCPServers map[string]claude.MCPServer
	// Hooks are installed first, before the guards BuildOptions adds.
	Hooks map[string][]claude.HookMatcher
	// Loop tunes the loop guard; the zero value watches every thread with
	// the default thresholds (see LoopPolicy).
	Loop LoopPolicy

	// Compact, when set, decides the CLI's native compaction. When nil and
	// the runtime hands off instead of compacting, BuildConfig.Handoff
	// turns auto-compaction off (mode no_summary).
	Compact *CompactPolicy
	// Env is laid over the child's environment; the compact policy's
	// variables go on top of it.
	Env map[string]string

	// Glance lets the main thread run read-only Bash commands (those
	// ephemeral.Is accepts: git status, ls, cat…) in the foreground,
	// bounded by GlanceTimeout, whether or not AllowedTools holds Bash.
	Glance bool
	// GlanceTimeout is the longest a glance may run before the CLI kills
	// it; 0 means guard.DefaultGlanceTimeout (30 s).
	GlanceTimeout time.Duration
	// NoWorkbench leaves the workbench index out of this agent's first
	// message. The zero value injects it, as the original's default
	// workbench=true.
	NoWorkbench bool
	// DelegateOnly makes the agent a dispatcher: its main thread's wall
	// refuses with the delegate text (dispatch a worker), and Bash passes
	// only as a glance even when AllowedTools holds it. The subagents keep
	// their tools.
	DelegateOnly bool
}

// outlivingTools are the CLI's tools that act beyond the turn: scheduled
// prompts that survive restarts, worktrees entered and left, background
// monitors and workflows, messages to other sessions. No flower role uses
// them, so BuildOptions removes them from every session, subagents
// included (the CLI's --disallowedTools reaches subagents), except those a
// worker names in its tools. The wall refuses them on the main thread
// anyway; this is the second line. A worktree for an isolated worker needs
// none of them: the Agent call's isolation field makes it.
var outlivingTools = []string{
	"CronCreate", "CronDelete", "CronList", "ScheduleWakeup", "RemoteTrigger",
	"EnterWorktree", "ExitWorktree", "Monitor", "Workflow", "SendMessage", "ListAgents",
}

// disallowed is spec.DisallowedTools plus the outliving tools no worker
// names, without repeats.
func (s AgentSpec) disallowed() []string {
	out := slices.Clone(s.DisallowedTools)
	for _, tool := range outlivingTools {
		named := slices.Contains(out, tool)
		for _, a := range s.Agents {
			named = named || slices.Contains(a.Tools, tool)
		}
		if !named {
			out = append(out, tool)
		}
	}
	return out
}

// offered are the built-in tools the CLI offers the session: those the
// main thread's wall lets through (Allowed, guard.AlwaysAllowed, Bash for
// a glance) and those the workers name, each once, by its bare name (a
// permission rule "Bash(git log:*)" offers Bash; an MCP tool is no
// built-in). Every other schema would be sent in every request for a tool
// no thread may use: the economy benchmark measured half of the 22.5 KB of
// schemas per request of a Bash-Read-Write agent to be such. nil (the
// CLI's whole set) when a worker names no tool, which gives it them all.
// Skills reach the model through the Skill tool: it stays offered to a
// session that loads plugins or has a worker with skills.
func (s AgentSpec) offered(plugins bool) []string {
	names := slices.Concat(s.Allowed(), guard.AlwaysAllowed)
	if s.Glance {
		names = append(names, "Bash")
	}
	skills := plugins
	for _, w := range slices.Sorted(maps.Keys(s.Agents)) {
		if len(s.Agents[w].Tools) == 0 {
			return nil
		}
		names = append(names, s.Agents[w].Tools...)
		skills = skills || len(s.Agents[w].Skills) > 0
	}
	if skills {
		names = append(names, "Skill")
	}
	out := []string{}
	for _, n := range names {
		n, _, _ = strings.Cut(n, "(")
		if n = strings.TrimSpace(n); n != "" && !strings.HasPrefix(n, "mcp__") && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// wall is the allow-list guard of the spec's main thread.
func (s AgentSpec) wall(wb *workbench.Workbench) guard.Wall {
	w := guard.Wall{
		Role:          s.Name,
		Tools:         s.Allowed(),
		Glance:        s.Glance,
		GlanceTimeout: s.GlanceTimeout,
		Workers:       slices.Sorted(maps.Keys(s.Agents)),
		Delegate:      s.DelegateOnly,
	}
	if wb != nil {
		w.Artifacts = filepath.ToSlash(wb.Show(wb.Artifacts())) + "/"
	}
	return w
}

// Allowed returns the tools the agent uses without approval: a copy of
// AllowedTools, or DefaultAllowedTools when AllowedTools is nil. The result
// is non-nil.
func (s AgentSpec) Allowed() []string {
	var out []string
	if s.AllowedTools == nil {
		out = DefaultAllowedTools()
	} else {
		out = append([]string{}, s.AllowedTools...)
	}
	if len(s.OutputSchema) > 0 && !slices.Contains(out, StructuredOutputTool) {
		// The CLI answers in structure through this tool; the wall must
		// let it through.
		out = append(out, StructuredOutputTool)
	}
	return out
}

// StructuredOutputTool is the tool through which the CLI's model gives a
// structured answer (AgentSpec.OutputSchema).
const StructuredOutputTool = "StructuredOutput"

// validate reports the first field BuildOptions cannot compile.
func (s AgentSpec) validate() error {
	switch {
	case strings.TrimSpace(s.Name) == "":
		return fmt.Errorf("%w: Name is empty; name the agent (it labels its step and its refusals)", ErrInvalidSpec)
	case s.MaxTurns < 0:
		return fmt.Errorf("%w: %s: MaxTurns is %d; use 0 for no cap", ErrInvalidSpec, s.Name, s.MaxTurns)
	case s.MaxBudgetUSD < 0 || math.IsNaN(s.MaxBudgetUSD) || math.IsInf(s.MaxBudgetUSD, 0):
		return fmt.Errorf("%w: %s: MaxBudgetUSD is %v; use 0 for no cap", ErrInvalidSpec, s.Name, s.MaxBudgetUSD)
	case s.GlanceTimeout < 0:
		return fmt.Errorf("%w: %s: GlanceTimeout is %v; use 0 for the default (%v)", ErrInvalidSpec, s.Name, s.GlanceTimeout, guard.DefaultGlanceTimeout)
	}
	return nil
}

// BuildConfig is the per-session part of BuildOptions: where the session
// runs, what it resumes, where its transcript goes and what surrounds it.
// The zero value starts a new, portable session in the current directory
// with no store, no workbench and no spill guard.
type BuildConfig struct {
	// Cwd is the session's working directory; "" inherits the process's.
	Cwd string

	// Store mirrors the transcript and backs resume; nil means the CLI's
	// own files only.
	Store claude.SessionStore
	// Flush chooses when mirrored entries reach Store; "" means
	// claude.FlushEager, since one turn may run for tens of minutes.
	// Ignored without a Store.
	Flush claude.FlushMode

	// Resume resumes this session id.
	Resume string
	// Fork copies the resumed history into a new session. Without Resume
	// it is an error, not silently ignored.
	Fork bool
	// ResumeAt loads the resumed history only up to this entry uuid.
	// Without Resume it is an error.
	ResumeAt string

	// NotPortable loads the project's .claude/ settings. The zero value is
	// portable: no setting source at all (neither ~/.claude/ nor the
	// project's), so a run behaves the same on every machine.
	NotPortable bool
	// PluginDirs are local plugin folders (a plugin may hold skills,
	// agents, hooks and MCP servers). A relative folder is taken from Cwd.
	// A folder that does not exist is skipped and logged; one that exists
	// but cannot be read is an error. flower ships no plugin of its own.
	PluginDirs []string
	// AddDirs are further folders the session may reach. An external
	// workbench's root is added to them.
	AddDirs []string
	// Prelude is appended to the system prompt after the instructions.
	// Keep it the same across sessions: anything that changes, like the
	// workbench index, belongs in the first message (FirstMessage), or it
	// breaks the prompt cache.
	Prelude string

	// Workbench is the run's workbench, nil for none. With one, the index
	// and spill guards are installed and an external root is reachable.
	Workbench *workbench.Workbench
	// SpillThreshold is the length above which a tool result's string is
	// moved to the workbench's spill/. 0 or a negative value means no spill
	// guard, as in the seed (None/0) and guard.WorkbenchHooks; the Runtime
	// passes guard.DefaultSpillThreshold (4000) unless told otherwise. It
	// needs a Workbench.
	SpillThreshold int
	// Handoff says the runtime hands off to a new session instead of
	// letting the CLI compact: when the spec has no Compact policy, the
	// CLI's auto-compaction is turned off (mode no_summary).
	Handoff bool
	// Lang selects the guards' refusal texts.
	Lang Lang
	// OnLoop is told of every call the loop guard refuses: the thread
	// (agent_id, "" for the main thread), the tool and the loop's length.
	// It is called from the driver's hook goroutines. The Runtime turns it
	// into a Loop event.
	OnLoop func(agentID, tool string, count int)
	// OfferedTools, when set, returns the tools the CLI's init message
	// offered (nil before it came): the loop guard exempts the waiting
	// ones among them.
	OfferedTools func() []string
}

// BuildOptions compiles an agent declaration and a session's surroundings
// to the driver's options:
//
//   - the system prompt is Claude Code's preset with the instructions (and
//     the prelude) appended, never replaced, and it does not depend on the
//     workbench's content, so it stays byte-stable and the prompt cache
//     holds; the workbench index goes into the first message instead
//     (FirstMessage);
//   - allowed and disallowed tools, permission mode, model, effort, turn
//     and budget caps, subagents and MCP servers come from the spec;
//   - hooks: spec.Hooks first, then the spec's wall (guard.Wall: on the
//     main thread only the spec's allowed tools pass, an Agent call only
//     when it names one of spec.Agents, Bash as a bounded glance with
//     spec.Glance), then the loop guard unless spec.Loop.Off, then the
//     workbench guards (isolate when an agent is whose Isolation is a worktree; index and
//     spill with a workbench). The wall is
//     installed with or without a workbench, exactly once (the original
//     left a coordinator without a workbench unguarded);
//   - the tools that act beyond the turn (outlivingTools) are disallowed
//     for the session unless a worker names them;
//   - a spec with Glance runs git with optional locks off
//     (GIT_OPTIONAL_LOCKS=0), so a glance at git status writes no index;
//   - setting sources are none when portable, else the project's;
//   - env is spec.Env with the compact policy's variables on top;
//   - the store, with flush eager by default; resume, fork and resume-at.
//
// It returns an error wrapping ErrInvalidSpec for a spec without a name,
// negative caps, an unknown flush mode, or Fork or ResumeAt without Resume;
// and an error naming the folder for a plugin folder that exists but
// cannot be read. The options share no map or slice with spec or cfg.
func BuildOptions(spec AgentSpec, cfg BuildConfig) (claude.Options, error) {
	// A role given no language speaks the session's.
	spec = spec.inLang(cfg.Lang)
	if err := spec.validate(); err != nil {
		return claude.Options{}, err
	}
	if cfg.Resume == "" {
		switch {
		case cfg.Fork:
			return claude.Options{}, fmt.Errorf("%w: %s: Fork without Resume; name the session to fork", ErrInvalidSpec, spec.Name)
		case cfg.ResumeAt != "":
			return claude.Options{}, fmt.Errorf("%w: %s: ResumeAt without Resume; name the session to resume", ErrInvalidSpec, spec.Name)
		}
	}
	flush := cfg.Flush
	switch flush {
	case "":
		flush = claude.FlushEager
	case claude.FlushEager, claude.FlushBatched:
	default:
		return claude.Options{}, fmt.Errorf("%w: %s: Flush %q; want %q or %q", ErrInvalidSpec, spec.Name, flush, claude.FlushEager, claude.FlushBatched)
	}
	plugins, err := pluginDirs(cfg.Cwd, cfg.PluginDirs)
	if err != nil {
		return claude.Options{}, err
	}
	env, err := childEnv(spec, cfg.Handoff)
	if err != nil {
		return claude.Options{}, err
	}

	o := claude.Options{
		Cwd:             cfg.Cwd,
		SystemPrompt:    claude.PresetPrompt(paragraphs(spec.Instructions, cfg.Prelude)),
		Tools:           spec.offered(len(plugins) > 0),
		AllowedTools:    spec.Allowed(),
		DisallowedTools: spec.disallowed(),
		Model:           spec.Model,
		Effort:          spec.Effort,
		MaxTurns:        spec.MaxTurns,
		MaxBudgetUSD:    spec.MaxBudgetUSD,
		PermissionMode:  permissionMode(spec.PermissionMode),
		SettingSources:  []string{},
		PluginDirs:      plugins,
		AddDirs:         addDirs(cfg),
		Hooks:           buildHooks(spec, cfg),
		Env:             env,
		BaseEnv:         withoutDatabase(os.Environ()),
		JSONSchema:      spec.OutputSchema,
	}
	if cfg.NotPortable {
		o.SettingSources = []string{"project"}
	}
	if len(spec.Agents) > 0 {
		o.Agents = maps.Clone(spec.Agents)
	}
	if len(spec.MCPServers) > 0 {
		o.MCPServers = maps.Clone(spec.MCPServers)
	}
	if cfg.Resume != "" {
		o.Resume = cfg.Resume
		o.ForkSession = cfg.Fork
		o.ResumeSessionAt = cfg.ResumeAt
	}
	if cfg.Store != nil {
		o.SessionStore = cfg.Store
		o.SessionStoreFlush = flush
	}
	return o, nil
}

// FirstMessage is the prompt of a new session's first user message: the
// workbench's prompt block (where it is, what it holds, its three rules)
// followed by prompt, when there is a workbench and the spec wants it;
// prompt unchanged otherwise. The index lives here rather than in the
// system prompt because it changes with every file written: in the system
// prompt it broke the prompt cache (one run paid 3.7 times the cost).
// Only a new session needs it; a resumed one has it in its history. Call
// wb.Refresh first so that its folders exist.
func FirstMessage(wb *workbench.Workbench, spec AgentSpec, prompt string) string {
	if wb == nil || spec.NoWorkbench {
		return prompt
	}
	return wb.PromptBlock() + "\n\n---\n\n" + prompt
}

// paragraphs joins the non-blank texts, each trimmed, with a blank line.
func paragraphs(texts ...string) string {
	var out []string
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

// permissionMode maps the original's "default" to the CLI's own default.
func permissionMode(mode string) string {
	if mode == "default" {
		return ""
	}
	return mode
}

// childEnv is spec.Env with the compact policy's variables on top, and
// GIT_OPTIONAL_LOCKS=0 for a spec with Glance unless spec.Env sets it; nil
// when empty. Handoff without a policy means no_summary.
func childEnv(spec AgentSpec, handoff bool) (map[string]string, error) {
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	if _, set := env["GIT_OPTIONAL_LOCKS"]; spec.Glance && !set {
		env["GIT_OPTIONAL_LOCKS"] = "0"
	}
	policy := spec.Compact
	if policy == nil && handoff {
		policy = &CompactPolicy{Mode: CompactNoSummary}
	}
	if policy != nil {
		extra, err := policy.Env()
		if err != nil {
			return nil, fmt.Errorf("flower: %s: compact policy: %w", spec.Name, err)
		}
		maps.Copy(env, extra)
	}
	if len(env) == 0 {
		return nil, nil
	}
	return env, nil
}

// addDirs is cfg.AddDirs plus an external workbench's root, without
// repeats.
func addDirs(cfg BuildConfig) []string {
	dirs := slices.Clone(cfg.AddDirs)
	if wb := cfg.Workbench; wb != nil && wb.External() {
		root := wb.Root()
		if !slices.ContainsFunc(dirs, func(d string) bool { return filepath.Clean(d) == root }) {
			dirs = append(dirs, root)
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	return dirs
}

// pluginDirs returns the plugin folders that exist, as absolute paths (a
// relative one taken from cwd), so that the check and the CLI see the same
// folder. A missing folder is skipped and logged; one that exists but is
// not a readable folder is an error.
func pluginDirs(cwd string, dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		if strings.TrimSpace(d) == "" {
			continue
		}
		p := d
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		info, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			slog.Info("flower: plugin folder not found, skipped", "dir", p)
			continue
		case err != nil:
			return nil, fmt.Errorf("flower: plugin folder %s cannot be read: %w", p, err)
		case !info.IsDir():
			return nil, fmt.Errorf("flower: plugin folder %s is not a folder", p)
		}
		if err := readable(p); err != nil {
			return nil, fmt.Errorf("flower: plugin folder %s cannot be read: %w", p, err)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// readable reports whether the folder's entries can be listed.
func readable(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.ReadDir(1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// glanceWall is the spec's wall with what its glances' sandbox needs: the
// folders a glance reads (kept visible when they live under /tmp) and the
// .env files of the chain, which may hold the key (hidden).
func glanceWall(spec AgentSpec, cfg BuildConfig) guard.Wall {
	w := spec.wall(cfg.Workbench)
	if !w.Glance {
		return w
	}
	if cfg.Cwd != "" {
		w.Roots = append(w.Roots, cfg.Cwd)
	}
	w.Roots = append(w.Roots, addDirs(cfg)...)
	w.Hide = Environment{Cwd: cfg.Cwd}.DotenvPaths()
	return w
}

// buildHooks merges, in this order: spec.Hooks; the spec's wall (one guard
// per main thread, with or without a workbench); the loop guard unless the
// spec turns it off; the workbench guards (isolate when an agent is whose Isolation is a worktree, then index
// and spill with a workbench). Events left without a matcher are dropped.
func buildHooks(spec AgentSpec, cfg BuildConfig) map[string][]claude.HookMatcher {
	texts := guard.TextsFor(cfg.Lang)
	spill := max(cfg.SpillThreshold, 0) // 0: no spill guard
	hooks := guard.MergeHooks(
		spec.Hooks,
		map[string][]claude.HookMatcher{claude.PreToolUse: {texts.Wall(glanceWall(spec, cfg))}},
		loopHooks(texts, spec.Loop, cfg.OnLoop, cfg.OfferedTools),
		texts.WorkbenchHooks(cfg.Workbench, spill, spec.Agents),
	)
	maps.DeleteFunc(hooks, func(_ string, m []claude.HookMatcher) bool { return len(m) == 0 })
	return hooks
}
