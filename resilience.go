package flower

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/doc"
)

// Resilience defaults.
const (
	DefaultMaxAttempts       = 6
	DefaultBaseDelay         = 4 * time.Second
	DefaultMaxDelay          = 120 * time.Second
	DefaultProbeTimeout      = 5 * time.Second
	DefaultProbeInterval     = 15 * time.Second
	DefaultMaxOfflineWait    = time.Hour
	DefaultMaxUsageLimitWait = 6 * time.Hour
	// DefaultUsageLimitMargin is added to a usage limit's reset time before the
	// retry, so the retry does not arrive a moment early.
	DefaultUsageLimitMargin = 30 * time.Second
	// DefaultStallTimeout is how long a CLI may stay silent, with no tool
	// call running, before its attempt is ended as stalled: far beyond the
	// CLI's own API timeouts and retry backoffs, which report api_retry
	// messages while they wait.
	DefaultStallTimeout = 10 * time.Minute
)

// DefaultResumePrompt is the prompt a retry resumes the session with, in
// lang: the prompts' Resume (prompts/<lang>/resume.md). It carries no error
// detail on purpose: the model needs to know it was cut off and should go
// on, not whether it was ENOTFOUND or a 503; that belongs to the log.
func DefaultResumePrompt(lang Lang) string { return PromptsFor(lang).Resume }

// Resilience is the retry and probe policy: which failures are retried, how
// long to back off, how long to wait for the network or a usage limit.
//
// The zero value is the default policy: on, 6 attempts (the first
// included), 4 s doubling to at most 120 s with ±25% jitter, a 5 s probe
// every 15 s for at most an hour, unknown errors retried, usage limits
// waited out for at most 6 hours.
type Resilience struct {
	// Disabled turns retries off. Default false: retries are on.
	Disabled bool
	// MaxAttempts counts attempts, the first included. 0 means 6.
	MaxAttempts int
	// BaseDelay and MaxDelay bound the backoff. 0 means 4 s and 120 s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// ProbeTimeout bounds one probe; ProbeInterval separates probes.
	// 0 means 5 s and 15 s.
	ProbeTimeout  time.Duration
	ProbeInterval time.Duration
	// MaxOfflineWait is how long WaitOnline waits for the endpoint. 0 means
	// an hour; negative means not at all (one probe).
	MaxOfflineWait time.Duration
	// NoRetryUnknown stops at an error classify cannot place. Default false:
	// unknown errors are retried (most are transient, and fatal ones are
	// caught first).
	NoRetryUnknown bool
	// ResumePrompt is what a retry resumes the session with. "" means
	// DefaultResumePrompt in the run's language (ResumePromptFor).
	ResumePrompt string
	// MaxUsageLimitWait is the longest wait for a usage limit to reset.
	// 0 means 6 hours; negative means never wait (the step fails).
	MaxUsageLimitWait time.Duration
	// UsageLimitMargin is waited past a usage limit's reset time (clocks
	// differ). 0 means 30 s; negative means none.
	UsageLimitMargin time.Duration
	// StallTimeout is how long a CLI may send nothing while no tool call of
	// its session is running (waiting on the model, the API or itself)
	// before the attempt is ended as stalled (*StallError, transient: it
	// is retried, resuming the session). Running tools have bounds of
	// their own (Bash's timeout, a hook's, the human channel's), so their
	// silence does not count; a subagent waiting on the model is no tool
	// and its silence does. It counts from when the CLI is up: its
	// start-up is bounded by the driver's initialize timeout. 0 means 10
	// minutes; negative turns the watch off.
	StallTimeout time.Duration
	// Lang is the language of the notices and the offline note. "" means
	// English; a Runtime sets its own language when this is "".
	Lang Lang

	// Probe replaces Reachable (tests; other probes). nil means Reachable
	// with ProbeTimeout.
	Probe func(ctx context.Context, host string, port int) bool
	// Rand replaces the jitter's random source: a number in [0, 1). nil
	// means math/rand/v2.
	Rand func() float64
}

// DefaultResilience returns the default policy with every field spelled
// out; it behaves exactly like Resilience{}.
func DefaultResilience() Resilience { return Resilience{}.Resolved() }

// Resolved fills the zero fields with their defaults.
func (r Resilience) Resolved() Resilience {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if r.MaxAttempts == 0 {
		r.MaxAttempts = DefaultMaxAttempts
	}
	def(&r.BaseDelay, DefaultBaseDelay)
	def(&r.MaxDelay, DefaultMaxDelay)
	def(&r.ProbeTimeout, DefaultProbeTimeout)
	def(&r.ProbeInterval, DefaultProbeInterval)
	def(&r.MaxOfflineWait, DefaultMaxOfflineWait)
	def(&r.MaxUsageLimitWait, DefaultMaxUsageLimitWait)
	def(&r.UsageLimitMargin, DefaultUsageLimitMargin)
	def(&r.StallTimeout, DefaultStallTimeout)
	return r
}

