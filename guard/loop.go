package guard

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/flowerrun/flower/claude"
)

// DefaultLoopRepeats is how many identical calls with identical results a
// thread may make in a row before Loop refuses the next identical one.
// Three: re-reading a file once after an edit elsewhere is normal, a third
// identical answer is not news, and a fourth request for it is a loop.
const DefaultLoopRepeats = 3

// DefaultLoopCycles is how many times a thread may go round the same
// cycle of two to MaxLoopCycle different calls (A B A B A B, A B C A B C
// A B C), each answered the same as before, before Loop refuses the next
// call that would go on with the cycle.
const DefaultLoopCycles = 3

// MaxLoopCycle is the longest cycle of calls Loop recognises.
const MaxLoopCycle = 4

// WaitingTools are the tools among offered (the CLI's init message lists
// what it offers) that wait on background work: asking again with the
// same answer ("still running") is how waiting looks, so Loop never counts
// them. They are told by name, since the CLI says nothing else of a tool:
// one that reads a background task's output (…Output) or watches one
// (Monitor, Sleep, Wait…).
func WaitingTools(offered []string) []string {
	var out []string
	for _, tool := range offered {
		if waitingTool(tool) {
			out = append(out, tool)
		}
	}
	return out
}

func waitingTool(tool string) bool {
	return strings.HasSuffix(tool, "Output") || tool == "Monitor" || strings.HasPrefix(tool, "Sleep") || strings.HasPrefix(tool, "Wait")
}

// Loop configures the loop guard (Texts.Loop): it notices a thread asking
// the same thing and getting the same answer, which is how a model looks
// when it is stuck, and refuses the next ask with a note saying so.
type Loop struct {
	// Repeats is how many identical calls (same tool, same input once
	// canonicalised) with identical results a thread may make in a row:
	// the next identical call is refused. 0 means DefaultLoopRepeats; a
	// negative value turns the check off.
	Repeats int
	// Cycles is how many times a thread may repeat a cycle of 2 to
	// MaxLoopCycle calls (A B, A B C, A B C D), each with its earlier
	// result: the next call of the cycle is refused. 0 means DefaultLoopCycles; a negative value turns
	// the check off.
	Cycles int
	// MainThread watches the main thread too; without it only subagents
	// (workers) are watched.
	MainThread bool
	// Exempt are tools never counted, beside the waiting tools the CLI
	// offers (WaitingTools of Offered). A call of an exempt tool does not
	// break a sequence either: it is not seen at all.
	Exempt []string
	// Offered, when set, returns the tools the CLI offers (its init
	// message's list; nil until it is known); their waiting tools are
	// exempt. Without it, a tool is taken as waiting by its name alone.
	Offered func() []string
	// OnLoop, if not nil, is called for every refusal with the thread
	// (agent_id, "" for the main thread), the tool, and how many calls of
	// the loop there were counting the refused one. It may be called from
	// several goroutines at once and should return quickly.
	OnLoop func(agentID, tool string, count int)
}

// LoopHooks is Loop's guard with the default texts: see Texts.Loop.
func LoopHooks(l Loop) map[string][]claude.HookMatcher { return Texts{}.Loop(l) }

// Loop returns the loop guard: a PreToolUse hook that refuses a call which
// would continue a loop, the PostToolUse and PostToolUseFailure hooks that
// record each call's result (a hash of its response or error and of the
// state of the files it names), which is what "the same result" is judged
// by, and a SubagentStop hook that ends a background agent's wait. Install
// them together: they share their state. Every hook matches every tool.
//
// A call is its tool and what it asks (significantInput: a command, a
// path, a dispatch's prompt; free text such as a description is ignored).
// Waiting is no loop: while a thread has a background task running (a
// Bash or an Agent run_in_background, until SubagentStop, TaskStop or its
// output says it ended) nothing it repeats is refused, and a call whose
// files (the paths it names) changed since the last same call is news.
//
// Threads are kept apart by agent_id, so two workers doing the same thing
// in parallel are no loop. Only completed calls count: a call refused by
// any guard leaves no result and breaks nothing. A refused call leaves the
// history as it was, so asking the same again is refused again, while any
// other call goes through and, once its result differs, ends the loop.
// A call whose input cannot be read is compared by its raw bytes.
func (t Texts) Loop(l Loop) map[string][]claude.HookMatcher { return t.loopGuard(l).hooks() }

