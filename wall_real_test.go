package flower

// Real-CLI tests of the walls: a scripted model on a role's main thread
// calls every tool the pinned CLI reports in its init message, with inputs
// that would write, and tries the known ways around ephemeral.Is; nothing
// on disk may change and every refusal must reach the model.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/guard"
)

// cliTools asks the pinned CLI, with no flower option at all, which tools
// it offers: the list a wall must hold against.
func cliTools(t *testing.T) []string {
	t.Helper()
	srv := claudetest.NewServer(t, claudetest.Script{}.Handler())
	o := claude.Options{
		CLIPath: claudetest.CLIPath(t), Cwd: t.TempDir(), BaseEnv: claudetest.BaseEnv(), Env: claudetest.Env(t, srv),
		PermissionMode: "acceptEdits", SystemPrompt: claude.PresetPrompt(""),
	}
	init := initOf(t, queryAll(t, "hello", o))
	if init == nil || len(init.Tools) < 10 {
		t.Fatalf("the CLI's init message lists tools %v", init)
	}
	return init.Tools
}

func initOf(t *testing.T, msgs []claude.Message) *claude.SystemInit {
	t.Helper()
	for _, m := range msgs {
		if s, ok := m.(*claude.SystemMessage); ok && s.Init != nil {
			return s.Init
		}
	}
	return nil
}

