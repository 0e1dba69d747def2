package guard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	// the foreground, bounded by GlanceTimeout and, where bubblewrap runs,
	// inside the sandbox (see Sandbox).
	Glance bool
	// Hide are files and folders a glance's sandbox replaces with empty
	// ones besides the CLI's own credentials: the .env files that held the
	// key, for one.
	Hide []string
	// Roots are the folders a glance reads (the workspace, added
	// folders): one under /tmp is bound again over the sandbox's private
	// /tmp.
	Roots []string
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
// An allowed Bash glance is answered "allow" with its command wrapped so
// that it ends at the glance limit (see bounded) and the CLI's own timeout
// lowered to just past it; a glance asking for run_in_background is refused
// (a command that outlives the turn is work).
func (t Texts) Wall(w Wall) claude.HookMatcher {
	t = t.withDefaults()
	g := &wall{texts: t, w: w, tools: map[string]bool{}}
	if w.Glance {
		if p, err := exec.LookPath("timeout"); err == nil {
			g.timeoutCmd = p
		} else {
			logger().Warn("guard: wall: no timeout program on PATH; glances are bounded by the CLI's Bash timeout only, which moves a slow command to the background", "err", err)
		}
		g.sandbox = DetectSandbox()
		if g.sandbox.Active() {
			// DetectSandbox found both.
			g.bashCmd, _ = exec.LookPath("bash")
			g.envCmd, _ = exec.LookPath("env")
		}
		if !g.sandbox.Active() {
			warnNoSandboxOnce(g.sandbox)
		}
	}
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

// acceptEveryGlance makes the wall take every Bash command for a glance,
// so that a test can show what the sandbox alone holds. Only this
// package's tests set it: nothing a user runs or configures reaches it.
var acceptEveryGlance atomic.Bool

type wall struct {
	texts      Texts
	w          Wall
	tools      map[string]bool
	servers    []string // "mcp__<server>__" prefixes
	timeoutCmd string   // the coreutils timeout program, "" when missing
	sandbox    Sandbox  // where glances run
	bashCmd    string   // bash's path, for the sandbox
	envCmd     string   // env's path, for the sandbox
}

// glanceGrace is how long after its limit a glance has to die: timeout's
// SIGKILL follows its SIGTERM by this much.
const glanceGrace = 5 * time.Second

// bounded wraps a glance so that it ends at the limit: the coreutils
// timeout program signals the glance's whole process group, SIGKILL
// following SIGTERM after glanceGrace, and a note tells the model why the
// output stopped. The command runs in a bash of its own, the same shell
// the CLI runs it in. The transcript keeps the model's own command (the
// hook changes what runs, not what was asked), so expiry still sees the
// glance.
func (g *wall) bounded(cmd string, limit time.Duration) string {
	secs := seconds(limit)
	note := fmt.Sprintf(g.texts.GlanceTimedOut, secs)
	return fmt.Sprintf("%s -k %d %s bash -c %s; s=$?; if [ $s -eq 124 ]; then printf '%%s\\n' %s >&2; fi; exit $s",
		shellQuote(g.timeoutCmd), int(glanceGrace.Seconds()), secs, shellQuote(cmd), shellQuote(note))
}

// gitHardening is the git configuration the sandbox gives a glance (see
// sandboxEnv), as assignments before the command for a glance run
// without it: no index written, no fsmonitor program run, and a folder
// laid out as a bare repository (which survives a clone as plain files,
// and whose config may name a diff.external program) is no repository
// unless named with --git-dir.
const gitHardening = "GIT_OPTIONAL_LOCKS=0 GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=safe.bareRepository GIT_CONFIG_VALUE_0=explicit " +
	"GIT_CONFIG_KEY_1=core.fsmonitor GIT_CONFIG_VALUE_1=false "

// seconds is limit in seconds as timeout reads it.
func seconds(limit time.Duration) string {
	return strconv.FormatFloat(limit.Seconds(), 'f', -1, 64)
}

// shellQuote quotes s as one word for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	if !acceptEveryGlance.Load() && (!ephemeral.Is(cmd) || namesSpecialFile(cmd, in.Cwd) || namesCredentialFile(cmd)) {
		return g.refuse("Bash")
	}
	// git diff against the working tree rewrites .git/index; only the
	// sandbox's read-only filesystem stops it.
	if !acceptEveryGlance.Load() && !g.sandbox.Active() && ephemeral.RefreshesIndex(cmd) {
		return g.refuse("Bash")
	}
	// Without the sandbox nothing hides the credential files: the words,
	// as bash expands them, must not reach them.
	if !acceptEveryGlance.Load() && !g.sandbox.Active() && readsCredentials(cmd, in.Cwd, credentialPlaces(g.w.Hide)) {
		return g.refuse("Bash")
	}
	if bg, ok := input["run_in_background"]; ok && bg != nil && !isFalse(bg) {
		return claude.Deny(g.texts.GlanceBackground)
	}
	// A shorter limit the model asked for is kept. The CLI's own timeout
	// is only a backstop, just past the wrapper's: when it passes, the CLI
	// moves the command to the background rather than killing it.
	limit := g.w.GlanceTimeout
	if asked, ok := millis(input["timeout"]); ok && asked > 0 && time.Duration(asked)*time.Millisecond < limit {
		limit = time.Duration(asked) * time.Millisecond
	}
	input["run_in_background"] = false
	switch {
	case g.sandbox.Active():
		input["command"] = g.sandboxed(cmd, limit)
	case g.timeoutCmd != "":
		input["command"] = gitHardening + g.bounded(cmd, limit)
	default:
		input["command"] = gitHardening + "bash -c " + shellQuote(cmd)
	}
	input["timeout"] = (limit + glanceGrace + time.Second).Milliseconds()
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