// loopGuard fills l's defaults and makes the guard's state.
func (t Texts) loopGuard(l Loop) *loopGuard {
	if l.Repeats == 0 {
		l.Repeats = DefaultLoopRepeats
	}
	if l.Cycles == 0 {
		l.Cycles = DefaultLoopCycles
	}
	g := &loopGuard{texts: t.withDefaults(), l: l, threads: map[string]*loopThread{}, pending: map[string]pendingCall{},
		background: map[string]background{}, now: time.Now}
	if l.Repeats > 0 {
		g.keep = l.Repeats
	}
	if l.Cycles > 0 {
		g.keep = max(g.keep, MaxLoopCycle*l.Cycles)
	}
	return g
}

// hooks are g's three hooks, each matching every tool.
func (g *loopGuard) hooks() map[string][]claude.HookMatcher {
	all := func(f claude.HookFunc) []claude.HookMatcher {
		return []claude.HookMatcher{{Matcher: "", Hooks: []claude.HookFunc{f}}}
	}
	return map[string][]claude.HookMatcher{
		claude.PreToolUse:         all(g.pre),
		claude.PostToolUse:        all(g.post),
		claude.PostToolUseFailure: all(g.post),
		claude.SubagentStop:       all(g.subagentStop),
	}
}

// maxPending bounds the calls waiting for their result. A call another
// guard refused never gets one; past this many the oldest are forgotten,
// which can only make the guard miss a loop, never invent one.
const maxPending = 1024

type loopGuard struct {
	texts Texts
	l     Loop
	keep  int // completed calls remembered per thread

	mu      sync.Mutex
	threads map[string]*loopThread
	pending map[string]pendingCall // by tool_use_id
	order   []string               // pending ids, oldest first
	// background are the tasks running in the background (a Bash or an
	// Agent run_in_background), by task or agent id: while its launcher
	// has one, asking the same again is waiting, not a loop.
	background map[string]background
	now        func() time.Time
}

// background is a task launched in the background.
type background struct {
	thread string
	since  time.Time
}

// maxBackground bounds how long a background task counts as running when
// nothing says it ended (a Bash task's end reaches no hook): past it, a
// thread repeating itself is watched again.
const maxBackground = time.Hour

// doneCall is one completed tool call: what was asked and what came back.
type doneCall struct {
	key    string // tool name and canonical input
	tool   string
	result [sha256.Size]byte
	files  string // filesState of the files it names, after it ran
}

type pendingCall struct {
	thread, key, tool string
}

type loopThread struct {
	calls   []doneCall // the last keep completed calls, oldest first
	refused int        // refusals since the last completed call
}

func (g *loopGuard) watched(in *claude.HookInput) bool {
	return in != nil && in.ToolName != "" && (g.l.MainThread || !in.IsMainThread()) &&
		!slices.Contains(g.l.Exempt, in.ToolName) && !g.waiting(in.ToolName)
}

// waiting reports whether tool is a waiting tool the CLI offers.
func (g *loopGuard) waiting(tool string) bool {
	if !waitingTool(tool) {
		return false
	}
	if g.l.Offered == nil {
		return true
	}
	offered := g.l.Offered()
	return offered == nil || slices.Contains(offered, tool)
}

// significantInput are, per tool, the input fields that say what a call
// asks: what the model repeats when it is stuck. The rest (a description,
// a timeout) is free text or tuning, and changing it asks nothing new. A
// tool not listed is compared on all its fields but freeText.
var significantInput = map[string][]string{
	"Bash":      {"command", "run_in_background"},
	"Read":      {"file_path", "offset", "limit", "pages"},
	"Agent":     {"subagent_type", "prompt", "isolation", "run_in_background"},
	"Task":      {"subagent_type", "prompt", "isolation", "run_in_background"},
	"Grep":      {"pattern", "path", "glob", "type", "output_mode", "-A", "-B", "-C", "-i", "-n", "multiline", "head_limit"},
	"Glob":      {"pattern", "path"},
	"WebFetch":  {"url", "prompt"},
	"WebSearch": {"query", "allowed_domains", "blocked_domains"},
}

// freeText are fields no call is told apart by.
var freeText = []string{"description"}

// callKey identifies a call by its tool and what its input asks (the
// significant fields, canonicalised: keys sorted, numbers as written), so
// that key order, spacing and free text do not matter.
func callKey(in *claude.HookInput) string {
	input := []byte(in.ToolInput)
	if v, err := decodeJSON(in.ToolInput); err == nil {
		if m, ok := v.(map[string]any); ok {
			if keep, ok := significantInput[in.ToolName]; ok {
				maps.DeleteFunc(m, func(k string, _ any) bool { return !slices.Contains(keep, k) })
			} else {
				for _, k := range freeText {
					delete(m, k)
				}
			}
		}
		if raw, err := encodeJSON(v); err == nil {
			input = raw
		}
	}
	return in.ToolName + "\x00" + string(input)
}