func queryAll(t *testing.T, prompt string, o claude.Options) []claude.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var msgs []claude.Message
	for m, err := range claude.Query(ctx, prompt, o) {
		if err != nil {
			t.Fatalf("%s: %v", prompt, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// writingInput is an input of tool that would change something if the
// tool ran: a file in the workspace, a scheduled prompt, a worktree, a
// background command. A tool the table does not know (one the CLI added
// after this test was written) gets every field a writer might read.
func writingInput(tool, ws string) map[string]any {
	switch tool {
	case "Task", "Agent":
		return map[string]any{"description": "d", "prompt": "SUBAGENT:evil", "subagent_type": "general-purpose"}
	case "Bash":
		return map[string]any{"command": "touch pwned-bash", "description": "d"}
	case "Write":
		return map[string]any{"file_path": filepath.Join(ws, "pwned-write"), "content": "x"}
	case "Edit":
		return map[string]any{"file_path": filepath.Join(ws, "keep.txt"), "old_string": "keep", "new_string": "pwned"}
	case "NotebookEdit":
		return map[string]any{"notebook_path": filepath.Join(ws, "nb.ipynb"), "new_source": "print(1)", "cell_type": "code", "edit_mode": "insert"}
	case "CronCreate":
		return map[string]any{"cron": "* * * * *", "prompt": "touch pwned-cron", "durable": true, "recurring": true}
	case "CronDelete":
		return map[string]any{"id": "x"}
	case "TaskStop":
		return map[string]any{"task_id": "x"}
	case "ReportFindings":
		return map[string]any{"findings": []any{}}
	case "EnterWorktree":
		return map[string]any{"name": "pwned"}
	case "ExitWorktree":
		return map[string]any{"action": "remove", "discard_changes": true}
	case "Monitor":
		return map[string]any{"command": "touch pwned-monitor", "description": "m"}
	case "ScheduleWakeup":
		return map[string]any{"delaySeconds": 60, "prompt": "touch pwned-wakeup", "reason": "r"}
	case "SendMessage":
		return map[string]any{"to": "main", "message": "touch pwned-message"}
	case "Workflow":
		return map[string]any{"script": "touch pwned-workflow", "name": "w"}
	case "WebFetch":
		return map[string]any{"url": "http://127.0.0.1:9/", "prompt": "p"}
	case "WebSearch":
		return map[string]any{"query": "flower wall"}
	case "Skill":
		return map[string]any{"skill": "init"}
	case "Read":
		return map[string]any{"file_path": filepath.Join(ws, "keep.txt")}
	case "ToolSearch":
		return map[string]any{"query": "select:CronCreate", "max_results": 1}
	}
	return map[string]any{
		"command": "touch pwned-new", "file_path": filepath.Join(ws, "pwned-new"), "content": "x",
		"prompt": "touch pwned-new", "path": filepath.Join(ws, "pwned-new"),
	}
}

// knownInput reports whether writingInput has a valid input for tool. The
// CLI validates an input before any hook runs, so a tool it does not know
// may be refused by the CLI itself; either way it must not run.
func knownInput(tool string) bool {
	_, ok := writingInput(tool, "")["pwned-new"]
	return !ok && writingInput(tool, "")["command"] != "touch pwned-new"
}

// wallWorkspace is a git workspace with a committed file whose stat data is
// stale, so that a git status with optional locks on would rewrite the
// index.
func wallWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	for name, body := range map[string]string{
		"keep.txt": "keep\n", "victim": "victim\n", "f": "line\n",
		"nb.ipynb": `{"cells":[],"metadata":{},"nbformat":4,"nbformat_minor":5}`,
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "init"},
	} {
		git(t, ws, args...)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(ws, "keep.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	return ws
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// tree maps every file and folder under root to its content's hash.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// idPattern finds what differs between two sessions' bookkeeping paths:
// session uuids, agent ids, timestamps, process ids.
var idPattern = regexp.MustCompile(`probe-[A-Za-z0-9]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|agent-[0-9a-z]+|[0-9a-f]{8,}|[0-9]{4,}`)

// kinds are the paths of a tree with the ids taken out: the kinds of file
// the CLI keeps for any session.
func kinds(paths map[string]string) map[string]bool {
	out := map[string]bool{}
	for p := range paths {
		out[idPattern.ReplaceAllString(p, "#")] = true
	}
	return out
}

// wallScene runs a control session and then the attack in the same
// workspace, HOME and temp folder, and reports every change the attack
// made that the control session did not make too: the CLI's bookkeeping
// for a session (its transcript, a subagent's) is of a kind the control
// made, anything written by a tool is not.
type wallScene struct {
	t    *testing.T
	ws   string
	srv  *claudetest.Server
	env  map[string]string
	spec AgentSpec
}

func (s *wallScene) options(t *testing.T) claude.Options {
	o, err := BuildOptions(s.spec, BuildConfig{Cwd: s.ws, Handoff: true, Lang: Chinese})
	if err != nil {
		t.Fatal(err)
	}
	o.CLIPath = claudetest.CLIPath(t)
	o.BaseEnv = claudetest.BaseEnv()
	if o.Env == nil {
		o.Env = map[string]string{}
	}
	maps.Copy(o.Env, s.env)
	return o
}

func (s *wallScene) roots() map[string]string {
	return map[string]string{"workspace": s.ws, "HOME": s.env["HOME"], "temp": s.env["CLAUDE_CODE_TMPDIR"]}
}

// attack runs the control prompt, then the attack prompt, and returns the
// attack's messages and the changes it made beyond the control's kinds,
// besides the workspace files in expected.
func (s *wallScene) attack(control, attack string, expected ...string) ([]claude.Message, []string) {
	t := s.t
	before := map[string]map[string]string{}
	queryAll(t, control, s.options(t))
	for name, root := range s.roots() {
		before[name] = tree(t, root)
	}
	msgs := queryAll(t, attack, s.options(t))
	var changed []string
	for name, root := range s.roots() {
		after := tree(t, root)
		known := kinds(before[name])
		for p, sum := range after {
			old, existed := before[name][p]
			switch {
			case existed && old == sum:
			case name == "workspace" && slices.Contains(expected, p):
			case name == "workspace" || strings.HasPrefix(p, ".git"):
				changed = append(changed, fmt.Sprintf("%s: %s", name, p))
			case existed && !strings.HasPrefix(p, ".claude"+string(filepath.Separator)+"projects"):
				// A file the control session also had, rewritten: the
				// CLI's own state (.claude.json and the like).
			case !existed && known[idPattern.ReplaceAllString(p, "#")]:
			case name == "temp" && slices.ContainsFunc(strings.Split(filepath.ToSlash(p), "/"), func(e string) bool { return strings.HasPrefix(e, "fswatch-probe") }),
				name == "HOME" && filepath.ToSlash(p) == ".claude/.last-cleanup":
				// The CLI's own probe of file watching and its cleanup
				// mark, made in some runs and not others, whatever the
				// session does.
			case existed:
			default:
				changed = append(changed, fmt.Sprintf("%s: %s (new)", name, p))
			}
		}
		for p := range before[name] {
			if _, ok := after[p]; !ok {
				changed = append(changed, fmt.Sprintf("%s: %s (removed)", name, p))
			}
		}
	}
	slices.Sort(changed)
	return msgs, changed
}

// lastMainResults are the tool results of the last main-thread request, in
// call order.
func lastMainResults(srv *claudetest.Server) []claudetest.Block {
	var last *claudetest.Request
	for _, r := range srv.Requests() {
		if !r.Subagent {
			last = r
		}
	}
	if last == nil {
		return nil
	}
	return last.ToolResults()
}

// TestRealWallsHoldAgainstEveryToolTheCLIOffers calls, on the main thread
// of the coordinator, the judge and the clarifier, every tool the CLI's
// init message lists that the role was not given, with inputs that would
// write; the coordinator then dispatches its worker, which writes.
func TestRealWallsHoldAgainstEveryToolTheCLIOffers(t *testing.T) {
	tools := cliTools(t)
	t.Logf("the CLI offers %d tools: %v", len(tools), tools)
	worker := Worker("writes files", "You write files.", WithTools("Read", "Write", "Edit", "Bash"))
	roles := []struct {
		name    string
		spec    AgentSpec
		refusal func(tool string) string
	}{
		{"coordinator", Coordinator("协调者", "", map[string]claude.AgentDefinition{"coder": worker}),
			func(tool string) string {
				return fmt.Sprintf(guard.ChineseTexts.DelegateDeny, tool, guard.DefaultArtifacts)
			}},
		{"judge", Judge("设定目标", nil),
			func(tool string) string { return fmt.Sprintf(guard.ChineseTexts.WhitelistDeny, "设定目标", tool) }},
		{"clarifier", Clarify("确认需求", nil),
			func(tool string) string { return fmt.Sprintf(guard.ChineseTexts.WhitelistDeny, "确认需求", tool) }},
	}
	for _, role := range roles {
		t.Run(role.name, func(t *testing.T) {
			t.Parallel()
			ws := wallWorkspace(t)
			allowed := slices.Concat(role.spec.Allowed(), guard.AlwaysAllowed)
			// The CLI refuses a notebook edit of a file not read first,
			// before any hook: read both files so the edits reach the wall.
			var calls []string
			var turns []claudetest.Responder
			for _, f := range []string{"nb.ipynb", "keep.txt"} {
				calls = append(calls, "Read")
				turns = append(turns, claudetest.NewReply(claudetest.ToolUse("", "Read", map[string]any{"file_path": filepath.Join(ws, f)})))
			}
			for _, tool := range tools {
				// A coordinator's Bash passes only as a glance: try it too.
				if (slices.Contains(allowed, tool) && !(tool == "Bash" && role.spec.DelegateOnly)) || (tool == "Task" && slices.Contains(allowed, "Agent")) {
					continue
				}
				calls = append(calls, tool)
				turns = append(turns, claudetest.NewReply(claudetest.ToolUse("", tool, writingInput(tool, ws))))
			}
			control := []claudetest.Responder{claudetest.Say("control done")}
			if role.name == "coordinator" {
				dispatch := func(marker string) claudetest.Reply {
					return claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{"description": "write", "prompt": marker, "subagent_type": "coder"}))
				}
				control = []claudetest.Responder{dispatch("SUBAGENT:control"), claudetest.Say("control done")}
				turns = append(turns, dispatch("SUBAGENT:write"))
			}
			turns = append(turns, claudetest.Say("attack done"))
			srv := claudetest.NewServer(t, claudetest.Script{
				"SCENARIO:control": control,
				"SCENARIO:attack":  turns,
				"SUBAGENT:control": {claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "control.txt"), "content": "c"})), claudetest.Say("ok")},
				"SUBAGENT:write":   {claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "worker.txt"), "content": "by the worker"})), claudetest.Say("ok")},
				"SUBAGENT:evil":    {claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "pwned-agent"), "content": "x"})), claudetest.Say("ok")},
			}.Handler())
			scene := &wallScene{t: t, ws: ws, srv: srv, env: claudetest.Env(t, srv), spec: role.spec}
			var expected []string
			if role.name == "coordinator" {
				expected = []string{"worker.txt"}
			}
			msgs, changed := scene.attack("SCENARIO:control", "SCENARIO:attack", expected...)
			if len(changed) > 0 {
				t.Errorf("the attack changed %d paths:\n%s", len(changed), strings.Join(changed, "\n"))
			}
			offered := initOf(t, msgs).Tools
			results := lastMainResults(srv)
			if len(results) < len(calls) {
				t.Fatalf("%d tool results for %d calls", len(results), len(calls))
			}
			for i, tool := range calls {
				r := results[i]
				switch {
				case tool == "Read":
					if r.IsError {
						t.Errorf("Read refused: %.200q", r.Content)
					}
				case !r.IsError:
					t.Errorf("%s ran: %.200q", tool, r.Content)
				case tool == "TaskStop" && strings.Contains(r.Content, "No task found"):
					// The CLI looks the task up before any hook runs, and
					// there is no task to stop: refused without the wall.
				case !knownInput(tool) && strings.Contains(r.Content, "InputValidationError"):
					t.Logf("%s, a tool this test has no input for, was refused by the CLI's own validation", tool)
				case slices.Contains(offered, tool):
					if want := role.refusal(toolName(tool)); !strings.Contains(r.Content, want) {
						t.Errorf("%s: the model got %.300q, want the wall's refusal %q", tool, r.Content, want)
					}
				default:
					// Removed from the session (an outliving tool): the CLI
					// itself refuses it.
					if !strings.Contains(r.Content, "No such tool") {
						t.Errorf("%s (removed from the session): %.300q", tool, r.Content)
					}
				}
			}
			if role.name == "coordinator" {
				if b, err := os.ReadFile(filepath.Join(ws, "worker.txt")); err != nil || string(b) != "by the worker" {
					t.Errorf("the worker's Write: %q, %v", b, err)
				}
				for _, o := range outlivingTools {
					if slices.Contains(offered, o) {
						t.Errorf("%s is still offered to the session: %v", o, offered)
					}
				}
			}
		})
	}
}