// namesSpecialFile reports whether a word of cmd names an existing file
// that is neither a regular file nor a folder: a FIFO nobody writes, a
// socket, a device other than /dev/null. Reading one may never end, and
// the pinned CLI was seen to hang on "cat <fifo>" past its own Bash
// timeout, so no time limit would save the step. ephemeral.Is refuses the
// device paths it can see; this looks at the disk, where a glance's
// operands really are. Words are split loosely (on blanks, shell
// operators, quotes and "="), which can only find more names, never fewer.
func namesSpecialFile(cmd, cwd string) bool {
	words := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|<>()'\"=", r)
	})
	for _, w := range words {
		if w == "/dev/null" {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			if cwd == "" {
				continue
			}
			p = filepath.Join(cwd, p)
		}
		info, err := os.Stat(p)
		if err == nil && !info.Mode().IsRegular() && !info.IsDir() {
			return true
		}
	}
	return false
}

// credentialNames are the base names of the files that hold a key or a
// token: .env files (flower's chain), the CLI's .credentials.json and
// .claude.json.
var credentialNames = []string{".env", ".credentials.json", ".claude.json"}

// namesCredentialFile reports whether a word of cmd names, or as a glob
// could name, a file that holds a key or a token. The sandbox hides them
// where it runs; where it cannot, this is what keeps a glance from
// printing the key into the model's context. Words are split as in
// namesSpecialFile.
func namesCredentialFile(cmd string) bool {
	words := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|<>()'\"=", r)
	})
	for _, w := range words {
		base := strings.ToLower(w[strings.LastIndexByte(w, '/')+1:])
		if strings.HasPrefix(base, ".env") || strings.Contains(base, "credentials") || strings.HasPrefix(base, ".claude.json") {
			return true
		}
		if strings.ContainsAny(base, "*?[") {
			for _, name := range credentialNames {
				if ok, _ := filepath.Match(base, name); ok {
					return true
				}
			}
		}
	}
	return false
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
