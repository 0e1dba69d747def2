package flower

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
)

// Event is what flower emits and a UI reads; it lives in package event (so
// the layers below the root can emit it too) and is aliased here so a user
// imports one package.
type Event = event.Event

// EventKind is an Event's kind (event.Kind).
type EventKind = event.Kind

// The special values of StepResult.Error. They are strings, as in the
// original's manifest, and compared as such.
const (
	// ErrInterrupted: a human interrupted the attempt (Runtime.Interrupt).
	ErrInterrupted = "interrupted-by-human"
	// ErrHandoffDue: the main thread's context reached the handoff
	// threshold; the runtime writes a handoff and starts a new session.
	ErrHandoffDue = "context-full-handoff"
	// KilledBySignal: the process was killed while the step was in flight
	// (written by the rescue path when the step had no error of its own).
	KilledBySignal = "killed-by-signal"
	// QuitByHuman is the cause a front end gives the run's context when
	// the human quits (the flower command's Ctrl-C twice): a step it
	// stopped ends with an error that ends with these words.
	QuitByHuman = "flower: quit by Ctrl-C"
)

// StepResult is the whole book of one step: what it cost, how it ended,
// which sessions it used. The runtime fills it through an Attempt per try.
//
// It marshals to the original's manifest row: snake_case names, started_at
// and ended_at in Unix seconds, session_id and error null when empty, and
// duration_s.
type StepResult struct {
	// Step is the step's label: "<name>", "<name>#retry<N>",
	// "<name>#round<N>" or "<name>·判定#<N>".
	Step string
	// SessionID is the last live session; after handoffs, the successor.
	SessionID string
	// OK says the step succeeded.
	OK bool
	// CostUSD and NumTurns are accumulated across retries, interrupts,
	// handoffs and handoff-writing turns.
	CostUSD  float64
	NumTurns int
	// Structured is the last attempt's structured output (the result's
	// structured_output, for a spec with an OutputSchema); nil when it gave
	// none. StructuredCalls counts the StructuredOutput calls of the last
	// attempt's main thread: more than one means the model answered twice,
	// and which answer counts cannot be told.
	Structured      json.RawMessage `json:"-"`
	StructuredCalls int             `json:"-"`
	// Text is the main thread's prose of the last attempt: no subagent
	// speech, no prompts, no synthetic API errors. Only when the last
	// attempt failed with no prose of its own is an earlier attempt's text
	// kept; a success with none leaves it empty.
	Text string
	// Error says why the step failed; "" when it did not. Special values:
	// ErrInterrupted, ErrHandoffDue, KilledBySignal.
	Error string
	// StartedAt and EndedAt bound the step (EndedAt is zero while it runs).
	StartedAt time.Time
	EndedAt   time.Time
	// Attempts counts real attempts; interrupts and handoffs are not
	// attempts.
	Attempts int
	// Errors lists synthetic API errors, handoff degradation notes and
	// session-store losses, in order. The model never sees them. A loss
	// (transcript entries the store did not take; see MirrorLossText)
	// leaves OK as the step's own outcome, since its output is whole, but
	// is recorded here, so in the manifest, and in events.jsonl: a later
	// store-backed resume of that session lacks those entries.
	Errors []string
	// Resumed says the step was resumed mid-way (after a retry or an
	// interrupt).
	Resumed bool
	// Retired lists the session ids handoffs burned, in order.
	Retired []string
	// TokensIn and TokensOut are what the step's turns read (input, cache
	// read and cache creation together) and wrote, accumulated like
	// CostUSD: the one count of tokens the terminal's ending and the
	// report both show.
	TokensIn, TokensOut int
	// Context is the main thread's context (tokens) in the current
	// generation: what its latest turn reported (0 right after a handoff).
	// The handoff threshold watches the generation's highest; this is the
	// latest, as the seed defines it.
	Context int
}

// NewStepResult starts the book of a step now, with one attempt.
func NewStepResult(step string) *StepResult {
	return &StepResult{Step: step, StartedAt: time.Now(), Attempts: 1}
}

