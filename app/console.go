package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"golang.org/x/sys/unix"
)

// Console reads the human's lines during a run, all the time, so that text
// typed while the agents work is never taken as the next answer, and routes
// each line:
//
//	typed        a question waits          none waits
//	empty        declined (it judges)      nothing
//	?… or ？…    a side question           a side question
//	1..n         that choice               sent to the inbox
//	other        the answer                sent to the inbox, with a receipt
//	end of input the question declined, and every later one settled at once
//
// Answers and mail go through human.Route, the routing `flower reply`
// uses too: a line meant for a question that its timeout settled a moment
// before goes to the inbox, with a note, never nowhere. The receipt is
// shown only after the words are on disk (the words journal).
//
// After a Ctrl-C (Interrupted) the next line is the words the round resumes
// with; after a Ctrl-C at a question, the words that go with its cancel.
type Console struct {
	ui        *UI
	ch        *human.Channel
	oracle    func(question string)
	interrupt func(words string)
	// interruptible reports whether an interrupt would cut a step now
	// (nil: always); waitSaid is set when the Ctrl-C said it would not,
	// so that the words' receipt does not say it again.
	interruptible func() bool
	waitSaid      atomic.Bool

	mu           sync.Mutex
	closed       bool // the input ended
	interrupting bool
	// atQuestion is the question on screen when Ctrl-C came: Enter
	// cancels it instead of interrupting the round.
	atQuestion string
	// cancelled are the questions a Ctrl-C cancelled: the console said
	// so, the renderer need not say "skipped" too.
	cancelled map[string]bool
}

// NewConsole routes ui's lines to ch; oracle answers "?" lines (nil: none
// in this run) and interrupt takes the words typed after a Ctrl-C.
func NewConsole(ui *UI, ch *human.Channel, oracle func(string), interrupt func(string)) *Console {
	return &Console{ui: ui, ch: ch, oracle: oracle, interrupt: interrupt}
}

// SayBeforeInterrupting makes a Ctrl-C say at once when interruptible
// reports that nothing would be cut.
func (c *Console) SayBeforeInterrupting(interruptible func() bool) { c.interruptible = interruptible }

// toldWaiting reports, once, that the last Ctrl-C said its words would
// wait for the next working step.
func (c *Console) toldWaiting() bool { return c.waitSaid.Swap(false) }

// Event follows the channel's questions: the prompt says whether a line
// answers, and once the input has ended a new question is settled at once.
func (c *Console) Event(e event.Event) {
	if e.Kind != event.Ask || e.Str("kind") == "mail" {
		return
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed && human.State(e.Str("state")) == human.Asked {
		// The callback may call the channel; Decline settles the ask
		// the model is waiting on.
		go c.ch.Decline(e.Str("id"), c.ui.T("inputClosed"))
		return
	}
	c.prompt()
}

func (c *Console) prompt() {
	if !c.ui.Interactive {
		return
	}
	if len(c.ch.Pending()) > 0 {
		c.ui.Screen.SetPrompt(c.ui.T("answerPrompt"))
	} else {
		c.ui.Screen.SetPrompt(idlePrompt(c.ui.Lang, c.ui.Screen.Width()))
	}
}

// idlePrompt is the prompt while the run works, in a form that leaves
// room to type on a terminal cols wide: at 80 columns the whole one was
// cut mid-sentence.
func idlePrompt(l flower.Lang, cols int) string {
	if p := text(l, "idlePrompt"); screen.Columns(p)+minTyping <= cols {
		return p
	}
	return text(l, "idlePromptShort")
}

// minTyping is the room a prompt leaves for what the person types.
const minTyping = 24

// Interrupted is the first Ctrl-C: say what will happen and take the next
// line as the words to resume with (an empty line interrupts too).
//
// At a question, Enter cancels that question instead: the model gets
// flower's note that the person gave no answer (with their words, if
// any) as the question's result, and the round goes on. Interrupting the
// round there would cut the waiting ask call, and the CLI words a cut call
// as a refusal ("The user doesn't want to proceed…") that flower then
// showed, and that the model took for the answer once resumed.
func (c *Console) Interrupted() {
	c.ui.touched()
	pending := c.ch.Pending()
	c.mu.Lock()
	c.interrupting, c.atQuestion = true, ""
	if len(pending) > 0 {
		c.atQuestion = pending[0].ID
	}
	c.mu.Unlock()
	var lines []string
	if len(pending) > 0 {
		// The simulated human of the demo leaves this question to the
		// person from now on.
		c.ui.heldQuestion.Store(true)
		lines = []string{fmt.Sprintf(c.ui.T("cancelAskHint"), pending[0].ID), c.ui.T("cancelAskPrompt")}
		if n := len(pending) - 1; n > 0 {
			lines = append(lines, fmt.Sprintf(c.ui.T("stillPending"), n))
		}
	} else if c.interruptible != nil && !c.interruptible() {
		// A judge or the hand-over runs: nothing would be cut, and the
		// words wait for the next working step. Said now, not after the
		// person typed them believing the round would stop.
		c.waitSaid.Store(true)
		lines = []string{c.ui.T("interruptWait"), c.ui.T("interruptAskLater")}
	} else {
		// Nothing is interrupted yet: the round stops when the words
		// are given (Enter), and the runtime's own line says when it
		// resumes.
		lines = []string{c.ui.T("interrupting"), c.ui.T("interruptAsk")}
	}
	c.ui.Screen.Block(screen.Yellow, lines...)
	if c.ui.Interactive {
		c.ui.Screen.SetPrompt("> ")
	}
}

// cancelQuestion settles question id as declined, with words as what the
// person said instead of an answer, and says so; false when it no longer
// waits (its timeout or `flower reply` settled it meanwhile).
func (c *Console) cancelQuestion(id, words string) bool {
	c.mu.Lock()
	if c.cancelled == nil {
		c.cancelled = map[string]bool{}
	}
	c.cancelled[id] = true
	c.mu.Unlock()
	if !c.ch.Decline(id, words) {
		c.mu.Lock()
		delete(c.cancelled, id)
		c.mu.Unlock()
		return false
	}
	key := "askCancelled"
	if words != "" {
		key = "askCancelledWords"
	}
	c.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(c.ui.T(key), id))
	return true
}