// toolName is how a refusal names the tool: the CLI reports the Agent tool
// as Task in its init list and as Agent to hooks.
func toolName(tool string) string {
	if tool == "Task" {
		return "Agent"
	}
	return tool
}

// TestRealOnlyTheSpecsWorkersCanBeDispatched: the CLI offers its own
// agents beside a spec's (general-purpose, Explore, a fork of the main
// thread); on the coordinator's main thread only the spec's own worker
// runs, and every other dispatch is refused with the workers' names.
func TestRealOnlyTheSpecsWorkersCanBeDispatched(t *testing.T) {
	t.Parallel()
	ws := wallWorkspace(t)
	dispatch := func(input map[string]any) claudetest.Reply {
		input["description"], input["prompt"] = "write", "SUBAGENT:evil"
		return claudetest.NewReply(claudetest.ToolUse("", "Agent", input))
	}
	types := []any{"fork", "general-purpose", "Explore", nil, "hacker"}
	var turns []claudetest.Responder
	for _, typ := range types {
		input := map[string]any{}
		if typ != nil {
			input["subagent_type"] = typ
		}
		turns = append(turns, dispatch(input))
	}
	turns = append(turns,
		claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{"description": "write", "prompt": "SUBAGENT:write", "subagent_type": "coder"})),
		claudetest.Say("attack done"))
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:control": {
			claudetest.NewReply(claudetest.ToolUse("", "Agent", map[string]any{"description": "write", "prompt": "SUBAGENT:control", "subagent_type": "coder"})),
			claudetest.Say("control done"),
		},
		"SCENARIO:attack":  turns,
		"SUBAGENT:control": {claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "control.txt"), "content": "c"})), claudetest.Say("ok")},
		"SUBAGENT:evil":    {claudetest.NewReply(claudetest.ToolUse("", "Bash", map[string]any{"command": "touch pwned-agent", "description": "d"})), claudetest.Say("ok")},
		"SUBAGENT:write":   {claudetest.NewReply(claudetest.ToolUse("", "Write", map[string]any{"file_path": filepath.Join(ws, "worker.txt"), "content": "by the worker"})), claudetest.Say("ok")},
	}.Handler())
	spec := Coordinator("协调者", "", map[string]claude.AgentDefinition{"coder": Worker("writes files", "You write files.")})
	scene := &wallScene{t: t, ws: ws, srv: srv, env: claudetest.Env(t, srv), spec: spec}
	_, changed := scene.attack("SCENARIO:control", "SCENARIO:attack", "worker.txt")
	if len(changed) > 0 {
		t.Errorf("the attack changed %d paths:\n%s", len(changed), strings.Join(changed, "\n"))
	}
	results := lastMainResults(srv)
	if len(results) != len(types)+1 {
		t.Fatalf("%d tool results, want %d", len(results), len(types)+1)
	}
	for i, typ := range types {
		want := fmt.Sprintf(guard.ChineseTexts.WorkerDeny, typ, "coder")
		if typ == nil {
			want = fmt.Sprintf(guard.ChineseTexts.WorkerMissing, "coder")
		}
		if r := results[i]; !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("Agent(%v): the model got %.300q, want %q", typ, r.Content, want)
		}
	}
	if r := results[len(types)]; r.IsError {
		t.Errorf("the coder's dispatch was refused: %.300q", r.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "worker.txt")); err != nil || string(b) != "by the worker" {
		t.Errorf("the worker's Write: %q, %v", b, err)
	}
}

