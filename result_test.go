package flower

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/event"
)

func mustParseMessage(t *testing.T, line string) claude.Message {
	t.Helper()
	m, err := claude.ParseMessage([]byte(line))
	if err != nil {
		t.Fatalf("ParseMessage(%s): %v", line, err)
	}
	return m
}

// Lines as the CLI writes them (docs/real-cli.md §4, trimmed).
const (
	lineInit      = `{"type":"system","subtype":"init","cwd":"/w","session_id":"s1","tools":["Bash"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"acceptEdits"}`
	lineText      = `{"type":"assistant","message":{"id":"m1","model":"claude-opus-5-5","content":[{"type":"text","text":"main says"}],"usage":{"input_tokens":10,"cache_read_input_tokens":30000,"cache_creation_input_tokens":500}},"parent_tool_use_id":null,"session_id":"s1"}`
	lineSubText   = `{"type":"assistant","message":{"id":"m2","model":"claude-opus-5-5","content":[{"type":"text","text":"sub says"}],"usage":{"input_tokens":900000}},"parent_tool_use_id":"toolu_agent","session_id":"s1"}`
	linePrompt    = `{"type":"user","message":{"role":"user","content":"SUBAGENT: do it"},"parent_tool_use_id":"toolu_agent","session_id":"s1"}`
	lineSynthetic = `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: Can't reach the API server (ENOTFOUND)"}]},"parent_tool_use_id":null,"session_id":"s1","error":"unknown"}`
	lineOK        = `{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"main says","session_id":"s1","total_cost_usd":0.25,"terminal_reason":"completed"}`
	lineFailed    = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"API Error: 500 fake error.","session_id":"s1","total_cost_usd":0.05,"api_error_status":500,"terminal_reason":"api_error"}`
	lineTooLong   = `{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"Prompt is too long","session_id":"s1","total_cost_usd":0.01,"api_error_status":400,"terminal_reason":"prompt_too_long"}`
)

func runAttempt(t *testing.T, r *StepResult, err error, lines ...string) *Attempt {
	t.Helper()
	a := r.BeginAttempt()
	for _, l := range lines {
		a.Observe(mustParseMessage(t, l))
	}
	a.Finish(err)
	return a
}

func TestStepResultMarshalsAsTheManifestRow(t *testing.T) {
	start := time.Unix(1_790_000_000, 250_000_000)
	r := StepResult{Step: "干活", StartedAt: start, EndedAt: start.Add(3*time.Second + 456*time.Millisecond), Attempts: 1}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"step":"干活","session_id":null,"ok":false,"cost_usd":0,"num_turns":0,"text":"","error":null,` +
		`"started_at":1790000000.25,"ended_at":1790000003.706,"attempts":1,"errors":[],"resumed":false,` +
		`"retired":[],"context":0,"duration_s":3.46}`
	if string(b) != want {
		t.Errorf("json:\n got %s\nwant %s", b, want)
	}
	full := StepResult{Step: "s#retry2", SessionID: "sid", OK: true, CostUSD: 1.5, NumTurns: 7, Text: "t",
		Error: ErrInterrupted, StartedAt: start, EndedAt: start.Add(time.Minute), Attempts: 3,
		Errors: []string{"e"}, Resumed: true, Retired: []string{"old"}, Context: 123_456, TokensIn: 71_000, TokensOut: 900}
	b, _ = json.Marshal(full)
	var back StepResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, full) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, full)
	}
}

func TestDurationIsZeroUntilTheStepEnds(t *testing.T) {
	r := NewStepResult("x")
	if r.Duration() != 0 || r.DurationS() != 0 || r.Attempts != 1 || r.StartedAt.IsZero() {
		t.Errorf("a running step: %+v, duration %v", r, r.Duration())
	}
	r.EndedAt = r.StartedAt.Add(1234567 * time.Microsecond)
	if r.DurationS() != 1.23 {
		t.Errorf("DurationS = %v, want 1.23", r.DurationS())
	}
}

func TestAttemptCollectsOnlyMainThreadProse(t *testing.T) {
	r := NewStepResult("work")
	a := runAttempt(t, r, nil, lineInit, linePrompt, lineSubText, lineSynthetic, lineText, lineOK)
	if !r.OK || r.Error != "" {
		t.Errorf("ok %v error %q", r.OK, r.Error)
	}
	if r.Text != "main says" {
		t.Errorf("Text = %q: only main-thread prose belongs there", r.Text)
	}
	if !reflect.DeepEqual(r.Errors, []string{"API Error: Can't reach the API server (ENOTFOUND)"}) || len(a.Errors()) != 1 {
		t.Errorf("Errors = %q", r.Errors)
	}
	if r.Context != 30510 {
		t.Errorf("Context = %d: a subagent's context must not count", r.Context)
	}
	if r.SessionID != "s1" || r.CostUSD != 0.25 || r.NumTurns != 2 {
		t.Errorf("books: %+v", r)
	}
}

