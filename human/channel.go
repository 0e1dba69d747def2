// Package human is flower's human channel: the one place a long run stops
// to wait for a person. It serves an in-process MCP server named "human"
// with two tools, ask (a question that blocks until an answer, a timeout or
// a refusal settles it) and inbox (what the human said on their own since
// the last look; never blocks), and gives a UI the other side: Answer,
// Decline, Send, Pending, NextAsk, and events of kind event.Ask.
//
// No answer is an answer: an ask never fails, it settles in a State, and the
// model is told in fixed words to carry on and record its assumption. The Q&A
// goes to a log file that never enters a context; words the human sends are
// appended to the brief (the amend file), so steps that start later see them.
package human

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/lang"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP server and tool names, as the CLI calls them.
const (
	// Server is the in-process MCP server's name.
	Server = "human"
	// AskTool and InboxTool are the tools' full names.
	AskTool   = "mcp__" + Server + "__ask"
	InboxTool = "mcp__" + Server + "__inbox"
)

// DefaultTimeout is how long an ask waits when WithTimeout is not given.
const DefaultTimeout = 1800 * time.Second

// Forever, given to WithTimeout, makes an ask wait until it is answered,
// declined or its context ends. Never use it unattended: nobody answers and
// the run hangs.
const Forever time.Duration = math.MaxInt64

// State is where an ask stands.
type State string

// An ask starts Asked and settles in exactly one of the others.
const (
	// Asked: waiting for the human.
	Asked State = "asked"
	// Answered: the human answered; Answer is their text.
	Answered State = "answered"
	// TimedOut: nobody answered in time, or the timeout is zero or less.
	TimedOut State = "timeout"
	// Declined: the human skipped the question.
	Declined State = "declined"
	// OverBudget: the quota of asks was used up; it was refused at once.
	OverBudget State = "over_budget"
	// Invalid: the question was empty.
	Invalid State = "invalid"
	// Cancelled: the asker's context ended while it waited (the CLI gave up
	// the call, or the run stopped). The original left such an ask "asked"
	// for ever, which a UI cannot tell from one still waiting.
	Cancelled State = "cancelled"
)

// Ask is one question and its outcome. Values handed out are copies: they
// never change under the caller.
type Ask struct {
	ID       string
	Question string
	Options  []string
	AskedAt  time.Time
	State    State
	// Answer is the text fed back to the model: the human's answer, or the
	// fixed text of a timeout, a refusal or a skip.
	Answer string
	// SettledAt is when the ask left Asked; zero while it waits.
	SettledAt time.Time
}

// Waited is how long the ask waited: until it settled, or until now.
func (a Ask) Waited() time.Duration {
	if a.AskedAt.IsZero() {
		return 0
	}
	end := a.SettledAt
	if end.IsZero() {
		end = time.Now()
	}
	return end.Sub(a.AskedAt)
}

// WaitedS is Waited in seconds, rounded to one decimal place.
func (a Ask) WaitedS() float64 { return math.Round(a.Waited().Seconds()*10) / 10 }

// Mail is something the human said on their own, for the inbox.
type Mail struct {
	ID     string
	Text   string
	SentAt time.Time
	// Taken reports whether the inbox tool has handed it to the model.
	Taken bool
	// Amended reports whether it was appended to the amend file.
	Amended bool
	// Durable reports whether it is in the words journal (UseWords): a
	// crash of the run cannot lose it.
	Durable bool
	// word is its journal entry's name.
	word string
}

// Option configures a Channel.
type Option func(*Channel)

// WithOnEvent pushes every ask and mail event to fn (see Channel for the
// rules fn must keep). Use it or NextAsk, not both: with both a UI meets
// each question twice.
func WithOnEvent(fn func(event.Event)) Option { return func(c *Channel) { c.onEvent = fn } }

// WithMaxAsks caps the asks: n = 0 allows none (each is refused at once as
// OverBudget), n > 0 allows n. Without it, or with n < 0, asks are
// unlimited.
func WithMaxAsks(n int) Option {
	return func(c *Channel) {
		if n < 0 {
			n = -1
		}
		c.maxAsks = n
	}
}