// Enabled reports whether retries are on.
func (r Resilience) Enabled() bool { return !r.Disabled }

// ResumePromptFor is the resume prompt: ResumePrompt if set, else the
// default in lang.
func (r Resilience) ResumePromptFor(lang Lang) string {
	if r.ResumePrompt != "" {
		return r.ResumePrompt
	}
	return DefaultResumePrompt(lang)
}

// DelayFor is the backoff before retrying after attempt n (1-based):
// min(base·2^(n−1), max)·(0.75 + rand·0.5).
func (r Resilience) DelayFor(attempt int) time.Duration {
	r = r.Resolved()
	d := r.MaxDelay
	if n := max(attempt, 1) - 1; n < 62 {
		if b := r.BaseDelay << n; b > 0 && b>>n == r.BaseDelay && b < r.MaxDelay {
			d = b
		}
	}
	rnd := rand.Float64
	if r.Rand != nil {
		rnd = r.Rand
	}
	return time.Duration(float64(d) * (0.75 + rnd()*0.5))
}

// ErrorKind classifies a failure.
type ErrorKind string

const (
	// ErrorFatal: retrying gives the same answer and costs money (credentials,
	// bad request, budget or turn limit, no CLI).
	ErrorFatal ErrorKind = "fatal"
	// ErrorTransient: the network or the server; wait and retry.
	ErrorTransient ErrorKind = "transient"
	// ErrorUnknown: nothing matched; retried unless NoRetryUnknown.
	ErrorUnknown ErrorKind = "unknown"
	// ErrorUsageLimit: the account's usage limit was hit; wait for its reset
	// (UsageLimitWait) without spending an attempt.
	ErrorUsageLimit ErrorKind = "usage_limit"
	// ErrorOverflow: the context no longer fits; hand off, never retry as is.
	ErrorOverflow ErrorKind = "overflow"
)

// ShouldRetry reports whether a failure of kind is retried: transient ones
// and usage limits (after their wait), unknown ones unless NoRetryUnknown.
// Fatal ones never; overflows are the handoff's business.
func (r Resilience) ShouldRetry(kind ErrorKind) bool {
	switch kind {
	case ErrorTransient, ErrorUsageLimit:
		return true
	case ErrorUnknown:
		return !r.NoRetryUnknown
	}
	return false
}

var (
	fatalText = regexp.MustCompile(`(?i)\b(?:400|401|403|404)\b|invalid.?api.?key|authentication|unauthorized|permission denied` +
		`|invalid_request|credit balance|quota exceeded|budget|max_turns|CLINotFound`)
	transientText = regexp.MustCompile(`(?i)ENOTFOUND|EAI_AGAIN|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENETDOWN` +
		`|socket hang up|fetch failed|network error|Connection error|Can't reach the API server` +
		`|\b(?:429|500|502|503|504|529)\b|overloaded|rate.?limit|too many requests` +
		`|timeout|timed out|temporarily unavailable|service unavailable|internal server error`)
	// refusedResume is the CLI refusing a resume: the session is not there
	// (a moved workspace, another HOME) or the truncation check failed.
	// Retrying cannot change either.
	refusedResume = regexp.MustCompile(`No conversation found with session ID|Resume rejected by --resume-drops-turn`)
	// noConversation is the CLI refusing to resume a session it has no
	// conversation of.
	noConversation = regexp.MustCompile(`No conversation found with session ID`)
	// usageLimitText is how the CLI words a usage (not a rate) limit.
	usageLimitText = regexp.MustCompile(`(?i)(?:usage|session|weekly|daily|5-hour|five.hour|opus) limit|limit reached|limit · resets|resets (?:at|in) `)
)

// Classify sorts an error text: ErrorFatal, ErrorTransient or
// ErrorUnknown, by the original's two word lists. Fatal is checked first (a
// 401's text often says "connection" too, and waiting on a wrong key burns
// hours); case is ignored; "" is ErrorUnknown.
func Classify(text string) ErrorKind {
	switch {
	case text == "":
		return ErrorUnknown
	case fatalText.MatchString(text):
		return ErrorFatal
	case transientText.MatchString(text):
		return ErrorTransient
	}
	return ErrorUnknown
}

