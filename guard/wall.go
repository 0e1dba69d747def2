package guard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/ephemeral"
)

// DefaultGlanceTimeout bounds a glance that Wall lets through: the CLI
// kills the command after it, so a glance that never ends (cat of a FIFO,
// a loop ephemeral.Is could not see) costs at most this long.
const DefaultGlanceTimeout = 30 * time.Second

// AlwaysAllowed are the tools every main thread may call whatever its
// role: ToolSearch only loads the schemas of deferred tools, and the CLI
// defers some of the tools a role is given (WebFetch, WebSearch, MCP
// tools), so without it those would be out of reach.
var AlwaysAllowed = []string{"ToolSearch"}

// Wall is what a role's main thread may use; everything else is refused.
// The seed's guards were deny-lists (four hands-on tools); the CLI now
// offers over twenty tools, several of which write (scheduling, worktrees,
// monitors), and adds more every few weeks, so a deny-list is a wall with
// holes in it by construction. A Wall names what passes instead: a tool
// the CLI adds next month is refused until someone decides otherwise.
type Wall struct {
	// Role names the role in whitelist refusals; "" means
	// Texts.DefaultRole.
	Role string
	// Tools are the tools the main thread may call, by exact name, besides
	// AlwaysAllowed. "Agent" and "Task" (its older name) allow each other;
	// "mcp__<server>" allows every tool of that server. Entries with a
	// permission rule ("Bash(git log:*)") are approval rules for the CLI
	// and allow nothing here.
	Tools []string
	// Glance lets Bash through when ephemeral.Is accepts its command, in
	// the foreground and bounded by GlanceTimeout.
	Glance bool
	// GlanceTimeout is the longest a glance may run; 0 means
	// DefaultGlanceTimeout.
	GlanceTimeout time.Duration
	// Workers are the subagent types an Agent call may name. A call naming
	// any other type, the CLI's built-in agents and "fork" included, or
	// none, is refused: a built-in agent has every tool, and a fork is a
	// copy of the main thread's whole context with every tool, which is
	// exactly the worker the wall exists to prevent.
	Workers []string
	// Delegate refuses with the coordinator's text (dispatch a worker)
	// instead of the whitelist's. Bash in Tools then passes only as a
	// glance: Tools says what the CLI approves, the wall what runs.
	Delegate bool
	// Artifacts is the folder the delegate text names; "" means
	// DefaultArtifacts.
	Artifacts string
}

// Matcher is w's guard with the default texts: see Texts.Wall.
func (w Wall) Matcher() claude.HookMatcher { return Texts{}.Wall(w) }

// Wall is the allow-list on a role's main thread: a PreToolUse guard that
// matches every tool and, on the main thread only, lets through exactly
// what w allows; subagents keep the tools their definitions give them.
// Everything else is denied with the role's text, and so is any call the
// guard cannot read: it fails closed.
//
// An allowed Bash glance is answered "allow" with its input's timeout
// lowered to the glance limit, so the CLI kills it there; a glance asking
// for run_in_background is refused (a command that outlives the turn is
// work).
func (t Texts) Wall(w Wall) claude.HookMatcher {
	t = t.withDefaults()
	g := &wall{texts: t, w: w, tools: map[string]bool{}}
	if g.w.Role == "" {
		g.w.Role = t.DefaultRole
	}
	if g.w.Artifacts == "" {
		g.w.Artifacts = DefaultArtifacts
	}
	if g.w.GlanceTimeout <= 0 {
		g.w.GlanceTimeout = DefaultGlanceTimeout
	}
	for _, name := range slices.Concat(AlwaysAllowed, w.Tools) {
		switch {
		case strings.Contains(name, "("):
			continue
		case name == "Agent" || name == "Task":
			g.tools["Agent"], g.tools["Task"] = true, true
		case strings.HasPrefix(name, "mcp__") && strings.Count(name, "__") == 1:
			g.servers = append(g.servers, name+"__")
		default:
			g.tools[name] = true
		}
	}
	return claude.HookMatcher{Matcher: "", Hooks: []claude.HookFunc{g.check}}
}