// WithTimeout sets how long an ask waits for the human: Forever waits until
// the ask's context ends; zero or less settles every ask at once as TimedOut
// (unattended runs), without an asked event and without queueing it.
// Without it an ask waits DefaultTimeout (1800 s).
func WithTimeout(d time.Duration) Option { return func(c *Channel) { c.timeout = d } }

// WithLogPath appends the Q&A to path (created with its parents).
func WithLogPath(path string) Option { return func(c *Channel) { c.logPath = path } }

// WithLogRecord keeps flower's own copy of the Q&A log at path, which must
// lie outside every tool's reach (Dir's folder, not the workspace): each
// entry goes there first, the log file is then written from it, and
// CheckLog puts it back when anything else changed the log. Without it the
// log file is the only copy and a tool that writes it speaks for the
// person.
func WithLogRecord(path string) Option { return func(c *Channel) { c.logRecord = path } }

// WithAmendPath appends what the human sends to path, usually the brief.
func WithAmendPath(path string) Option { return func(c *Channel) { c.amendPath = path } }

// WithLang picks the texts of a language (TextsFor; flower.Lang and
// doc.Lang are this type). Without it the channel speaks English until a
// Workflow run by a Runtime of another language adopts it (FollowLang).
func WithLang(l lang.Lang) Option {
	return func(c *Channel) { c.lang, c.langSet = l.Canonical(), true }
}

// WithTexts replaces texts; its empty fields keep the language's.
func WithTexts(t Texts) Option { return func(c *Channel) { c.custom = t } }

// Channel is the human channel. Every method is safe from any goroutine,
// every wait takes a context, and nothing panics on bad input.
//
// Events (kind event.Ask) reach WithOnEvent's callback one at a time and in
// the order the changes happened, on whichever goroutine made the change,
// so the callback must not block (queue slow work). It may call the
// channel's methods. A panic in it is recovered and recorded in UIErrors,
// never propagated.
//
// An event is a question's or a mail's; a UI checks payload "kind" first.
// A question's has no kind: Text is the question, payload id, options,
// state, answer, remaining, asked_at (Unix seconds); a waited question
// emits two (asked, then its outcome), one settled at once emits one. A
// mail's has kind "mail": Text is the message, payload state ("queued",
// "delivered"), id, amended (the amend file's path, "" when not appended),
// and no options or remaining.
type Channel struct {
	onEvent   func(event.Event)
	maxAsks   int
	timeout   time.Duration
	logPath   string
	logRecord string
	amendPath string
	langSet   bool
	custom    Texts

	langMu sync.RWMutex // guards lang and texts, which FollowLang may change
	lang   lang.Lang
	texts  Texts

	mu       sync.Mutex
	seq      int
	asks     []*Ask
	mail     []*Mail
	waiting  map[string]*waiter
	handed   map[string]bool // asks NextAsk has given out
	queued   chan struct{}   // closed (and replaced) when an ask starts waiting
	uiErrors []error

	// outbox holds events not yet delivered; dispatching says a goroutine
	// is delivering them (so a callback that changes the channel queues
	// its events instead of re-entering itself).
	outbox      []event.Event
	dispatching bool

	fileMu  sync.Mutex // serializes appends to the log and amend files
	amended []string   // the blocks this channel appended to the amend file
	// logKept is the Q&A log as this channel wrote it (WithLogRecord),
	// nil until KeepLogRecord or the first entry: the copy no tool reaches.
	logKept []byte
	words   *Words // the words journal, when UseWords gave one

	srv *mcp.Server
	// clarifierSrv is the same tools for the clarifier, whose no-answer
	// texts name the brief's sections (see Texts.TimeoutPlain).
	clarifierSrv *mcp.Server
}

// waiter is an ask's pending settlement. Answer and Decline settle it
// themselves (logged before they return) and then close done; settled is
// the outcome they recorded.
type waiter struct {
	ask     *Ask
	done    chan struct{}
	settled Ask
}