// filesOf are the existing files and folders a call names: a Read's
// file_path, a Bash command's words that are paths (relative to the
// call's cwd), a search's path. At most maxNamedFiles.
func filesOf(in *claude.HookInput) []string {
	m, err := in.ToolInputMap()
	if err != nil {
		return nil
	}
	var words []string
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if s, ok := m[k].(string); ok && s != "" {
			words = append(words, s)
		}
	}
	if cmd, ok := m["command"].(string); ok {
		words = append(words, strings.FieldsFunc(cmd, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(";|&<>()`'\"", r)
		})...)
	}
	var out []string
	for _, w := range words {
		if w == "" || strings.HasPrefix(w, "-") || len(out) == maxNamedFiles {
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			if in.Cwd == "" {
				continue
			}
			p = filepath.Join(in.Cwd, p)
		}
		if _, err := os.Stat(p); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

const maxNamedFiles = 16

// filesState is what the files a call names look like now (size and
// modification time): mixed into the call's result, so that a call whose
// files grew or changed since the last one (polling a build's log, the
// artifacts folder between dispatches) never reads as the same again.
func filesState(paths []string) []byte {
	var b []byte
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			b = fmt.Appendf(b, "%s gone\x00", p)
			continue
		}
		b = fmt.Appendf(b, "%s %d %d\x00", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return b
}

// volatileResultKeys are the fields of a tool response that differ on
// every call whatever it found: an Agent dispatch reports the worker's id,
// its duration and its token counts beside its report. They are left out of
// the result's hash, so a coordinator dispatching the same task and getting
// the same report back is seen repeating itself.
var volatileResultKeys = []string{"agentId", "durationMs", "totalDurationMs", "totalTokens", "totalToolUseCount", "usage"}

// resultHash is the hash of what the call returned: the response
// canonicalised like an input, without its volatile fields, or the error
// text of a failure.
func resultHash(in *claude.HookInput, files []byte) [sha256.Size]byte {
	body := []byte(in.ToolResponse)
	if v, err := decodeJSON(in.ToolResponse); err == nil {
		if m, ok := v.(map[string]any); ok {
			for _, k := range volatileResultKeys {
				delete(m, k)
			}
		}
		if raw, err := encodeJSON(v); err == nil {
			body = raw
		}
	}
	kind := "ok\x00"
	if in.HookEventName == claude.PostToolUseFailure {
		kind, body = "failed\x00", []byte(in.Error)
	}
	return sha256.Sum256(append(append([]byte(kind), body...), files...))
}

func (g *loopGuard) pre(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
	if !g.watched(in) {
		return nil, nil
	}
	key := callKey(in)
	files := string(filesState(filesOf(in)))
	g.mu.Lock()
	th := g.threads[in.AgentID]
	var reason string
	count := 0
	if th != nil && !g.backgroundRunning(in.AgentID) && !changedSince(th, key, files) {
		if n := g.repeats(th, key); n > 0 {
			th.refused++
			count = n + th.refused
			reason = fmt.Sprintf(g.texts.LoopRepeat, in.ToolName, n)
		} else if others, length, n := g.cycle(th, key); n > 0 {
			th.refused++
			count = length*n + th.refused
			reason = fmt.Sprintf(g.texts.LoopCycle, in.ToolName, strings.Join(others, ", "), n)
		}
	}
	if reason == "" && in.ToolUseID != "" {
		g.remember(in.ToolUseID, pendingCall{thread: in.AgentID, key: key, tool: in.ToolName})
	}
	g.mu.Unlock()
	if reason == "" {
		return nil, nil
	}
	logger().Warn("guard: loop: call refused", "agent_id", in.AgentID, "tool", in.ToolName, "count", count)
	if g.l.OnLoop != nil {
		g.l.OnLoop(in.AgentID, in.ToolName, count)
	}
	return claude.Deny(reason), nil
}

// repeats returns how many identical calls with identical results end the
// thread's history when key is one more of them and they reach the limit;
// 0 otherwise.
func (g *loopGuard) repeats(th *loopThread, key string) int {
	n := g.l.Repeats
	if n <= 0 || len(th.calls) < n {
		return 0
	}
	tail := th.calls[len(th.calls)-n:]
	for _, c := range tail {
		if c.key != key || c.result != tail[0].result {
			return 0
		}
	}
	return n
}

// cycle reports the cycle's other tools, its length and the number of
// rounds when the thread's history ends with the limit's rounds of one
// cycle of 2 to MaxLoopCycle calls (A B, A B C, A B C D; not all the same
// call), each answered as in the first round, and key is A again; nil, 0,
// 0 otherwise. The shortest such cycle is reported.
func (g *loopGuard) cycle(th *loopThread, key string) ([]string, int, int) {
	n := g.l.Cycles
	if n <= 0 {
		return nil, 0, 0
	}
	for length := 2; length <= MaxLoopCycle; length++ {
		if len(th.calls) < length*n {
			break
		}
		tail := th.calls[len(th.calls)-length*n:]
		block := tail[:length]
		if block[0].key != key || !slices.ContainsFunc(block, func(c doneCall) bool { return c.key != key }) {
			continue
		}
		same := true
		for i, c := range tail {
			if want := block[i%length]; c.key != want.key || c.result != want.result {
				same = false
				break
			}
		}
		if same {
			var others []string
			for _, c := range block[1:] {
				others = append(others, c.tool)
			}
			return others, length, n
		}
	}
	return nil, 0, 0
}

// changedSince reports whether the files a call names look different now
// from after the thread's last call with the same key: whatever it got
// then, asking again is news.
func changedSince(th *loopThread, key, files string) bool {
	for i := len(th.calls) - 1; i >= 0; i-- {
		if th.calls[i].key == key {
			return th.calls[i].files != files
		}
	}
	return false
}

// backgroundRunning reports whether thread launched a background task that
// has not ended (nor outlived maxBackground). The caller holds g.mu.
func (g *loopGuard) backgroundRunning(thread string) bool {
	now := g.now()
	running := false
	for id, b := range g.background {
		switch {
		case now.Sub(b.since) > maxBackground:
			delete(g.background, id)
		case b.thread == thread:
			running = true
		}
	}
	return running
}

// noteBackground records a background launch, or the end a call reports
// (a task stopped, or its output read as finished). The caller holds g.mu.
func (g *loopGuard) noteBackground(in *claude.HookInput) {
	input, _ := in.ToolInputMap()
	resp, _ := decodeJSON(in.ToolResponse)
	r, _ := resp.(map[string]any)
	str := func(m map[string]any, keys ...string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	if in.HookEventName == claude.PostToolUse && input["run_in_background"] == true {
		if id := str(r, "backgroundTaskId", "agentId", "task_id", "shellId"); id != "" {
			g.background[id] = background{thread: in.AgentID, since: g.now()}
		}
		return
	}
	// A task stopped, or one whose output says it is over.
	if id := str(input, "task_id", "shell_id", "bash_id"); id != "" {
		status := str(r, "status")
		if in.ToolName == "TaskStop" || in.ToolName == "KillShell" || (status != "" && status != "running" && status != "pending") {
			g.ended(id)
		}
	}
}

// subagentStop ends a background agent's wait.
func (g *loopGuard) subagentStop(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
	if in == nil || in.AgentID == "" {
		return nil, nil
	}
	g.mu.Lock()
	g.ended(in.AgentID)
	g.mu.Unlock()
	return nil, nil
}

// ended forgets a background task that ended, and what its launcher did
// while it waited: the world it polled has changed. The caller holds g.mu.
func (g *loopGuard) ended(id string) {
	b, ok := g.background[id]
	if !ok {
		return
	}
	delete(g.background, id)
	if th := g.threads[b.thread]; th != nil {
		th.calls, th.refused = nil, 0
	}
}

// remember notes a call that went ahead, forgetting the oldest past
// maxPending.
func (g *loopGuard) remember(id string, p pendingCall) {
	if _, seen := g.pending[id]; !seen {
		g.order = append(g.order, id)
	}
	g.pending[id] = p
	for len(g.order) > maxPending {
		delete(g.pending, g.order[0])
		g.order = g.order[1:]
	}
}

func (g *loopGuard) post(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
	if in == nil {
		return nil, nil
	}
	g.mu.Lock()
	g.noteBackground(in) // exempt tools too: TaskOutput says a task ended
	g.mu.Unlock()
	if !g.watched(in) || in.ToolUseID == "" {
		return nil, nil
	}
	files := filesState(filesOf(in))
	result := resultHash(in, files)
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.pending[in.ToolUseID]
	if !ok {
		// No PreToolUse seen (or forgotten): compare by what this hook says.
		p = pendingCall{thread: in.AgentID, key: callKey(in), tool: in.ToolName}
	} else {
		delete(g.pending, in.ToolUseID)
		g.order = slices.DeleteFunc(g.order, func(id string) bool { return id == in.ToolUseID })
	}
	th := g.threads[p.thread]
	if th == nil {
		th = &loopThread{}
		g.threads[p.thread] = th
	}
	th.refused = 0
	th.calls = append(th.calls, doneCall{key: p.key, tool: p.tool, result: result, files: string(files)})
	if extra := len(th.calls) - g.keep; extra > 0 {
		th.calls = slices.Delete(th.calls, 0, extra)
	}
	return nil, nil
}
