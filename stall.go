package flower

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/flowerrun/flower/claude"
)

// stallWatch ends a session whose CLI stays silent for its bound while no
// tool call of the session is open (a tool_use without its tool_result,
// on the main thread or a subagent's; a subagent itself is not a tool):
// a hung API connection or a wedged CLI would otherwise hold a step for
// ever, as nothing else bounds the wait for the model.
type stallWatch struct {
	bound time.Duration

	mu     sync.Mutex
	timer  *time.Timer // nil when the watch is off
	open   map[string]bool
	closed bool
}

// newStallWatch starts the watch; stop is called with a *StallError when
// it fires. A negative bound turns it off.
func newStallWatch(bound time.Duration, stop context.CancelCauseFunc) *stallWatch {
	w := &stallWatch{bound: bound, open: map[string]bool{}}
	if bound > 0 {
		w.timer = time.AfterFunc(bound, func() { stop(&StallError{Silence: bound}) })
	}
	return w
}

// saw notes a message: the silence starts again, and tool calls are opened
// and closed.
func (w *stallWatch) saw(m claude.Message) {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	switch m := m.(type) {
	case *claude.AssistantMessage:
		for _, b := range m.Content {
			// A subagent (Agent, Task) is no tool of its own: while it
			// waits on the model, its silence counts like the main
			// thread's; its own tool calls open as any other.
			if b, ok := b.(*claude.ToolUseBlock); ok && b.Name != "Agent" && b.Name != "Task" {
				w.open[b.ID] = true
			}
		}
	case *claude.UserMessage:
		for _, b := range m.Content {
			if b, ok := b.(*claude.ToolResultBlock); ok {
				delete(w.open, b.ToolUseID)
			}
		}
	case *claude.ResultMessage:
		clear(w.open) // a turn's end closes whatever it left open
	}
	w.timer.Stop()
	if len(w.open) == 0 {
		w.timer.Reset(w.bound)
	}
}

func (w *stallWatch) close() {
	if w.timer == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	w.timer.Stop()
}

// stallOr is err, or the *StallError that cancelled ctx.
func stallOr(ctx context.Context, err error) error {
	var stall *StallError
	if errors.As(context.Cause(ctx), &stall) {
		return stall
	}
	return err
}
