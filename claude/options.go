package claude

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options configure one CLI process. The zero value runs the CLI found on
// the usual paths with an empty system prompt and the CLI's defaults.
type Options struct {
	// CLIPath is the claude binary; empty means discover it (see FindCLI).
	CLIPath string
	// Launcher, when set, is the command the CLI's session is started
	// through: its program and arguments, then the CLI's path and
	// arguments (a sandbox, nice). The CLI's process group is the
	// launcher's, so stopping it stops what the launcher started.
	Launcher []string
	// Cwd is the child's working directory (and PWD); empty inherits ours.
	Cwd string

	// SystemPrompt: the zero value sends an empty custom prompt, as the
	// official SDK does; use PresetPrompt for Claude Code's own prompt.
	SystemPrompt SystemPrompt

	// Tools restricts the built-in tools: nil leaves the CLI's default set,
	// an empty non-nil slice disables every built-in, []string{"default"}
	// asks for the preset explicitly.
	Tools []string
	// AllowedTools are approved without asking (not an exclusive list).
	AllowedTools []string
	// DisallowedTools are removed for the whole session, subagents included.
	DisallowedTools []string

	Model         string
	FallbackModel string
	// Effort is low, medium, high, xhigh or max.
	Effort string
	// Thinking is "adaptive", "disabled", or "" for the CLI's default;
	// MaxThinkingTokens > 0 sets a fixed thinking budget instead.
	Thinking          string
	MaxThinkingTokens int
	// TaskBudget is a total token budget for the task (--task-budget); 0
	// omits it.
	TaskBudget int
	// MaxTurns caps the agentic turns; 0 means no cap.
	MaxTurns int
	// MaxBudgetUSD caps the session's cost; 0 means no cap.
	MaxBudgetUSD float64
	Betas        []string
	// PermissionMode is one of the Permission* constants (acceptEdits,
	// auto, bypassPermissions, manual (formerly default), dontAsk, plan);
	// empty keeps the CLI's default.
	PermissionMode string
	// PermissionPromptTool names an MCP tool that answers permission
	// prompts. It is forced to "stdio" when CanUseTool is set.
	PermissionPromptTool string

	// ContinueConversation resumes the most recent session of Cwd.
	ContinueConversation bool
	// Resume resumes a session by id.
	Resume string
	// SessionID fixes the id of a new session.
	SessionID string
	// ForkSession copies the resumed history into a new session id.
	ForkSession bool
	// ResumeSessionAt loads the resumed history only up to this entry uuid.
	ResumeSessionAt string
	// ResumeDropsTurn makes the CLI check that everything after the
	// truncation point belongs to this prompt uuid's turn, refusing the
	// resume otherwise ("Resume rejected by --resume-drops-turn"). nil
	// omits the flag; an empty string is still sent.
	ResumeDropsTurn *string

	// Settings is a JSON string or a path to a settings file.
	Settings string
	AddDirs  []string
	// MCPServers maps server names to their configuration. SDKServer
	// values run in this process and are answered through the control
	// protocol.
	MCPServers map[string]MCPServer
	// MCPConfig is a JSON string or a path passed as --mcp-config when
	// MCPServers is empty.
	MCPConfig       string
	StrictMCPConfig bool

	IncludePartialMessages bool
	IncludeHookEvents      bool
	// SettingSources: nil loads the CLI's defaults; an empty non-nil slice
	// loads none (portable); otherwise any of user, project, local.
	SettingSources []string
	// PluginDirs are local plugin folders (--plugin-dir).
	PluginDirs []string
	// ExtraArgs adds flags verbatim: a nil value gives --key, a value
	// starting with '-' gives --key=value, otherwise --key value. Keys are
	// sent in sorted order.
	ExtraArgs map[string]*string
	// JSONSchema asks for structured output matching this schema.
	JSONSchema json.RawMessage

	// Agents are registered in initialize, never on the command line.
	Agents map[string]AgentDefinition
	// ForwardSubagentText forwards subagents' text and thinking blocks too.
	ForwardSubagentText bool
	// Hooks maps event names (PreToolUse, …, any string) to matchers.
	Hooks map[string][]HookMatcher
	// CanUseTool answers the CLI's permission prompts in this process.
	CanUseTool CanUseTool

	// Env is laid over the inherited environment (or BaseEnv).
	Env map[string]string
	// BaseEnv replaces the inherited environment when non-nil, as
	// exec.Cmd.Env does ("KEY=value" entries).
	BaseEnv []string
	// Stderr receives the child's stderr line by line.
	Stderr func(line string)

	// SessionStore mirrors the transcript (--session-mirror) and backs
	// resume. SessionStoreFlush chooses when mirrored entries are written
	// (zero: FlushBatched, as the official SDK).
	SessionStore      SessionStore
	SessionStoreFlush FlushMode
	// StoreTimeout bounds each store call; zero means 60 s.
	StoreTimeout time.Duration

	// MaxLineBytes limits one stdout line; zero means 1 MiB.
	MaxLineBytes int
	// ControlTimeout bounds our control requests; zero means 60 s.
	ControlTimeout time.Duration
	// InitializeTimeout is the window initialize waits for an answer; zero
	// means 60 s (or CLAUDE_CODE_STREAM_CLOSE_TIMEOUT, in ms, when larger).
	// On Linux the wait goes on, window after window up to ten, while the
	// CLI uses CPU at its start (a busy machine), and says so once.
	InitializeTimeout time.Duration
	// ShutdownGrace is each wait of the shutdown escalation (EOF, SIGTERM,
	// SIGKILL); zero means 5 s.
	ShutdownGrace time.Duration
	// SkipVersionCheck skips the `claude -v` probe.
	SkipVersionCheck bool
	// HandlerGrace bounds how long Close (and so Query) waits for hook,
	// permission and SDK MCP callbacks once their contexts are cancelled; a
	// callback that ignores its context is then left behind and logged.
	// Zero means 5 s.
	HandlerGrace time.Duration
	// FollowUpWait is how long stdin stays open after a result when a
	// background task ended during the turn (or since), waiting for the
	// follow-up turn the CLI may start to report it; a turn that starts
	// keeps stdin open until its own result. Zero means 3 s.
	FollowUpWait time.Duration
	// BackgroundWait bounds how long stdin stays open after a result while
	// background tasks run and no turn starts: a background shell (a server,
	// or a command the CLI backgrounded at its timeout) may never end. On
	// EOF the CLI ends, stopping its tasks. Zero means 30 min.
	BackgroundWait time.Duration
}

