package guard

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"

	"github.com/flowerrun/flower/claude"
)

// DefaultLoopRepeats is how many identical calls with identical results a
// thread may make in a row before Loop refuses the next identical one.
// Three: re-reading a file once after an edit elsewhere is normal, a third
// identical answer is not news, and a fourth request for it is a loop.
const DefaultLoopRepeats = 3

// DefaultLoopCycles is how many times a thread may alternate between the
// same two calls (A B A B A B), each answered the same as before, before
// Loop refuses the next call that would go on with the cycle.
const DefaultLoopCycles = 3

// DefaultLoopExempt are the tools Loop never counts: they wait on
// background work, and asking again with the same answer ("still running")
// is how waiting looks.
var DefaultLoopExempt = []string{"TaskOutput", "BashOutput"}

// Loop configures the loop guard (Texts.Loop): it notices a thread asking
// the same thing and getting the same answer, which is how a model looks
// when it is stuck, and refuses the next ask with a note saying so.
type Loop struct {
	// Repeats is how many identical calls (same tool, same input once
	// canonicalised) with identical results a thread may make in a row:
	// the next identical call is refused. 0 means DefaultLoopRepeats; a
	// negative value turns the check off.
	Repeats int
	// Cycles is how many times a thread may repeat a pair of different
	// calls (A B), each with its earlier result: the next call of the
	// cycle is refused. 0 means DefaultLoopCycles; a negative value turns
	// the check off.
	Cycles int
	// MainThread watches the main thread too; without it only subagents
	// (workers) are watched.
	MainThread bool
	// Exempt are tools never counted; nil means DefaultLoopExempt, an
	// empty non-nil slice none. A call of an exempt tool does not break a
	// sequence either: it is not seen at all.
	Exempt []string
	// OnLoop, if not nil, is called for every refusal with the thread
	// (agent_id, "" for the main thread), the tool, and how many calls of
	// the loop there were counting the refused one. It may be called from
	// several goroutines at once and should return quickly.
	OnLoop func(agentID, tool string, count int)
}

// LoopHooks is Loop's guard with the default texts: see Texts.Loop.
func LoopHooks(l Loop) map[string][]claude.HookMatcher { return Texts{}.Loop(l) }

// Loop returns the loop guard: a PreToolUse hook that refuses a call which
// would continue a loop, and the PostToolUse and PostToolUseFailure hooks
// that record each call's result (a hash of its response or error), which
// is what "the same result" is judged by. Install all three together: they
// share their state. Every hook matches every tool.
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
	if l.Exempt == nil {
		l.Exempt = DefaultLoopExempt
	}
	g := &loopGuard{texts: t.withDefaults(), l: l, threads: map[string]*loopThread{}, pending: map[string]pendingCall{}}
	if l.Repeats > 0 {
		g.keep = l.Repeats
	}
	if l.Cycles > 0 {
		g.keep = max(g.keep, 2*l.Cycles)
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
}

// doneCall is one completed tool call: what was asked and what came back.
type doneCall struct {
	key    string // tool name and canonical input
	tool   string
	result [sha256.Size]byte
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
		!slices.Contains(g.l.Exempt, in.ToolName)
}

// callKey identifies a call by its tool and its input, canonicalised (keys
// sorted, numbers as written) so that key order and spacing do not matter.
func callKey(in *claude.HookInput) string {
	input := []byte(in.ToolInput)
	if v, err := decodeJSON(in.ToolInput); err == nil {
		if raw, err := encodeJSON(v); err == nil {
			input = raw
		}
	}
	return in.ToolName + "\x00" + string(input)
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
func resultHash(in *claude.HookInput) [sha256.Size]byte {
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
	return sha256.Sum256(append([]byte(kind), body...))
}

func (g *loopGuard) pre(_ context.Context, in *claude.HookInput) (*claude.HookOutput, error) {
	if !g.watched(in) {
		return nil, nil
	}
	key := callKey(in)
	g.mu.Lock()
	th := g.threads[in.AgentID]
	var reason string
	count := 0
	if th != nil {
		if n := g.repeats(th, key); n > 0 {
			th.refused++
			count = n + th.refused
			reason = fmt.Sprintf(g.texts.LoopRepeat, in.ToolName, n)
		} else if other, n := g.cycle(th, key); n > 0 {
			th.refused++
			count = 2*n + th.refused
			reason = fmt.Sprintf(g.texts.LoopCycle, in.ToolName, other, n)
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

// cycle reports the other tool and the number of rounds when the thread's
// history ends with the limit's rounds of one pair of different calls A B,
// each answered as in the first round, and key is A again; "", 0 otherwise.
func (g *loopGuard) cycle(th *loopThread, key string) (string, int) {
	n := g.l.Cycles
	if n <= 0 || len(th.calls) < 2*n {
		return "", 0
	}
	tail := th.calls[len(th.calls)-2*n:]
	a, b := tail[0], tail[1]
	if a.key != key || a.key == b.key {
		return "", 0
	}
	for i, c := range tail {
		want := a
		if i%2 == 1 {
			want = b
		}
		if c.key != want.key || c.result != want.result {
			return "", 0
		}
	}
	return b.tool, n
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
	if !g.watched(in) || in.ToolUseID == "" {
		return nil, nil
	}
	result := resultHash(in)
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
	th.calls = append(th.calls, doneCall{key: p.key, tool: p.tool, result: result})
	if extra := len(th.calls) - g.keep; extra > 0 {
		th.calls = slices.Delete(th.calls, 0, extra)
	}
	return nil, nil
}
