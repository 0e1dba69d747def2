package flower

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"go.uber.org/goleak"
)

func TestZeroResilienceBehavesAsTheDefaults(t *testing.T) {
	want := Resilience{
		MaxAttempts: 6, BaseDelay: 4 * time.Second, MaxDelay: 120 * time.Second,
		ProbeTimeout: 5 * time.Second, ProbeInterval: 15 * time.Second,
		MaxOfflineWait: time.Hour, MaxUsageLimitWait: 6 * time.Hour, UsageLimitMargin: 30 * time.Second,
		StallTimeout: 10 * time.Minute,
	}
	var r Resilience
	got := r.Resolved()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resilience{}.Resolved() = %+v\nwant %+v", got, want)
	}
	if !r.Enabled() || !r.ShouldRetry(ErrorUnknown) {
		t.Error("the zero policy must be on and retry unknown errors")
	}
	if r.ResumePromptFor("zh") != "上一轮在中途被打断,没有跑完。检查一下工作台里已经落盘的东西,从中断处接着做,不要重头来过。" {
		t.Errorf("default resume prompt = %q", r.ResumePromptFor(""))
	}
	if got := DefaultResilience(); got.MaxAttempts != 6 || got.HumanWait() != r.HumanWait() {
		t.Errorf("DefaultResilience() = %+v", got)
	}
}

func TestResumePromptFollowsTheLanguage(t *testing.T) {
	var r Resilience
	if p := r.ResumePromptFor(English); p != PromptsFor(English).Resume || !strings.Contains(p, "do not start over") {
		t.Errorf("English resume prompt = %q", p)
	}
	if p := r.ResumePromptFor("en-GB"); p != DefaultResumePrompt(English) {
		t.Errorf("en-GB resume prompt = %q", p)
	}
	if p := (Resilience{ResumePrompt: "go on"}).ResumePromptFor(English); p != "go on" {
		t.Errorf("an explicit resume prompt is replaced: %q", p)
	}
}

func TestDelayForDoublesUpToTheMaximumWithJitter(t *testing.T) {
	tests := []struct {
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{1, 0.5, 4 * time.Second},
		{2, 0.5, 8 * time.Second},
		{3, 0.5, 16 * time.Second},
		{5, 0.5, 64 * time.Second},
		{6, 0.5, 120 * time.Second},
		{100, 0.5, 120 * time.Second},
		{0, 0.5, 4 * time.Second},
		{1, 0, 3 * time.Second},
		{1, 0.999999, 4_999_998 * time.Microsecond},
		{6, 0, 90 * time.Second},
	}
	for _, tt := range tests {
		r := Resilience{Rand: func() float64 { return tt.rnd }}
		if got := r.DelayFor(tt.attempt); got != tt.want {
			t.Errorf("DelayFor(%d) with rand %v = %v, want %v", tt.attempt, tt.rnd, got, tt.want)
		}
	}
	// Without a fixed source the jitter stays within ±25%.
	for n := 1; n <= 8; n++ {
		base := min(4*time.Second<<(n-1), 120*time.Second)
		for range 50 {
			d := (Resilience{}).DelayFor(n)
			if d < base*3/4 || d > base*5/4 {
				t.Fatalf("DelayFor(%d) = %v, outside [%v, %v]", n, d, base*3/4, base*5/4)
			}
		}
	}
}