// TestRealGlanceBypassesChangeNothing tries one command of each class of
// bypass an adversarial review found in ephemeral.Is, on the coordinator's
// main thread: each is refused and nothing in the workspace or its .git
// changes; the glance that is allowed (git status, with stale index stat
// data) writes no index.
func TestRealGlanceBypassesChangeNothing(t *testing.T) {
	t.Parallel()
	ws := wallWorkspace(t)
	bypasses := []string{
		"command rm -v victim",                              // command stops reading options at its first operand
		"git config core.fsmonitor 'touch pwned-fsm' --get", // git config stops at its first operand: a write
		"git config --global alias.st '!touch pwned-alias' --get",
		"git reflog e$'x'pire --expire=now --all",                   // ANSI-C quoting hides the verb
		"awk -v f=/inet/tcp/0/127.0.0.1/9 'BEGIN{print \"x\" > f}'", // gawk network files
		"cat /dev/zero", // never ends
		"sed ':a;ba' f", // never ends
		"head -n 1 /dev/zero",
		// Issue 22's classes, one of each.
		`echo '\$(touch pwned-dollar)'; test -v "a[$_]"`,                                // test -v evaluates, $_ carries the substitution
		`awk 'BEGIN{SYMTAB["AR" "GV"][1]="/etc/hostname"; SYMTAB["AR" "GC"]=2}{print}'`, // gawk's SYMTAB reaches ARGV
		"git Status",                    // the repository's alias.Status
		"git describe --always --dirty", // refreshes .git/index
		"printenv",                      // the key into the model's context
		`jq -n '"abc" | gsub(""; "x")'`, // jq 1.6 loops
	}
	git(t, ws, "config", "alias.Status", "!touch pwned-alias")
	var turns []claudetest.Responder
	for _, cmd := range bypasses {
		turns = append(turns, bashReply(cmd))
	}
	turns = append(turns, bashReply("git status"), claudetest.Say("attack done"))
	srv := claudetest.NewServer(t, claudetest.Script{
		"SCENARIO:control": {bashReply("ls"), claudetest.Say("control done")},
		"SCENARIO:attack":  turns,
	}.Handler())
	spec := Coordinator("协调者", "", map[string]claude.AgentDefinition{"coder": Worker("writes files", "You write files.")})
	scene := &wallScene{t: t, ws: ws, srv: srv, env: claudetest.Env(t, srv), spec: spec}
	start := time.Now()
	_, changed := scene.attack("SCENARIO:control", "SCENARIO:attack")
	if len(changed) > 0 {
		t.Errorf("the attack changed %d paths:\n%s", len(changed), strings.Join(changed, "\n"))
	}
	t.Logf("both sessions took %v", time.Since(start).Round(time.Millisecond))
	results := lastMainResults(srv)
	if len(results) != len(bypasses)+1 {
		t.Fatalf("%d tool results, want %d", len(results), len(bypasses)+1)
	}
	want := fmt.Sprintf(guard.ChineseTexts.DelegateDeny, "Bash", guard.DefaultArtifacts)
	for i, cmd := range bypasses {
		if r := results[i]; !r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("%s: the model got %.300q, want the delegate refusal", cmd, r.Content)
		}
	}
	if r := results[len(bypasses)]; r.IsError || !strings.Contains(r.Content, "keep.txt") && !strings.Contains(r.Content, "nothing to commit") {
		t.Errorf("git status: %.300q", r.Content)
	}
}