// Failure is what a failed attempt left behind, for ClassifyFailure.
type Failure struct {
	// Result is the attempt's last result message, if any.
	Result *claude.ResultMessage
	// RateLimit is the last rate-limit status the attempt saw, if any.
	RateLimit *claude.RateLimitInfo
	// APIError is the error class of the attempt's last main-thread
	// synthetic message (authentication_failed, rate_limit, …), if any.
	APIError string
	// Err is what the driver ended with, if anything.
	Err error
	// Text is the step's error text (StepResult.Error).
	Text string
}

// ResetsAt is when the rate limit the attempt hit resets; zero if unknown.
func (f Failure) ResetsAt() time.Time {
	if f.RateLimit == nil || f.RateLimit.ResetsAt <= 0 {
		return time.Time{}
	}
	return time.Unix(f.RateLimit.ResetsAt, 0)
}

// ClassifyResult classifies a result message and the error the driver
// ended with (either may be nil); see ClassifyFailure.
func ClassifyResult(r *claude.ResultMessage, err error) ErrorKind {
	return ClassifyFailure(Failure{Result: r, Err: err})
}

// ClassifyFailure classifies a failure by the protocol's structured fields
// first, then by text:
//
//   - no CLI; a budget, turn or structured-output limit (terminal_reason or
//     subtype); HTTP 400 (unless it says the prompt is too long), 401, 403,
//     404; an authentication, billing, invalid-request or model-not-found
//     API error: ErrorFatal;
//   - terminal_reason prompt_too_long or blocking_limit, or overflow
//     wording: ErrorOverflow;
//   - a rejected rate limit, or HTTP 429 worded as a usage limit:
//     ErrorUsageLimit;
//   - HTTP 408, 429, 5xx; a rate_limit or server_error API error:
//     ErrorTransient;
//   - else Classify of the texts (Text, Err, the result's text).
func ClassifyFailure(f Failure) ErrorKind {
	r := f.Result
	var re *claude.ResultError
	if r == nil && errors.As(f.Err, &re) {
		r = re.Result
	}
	var nf *claude.CLINotFoundError
	if errors.As(f.Err, &nf) {
		return ErrorFatal
	}
	// A CLI the system refuses to start (not a program for this machine,
	// no right to run it) is refused again on every attempt.
	var ce *claude.ConnectionError
	if errors.As(f.Err, &ce) && (errors.Is(ce.Err, syscall.ENOEXEC) || errors.Is(ce.Err, syscall.EACCES)) {
		return ErrorFatal
	}
	var stall *StallError
	if errors.As(f.Err, &stall) {
		return ErrorTransient
	}
	texts := []string{f.Text}
	if f.Err != nil {
		texts = append(texts, f.Err.Error())
	}
	if r != nil {
		texts = append(texts, r.Result)
		texts = append(texts, r.Errors...)
	}
	all := strings.Join(texts, "\n")
	if refusedResume.MatchString(all) {
		return ErrorFatal
	}
	status := 0
	if r != nil {
		switch r.TerminalReason {
		case "budget_exhausted", "max_turns", "structured_output_retry_exhausted":
			return ErrorFatal
		case "prompt_too_long", "blocking_limit":
			return ErrorOverflow
		}
		switch r.Subtype {
		case "error_max_budget_usd", "error_max_turns", "error_max_structured_output_retries":
			return ErrorFatal
		}
		status = r.APIErrorStatus
	}
	switch {
	case status == 400 && doc.IsOverflow(all):
		return ErrorOverflow
	case status == 400, status == 401, status == 403, status == 404:
		return ErrorFatal
	}
	switch f.APIError {
	case "authentication_failed", "billing_error", "invalid_request", "model_not_found":
		return ErrorFatal
	}
	if doc.IsOverflow(all) {
		return ErrorOverflow
	}
	if (f.RateLimit != nil && f.RateLimit.Status == "rejected") ||
		((status == 429 || f.APIError == "rate_limit") && usageLimitText.MatchString(all)) {
		return ErrorUsageLimit
	}
	switch {
	case status == 408, status == 429, status >= 500 && status <= 599:
		return ErrorTransient
	}
	switch f.APIError {
	case "rate_limit", "server_error":
		return ErrorTransient
	}
	var k ErrorKind = ErrorUnknown
	for _, t := range texts {
		switch Classify(t) {
		case ErrorFatal:
			return ErrorFatal
		case ErrorTransient:
			k = ErrorTransient
		}
	}
	return k
}

// UsageLimitWait decides the wait for a usage limit that resets at
// resetsAt: until then plus the UsageLimitMargin. It is false when the reset
// time is unknown (zero) or the wait would exceed MaxUsageLimitWait; the
// caller then treats the failure as an ordinary transient one or stops.
func (r Resilience) UsageLimitWait(resetsAt, now time.Time) (time.Duration, bool) {
	r = r.Resolved()
	if resetsAt.IsZero() || r.MaxUsageLimitWait < 0 {
		return 0, false
	}
	d := max(resetsAt.Sub(now), 0) + max(r.UsageLimitMargin, 0)
	if d > r.MaxUsageLimitWait {
		return d, false
	}
	return d, true
}