// Permission modes the pinned CLI (2.1.332) accepts for PermissionMode and
// SetPermissionMode. PermissionManual was called "default" before.
const (
	PermissionAcceptEdits = "acceptEdits"
	PermissionAuto        = "auto"
	PermissionBypass      = "bypassPermissions"
	PermissionManual      = "manual"
	PermissionDontAsk     = "dontAsk"
	PermissionPlan        = "plan"
)

// FlushMode chooses when mirrored transcript entries reach the store.
type FlushMode string

const (
	// FlushBatched writes before each result is delivered, past 500
	// entries or 1 MiB pending, and at the end of the stream.
	FlushBatched FlushMode = "batched"
	// FlushEager writes after every mirrored frame.
	FlushEager FlushMode = "eager"
)

// SystemPrompt is one of: none (the zero value: an empty custom prompt), a
// custom text, a file, or Claude Code's preset with an optional append.
type SystemPrompt struct {
	Text   string
	File   string
	Preset bool
	Append string
}

// PresetPrompt is Claude Code's own system prompt with text appended.
func PresetPrompt(appendText string) SystemPrompt {
	return SystemPrompt{Preset: true, Append: appendText}
}

// TextPrompt replaces the system prompt with text.
func TextPrompt(text string) SystemPrompt { return SystemPrompt{Text: text} }

// ErrInvalidOptions marks option combinations the driver refuses.
var ErrInvalidOptions = fmt.Errorf("claude: invalid options")

func (o *Options) validate() error {
	if o.CanUseTool != nil && o.PermissionPromptTool != "" && o.PermissionPromptTool != "stdio" {
		return fmt.Errorf("%w: CanUseTool answers permission prompts; PermissionPromptTool %q cannot be used with it", ErrInvalidOptions, o.PermissionPromptTool)
	}
	if o.SessionID != "" && (o.Resume != "" || o.ContinueConversation) && !o.ForkSession {
		return fmt.Errorf("%w: SessionID with Resume or ContinueConversation needs ForkSession", ErrInvalidOptions)
	}
	if o.ContinueConversation && o.SessionStore != nil {
		if _, ok := o.SessionStore.(SessionLister); !ok {
			return fmt.Errorf("%w: ContinueConversation with a SessionStore needs a store that lists sessions (SessionLister)", ErrInvalidOptions)
		}
	}
	switch o.Thinking {
	case "", "adaptive", "disabled":
	default:
		return fmt.Errorf("%w: Thinking %q (want adaptive or disabled, or set MaxThinkingTokens)", ErrInvalidOptions, o.Thinking)
	}
	switch o.SessionStoreFlush {
	case "", FlushBatched, FlushEager:
	default:
		return fmt.Errorf("%w: SessionStoreFlush %q (want %q or %q)", ErrInvalidOptions, o.SessionStoreFlush, FlushEager, FlushBatched)
	}
	for name, s := range o.MCPServers {
		if s == nil {
			return fmt.Errorf("%w: MCP server %q is nil", ErrInvalidOptions, name)
		}
		if sdk, ok := s.(SDKServer); ok && sdk.Server == nil {
			return fmt.Errorf("%w: SDK MCP server %q has no Server", ErrInvalidOptions, name)
		}
	}
	return nil
}