// TestRealASlowGlanceEndsWithinItsLimit: a glance that runs past the
// glance limit is killed there, the model is told, and Runtime.Run goes on
// and returns; a glance at a FIFO nobody writes (on which the pinned CLI
// hangs past its own Bash timeout) is refused at once.
func TestRealASlowGlanceEndsWithinItsLimit(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := syscallMkfifo(filepath.Join(ws, "pipe")); err != nil {
		t.Fatal(err)
	}
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:slow": {
		bashReply("cat pipe"), bashReply("grep -r flower-never-finds-this /usr"), claudetest.Say("went on"),
	}}.Handler())
	rt := newTestRuntimeIn(t, ws, srv)
	lead := Coordinator("lead", "", map[string]claude.AgentDefinition{"coder": Worker("writes files", "You write files.")})
	const limit = time.Second
	lead.GlanceTimeout = limit
	start := time.Now()
	res, err := rt.Run(runCtx(t), lead, "SCENARIO:slow", RunOptions{})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the step took %v with a %v glance limit", took.Round(time.Millisecond), limit)
	// Unbounded, each glance would take the CLI's own Bash timeout (two
	// minutes); a loaded machine took 39 s bounded.
	if took > limit+90*time.Second {
		t.Errorf("the step took %v: the glance was not bounded", took)
	}
	if res.Text != "went on" {
		t.Errorf("result %q", res.Text)
	}
	results := lastMainResults(srv)
	if len(results) != 2 {
		t.Fatalf("%d tool results, want 2", len(results))
	}
	if r := results[0]; !r.IsError || !strings.Contains(r.Content, fmt.Sprintf(guard.ChineseTexts.DelegateDeny, "Bash", ".flower/artifacts/")) {
		t.Errorf("cat of a FIFO: the model got %.300q, want the delegate refusal", r.Content)
	}
	if r := results[1]; !r.IsError || !strings.Contains(r.Content, fmt.Sprintf(guard.ChineseTexts.GlanceTimedOut, "1")) {
		t.Errorf("the slow glance: the model got %.300q, want the note that it was stopped", r.Content)
	}
	// The history keeps the model's own command, not the wrapper, so that
	// expiry on a later resume still knows it for a glance.
	var commands []string
	last := srv.Requests()[len(srv.Requests())-1]
	for _, m := range last.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				commands = append(commands, string(b.Input))
			}
		}
	}
	if len(commands) != 2 || !strings.Contains(commands[1], `"grep -r flower-never-finds-this /usr"`) || strings.Contains(commands[1], "bash -c") {
		t.Errorf("the history's commands: %q", commands)
	}
}