// clone is a deep copy: the slices are copied too.
func (r *StepResult) clone() StepResult {
	c := *r
	c.Errors = slices.Clone(r.Errors)
	c.Retired = slices.Clone(r.Retired)
	return c
}

// Duration is EndedAt − StartedAt; 0 until both are set.
func (r *StepResult) Duration() time.Duration {
	if r.StartedAt.IsZero() || r.EndedAt.IsZero() {
		return 0
	}
	return r.EndedAt.Sub(r.StartedAt)
}

// DurationS is the duration in seconds rounded to two decimals, the
// manifest's duration_s.
func (r *StepResult) DurationS() float64 {
	return math.Round(r.Duration().Seconds()*100) / 100
}

// Retire does a handoff's bookkeeping: the live session joins Retired, and
// the next generation starts with no session and no context.
func (r *StepResult) Retire() {
	if r.SessionID != "" {
		r.Retired = append(r.Retired, r.SessionID)
	}
	r.SessionID = ""
	r.Context = 0
}

// stepResultJSON is StepResult on the wire (and in manifest.json).
type stepResultJSON struct {
	Step      string   `json:"step"`
	SessionID *string  `json:"session_id"`
	OK        bool     `json:"ok"`
	CostUSD   float64  `json:"cost_usd"`
	NumTurns  int      `json:"num_turns"`
	Text      string   `json:"text"`
	Error     *string  `json:"error"`
	StartedAt float64  `json:"started_at"`
	EndedAt   float64  `json:"ended_at"`
	Attempts  int      `json:"attempts"`
	Errors    []string `json:"errors"`
	Resumed   bool     `json:"resumed"`
	Retired   []string `json:"retired"`
	Context   int      `json:"context"`
	TokensIn  int      `json:"tokens_in,omitempty"` // beyond the original's row: left out when 0
	TokensOut int      `json:"tokens_out,omitempty"`
	DurationS float64  `json:"duration_s"`
	Run       string   `json:"run,omitempty"`
}

func (r StepResult) wire() stepResultJSON {
	nonNil := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return stepResultJSON{
		Step: r.Step, SessionID: nullable(r.SessionID), OK: r.OK, CostUSD: r.CostUSD,
		NumTurns: r.NumTurns, Text: r.Text, Error: nullable(r.Error),
		StartedAt: unixSeconds(r.StartedAt), EndedAt: unixSeconds(r.EndedAt),
		Attempts: r.Attempts, Errors: nonNil(r.Errors), Resumed: r.Resumed,
		Retired: nonNil(r.Retired), Context: r.Context, TokensIn: r.TokensIn, TokensOut: r.TokensOut, DurationS: r.DurationS(),
	}
}

func (w stepResultJSON) result() StepResult {
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return StepResult{
		Step: w.Step, SessionID: deref(w.SessionID), OK: w.OK, CostUSD: w.CostUSD,
		NumTurns: w.NumTurns, Text: w.Text, Error: deref(w.Error),
		StartedAt: fromUnixSeconds(w.StartedAt), EndedAt: fromUnixSeconds(w.EndedAt),
		Attempts: w.Attempts, Errors: w.Errors, Resumed: w.Resumed, Retired: w.Retired,
		Context: w.Context, TokensIn: w.TokensIn, TokensOut: w.TokensOut,
	}
}

// MarshalJSON writes the manifest row form (without run).
func (r StepResult) MarshalJSON() ([]byte, error) { return json.Marshal(r.wire()) }

// UnmarshalJSON reads the manifest row form; duration_s and run are ignored.
func (r *StepResult) UnmarshalJSON(b []byte) error {
	var w stepResultJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = w.result()
	return nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// unixSeconds is t in Unix seconds with microseconds; 0 for the zero time.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1e6
}

func fromUnixSeconds(s float64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(math.Round(s * 1e6)))
}