func (o *Options) maxLineBytes() int {
	if o.MaxLineBytes > 0 {
		return o.MaxLineBytes
	}
	return 1 << 20
}

func (o *Options) followUpWait() time.Duration { return orDefault(o.FollowUpWait, 3*time.Second) }

func (o *Options) backgroundWait() time.Duration { return orDefault(o.BackgroundWait, 30*time.Minute) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// args builds the CLI's argument list (without the binary) in the order of
// the official SDK.
func (o *Options) args() ([]string, error) {
	a := []string{"--output-format", "stream-json", "--verbose"}
	sp := o.SystemPrompt
	switch {
	case sp.Preset:
		if sp.Append != "" {
			a = append(a, "--append-system-prompt", sp.Append)
		}
	case sp.File != "":
		a = append(a, "--system-prompt-file", sp.File)
	default:
		a = append(a, "--system-prompt", sp.Text)
	}
	if o.Tools != nil {
		a = append(a, "--tools", strings.Join(o.Tools, ","))
	}
	if len(o.AllowedTools) > 0 {
		a = append(a, "--allowedTools", strings.Join(o.AllowedTools, ","))
	}
	if o.MaxTurns > 0 {
		a = append(a, "--max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.MaxBudgetUSD > 0 {
		a = append(a, "--max-budget-usd", strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	if len(o.DisallowedTools) > 0 {
		a = append(a, "--disallowedTools", strings.Join(o.DisallowedTools, ","))
	}
	if o.TaskBudget > 0 {
		a = append(a, "--task-budget", strconv.Itoa(o.TaskBudget))
	}
	if o.Model != "" {
		a = append(a, "--model", o.Model)
	}
	if o.FallbackModel != "" {
		a = append(a, "--fallback-model", o.FallbackModel)
	}
	if len(o.Betas) > 0 {
		a = append(a, "--betas", strings.Join(o.Betas, ","))
	}
	switch {
	case o.CanUseTool != nil:
		a = append(a, "--permission-prompt-tool", "stdio")
	case o.PermissionPromptTool != "":
		a = append(a, "--permission-prompt-tool", o.PermissionPromptTool)
	}
	if o.PermissionMode != "" {
		a = append(a, "--permission-mode", o.PermissionMode)
	}
	if o.ContinueConversation {
		a = append(a, "--continue")
	}
	// The equals form keeps a value starting with '-' from being read as a
	// flag: --resume takes an optional value.
	if o.Resume != "" {
		a = append(a, "--resume="+o.Resume)
	}
	if o.SessionID != "" {
		a = append(a, "--session-id="+o.SessionID)
	}
	if o.Settings != "" {
		a = append(a, "--settings", o.Settings)
	}
	for _, d := range o.AddDirs {
		a = append(a, "--add-dir", d)
	}
	if len(o.MCPServers) > 0 {
		cfg, err := mcpConfigJSON(o.MCPServers)
		if err != nil {
			return nil, err
		}
		a = append(a, "--mcp-config", cfg)
	} else if o.MCPConfig != "" {
		a = append(a, "--mcp-config", o.MCPConfig)
	}
	if o.IncludePartialMessages {
		a = append(a, "--include-partial-messages")
	}
	if o.IncludeHookEvents {
		a = append(a, "--include-hook-events")
	}
	if o.StrictMCPConfig {
		a = append(a, "--strict-mcp-config")
	}
	if o.ForkSession {
		a = append(a, "--fork-session")
	}
	if o.ResumeSessionAt != "" {
		a = append(a, "--resume-session-at="+o.ResumeSessionAt)
	}
	if o.ResumeDropsTurn != nil {
		a = append(a, "--resume-drops-turn="+*o.ResumeDropsTurn)
	}
	if o.SessionStore != nil {
		a = append(a, "--session-mirror")
	}
	if o.SettingSources != nil {
		a = append(a, "--setting-sources="+strings.Join(o.SettingSources, ","))
	}
	for _, d := range o.PluginDirs {
		a = append(a, "--plugin-dir", d)
	}
	keys := make([]string, 0, len(o.ExtraArgs))
	for k := range o.ExtraArgs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		flag := "--" + strings.TrimLeft(k, "-")
		switch v := o.ExtraArgs[k]; {
		case v == nil:
			a = append(a, flag)
		case strings.HasPrefix(*v, "-"):
			a = append(a, flag+"="+*v)
		default:
			a = append(a, flag, *v)
		}
	}
	switch {
	case o.MaxThinkingTokens > 0:
		a = append(a, "--max-thinking-tokens", strconv.Itoa(o.MaxThinkingTokens))
	case o.Thinking != "":
		a = append(a, "--thinking", o.Thinking)
	}
	if o.Effort != "" {
		a = append(a, "--effort", o.Effort)
	}
	if len(o.JSONSchema) > 0 {
		a = append(a, "--json-schema", string(o.JSONSchema))
	}
	return append(a, "--input-format", "stream-json"), nil
}