func TestAttemptsAccumulateTheBooks(t *testing.T) {
	r := NewStepResult("work")
	runAttempt(t, r, &claude.ResultError{Result: &claude.ResultMessage{Result: "API Error: 500 fake error.", IsError: true}}, lineText, lineFailed)
	if r.OK || r.Text != "main says" {
		t.Fatalf("first attempt: ok %v text %q", r.OK, r.Text)
	}
	if r.Error != "ResultError: claude: API Error: 500 fake error." {
		t.Errorf("Error = %q, want the driver's error with its type", r.Error)
	}
	// A failed retry with no prose keeps the text from before.
	a := runAttempt(t, r, nil, lineFailed)
	if r.Text != "main says" || r.Error != "API Error: 500 fake error." {
		t.Errorf("second attempt: text %q error %q", r.Text, r.Error)
	}
	if k := ClassifyFailure(a.Failure()); k != ErrorTransient {
		t.Errorf("a 500 classified %s", k)
	}
	runAttempt(t, r, nil, `{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"done now"}]},"session_id":"s2"}`,
		`{"type":"result","subtype":"success","is_error":false,"num_turns":3,"session_id":"s2","total_cost_usd":0.7}`)
	if !r.OK || r.Error != "" || r.Text != "done now" || r.SessionID != "s2" {
		t.Errorf("third attempt: %+v", r)
	}
	if r.NumTurns != 5 || r.CostUSD < 0.7999 || r.CostUSD > 0.8001 {
		t.Errorf("turns %d cost %v, want 5 and 0.80 accumulated", r.NumTurns, r.CostUSD)
	}
}

func TestAFailedAttemptSaysWhy(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		lines []string
		want  string
	}{
		{"the driver's error comes first", errors.New("boom"), []string{lineSynthetic}, "boom"},
		{"a typed error names its type", &claude.ProcessError{ExitCode: 1}, nil, "ProcessError: claude CLI exited with code 1"},
		{"then this attempt's last API error", nil, []string{lineSynthetic, `{"type":"result","subtype":"success","is_error":true,"num_turns":0,"session_id":"s1"}`}, "API Error: Can't reach the API server (ENOTFOUND)"},
		{"then the error result's text", nil, []string{lineFailed}, "API Error: 500 fake error."},
		{"then a subagent's API error", nil, []string{`{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"sub API Error"}]},"parent_tool_use_id":"toolu_a","session_id":"s1","error":"server_error"}`, `{"type":"result","subtype":"success","is_error":true,"num_turns":0,"session_id":"s1"}`}, "sub API Error"},
		{"else a generic line, in the run's language (the zero Lang: English)", nil, nil, "claude: error result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewStepResult("s")
			r.Errors = []string{"an old error of another attempt"}
			runAttempt(t, r, tt.err, tt.lines...)
			if r.OK || r.Error != tt.want {
				t.Errorf("ok %v Error %q, want %q", r.OK, r.Error, tt.want)
			}
		})
	}
}

func TestStopKeepsTheRuntimesReason(t *testing.T) {
	r := NewStepResult("s")
	a := r.BeginAttempt()
	a.Observe(mustParseMessage(t, lineText))
	a.Stop(ErrHandoffDue)
	a.Finish(nil)
	if r.OK || r.Error != ErrHandoffDue || r.Text != "main says" {
		t.Errorf("%+v", r)
	}
}

// Defect 23: an overflow already handed off must not make every later
// failure of the step an overflow too.
func TestOverflowIsJudgedOnThisAttemptOnly(t *testing.T) {
	r := NewStepResult("s")
	a := runAttempt(t, r, nil, lineTooLong)
	if !a.Overflowed() || ClassifyFailure(a.Failure()) != ErrorOverflow {
		t.Fatalf("a prompt_too_long attempt: overflowed %v", a.Overflowed())
	}
	r.Retire()
	a = runAttempt(t, r, nil, lineFailed)
	if a.Overflowed() {
		t.Errorf("the next attempt's 500 was judged an overflow (error %q, step errors %q)", r.Error, r.Errors)
	}
	synthetic := `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: prompt is too long: 1000123 tokens > 1000000 maximum"}]},"session_id":"s1","error":"invalid_request"}`
	a = runAttempt(t, r, nil, synthetic, `{"type":"result","subtype":"success","is_error":true,"num_turns":0,"session_id":"s1"}`)
	if !a.Overflowed() {
		t.Error("an overflow API error in this attempt was missed")
	}
	subOverflow := `{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"Prompt is too long"}]},"parent_tool_use_id":"toolu_a","session_id":"s1","error":"invalid_request"}`
	a = runAttempt(t, r, errors.New("ECONNRESET"), subOverflow)
	if a.Overflowed() {
		t.Error("a subagent's overflow made the main thread hand off")
	}
	a = runAttempt(t, r, nil, lineText, lineOK)
	if a.Overflowed() {
		t.Error("a successful attempt overflowed")
	}
}