// Endpoint is the host and port the API is reached at: those of
// ANTHROPIC_BASE_URL, else api.anthropic.com:443. A gateway must be probed
// itself; that api.anthropic.com answers says nothing about it.
func Endpoint() (host string, port int) { return EndpointOf(os.Getenv("ANTHROPIC_BASE_URL")) }

// EndpointOf is Endpoint for a given base URL: https is assumed when the
// scheme is missing, the port is the URL's or else 80 for http and 443
// otherwise, and an empty or unreadable URL means api.anthropic.com:443.
func EndpointOf(baseURL string) (host string, port int) {
	const defaultHost = "api.anthropic.com"
	s := strings.TrimSpace(baseURL)
	if s == "" {
		return defaultHost, 443
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Hostname() == "" {
		return defaultHost, 443
	}
	if p, err := strconv.Atoi(u.Port()); err == nil && p > 0 && p < 65536 {
		return u.Hostname(), p
	}
	if strings.EqualFold(u.Scheme, "http") {
		return u.Hostname(), 80
	}
	return u.Hostname(), 443
}

// Reachable reports whether host resolves and accepts a TCP connection on
// port within timeout. It sends nothing (no HTTP, no credentials): a probe
// must be free, or probing every 15 seconds during an outage would be a
// fault of its own. Any failure is false.
func Reachable(ctx context.Context, host string, port int, timeout time.Duration) bool {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return false
	}
	var d net.Dialer
	for _, a := range addrs {
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a, strconv.Itoa(port)))
		if err == nil {
			c.Close()
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
	return false
}

// OfflineError says the endpoint stayed unreachable for the whole wait.
type OfflineError struct {
	Host string
	Port int
	Wait time.Duration
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("flower: %s:%d still unreachable after %s", e.Host, e.Port, e.Wait)
}

// HumanWait renders MaxOfflineWait the original's way, in r.Lang: "N 秒"
// ("N seconds") under a minute, else "N 分钟" ("N minutes").
func (r Resilience) HumanWait() string {
	t := textsFor(r.Lang)
	w := r.Resolved().MaxOfflineWait.Seconds()
	if w < 60 {
		return fmt.Sprintf(t.seconds, max(w, 0))
	}
	return fmt.Sprintf(t.minutes, w/60)
}

// OfflineNote is what the runtime appends to a step's error when the
// network did not come back: "网络在 60 分钟 内未恢复" ("the network did not
// come back within 60 minutes").
func (r Resilience) OfflineNote() string { return fmt.Sprintf(textsFor(r.Lang).offline, r.HumanWait()) }

// WaitOnline probes the Endpoint until it answers. On the first failure it
// notifies "<host>:<port> 不可达,等待恢复(最多 60 分钟)", on recovery after a
// failure "<host>:<port> 恢复,继续", and nothing in between. It returns nil
// once the endpoint answers, an *OfflineError after MaxOfflineWait, or the
// context's error when ctx ends. notify may be nil.
func (r Resilience) WaitOnline(ctx context.Context, notify func(string)) error {
	host, port := Endpoint()
	return r.waitOnline(ctx, host, port, notify)
}

func (r Resilience) waitOnline(ctx context.Context, host string, port int, notify func(string)) error {
	r = r.Resolved()
	probe := r.Probe
	if probe == nil {
		probe = func(ctx context.Context, host string, port int) bool {
			return Reachable(ctx, host, port, r.ProbeTimeout)
		}
	}
	say := func(s string) {
		if notify != nil {
			notify(s)
		}
	}
	deadline := time.Now().Add(r.MaxOfflineWait)
	failed := false
	for {
		if probe(ctx, host, port) {
			if failed {
				say(fmt.Sprintf(textsFor(r.Lang).reachable, host, port))
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !failed {
			say(fmt.Sprintf(textsFor(r.Lang).unreachable, host, port, r.HumanWait()))
			failed = true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &OfflineError{Host: host, Port: port, Wait: max(r.MaxOfflineWait, 0)}
		}
		// The last probe is at the deadline.
		t := time.NewTimer(min(r.ProbeInterval, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// StallError ends an attempt whose CLI sent nothing for Resilience.StallTimeout
// while none of its tool calls ran.
type StallError struct {
	Silence time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("flower: the CLI sent nothing for %s with no tool running (stalled); its process was ended "+
		"and the step is retried from its session; if this repeats, check the API endpoint, or raise Resilience.StallTimeout", e.Silence)
}