// New makes a channel: unlimited asks, each waiting 1800 s, no files,
// English texts, unless options say otherwise.
func New(opts ...Option) *Channel {
	c := &Channel{
		maxAsks: -1,
		timeout: DefaultTimeout,
		waiting: map[string]*waiter{},
		handed:  map[string]bool{},
		queued:  make(chan struct{}),
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	c.lang = c.lang.Canonical()
	c.texts = c.custom.over(TextsFor(c.lang))
	c.srv = mcp.NewServer(&mcp.Implementation{Name: Server, Version: "1.0.0"}, nil)
	c.clarifierSrv = mcp.NewServer(&mcp.Implementation{Name: Server, Version: "1.0.0"}, nil)
	c.addTools()
	return c
}

// Texts returns the texts the channel uses.
func (c *Channel) Texts() Texts {
	c.langMu.RLock()
	defer c.langMu.RUnlock()
	return c.texts
}

// Lang is the channel's language.
func (c *Channel) Lang() lang.Lang {
	c.langMu.RLock()
	defer c.langMu.RUnlock()
	return c.lang
}

// FollowLang makes l the channel's language unless WithLang chose one,
// and reports whether it did: a Workflow calls it with its Runtime's
// language before the first step, so that one setting on the Runtime
// reaches the channel too. The tools' descriptions change with it (the
// server stays the same, so specs built earlier keep working).
func (c *Channel) FollowLang(l lang.Lang) bool {
	if c.langSet {
		return false
	}
	l = l.Canonical()
	c.langMu.Lock()
	changed := c.lang != l
	if changed {
		c.lang, c.texts = l, c.custom.over(TextsFor(l))
	}
	c.langMu.Unlock()
	if changed {
		c.addTools()
	}
	return true
}

// Timeout returns how long an ask waits (Forever, or ≤ 0 for at once).
func (c *Channel) Timeout() time.Duration { return c.timeout }

// LogPath, LogRecord and AmendPath return the configured files ("" when
// none).
func (c *Channel) LogPath() string   { return c.logPath }
func (c *Channel) LogRecord() string { return c.logRecord }
func (c *Channel) AmendPath() string { return c.amendPath }

// HasOnEvent reports whether events are pushed to a callback.
func (c *Channel) HasOnEvent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.onEvent != nil
}

// AttachOnEvent pushes events to fn unless a callback is already set (a
// caller's own wiring wins); it reports whether fn was attached. A
// workflow uses it to forward the channel's events to its own sink.
func (c *Channel) AttachOnEvent(fn func(event.Event)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onEvent != nil || fn == nil {
		return false
	}
	c.onEvent = fn
	return true
}