// MessageSessionID is the session id a CLI message carries, "" if none.
// The runtime records a new one as soon as it appears, so an interrupt or a
// crash early in a turn still leaves a session to resume.
func MessageSessionID(m claude.Message) string {
	switch m := m.(type) {
	case *claude.SystemMessage:
		return m.SessionID
	case *claude.AssistantMessage:
		return m.SessionID
	case *claude.UserMessage:
		return m.SessionID
	case *claude.ResultMessage:
		return m.SessionID
	case *claude.StreamEvent:
		return m.SessionID
	case *claude.RateLimitEvent:
		return m.SessionID
	}
	return ""
}

// Attempt folds one attempt's messages into its StepResult by the
// accumulation rules:
//
//   - main-thread Text events make the attempt's text (joined by "\n"); a
//     failed attempt with none keeps the text of the one before;
//   - Error events (synthetic API errors) go to Errors, never to Text;
//   - a Result event sets the session, adds cost and turns, and sets OK;
//   - a main-thread context sets StepResult.Context (the latest); a
//     subagent's never counts.
//
// The runtime begins one per try, checks for a due handoff or an interrupt
// before it passes each message to Observe, and calls Finish at the end.
type Attempt struct {
	// Lang is the language of the texts the attempt writes itself (the
	// fallback error); "" means English.
	Lang Lang

	r         *StepResult
	texts     []string
	errs      []string // every error event of this attempt
	mainErrs  []string // the main thread's
	last      *claude.ResultMessage
	rateLimit *claude.RateLimitInfo
	apiError  string
	err       error
	mainError string // the error text taken from main-thread sources
}

// BeginAttempt starts an attempt: OK false, no error yet.
func (r *StepResult) BeginAttempt() *Attempt {
	r.OK, r.Error = false, ""
	r.Structured, r.StructuredCalls = nil, 0
	return &Attempt{r: r}
}

// Observe normalizes one CLI message, folds its events into the result and
// returns them for the caller to emit.
func (a *Attempt) Observe(m claude.Message) []Event {
	switch m := m.(type) {
	case *claude.ResultMessage:
		a.last = m
		if len(m.StructuredOutput) > 0 && string(m.StructuredOutput) != "null" {
			a.r.Structured = m.StructuredOutput
		}
	case *claude.RateLimitEvent:
		info := m.Info
		a.rateLimit = &info
	case *claude.AssistantMessage:
		if m.Synthetic() && m.ParentToolUseID == "" && m.Error != "" {
			a.apiError = m.Error
		}
		if m.ParentToolUseID == "" {
			for _, b := range m.Content {
				if tu, ok := b.(*claude.ToolUseBlock); ok && tu.Name == StructuredOutputTool {
					a.r.StructuredCalls++
				}
			}
		}
	case *claude.SystemMessage:
		if m.MirrorError != nil {
			a.r.Errors = append(a.r.Errors, MirrorLossText(m.MirrorError))
		}
	}
	evs := event.NormalizeIn(a.Lang, m)
	for _, e := range evs {
		a.Fold(e)
	}
	return evs
}

// Fold folds one event into the result (Observe calls it for each event of
// a message).
func (a *Attempt) Fold(e Event) {
	r := a.r
	if _, ok := e.Payload["context"]; ok && !e.Subagent() {
		r.Context = e.Int("context")
	}
	switch e.Kind {
	case event.Text:
		if !e.Subagent() {
			a.texts = append(a.texts, e.Text)
		}
	case event.Error:
		r.Errors = append(r.Errors, e.Text)
		a.errs = append(a.errs, e.Text)
		if !e.Subagent() {
			a.mainErrs = append(a.mainErrs, e.Text)
		}
	case event.Result:
		if sid := e.Str("session_id"); sid != "" {
			r.SessionID = sid
		}
		r.CostUSD += e.Float("cost_usd")
		r.NumTurns += e.Int("num_turns")
		r.TokensIn += e.Int("tokens_in")
		r.TokensOut += e.Int("tokens_out")
		r.OK = !e.Bool("is_error")
	}
}

// Stop ends the attempt for a reason of the runtime's own: ErrInterrupted
// or ErrHandoffDue.
func (a *Attempt) Stop(reason string) {
	a.r.OK, a.r.Error = false, reason
}