func TestRetireStartsANewGeneration(t *testing.T) {
	r := &StepResult{SessionID: "s1", Context: 800_000, Retired: []string{"s0"}}
	r.Retire()
	if r.SessionID != "" || r.Context != 0 || !reflect.DeepEqual(r.Retired, []string{"s0", "s1"}) {
		t.Errorf("%+v", r)
	}
	r.Retire() // no session yet: nothing to retire
	if len(r.Retired) != 2 {
		t.Errorf("Retired = %q", r.Retired)
	}
}

func TestAttemptRemembersTheRateLimitForTheWait(t *testing.T) {
	r := NewStepResult("s")
	a := runAttempt(t, r, nil,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1790000000,"rateLimitType":"five_hour"},"session_id":"s1"}`,
		`{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your session limit · resets 3pm"}]},"session_id":"s1","error":"rate_limit"}`,
		`{"type":"result","subtype":"success","is_error":true,"num_turns":0,"session_id":"s1","api_error_status":429,"terminal_reason":"api_error","result":"You've hit your session limit · resets 3pm"}`)
	f := a.Failure()
	if ClassifyFailure(f) != ErrorUsageLimit || !f.ResetsAt().Equal(time.Unix(1_790_000_000, 0)) || f.APIError != "rate_limit" {
		t.Errorf("failure %+v classified %s", f, ClassifyFailure(f))
	}
	if a.Result() == nil || a.Result().APIErrorStatus != 429 {
		t.Errorf("Result() = %+v", a.Result())
	}
}

func TestMessageSessionIDReadsEveryKind(t *testing.T) {
	for _, l := range []string{lineInit, lineText, linePrompt, lineOK,
		`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"},"session_id":"s1"}`,
		`{"type":"stream_event","event":{},"session_id":"s1"}`} {
		if got := MessageSessionID(mustParseMessage(t, l)); got != "s1" {
			t.Errorf("MessageSessionID(%.40s…) = %q", l, got)
		}
	}
	if got := MessageSessionID(mustParseMessage(t, `{"type":"whatever"}`)); got != "" {
		t.Errorf("unknown message: %q", got)
	}
}

func TestTheRootAliasesTheEventType(t *testing.T) {
	var e Event = event.New(event.Handoff, "上下文满了,写交接换新会话(干活)", map[string]any{"phase": "done"})
	var k EventKind = e.Kind
	if k != event.Handoff || !strings.Contains(e.String(), "写交接") {
		t.Errorf("%v", e)
	}
}

func TestContextIsTheLatestMainThreadTurn(t *testing.T) {
	r := NewStepResult("s")
	a := r.BeginAttempt()
	a.Fold(event.New(event.Text, "big turn", map[string]any{"context": 90_000}))
	a.Fold(event.New(event.Text, "sub", map[string]any{"context": 150_000, "subagent": true}))
	a.Fold(event.New(event.ToolCall, "no usage", map[string]any{}))
	a.Fold(event.New(event.Text, "after a reset", map[string]any{"context": 40_000}))
	a.Finish(nil)
	if r.Context != 40_000 {
		t.Errorf("Context = %d, want the latest main-thread turn's 40000 (not the maximum, not a subagent's)", r.Context)
	}
}

func TestTextIsKeptOnlyWhenTheLastAttemptFailedWithNone(t *testing.T) {
	ok := event.New(event.Result, "success", map[string]any{"is_error": false})
	failed := event.New(event.Result, "error", map[string]any{"is_error": true})

	r := NewStepResult("s")
	a := r.BeginAttempt()
	a.Fold(event.New(event.Text, "first answer", nil))
	a.Fold(failed)
	a.Finish(nil)
	a = r.BeginAttempt() // fails again, saying nothing
	a.Fold(failed)
	a.Finish(nil)
	if r.Text != "first answer" {
		t.Errorf("after a silent failure Text = %q, want the earlier attempt's", r.Text)
	}
	a = r.BeginAttempt() // succeeds, saying nothing
	a.Fold(ok)
	a.Finish(nil)
	if !r.OK || r.Text != "" {
		t.Errorf("after a silent success Text = %q, want none: an old attempt's prose is not its answer", r.Text)
	}
}