func TestClassifyCoversBothWordLists(t *testing.T) {
	fatal := []string{
		"API Error: 400 bad", "HTTP 401", "status 403 forbidden", "404 not found",
		"Invalid API key", "invalid_api_key", "invalidapikey", "Authentication failed",
		"401 Unauthorized", "unauthorized", "Permission denied", "invalid_request_error",
		"Your credit balance is too low", "Quota exceeded", "max budget reached",
		"error_max_turns: max_turns", "CLINotFoundError: claude CLI not found",
	}
	transient := []string{
		"getaddrinfo ENOTFOUND api.anthropic.com", "EAI_AGAIN", "read ECONNRESET",
		"connect ECONNREFUSED 127.0.0.1:443", "ETIMEDOUT", "write EPIPE", "EHOSTUNREACH",
		"ENETDOWN", "socket hang up", "TypeError: fetch failed", "Network error",
		"Connection error.", "API Error: Can't reach the API server", "API Error: 429",
		"500", "HTTP 502", "503", "504 gateway", "529", "Overloaded", "rate limit",
		"rate_limit_error", "ratelimit", "Too Many Requests", "request timeout",
		"Request timed out", "temporarily unavailable", "Service Unavailable",
		"Internal Server Error",
	}
	for _, s := range fatal {
		if got := Classify(s); got != ErrorFatal {
			t.Errorf("Classify(%q) = %s, want fatal", s, got)
		}
	}
	for _, s := range transient {
		if got := Classify(s); got != ErrorTransient {
			t.Errorf("Classify(%q) = %s, want transient", s, got)
		}
	}
	others := []struct {
		text string
		want ErrorKind
	}{
		{"", ErrorUnknown},
		{"something odd happened", ErrorUnknown},
		{"401 Unauthorized after a timeout", ErrorFatal},
		{"Connection error: invalid api key", ErrorFatal},
		{"ECONNRESET while reading the budget", ErrorFatal},
		{"error 4010", ErrorUnknown},
		{"port 5000 busy", ErrorUnknown},
		{"code 1500", ErrorUnknown},
		{"TIMEOUT", ErrorTransient},
	}
	for _, tt := range others {
		if got := Classify(tt.text); got != tt.want {
			t.Errorf("Classify(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
}

func TestClassifyFailureReadsTheStructuredFieldsFirst(t *testing.T) {
	res := func(subtype, reason string, status int, text string) *claude.ResultMessage {
		return &claude.ResultMessage{Subtype: subtype, IsError: true, TerminalReason: reason, APIErrorStatus: status, Result: text}
	}
	tests := []struct {
		name string
		f    Failure
		want ErrorKind
	}{
		{"a budget limit is fatal", Failure{Result: res("error_max_budget_usd", "", 0, "")}, ErrorFatal},
		{"a refused resume is fatal", Failure{Err: errors.New("claude: initialize: claude: No conversation found with session ID: 5635"), Text: "x"}, ErrorFatal},
		{"a rejected truncation is fatal", Failure{Result: res("error_during_execution", "", 0, "Resume rejected by --resume-drops-turn: turn mismatch")}, ErrorFatal},
		{"a spent budget is fatal", Failure{Result: res("success", "budget_exhausted", 0, "")}, ErrorFatal},
		{"a turn limit is fatal", Failure{Result: res("error_max_turns", "max_turns", 0, "")}, ErrorFatal},
		{"a too long prompt is an overflow", Failure{Result: res("success", "prompt_too_long", 400, "Prompt is too long")}, ErrorOverflow},
		{"a blocking limit is an overflow", Failure{Result: res("success", "blocking_limit", 0, "Prompt is too long")}, ErrorOverflow},
		{"an old CLI's 400 saying too long is an overflow", Failure{Result: res("success", "", 400, "Prompt is too long")}, ErrorOverflow},
		{"a plain 400 is fatal", Failure{Result: res("success", "api_error", 400, "API Error: 400 bad request")}, ErrorFatal},
		{"a 401 is fatal even when the text says timeout", Failure{Result: res("success", "api_error", 401, "timeout")}, ErrorFatal},
		{"a 403 is fatal", Failure{Result: res("success", "api_error", 403, "")}, ErrorFatal},
		{"a 404 is fatal", Failure{Result: res("success", "api_error", 404, "")}, ErrorFatal},
		{"a 500 is transient", Failure{Result: res("success", "api_error", 500, "API Error: 500 fake error. check your inference gateway")}, ErrorTransient},
		{"a 529 is transient", Failure{Result: res("success", "api_error", 529, "")}, ErrorTransient},
		{"a 503 is transient even worded oddly", Failure{Result: res("success", "api_error", 503, "whatever")}, ErrorTransient},
		{"a 429 rate limit is transient", Failure{Result: res("success", "api_error", 429, "API Error: 429 rate limited")}, ErrorTransient},
		{"a 429 session limit is a usage limit", Failure{Result: res("success", "api_error", 429, "You've hit your session limit · resets 3pm")}, ErrorUsageLimit},
		{"a rejected rate limit is a usage limit", Failure{Result: res("success", "api_error", 429, "API Error: 429"), RateLimit: &claude.RateLimitInfo{Status: "rejected", ResetsAt: 1}}, ErrorUsageLimit},
		{"an allowed warning is not a usage limit", Failure{Result: res("success", "api_error", 429, "API Error: 429"), RateLimit: &claude.RateLimitInfo{Status: "allowed_warning"}}, ErrorTransient},
		{"no CLI is fatal", Failure{Err: &claude.CLINotFoundError{Path: "/x/claude"}}, ErrorFatal},
		{"a wrapped missing CLI is fatal", Failure{Err: fmt.Errorf("start: %w", &claude.CLINotFoundError{})}, ErrorFatal},
		{"a CLI the system cannot start is fatal", Failure{Err: &claude.ConnectionError{Msg: "start /x/claude", Err: &os.PathError{Op: "fork/exec", Path: "/x/claude", Err: syscall.ENOEXEC}}}, ErrorFatal},
		{"a CLI without the right to run is fatal", Failure{Err: &claude.ConnectionError{Msg: "start /x/claude", Err: &os.PathError{Op: "fork/exec", Path: "/x/claude", Err: syscall.EACCES}}}, ErrorFatal},
		{"a machine out of processes is waited for", Failure{Err: &claude.ConnectionError{Msg: "start /x/claude", Err: &os.PathError{Op: "fork/exec", Path: "/x/claude", Err: syscall.EAGAIN}}}, ErrorTransient},
		{"the result inside a ResultError is read", Failure{Err: &claude.ResultError{Result: res("error_max_turns", "max_turns", 0, "")}}, ErrorFatal},
		{"an authentication API error is fatal", Failure{APIError: "authentication_failed", Text: "ECONNRESET"}, ErrorFatal},
		{"a billing API error is fatal", Failure{APIError: "billing_error"}, ErrorFatal},
		{"a missing model is fatal", Failure{APIError: "model_not_found"}, ErrorFatal},
		{"a server API error is transient", Failure{APIError: "server_error", Text: "API Error"}, ErrorTransient},
		{"a rate-limit API error is transient", Failure{APIError: "rate_limit"}, ErrorTransient},
		{"overflow wording alone is an overflow", Failure{Text: "input length and max_tokens exceed context limit"}, ErrorOverflow},
		{"the text rules come last", Failure{Text: "ProcessError: ECONNRESET"}, ErrorTransient},
		{"a fatal word in any text wins", Failure{Text: "ECONNRESET", Err: errors.New("invalid api key")}, ErrorFatal},
		{"nothing at all is unknown", Failure{}, ErrorUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClassifyFailure(tt.f); got != tt.want {
				t.Errorf("ClassifyFailure = %s, want %s", got, tt.want)
			}
		})
	}
	if got := ClassifyResult(res("success", "api_error", 529, ""), nil); got != ErrorTransient {
		t.Errorf("ClassifyResult(529) = %s", got)
	}
	if got := ClassifyResult(nil, &claude.CLINotFoundError{}); got != ErrorFatal {
		t.Errorf("ClassifyResult(no CLI) = %s", got)
	}
}

func TestShouldRetry(t *testing.T) {
	tests := []struct {
		r    Resilience
		kind ErrorKind
		want bool
	}{
		{Resilience{}, ErrorTransient, true},
		{Resilience{}, ErrorUnknown, true},
		{Resilience{NoRetryUnknown: true}, ErrorUnknown, false},
		{Resilience{}, ErrorFatal, false},
		{Resilience{}, ErrorUsageLimit, true},
		{Resilience{}, ErrorOverflow, false},
	}
	for _, tt := range tests {
		if got := tt.r.ShouldRetry(tt.kind); got != tt.want {
			t.Errorf("%+v.ShouldRetry(%s) = %v", tt.r, tt.kind, got)
		}
	}
}

func TestUsageLimitWaitsForTheResetWithinTheMaximum(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		r        Resilience
		resetsAt time.Time
		want     time.Duration
		ok       bool
	}{
		{"an hour away waits an hour and the margin", Resilience{}, now.Add(time.Hour), time.Hour + DefaultUsageLimitMargin, true},
		{"a reset already past waits only the margin", Resilience{}, now.Add(-time.Minute), DefaultUsageLimitMargin, true},
		{"beyond six hours is not waited", Resilience{}, now.Add(7 * time.Hour), 7*time.Hour + DefaultUsageLimitMargin, false},
		{"an unknown reset is not waited", Resilience{}, time.Time{}, 0, false},
		{"a larger maximum waits longer", Resilience{MaxUsageLimitWait: 24 * time.Hour}, now.Add(7 * time.Hour), 7*time.Hour + DefaultUsageLimitMargin, true},
		{"a negative maximum never waits", Resilience{MaxUsageLimitWait: -1}, now.Add(time.Minute), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.r.UsageLimitWait(tt.resetsAt, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("UsageLimitWait = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	f := Failure{RateLimit: &claude.RateLimitInfo{Status: "rejected", ResetsAt: now.Unix()}}
	if !f.ResetsAt().Equal(now) || !(Failure{}).ResetsAt().IsZero() {
		t.Errorf("Failure.ResetsAt = %v", f.ResetsAt())
	}
}

func TestEndpointOfABaseURL(t *testing.T) {
	tests := []struct {
		url  string
		host string
		port int
	}{
		{"", "api.anthropic.com", 443},
		{"https://api.anthropic.com", "api.anthropic.com", 443},
		{"http://gateway.local", "gateway.local", 80},
		{"HTTP://gateway.local/v1", "gateway.local", 80},
		{"http://gateway.local:8080", "gateway.local", 8080},
		{"gateway.example.com", "gateway.example.com", 443},
		{"gateway.example.com:9000/api", "gateway.example.com", 9000},
		{"https://[::1]:8443/", "::1", 8443},
		{"  https://x.y  ", "x.y", 443},
		{"https://", "api.anthropic.com", 443},
		{"https://host:99999", "host", 443},
	}
	for _, tt := range tests {
		if h, p := EndpointOf(tt.url); h != tt.host || p != tt.port {
			t.Errorf("EndpointOf(%q) = %s:%d, want %s:%d", tt.url, h, p, tt.host, tt.port)
		}
	}
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:18610")
	if h, p := Endpoint(); h != "127.0.0.1" || p != 18610 {
		t.Errorf("Endpoint() = %s:%d", h, p)
	}
}

// closedLoopbackPort returns a loopback port nothing listens on.
func closedLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestReachableProbesTCPOnly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		accepted <- buf[:n]
	}()
	port := l.Addr().(*net.TCPAddr).Port
	if !Reachable(context.Background(), "127.0.0.1", port, 2*time.Second) {
		t.Fatal("a listening loopback port is unreachable")
	}
	if sent := <-accepted; len(sent) != 0 {
		t.Errorf("the probe sent %q; it must send nothing", sent)
	}
	if Reachable(context.Background(), "127.0.0.1", closedLoopbackPort(t), 2*time.Second) {
		t.Error("a closed loopback port is reachable")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Reachable(ctx, "127.0.0.1", port, time.Second) {
		t.Error("a probe with a cancelled context succeeded")
	}
}

// scriptedProbe answers from a script, then true.
type scriptedProbe struct {
	mu     sync.Mutex
	script []bool
	calls  int
}

func (p *scriptedProbe) probe(ctx context.Context, host string, port int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if len(p.script) == 0 {
		return true
	}
	ok := p.script[0]
	p.script = p.script[1:]
	return ok
}

func TestWaitOnlineNotifiesOnceDownAndOnceBack(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:18610")
	fp := &scriptedProbe{script: []bool{false, false, true}}
	r := Resilience{Probe: fp.probe, ProbeInterval: time.Millisecond, Lang: Chinese}
	var notes []string
	if err := r.WaitOnline(context.Background(), func(s string) { notes = append(notes, s) }); err != nil {
		t.Fatalf("WaitOnline: %v", err)
	}
	want := []string{"127.0.0.1:18610 不可达,等待恢复(最多 60 分钟)", "127.0.0.1:18610 恢复,继续"}
	if strings.Join(notes, "|") != strings.Join(want, "|") || fp.calls != 3 {
		t.Errorf("notes %q after %d probes, want %q after 3", notes, fp.calls, want)
	}
}

func TestWaitOnlineSaysNothingWhenOnline(t *testing.T) {
	fp := &scriptedProbe{}
	var notes []string
	if err := (Resilience{Probe: fp.probe}).waitOnline(context.Background(), "h", 1, func(s string) { notes = append(notes, s) }); err != nil || len(notes) != 0 {
		t.Errorf("err %v notes %q", err, notes)
	}
	if err := (Resilience{Probe: fp.probe}).waitOnline(context.Background(), "h", 1, nil); err != nil {
		t.Errorf("nil notify: %v", err)
	}
}

func TestWaitOnlineGivesUpAfterTheMaximum(t *testing.T) {
	fp := &scriptedProbe{script: make([]bool, 1000)}
	r := Resilience{Probe: fp.probe, ProbeInterval: 5 * time.Millisecond, MaxOfflineWait: 30 * time.Millisecond, Lang: Chinese}
	var notes []string
	err := r.waitOnline(context.Background(), "gw", 8443, func(s string) { notes = append(notes, s) })
	var off *OfflineError
	if !errors.As(err, &off) || off.Host != "gw" || off.Port != 8443 {
		t.Fatalf("err = %v, want an OfflineError for gw:8443", err)
	}
	if len(notes) != 1 || notes[0] != "gw:8443 不可达,等待恢复(最多 0 秒)" {
		t.Errorf("notes = %q", notes)
	}
	if fp.calls < 2 {
		t.Errorf("gave up after %d probes", fp.calls)
	}
}

func TestWaitOnlineStopsWhenTheContextEnds(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fp := &scriptedProbe{script: make([]bool, 1_000_000)}
	r := Resilience{Probe: fp.probe, ProbeInterval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.waitOnline(ctx, "h", 443, nil) }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitOnline ignored the cancelled context")
	}
}

func TestWaitOnlineAgainstRealLoopbackSockets(t *testing.T) {
	port := closedLoopbackPort(t)
	t.Setenv("ANTHROPIC_BASE_URL", fmt.Sprintf("http://127.0.0.1:%d", port))
	r := Resilience{ProbeInterval: 10 * time.Millisecond, ProbeTimeout: time.Second, MaxOfflineWait: 50 * time.Millisecond}
	var off *OfflineError
	if err := r.WaitOnline(context.Background(), nil); !errors.As(err, &off) {
		t.Fatalf("closed port: err = %v, want OfflineError", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Setenv("ANTHROPIC_BASE_URL", "http://"+l.Addr().String())
	if err := r.WaitOnline(context.Background(), nil); err != nil {
		t.Errorf("listening port: %v", err)
	}
}

func TestOfflineNoteSaysTheWait(t *testing.T) {
	tests := []struct {
		wait time.Duration
		want string
	}{
		{0, "网络在 60 分钟 内未恢复"},
		{30 * time.Second, "网络在 30 秒 内未恢复"},
		{90 * time.Minute, "网络在 90 分钟 内未恢复"},
	}
	for _, tt := range tests {
		if got := (Resilience{MaxOfflineWait: tt.wait, Lang: Chinese}).OfflineNote(); got != tt.want {
			t.Errorf("OfflineNote(%v) = %q, want %q", tt.wait, got, tt.want)
		}
	}
}