type wall struct {
	texts   Texts
	w       Wall
	tools   map[string]bool
	servers []string // "mcp__<server>__" prefixes
}

func (g *wall) check(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
	if in == nil {
		return g.refuse("?"), nil
	}
	if !in.IsMainThread() {
		return nil, nil
	}
	name := in.ToolName
	switch {
	case name == "":
		return g.refuse("?"), nil
	case name == "Bash":
		return g.bash(in), nil
	case !g.allows(name):
		return g.refuse(name), nil
	case name == "Agent" || name == "Task":
		return g.dispatch(in), nil
	}
	return nil, nil
}

func (g *wall) allows(name string) bool {
	if g.tools[name] {
		return true
	}
	for _, prefix := range g.servers {
		if strings.HasPrefix(name, prefix) && len(name) > len(prefix) {
			return true
		}
	}
	return false
}

// refuse is the role's refusal of tool.
func (g *wall) refuse(tool string) *claude.HookOutput {
	if g.w.Delegate {
		return claude.Deny(fmt.Sprintf(g.texts.DelegateDeny, tool, g.w.Artifacts))
	}
	return claude.Deny(fmt.Sprintf(g.texts.WhitelistDeny, g.w.Role, tool))
}

// bash lets Bash through unchecked when the role has it outright, and as a
// bounded foreground glance when Is accepts the command.
func (g *wall) bash(in *claude.HookInput) *claude.HookOutput {
	if g.tools["Bash"] && !g.w.Delegate {
		return nil
	}
	if !g.w.Glance {
		return g.refuse("Bash")
	}
	input, err := in.ToolInputMap()
	if err != nil {
		logger().Warn("guard: wall: Bash input unreadable, denied", "err", err)
		return g.refuse("Bash")
	}
	cmd, _ := input["command"].(string)
	if !ephemeral.Is(cmd) {
		return g.refuse("Bash")
	}
	if bg, ok := input["run_in_background"]; ok && bg != nil && !isFalse(bg) {
		return claude.Deny(g.texts.GlanceBackground)
	}
	limit := g.w.GlanceTimeout.Milliseconds()
	if asked, ok := millis(input["timeout"]); !ok || asked <= 0 || asked > limit {
		input["timeout"] = limit
	}
	raw, err := encodeJSON(input)
	if err != nil {
		logger().Warn("guard: wall: cannot encode the bounded glance, denied", "err", err)
		return g.refuse("Bash")
	}
	return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
		HookEventName:      claude.PreToolUse,
		PermissionDecision: claude.DecisionAllow,
		UpdatedInput:       raw,
	}}
}

// dispatch lets an Agent call through only when it names one of the
// role's workers.
func (g *wall) dispatch(in *claude.HookInput) *claude.HookOutput {
	input, err := in.ToolInputMap()
	if err != nil {
		logger().Warn("guard: wall: Agent input unreadable, denied", "err", err)
		return claude.Deny(fmt.Sprintf(g.texts.WorkerMissing, g.workerList()))
	}
	typ, isString := input["subagent_type"].(string)
	switch {
	case !isString || strings.TrimSpace(typ) == "":
		return claude.Deny(fmt.Sprintf(g.texts.WorkerMissing, g.workerList()))
	case !slices.Contains(g.w.Workers, typ):
		return claude.Deny(fmt.Sprintf(g.texts.WorkerDeny, typ, g.workerList()))
	}
	return nil
}

// workerList names the workers for a refusal, sorted.
func (g *wall) workerList() string {
	if len(g.w.Workers) == 0 {
		return g.texts.NoWorkers
	}
	names := slices.Sorted(slices.Values(g.w.Workers))
	return strings.Join(names, ", ")
}

// isFalse reports whether v is the JSON false.
func isFalse(v any) bool {
	b, ok := v.(bool)
	return ok && !b
}

// millis reads a JSON number of milliseconds.
func millis(v any) (int64, bool) {
	n, ok := v.(interface{ Int64() (int64, error) })
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}