// testChannel is a human channel whose ask answers at once and whose inbox
// holds one message.
type testChannel struct{ server *mcp.Server }

func newTestChannel(asked *atomic.Int32) testChannel {
	s := mcp.NewServer(&mcp.Implementation{Name: ChannelServer, Version: "1.0.0"}, nil)
	type askArgs struct {
		Question string `json:"question"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "ask", Description: "Asks the human"},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			asked.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer: yes"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "inbox", Description: "What the human said"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "inbox: use Go"}}}, nil, nil
		})
	return testChannel{server: s}
}

func (c testChannel) MCPServers() map[string]claude.MCPServer {
	return map[string]claude.MCPServer{ChannelServer: claude.SDKServer{Server: c.server}}
}

// TestRealTheWallLetsTheChannelThroughToolSearch: with the CLI's default
// tool search on, MCP tools are deferred; the coordinator reaches the
// channel's tools through ToolSearch, which every wall lets through, and
// their answers reach the model.
func TestRealTheWallLetsTheChannelThroughToolSearch(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	ch := newTestChannel(&asked)
	srv := claudetest.NewServer(t, claudetest.Script{"SCENARIO:ask": {
		claudetest.NewReply(claudetest.ToolUse("", "ToolSearch", map[string]any{"query": "select:" + AskTool + "," + InboxTool, "max_results": 5})),
		claudetest.NewReply(claudetest.ToolUse("", AskTool, map[string]any{"question": "Go or Rust?"})),
		claudetest.NewReply(claudetest.ToolUse("", InboxTool, map[string]any{})),
		claudetest.Say("asked"),
	}}.Handler())
	spec := Coordinator("协调者", "", map[string]claude.AgentDefinition{"coder": Worker("writes files", "You write files.")}, WithChannel(ch))
	scene := &wallScene{t: t, ws: t.TempDir(), srv: srv, env: claudetest.Env(t, srv), spec: spec}
	queryAll(t, "SCENARIO:ask", scene.options(t))
	if first := srv.Requests()[0]; slices.Contains(first.Tools, AskTool) {
		t.Logf("the CLI offered %s at once (not deferred)", AskTool)
	}
	results := lastMainResults(srv)
	if len(results) != 3 {
		t.Fatalf("%d tool results, want 3", len(results))
	}
	// ToolSearch answers with tool references, not text.
	for i, want := range []string{"", "answer: yes", "inbox: use Go"} {
		if r := results[i]; r.IsError || !strings.Contains(r.Content, want) {
			t.Errorf("result %d: %.300q, want %q", i, r.Content, want)
		}
	}
	if asked.Load() != 1 {
		t.Errorf("ask ran %d times, want 1", asked.Load())
	}
}