// Ask asks the human and waits for the outcome. It records the ask (ids
// share one counter with mail: q1, m2, q3…), then: an empty question settles
// Invalid; one beyond the quota OverBudget; with a timeout of zero or less,
// TimedOut at once; otherwise it emits an asked event, becomes Pending and
// waits for Answer, Decline or the timeout. Every settlement is emitted and
// logged. The only error is the context's, with the ask settled Cancelled.
// Options are trimmed and empty ones dropped.
func (c *Channel) Ask(ctx context.Context, question string, options []string) (Ask, error) {
	if err := ctx.Err(); err != nil {
		return Ask{}, err
	}
	question = strings.TrimSpace(question)
	opts := make([]string, 0, len(options))
	for _, o := range options {
		if o = strings.TrimSpace(o); o != "" {
			opts = append(opts, o)
		}
	}

	c.mu.Lock()
	c.seq++
	a := &Ask{ID: "q" + strconv.Itoa(c.seq), Question: question, Options: opts, AskedAt: time.Now(), State: Asked}
	c.asks = append(c.asks, a)
	var immediate State
	var text string
	switch {
	case question == "":
		immediate, text = Invalid, c.Texts().EmptyQuestion
	case c.maxAsks >= 0 && len(c.asks) > c.maxAsks:
		immediate, text = OverBudget, c.Texts().OverBudget
	case c.timeout <= 0:
		// Unattended: nobody is watching, so do not pretend to wait.
		immediate, text = TimedOut, c.Texts().Timeout
	}
	if immediate != "" {
		c.mu.Unlock()
		return c.settle(a, immediate, text), nil
	}
	w := &waiter{ask: a, done: make(chan struct{})}
	c.waiting[a.ID] = w
	c.post(c.askEvent(a))
	close(c.queued)
	c.queued = make(chan struct{})
	c.mu.Unlock()
	c.flush()

	var expired <-chan time.Time
	if c.timeout != Forever {
		t := time.NewTimer(c.timeout)
		defer t.Stop()
		expired = t.C
	}
	var ctxErr error
	select {
	case <-w.done:
	case <-expired:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	c.mu.Lock()
	if c.waiting[a.ID] != w {
		// An answer won the race; it is the outcome, even if the context
		// ended at the same moment: nothing the human said is lost. Its
		// settlement (logged) is under way; wait for it.
		c.mu.Unlock()
		<-w.done
		return w.settled, nil
	}
	// Neither Answer nor Decline came first: the timer or the context
	// settles it.
	delete(c.waiting, a.ID)
	delete(c.handed, a.ID)
	c.mu.Unlock()
	if ctxErr != nil {
		return c.settle(a, Cancelled, ""), ctxErr
	}
	return c.settle(a, TimedOut, c.Texts().Timeout), nil
}

// settle records the outcome, logs it and then emits it (a UI's receipt
// never shows an outcome the log could still lose); it returns a copy.
func (c *Channel) settle(a *Ask, state State, text string) Ask {
	c.mu.Lock()
	a.State, a.Answer, a.SettledAt = state, text, time.Now()
	snap := copyAsk(a)
	c.mu.Unlock()
	c.logAsk(snap)
	c.mu.Lock()
	c.post(c.askEvent(a))
	c.mu.Unlock()
	c.flush()
	return snap
}

// Answer answers a waiting ask with text, which the model gets as is (it
// need not be one of the options); false when id is not waiting (unknown,
// answered, declined, timed out, cancelled).
func (c *Channel) Answer(id, text string) bool { return c.resolve(id, Answered, text) }

// Decline skips a waiting ask: the model is told to judge for itself and
// record its assumption, and reason (if any) is quoted to it. False when id
// is not waiting.
func (c *Channel) Decline(id, reason string) bool {
	text := c.Texts().Declined
	if r := strings.TrimSpace(reason); r != "" {
		text += strings.Replace(c.Texts().DeclinedReason, "%s", r, 1)
	}
	return c.resolve(id, Declined, text)
}

// resolve settles a waiting ask as the human said: the settlement is in
// the Q&A log (synced) before it returns true, so a receipt shown after it
// never claims an answer a crash could lose.
func (c *Channel) resolve(id string, state State, text string) bool {
	c.mu.Lock()
	w := c.waiting[id]
	if w == nil {
		c.mu.Unlock()
		return false
	}
	delete(c.waiting, id)
	delete(c.handed, id)
	c.mu.Unlock()
	w.settled = c.settle(w.ask, state, text)
	close(w.done)
	return true
}

// notWaitingNote says why words for question id did not answer it
// (waiting: it was waiting a moment ago).
func (c *Channel) notWaitingNote(id string, waiting bool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.asks {
		if a.ID != id {
			continue
		}
		if waiting || a.State == Asked {
			return fmt.Sprintf("question %s was settled a moment before; the words went to the inbox", id)
		}
		return fmt.Sprintf("question %s is no longer waiting (%s); the words went to the inbox", id, a.State)
	}
	return fmt.Sprintf("this run asked no question %s; the words went to the inbox", id)
}

// Pending returns the asks waiting for an answer, oldest first.
func (c *Channel) Pending() []Ask {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Ask
	for _, a := range c.asks {
		if c.waiting[a.ID] != nil {
			out = append(out, copyAsk(a))
		}
	}
	return out
}

// NextAsk waits for an ask that is waiting and that NextAsk has not given
// out yet, oldest first, and returns it; an ask that settled before anyone
// pulled it is never given out. It returns the context's error when the
// context ends first (give it a deadline to wait a bounded time). For pull
// UIs; see WithOnEvent.
func (c *Channel) NextAsk(ctx context.Context) (Ask, error) {
	for {
		c.mu.Lock()
		for _, a := range c.asks {
			if c.waiting[a.ID] != nil && !c.handed[a.ID] {
				c.handed[a.ID] = true
				snap := copyAsk(a)
				c.mu.Unlock()
				return snap, nil
			}
		}
		queued := c.queued
		c.mu.Unlock()
		select {
		case <-queued:
		case <-ctx.Done():
			return Ask{}, ctx.Err()
		}
	}
}

// Asks returns every ask so far, refused and timed out ones included.
func (c *Channel) Asks() []Ask {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Ask, len(c.asks))
	for i, a := range c.asks {
		out[i] = copyAsk(a)
	}
	return out
}

