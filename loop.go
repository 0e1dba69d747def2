package flower

import (
	"fmt"
	"slices"
	"sync"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/guard"
)

// LoopPolicy tunes the loop guard BuildOptions installs on every session
// (guard.Loop): a thread that keeps making the same tool call and getting
// the same result is refused the next one, with a note telling the model
// what it is doing, and the runtime emits a Loop event. The zero value
// watches workers and the main thread alike, refusing the 4th identical call
// after 3 identical results in a row (guard.DefaultLoopRepeats) and the call
// that would start a 4th round of a cycle of two to four calls
// (guard.DefaultLoopCycles). A call is what it asks (a command, a path, a
// dispatch's prompt; never its description), and waiting is not a loop:
// polling while a background task runs, or a file that changed since.
//
// The main thread is watched too because a coordinator's own calls are few
// (glances, reads, dispatches): the same dispatch or glance answered the
// same way three times running is a stuck coordinator, and the refusal only
// asks it to change course, it ends nothing.
type LoopPolicy struct {
	// Off installs no loop guard.
	Off bool
	// WorkersOnly leaves the main thread unwatched.
	WorkersOnly bool
	// Repeats is how many identical calls with identical results in a row
	// pass; 0 means guard.DefaultLoopRepeats (3), negative turns the check
	// off.
	Repeats int
	// Cycles is how many rounds of a cycle of two to four calls with
	// unchanged results pass; 0 means guard.DefaultLoopCycles (3), negative turns the check
	// off.
	Cycles int
}

// guard is the policy as the guard's configuration. The channel's inbox is
// never counted, beside the waiting tools the CLI offers (offered, its
// init message's list): a coordinator that looks at an empty inbox four
// times running is waiting, not stuck.
func (p LoopPolicy) guard(onLoop func(agentID, tool string, count int), offered func() []string) guard.Loop {
	return guard.Loop{Repeats: p.Repeats, Cycles: p.Cycles, MainThread: !p.WorkersOnly, OnLoop: onLoop,
		Exempt: []string{InboxTool}, Offered: offered}
}

// loopHooks is the loop guard of a policy, nil when it is off.
func loopHooks(texts guard.Texts, p LoopPolicy, onLoop func(agentID, tool string, count int), offered func() []string) map[string][]claude.HookMatcher {
	if p.Off {
		return nil
	}
	return texts.Loop(p.guard(onLoop, offered))
}

// offeredTools keeps the tools the CLI's init message offered, for the
// loop guard's hooks, which run on other goroutines.
type offeredTools struct {
	mu    sync.Mutex
	tools []string
}

func (o *offeredTools) set(tools []string) {
	o.mu.Lock()
	o.tools = slices.Clone(tools)
	o.mu.Unlock()
}

func (o *offeredTools) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tools
}

// loopQueue holds the Loop events the guard reported from its hook
// goroutines until the step's own goroutine emits them: emitting there
// keeps the StepResult and OnEvent on one goroutine, as for every other
// event.
type loopQueue struct {
	mu  sync.Mutex
	evs []Event
}

// noteLoop is the guard's OnLoop for this step.
func (s *stepRun) noteLoop(agentID, tool string, count int) {
	t := s.texts()
	who := s.step
	if agentID != "" {
		who = fmt.Sprintf(t.loopWorker, agentID)
	}
	e := event.New(event.Loop, fmt.Sprintf(t.loop, who, tool, count), map[string]any{
		"step": s.step, "agent_id": agentID, "subagent": agentID != "", "tool": tool, "count": count,
	})
	e.Tool = tool
	s.loops.mu.Lock()
	s.loops.evs = append(s.loops.evs, e)
	s.loops.mu.Unlock()
}

// flushLoops emits the Loop events reported so far.
func (s *stepRun) flushLoops() {
	s.loops.mu.Lock()
	evs := s.loops.evs
	s.loops.evs = nil
	s.loops.mu.Unlock()
	for _, e := range evs {
		s.emit(e)
	}
}