// CancelledByInterrupt reports whether e settles a question a Ctrl-C
// cancelled: the console has said so already.
func (c *Console) CancelledByInterrupt(e event.Event) bool {
	if e.Kind != event.Ask || e.Str("kind") == "mail" || human.State(e.Str("state")) != human.Declined {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancelled[e.Str("id")]
}

// Run reads lines until ctx ends or the input does.
func (c *Console) Run(ctx context.Context) {
	c.prompt()
	defer c.ui.Screen.SetPrompt("")
	for {
		line, err := c.ui.readTyped(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.inputEnded()
			}
			return
		}
		c.Route(line)
	}
}

// inputEnded settles the waiting questions and every later one.
func (c *Console) inputEnded() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	// The note first: whoever sees a question settled sees why.
	c.ui.Screen.Line(screen.Yellow, c.ui.T("inputClosedNote"))
	for _, a := range c.ch.Pending() {
		c.ch.Decline(a.ID, c.ui.T("inputClosed"))
	}
}

// Route acts on one typed line.
func (c *Console) Route(line string) {
	text := strings.TrimSpace(line)
	c.mu.Lock()
	interrupting, atQuestion := c.interrupting, c.atQuestion
	c.interrupting, c.atQuestion = false, ""
	c.mu.Unlock()
	defer c.prompt()
	if interrupting {
		// A question that was settled meanwhile leaves a plain
		// interrupt of the round.
		if atQuestion == "" || !c.cancelQuestion(atQuestion, text) {
			if c.interrupt != nil {
				c.interrupt(text)
			}
		}
		c.waitSaid.Store(false) // said of this Ctrl-C only
		c.ui.heldQuestion.Store(false)
		// The words are given: the next Ctrl-C is a first one again.
		c.ui.hooks.rearm()
		return
	}
	if q, ok := cutOraclePrefix(text); ok {
		if q == "" {
			return
		}
		if c.oracle == nil {
			c.ui.Screen.Line(screen.Dim, "  "+c.ui.T("noOracle"))
			return
		}
		c.oracle(q)
		return
	}
	r := human.Reply{Text: text}
	if pending := c.ch.Pending(); len(pending) > 0 {
		// The question on screen; should its timeout settle it before
		// the line lands, human.Route sends the line to the inbox.
		r.ID, r.Skip = pending[0].ID, text == ""
	} else if text == "" {
		return
	}
	out := human.Route(c.ch, r)
	if out.Result != "mail" {
		return
	}
	if r.ID != "" {
		c.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(c.ui.T("lateAnswer"), r.ID))
	}
	key := "received"
	switch {
	case !out.Durable && c.ch.Journaled():
		key = "receivedNotKept"
	case !out.Amended:
		key = "receivedNoDoc"
	}
	c.ui.Screen.Line(screen.Green, "  "+c.ui.T(key))
}

// cutOraclePrefix reports a side question: a line starting with ? or the
// full-width ？ that Chinese input methods type by default.
func cutOraclePrefix(s string) (string, bool) {
	for _, p := range []string{"?", "？"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// pollReader reads a file only once poll says it is readable, looking at
// ctx every 200 ms, so that a reader of the terminal stops with its owner
// instead of blocking in read(2) for ever. Other readers are read as is.
type pollReader struct {
	r   io.Reader
	fd  int
	mu  sync.Mutex
	ctx context.Context
}

func newPollReader(r io.Reader) *pollReader {
	p := &pollReader{r: r, fd: -1, ctx: context.Background()}
	if f, ok := r.(*os.File); ok {
		p.fd = int(f.Fd())
	}
	return p
}

func (p *pollReader) setContext(ctx context.Context) {
	p.mu.Lock()
	p.ctx = ctx
	p.mu.Unlock()
}

func (p *pollReader) Read(b []byte) (int, error) {
	if p.fd < 0 {
		return p.r.Read(b)
	}
	for {
		p.mu.Lock()
		ctx := p.ctx
		p.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int((200 * time.Millisecond).Milliseconds()))
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		// Readable, at its end, or not pollable at all: read.
		return p.r.Read(b)
	}
}