// Finish closes the attempt. err is what the driver ended with (nil on a
// clean end). A failed attempt's Error is, in order: the reason given to
// Stop; err as "<Type>: <message>"; the last main-thread API error of this
// attempt; the error result's text; the last subagent API error. Only this
// attempt's errors count, so an old error cannot decide a new failure.
func (a *Attempt) Finish(err error) {
	r := a.r
	if err != nil {
		a.err = err
		r.OK = false
	}
	if !r.OK && r.Error == "" {
		a.mainError = firstNonEmpty(errorText(err), last(a.mainErrs), resultText(a.last))
		r.Error = firstNonEmpty(a.mainError, last(a.errs), "claude: "+textsFor(a.Lang).errorResult)
	}
	if r.OK {
		r.Error = ""
	}
	switch t := strings.TrimSpace(strings.Join(a.texts, "\n")); {
	case t != "":
		r.Text = t
	case r.OK:
		r.Text = "" // a success speaks for itself: an old attempt's prose is not its answer
	}
}

// MirrorLossText is how a session-store loss reads in StepResult.Errors.
func MirrorLossText(me *claude.MirrorError) string {
	where := me.Key.SessionID
	if me.Key.Subpath != "" {
		where += "/" + me.Key.Subpath
	}
	return fmt.Sprintf("session store lost %d transcript entries of %s (%s); the CLI's transcript %s still holds them",
		me.Lost, where, me.Error, me.Transcript)
}

// Errors are the error texts this attempt added (synthetic API errors, main
// thread and subagents).
func (a *Attempt) Errors() []string { return a.errs }

// Result is the attempt's last result message, nil if none arrived.
func (a *Attempt) Result() *claude.ResultMessage { return a.last }

// Overflowed reports whether the attempt failed because the main thread's
// context no longer fits: a prompt_too_long or blocking_limit result, or
// overflow wording in this attempt's main-thread error or API errors. Only
// this attempt counts: an overflow earlier in the step, already handed off,
// must not turn every later failure into another handoff.
func (a *Attempt) Overflowed() bool {
	if a.r.OK {
		return false
	}
	if a.last != nil && (a.last.TerminalReason == "prompt_too_long" || a.last.TerminalReason == "blocking_limit") {
		return true
	}
	return doc.IsOverflow(append([]string{a.mainError}, a.mainErrs...)...)
}

// Failure is what the attempt left for ClassifyFailure.
func (a *Attempt) Failure() Failure {
	return Failure{Result: a.last, RateLimit: a.rateLimit, APIError: a.apiError, Err: a.err, Text: a.r.Error}
}

// errorText renders err as "<Type>: <message>" (the original's form, which
// the text classifier reads), or just the message when the type is an
// anonymous wrapper.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if name == "" || t.PkgPath() == "errors" || t.PkgPath() == "fmt" || !unicode.IsUpper([]rune(name)[0]) {
		return err.Error()
	}
	return fmt.Sprintf("%s: %s", name, err.Error())
}

// resultText is what an error result says: its errors, else its result.
func resultText(r *claude.ResultMessage) string {
	if r == nil || !r.IsError {
		return ""
	}
	if len(r.Errors) > 0 {
		return strings.Join(r.Errors, "; ")
	}
	if r.Result != "" {
		return r.Result
	}
	if r.Subtype != "" && r.Subtype != "success" {
		return r.Subtype
	}
	if r.APIErrorStatus != 0 {
		return fmt.Sprintf("API error (HTTP %d)", r.APIErrorStatus)
	}
	return ""
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// TokenCount is the one way flower writes a number of tokens, on the
// screen and in the report: "800", "12.0K".
func TokenCount(n int) string {
	if n >= 1000 {
		return fmt.Sprintf("%.1fK", float64(n)/1000)
	}
	return fmt.Sprint(n)
}

// USD is the one way flower writes a cost, on the screen and in the
// report: dollars with four decimals (a round of a small model costs
// fractions of a cent).
func USD(dollars float64) string { return fmt.Sprintf("$%.4f", dollars) }