// Remaining is how many asks the quota still allows: -1 when unlimited,
// else max(0, max - asks so far).
func (c *Channel) Remaining() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remaining()
}

func (c *Channel) remaining() int {
	if c.maxAsks < 0 {
		return -1
	}
	return max(0, c.maxAsks-len(c.asks))
}

// UseWords makes every Send write its words to the journal w (synced)
// before it returns, and TakeInbox record them as taken: a receipt shown
// after Send is a promise a crash keeps. Call it before the run starts.
func (c *Channel) UseWords(w *Words) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.words = w
}

// Journaled reports whether UseWords gave the channel a words journal.
func (c *Channel) Journaled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.words != nil
}

// Send leaves the model a message for its next inbox call, without
// interrupting it: it writes the words to the journal (UseWords), appends
// them to the amend file (Amend with the run label), and only then queues
// them. Empty text sends nothing and reports false.
func (c *Channel) Send(text string) (Mail, bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Mail{}, false
	}
	c.mu.Lock()
	words := c.words
	c.mu.Unlock()
	var entry string
	if words != nil {
		if wd, err := words.Add(WordMail, text); err != nil {
			slog.Warn("human: the words are not in the journal", "err", err)
		} else {
			entry = wd.Name
		}
	}
	amended := c.Amend(text, "")
	if amended {
		if err := words.MarkInBrief(entry); err != nil {
			slog.Warn("human: the journal does not say the words are in the brief (the next run gets them twice)", "err", err)
		}
	}
	c.mu.Lock()
	c.seq++
	m := &Mail{ID: "m" + strconv.Itoa(c.seq), Text: text, SentAt: time.Now(), Amended: amended, Durable: entry != "", word: entry}
	c.mail = append(c.mail, m)
	c.post(c.mailEvent(m, "queued"))
	snap := *m
	c.mu.Unlock()
	c.flush()
	return snap, true
}

// Mail returns everything the human sent, taken or not.
func (c *Channel) Mail() []Mail {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Mail, len(c.mail))
	for i, m := range c.mail {
		out[i] = *m
	}
	return out
}

// PendingMail returns the messages the inbox has not handed out yet.
func (c *Channel) PendingMail() []Mail {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Mail
	for _, m := range c.mail {
		if !m.Taken {
			out = append(out, *m)
		}
	}
	return out
}

// TakeInbox hands out every message not taken yet (what the inbox tool
// does): each is marked taken, emitted as delivered and logged. It returns
// the text the tool feeds the model.
func (c *Channel) TakeInbox() string {
	c.mu.Lock()
	var fresh []Mail
	for _, m := range c.mail {
		if !m.Taken {
			m.Taken = true
			fresh = append(fresh, *m)
			c.post(c.mailEvent(m, "delivered"))
		}
	}
	words := c.words
	c.mu.Unlock()
	c.flush()
	if len(fresh) == 0 {
		return c.Texts().EmptyInbox
	}
	for _, m := range fresh {
		if err := words.MarkTaken(m.word); err != nil {
			slog.Warn("human: a taken word is not marked in the journal (the next run gets it again)", "err", err)
		}
	}
	lines := []string{c.Texts().InboxHead, ""}
	allAmended := true
	for i, m := range fresh {
		c.logMail(m)
		lines = append(lines, strconv.Itoa(i+1)+". "+m.Text)
		allAmended = allAmended && m.Amended
	}
	note := c.Texts().InboxNotOnDisk
	if allAmended {
		note = c.Texts().InboxAmended
	}
	return strings.Join(append(lines, "", note), "\n")
}

// UIErrors returns what the event callback panicked with, in order.
func (c *Channel) UIErrors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.uiErrors...)
}

// Transcript is the Q&A as markdown: "- Q: …" and "  A: [state] …" per ask.
func (c *Channel) Transcript() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	lines := make([]string, 0, 2*len(c.asks))
	for _, a := range c.asks {
		lines = append(lines, "- Q: "+a.Question, "  A: ["+string(a.State)+"] "+a.Answer)
	}
	return strings.Join(lines, "\n")
}

// cliTimeoutMargin is how much longer than an ask the CLI lets a tool call
// run, so the channel's own timeout always settles an ask first.
const cliTimeoutMargin = 60 * time.Second

// cliMaxToolTimeout is the largest MCP tool timeout the pinned CLI accepts
// (it clamps MCP_TOOL_TIMEOUT to 2^31-1 ms, about 24.8 days).
const cliMaxToolTimeout = math.MaxInt32 * time.Millisecond

// ToolTimeoutEnv is the variable the CLI reads for its MCP tool-call
// timeout, in milliseconds. The pinned CLI (2.1.332) defaults it to
// 100 000 000 ms (about 27.8 hours) and clamps it to [1 s, 2^31-1 ms].
const ToolTimeoutEnv = "MCP_TOOL_TIMEOUT"

// AutoBackgroundEnv is the variable that sets after how many milliseconds
// the CLI moves a still-running MCP call to a background task and lets the
// model go on without its result. The pinned CLI does that only when
// CLAUDE_AUTO_BACKGROUND_TASKS is set (then after 120 s by default); 0
// turns it off.
const AutoBackgroundEnv = "CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS"

// Env returns the variables the CLI needs so that it never cuts an ask
// short: MCP_TOOL_TIMEOUT set to the ask timeout plus a minute (the CLI's
// largest value, about 24.8 days, for Forever or anything longer), and
// CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS=0, so that a user's
// CLAUDE_AUTO_BACKGROUND_TASKS cannot move a waiting ask to the background
// (the model would carry on without the answer). Both apply to every MCP
// server of the session. With a timeout of zero or less no ask blocks and
// Env is empty. Merge it into the session's environment, over the user's.
func (c *Channel) Env() map[string]string {
	if c.timeout <= 0 {
		return map[string]string{}
	}
	d := cliMaxToolTimeout
	if c.timeout < cliMaxToolTimeout-cliTimeoutMargin {
		d = c.timeout + cliTimeoutMargin
	}
	return map[string]string{
		ToolTimeoutEnv:    strconv.FormatInt(d.Milliseconds(), 10),
		AutoBackgroundEnv: "0",
	}
}

func copyAsk(a *Ask) Ask {
	s := *a
	s.Options = append([]string(nil), a.Options...)
	return s
}

// askEvent is an ask's event (with c.mu held, for remaining): text the
// question, payload id, options, state, answer, remaining, asked_at (Unix
// seconds).
func (c *Channel) askEvent(a *Ask) event.Event {
	return event.New(event.Ask, a.Question, map[string]any{
		"id":        a.ID,
		"options":   append([]string{}, a.Options...),
		"state":     string(a.State),
		"answer":    a.Answer,
		"remaining": c.remaining(),
		"asked_at":  float64(a.AskedAt.UnixMilli()) / 1000,
	})
}

// mailEvent is a mail's event: payload kind "mail", state, id, amended (the
// amend file's path when the mail was appended to it, else ""). It has no
// options and no remaining: a UI checks kind first.
func (c *Channel) mailEvent(m *Mail, state string) event.Event {
	amended := ""
	if m.Amended {
		amended = c.amendPath
	}
	return event.New(event.Ask, m.Text, map[string]any{
		"kind": "mail", "state": state, "id": m.ID, "amended": amended,
	})
}

// post queues an event for delivery; c.mu must be held, so events queue in
// the order the changes happened.
func (c *Channel) post(e event.Event) {
	if c.onEvent != nil {
		c.outbox = append(c.outbox, e)
	}
}

// flush delivers queued events unless another goroutine (or an enclosing
// call on this one) is delivering them already; that one delivers these
// too. Events thus reach the callback one at a time and in order.
func (c *Channel) flush() {
	c.mu.Lock()
	if c.dispatching {
		c.mu.Unlock()
		return
	}
	c.dispatching = true
	for len(c.outbox) > 0 {
		batch, fn := c.outbox, c.onEvent
		c.outbox = nil
		c.mu.Unlock()
		for _, e := range batch {
			if err := deliver(fn, e); err != nil {
				c.mu.Lock()
				c.uiErrors = append(c.uiErrors, err)
				c.mu.Unlock()
			}
		}
		c.mu.Lock()
	}
	c.dispatching = false
	c.mu.Unlock()
}

// deliver calls fn, turning a panic into an error: a broken UI must not take
// hours of work down with it.
func deliver(fn func(event.Event), e event.Event) (err error) {
	if fn == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("human: the event callback panicked on event %s: %v", e.Str("id"), p)
		}
	}()
	fn(e)
	return nil
}
