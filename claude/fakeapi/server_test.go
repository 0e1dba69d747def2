package fakeapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends body to srv's /v1/messages?beta=true.
func post(t *testing.T, ctx context.Context, srv *Server, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/messages?beta=true", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "sk-fake")
	return http.DefaultClient.Do(req)
}

// mustPost posts body and returns the status, headers and whole body.
func mustPost(t *testing.T, srv *Server, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := post(t, t.Context(), srv, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp.StatusCode, resp.Header, b
}

// sseEvent is one server-sent event.
type sseEvent struct {
	name string
	data map[string]any
}

// readSSE parses an SSE stream of "event:" and "data:" lines; it returns
// the events read and the error that ended the stream, if any.
func readSSE(t *testing.T, r io.Reader) ([]sseEvent, error) {
	t.Helper()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				events = append(events, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("SSE data is not JSON: %q", line)
			}
			if cur.data["type"] != cur.name {
				t.Errorf("event %q has data type %v", cur.name, cur.data["type"])
			}
		default:
			t.Errorf("unexpected SSE line %q", line)
		}
	}
	return events, sc.Err()
}

// jsonOf marshals v or fails the test.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// reqBody builds a request body with one user prompt.
func reqBody(t *testing.T, stream bool, prompt string) string {
	return jsonOf(t, map[string]any{
		"model": "claude-test-model", "max_tokens": 32000, "stream": stream,
		"system":   []map[string]any{{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;"}},
		"messages": []map[string]any{{"role": "user", "content": prompt}},
		"tools":    []map[string]any{{"name": "Bash", "input_schema": map[string]any{}}},
	})
}

func fixed(r Reply) Handler { return func(context.Context, *Request) Reply { return r } }

func TestStreamingReplyHasTheSSEShapeTheCLIReads(t *testing.T) {
	srv := newServer(t, fixed(Reply{
		Blocks: []ReplyBlock{Text("running it"), ToolUse("", "Bash", map[string]any{"command": "ls"})},
		Usage:  Usage{InputTokens: 1200, OutputTokens: 42, CacheReadInputTokens: 7, CacheCreationInputTokens: 9},
	}))
	resp, err := post(t, t.Context(), srv, reqBody(t, true, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, ct)
	}
	if id := resp.Header.Get("request-id"); !strings.HasPrefix(id, "req_fake_") {
		t.Errorf("request-id %q", id)
	}
	events, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	want := "message_start ping " +
		"content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop " +
		"message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}

	msg := events[0].data["message"].(map[string]any)
	usage := msg["usage"].(map[string]any)
	if msg["id"] != "msg_fake_0001" || msg["role"] != "assistant" || msg["model"] != "claude-test-model" ||
		usage["input_tokens"] != 1200.0 || usage["cache_read_input_tokens"] != 7.0 || usage["cache_creation_input_tokens"] != 9.0 {
		t.Errorf("message_start = %v", msg)
	}
	if d := events[3].data["delta"].(map[string]any); d["type"] != "text_delta" || d["text"] != "running it" {
		t.Errorf("text delta = %v", d)
	}
	start := events[5].data["content_block"].(map[string]any)
	if start["type"] != "tool_use" || start["name"] != "Bash" || !strings.HasPrefix(start["id"].(string), "toolu_fake_") {
		t.Errorf("tool_use start = %v", start)
	}
	d := events[6].data["delta"].(map[string]any)
	var input map[string]any
	if d["type"] != "input_json_delta" || json.Unmarshal([]byte(d["partial_json"].(string)), &input) != nil || input["command"] != "ls" {
		t.Errorf("input delta = %v", d)
	}
	if idx := events[6].data["index"]; idx != 1.0 {
		t.Errorf("tool_use index = %v, want 1", idx)
	}
	md := events[8].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" || md["usage"].(map[string]any)["output_tokens"] != 42.0 {
		t.Errorf("message_delta = %v", md)
	}
}

func TestNonStreamingReplyIsOneMessageJSON(t *testing.T) {
	srv := newServer(t, fixed(Say("plain")))
	status, h, body := mustPost(t, srv, reqBody(t, false, "hi"))
	if status != 200 || h.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content-type %q", status, h.Get("Content-Type"))
	}
	var msg map[string]any
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	content := msg["content"].([]any)
	if msg["type"] != "message" || msg["role"] != "assistant" || msg["stop_reason"] != "end_turn" ||
		msg["model"] != "claude-test-model" || !strings.HasPrefix(msg["id"].(string), "msg_fake_") ||
		len(content) != 1 || content[0].(map[string]any)["text"] != "plain" {
		t.Errorf("message = %s", body)
	}
	if v, ok := msg["stop_sequence"]; !ok || v != nil {
		t.Errorf("stop_sequence = %v, %v; want null", v, ok)
	}
	usage := msg["usage"].(map[string]any)
	if usage["input_tokens"] != 10.0 || usage["output_tokens"] != 5.0 {
		t.Errorf("default usage = %v", usage)
	}
}

func TestFaultsAnswerWithAnthropicErrors(t *testing.T) {
	tests := []struct {
		name       string
		fault      *Fault
		status     int
		typ, msg   string
		retryAfter string
	}{
		{"overloaded", Overloaded(), 529, "overloaded_error", "Overloaded", ""},
		{"server error", ServerError(), 500, "api_error", "fake error", ""},
		{"rate limited", RateLimited(1500 * time.Millisecond), 429, "rate_limit_error", "fake rate limit", "2"},
		{"prompt too long", PromptTooLong(), 400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", ""},
		{"bare status", &Fault{Status: 503}, 503, "api_error", "fake error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, fixed(Reply{Fault: tt.fault}))
			for _, stream := range []bool{true, false} {
				status, h, body := mustPost(t, srv, reqBody(t, stream, "hi"))
				var e struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if err := json.Unmarshal(body, &e); err != nil {
					t.Fatalf("error body %q: %v", body, err)
				}
				if status != tt.status || e.Type != "error" || e.Error.Type != tt.typ || e.Error.Message != tt.msg {
					t.Errorf("stream=%v: %d %s", stream, status, body)
				}
				if got := h.Get("Retry-After"); got != tt.retryAfter {
					t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
				}
			}
			if srv.Count() != 2 {
				t.Errorf("logged %d requests, want 2", srv.Count())
			}
		})
	}
}

func TestCutStreamDropsTheConnectionAfterMessageStart(t *testing.T) {
	srv := newServer(t, fixed(Reply{Blocks: []ReplyBlock{Text("never")}, Fault: &Fault{CutStream: true}}))
	resp, err := post(t, t.Context(), srv, reqBody(t, true, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := readSSE(t, resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("stream ended with %v, want an unexpected EOF", err)
	}
	if len(events) != 1 || events[0].name != "message_start" {
		t.Errorf("events before the cut: %v", events)
	}
}

func TestEndStreamEarlyStopsCleanlyBeforeMessageStop(t *testing.T) {
	srv := newServer(t, fixed(Reply{Blocks: []ReplyBlock{Text("never")}, Fault: &Fault{EndStreamEarly: true}}))
	resp, err := post(t, t.Context(), srv, reqBody(t, true, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := readSSE(t, resp.Body)
	if err != nil || len(events) != 1 || events[0].name != "message_start" {
		t.Errorf("events %v, err %v; want message_start alone, then a clean end", events, err)
	}

	_, _, body := mustPost(t, srv, reqBody(t, false, "hi"))
	if json.Valid(body) || !bytes.HasPrefix(body, []byte(`{"id":"msg_fake_`)) {
		t.Errorf("non-streaming body %q, want the first half of a message", body)
	}
}

func TestDelayWaitsThenAnswers(t *testing.T) {
	srv := newServer(t, fixed(Reply{Blocks: []ReplyBlock{Text("late")}, Fault: &Fault{Delay: 100 * time.Millisecond}}))
	start := time.Now()
	status, _, body := mustPost(t, srv, reqBody(t, false, "hi"))
	if d := time.Since(start); d < 100*time.Millisecond || status != 200 || !bytes.Contains(body, []byte("late")) {
		t.Errorf("after %v: %d %s", d, status, body)
	}
}

func TestDelayEndsWhenTheRequestIsCancelled(t *testing.T) {
	var elapsed time.Duration
	t.Run("server", func(t *testing.T) {
		srv := newServer(t, fixed(Reply{Fault: &Fault{Delay: time.Hour}}))
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		if resp, err := post(t, ctx, srv, reqBody(t, true, "hi")); err == nil {
			resp.Body.Close()
			t.Errorf("got a reply (%d) before the hour-long delay", resp.StatusCode)
		}
		elapsed = time.Since(start)
	})
	// The subtest's cleanup closed the server, which waits for handlers:
	// it returned at once only if the delay stopped.
	if elapsed > 5*time.Second {
		t.Errorf("cancelled request took %v", elapsed)
	}
}

func TestServerClosesWhileADelayIsPending(t *testing.T) {
	done := make(chan time.Duration, 1)
	t.Run("server", func(t *testing.T) {
		srv := newServer(t, fixed(Reply{Fault: &Fault{Delay: time.Hour}}))
		ready := make(chan struct{})
		go func() {
			start := time.Now()
			close(ready)
			if resp, err := post(t, context.Background(), srv, reqBody(t, true, "hi")); err == nil {
				resp.Body.Close()
			}
			done <- time.Since(start)
		}()
		<-ready
		for srv.Count() == 0 {
			time.Sleep(time.Millisecond)
		}
	})
	select {
	case d := <-done:
		t.Logf("client released after %v", d)
	case <-time.After(5 * time.Second):
		t.Fatal("closing the server did not end the pending delay")
	}
}

func TestHeadRootAnswers200AndOtherPaths404(t *testing.T) {
	srv := newServer(t, nil)
	resp, err := http.Head(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD / = %d", resp.StatusCode)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/models"}, {"POST", "/v1/messages/count_tokens"}, {"GET", "/v1/messages"}, {"HEAD", "/api/hello"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || (c.method != "HEAD" && !bytes.Contains(body, []byte(`"not_found_error"`))) {
			t.Errorf("%s %s = %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	if srv.Count() != 0 {
		t.Errorf("logged %d requests, want only POST /v1/messages logged", srv.Count())
	}
}

func TestRequestLogKeepsParsedMessagesAndRawBody(t *testing.T) {
	srv := newServer(t, nil)
	big := strings.Repeat("x", 1<<20+1) // bodies over 1 MiB are accepted
	body := jsonOf(t, map[string]any{
		"model": "m", "max_tokens": 64000, "stream": false,
		"system": "plain system prompt",
		"tools":  []map[string]any{{"name": "Bash"}, {"name": "Agent"}},
		"messages": []map[string]any{
			{"role": "user", "content": []map[string]any{
				{"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>"},
				{"type": "text", "text": "first prompt"},
			}},
			{"role": "assistant", "content": []map[string]any{
				{"type": "text", "text": "ok"},
				{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}},
			}},
			{"role": "system", "content": "mid-conversation note"},
			{"role": "user", "content": []map[string]any{
				{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
					"content": []map[string]any{{"type": "text", "text": "line1"}, {"type": "text", "text": "line2"}}},
			}},
			{"role": "assistant", "content": []map[string]any{
				{"type": "tool_use", "id": "toolu_2", "name": "Read", "input": map[string]any{}},
			}},
			{"role": "user", "content": []map[string]any{
				{"type": "tool_result", "tool_use_id": "toolu_2", "content": big},
			}},
		},
	})
	status, _, _ := mustPost(t, srv, body)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	mustPost(t, srv, reqBody(t, true, "second"))
	if srv.Count() != 2 {
		t.Fatalf("Count = %d", srv.Count())
	}
	r := srv.Requests()[0]
	if string(r.Body) != body || r.Model != "m" || r.MaxTokens != 64000 || r.Stream || r.Subagent ||
		strings.Join(r.System, "|") != "plain system prompt" || strings.Join(r.Tools, ",") != "Bash,Agent" ||
		r.Header.Get("x-api-key") != "sk-fake" || r.Err != nil {
		t.Errorf("request = model %q max %d stream %v system %q tools %v err %v", r.Model, r.MaxTokens, r.Stream, r.System, r.Tools, r.Err)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,system,user,assistant,user" {
		t.Errorf("roles = %s", got)
	}
	if b := r.Messages[2].Content; len(b) != 1 || b[0].Type != "text" || b[0].Text != "mid-conversation note" {
		t.Errorf("string content = %+v", b)
	}
	if b := r.Messages[1].Content[1]; b.Type != "tool_use" || b.ID != "toolu_1" || b.Name != "Bash" || string(b.Input) != `{"command":"ls"}` {
		t.Errorf("tool_use = %+v", b)
	}
	results := r.ToolResults()
	if len(results) != 2 || results[0].Content != "line1\nline2" || !results[0].IsError || results[0].ToolUseID != "toolu_1" ||
		!bytes.Contains(results[0].Raw, []byte(`"line2"`)) {
		t.Errorf("tool results = %+v", results)
	}
	if last, ok := r.LastToolResult(); !ok || last.ToolUseID != "toolu_2" || len(last.Content) != len(big) {
		t.Errorf("last tool result: %v %s", ok, last.ToolUseID)
	}
	if r.LastUserText() != "first prompt" || r.Turn() != 2 {
		t.Errorf("LastUserText %q, Turn %d", r.LastUserText(), r.Turn())
	}
	if !r.HasText("mid-conversation") || !r.HasText("line2") || r.HasText("no such text") {
		t.Error("HasText")
	}
	if srv.Requests()[1].LastUserText() != "second" {
		t.Error("second request not logged in order")
	}
	srv.Reset()
	if srv.Count() != 0 || len(srv.Requests()) != 0 {
		t.Error("Reset left requests")
	}
}

func TestSubagentIsReadFromTheFirstSystemBlock(t *testing.T) {
	srv := newServer(t, nil)
	for _, first := range []string{"x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli; cc_is_subagent=true;", "other"} {
		mustPost(t, srv, jsonOf(t, map[string]any{
			"model":    "m",
			"system":   []map[string]any{{"type": "text", "text": first}, {"type": "text", "text": "You are the tester."}},
			"messages": []map[string]any{{"role": "user", "content": "SUBAGENT: go"}},
		}))
	}
	reqs := srv.Requests()
	if !reqs[0].Subagent || reqs[1].Subagent || len(reqs[0].System) != 2 {
		t.Errorf("Subagent = %v, %v", reqs[0].Subagent, reqs[1].Subagent)
	}
}

func TestMalformedBodiesAnswer400AndAreLogged(t *testing.T) {
	var called atomic.Bool
	srv := newServer(t, func(context.Context, *Request) Reply { called.Store(true); return Say("no") })
	for _, body := range []string{
		"{not json",
		`{"model":"m","messages":[{"role":"user","content":42}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":{"a":1}}]}]}`,
		`{"model":"m","system":7}`,
		`[]`,
	} {
		status, _, resp := mustPost(t, srv, body)
		if status != 400 || !bytes.Contains(resp, []byte(`"invalid_request_error"`)) {
			t.Errorf("%s: %d %s", body, status, resp)
		}
	}
	if called.Load() {
		t.Error("handler called for a malformed body")
	}
	for _, r := range srv.Requests() {
		if r.Err == nil || len(r.Body) == 0 {
			t.Errorf("logged request: err %v, body %q", r.Err, r.Body)
		}
	}
	if srv.Count() != 5 {
		t.Errorf("Count = %d, want 5", srv.Count())
	}
}

// recordingTB records Errorf calls instead of failing the test.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, format)
}

func TestHandlerMistakesAnswer500AndFailTheTest(t *testing.T) {
	for name, h := range map[string]Handler{
		"panic":      func(context.Context, *Request) Reply { panic("boom") },
		"bad input":  fixed(NewReply(ToolUse("", "Bash", func() {}))),
		"bad raw":    fixed(NewReply(ToolUse("", "Bash", json.RawMessage("{")))),
		"bad block":  fixed(NewReply(ReplyBlock{Type: "image"})),
		"nil script": Script{"SCENARIO:x": {nil}}.Handler(),
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recordingTB{TB: t}
			srv := newServer(rec, h)
			status, _, body := mustPost(t, srv, reqBody(t, true, "SCENARIO:x"))
			if status != 500 || !bytes.Contains(body, []byte(`"api_error"`)) {
				t.Errorf("%d %s", status, body)
			}
			if len(rec.errs) != 1 {
				t.Errorf("test errors = %q, want one", rec.errs)
			}
		})
	}
}

func TestToolUseIDsAndInputsAreSentAsGiven(t *testing.T) {
	srv := newServer(t, fixed(NewReply(
		ToolUse("toolu_mine", "Read", json.RawMessage(`{ "file_path": "/x" }`)),
		ToolUse("", "Bash", nil),
	)))
	_, _, body := mustPost(t, srv, reqBody(t, false, "hi"))
	var msg struct {
		Content []struct {
			ID    string
			Input json.RawMessage
		}
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 2 || msg.Content[0].ID != "toolu_mine" || string(msg.Content[0].Input) != `{"file_path":"/x"}` ||
		!strings.HasPrefix(msg.Content[1].ID, "toolu_fake_") || string(msg.Content[1].Input) != "{}" || msg.StopReason != "tool_use" {
		t.Errorf("message = %s", body)
	}
}

func TestConcurrentRequestsAreAllLogged(t *testing.T) {
	srv := newServer(t, Script{"SCENARIO:c": {Say("ok")}}.Handler())
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			status, _, _ := mustPost(t, srv, reqBody(t, true, "SCENARIO:c"))
			if status != 200 {
				t.Errorf("status %d", status)
			}
		})
	}
	wg.Wait()
	if srv.Count() != 20 {
		t.Errorf("Count = %d, want 20", srv.Count())
	}
}

func TestRepliesAndFaultsCarryExtraHeaders(t *testing.T) {
	reset := time.Unix(1796000000, 0)
	srv := newServer(t, fixed(Reply{Fault: UsageLimited(reset)}))
	status, h, _ := mustPost(t, srv, reqBody(t, true, "hi"))
	if status != 429 || h.Get("anthropic-ratelimit-unified-status") != "rejected" || h.Get("anthropic-ratelimit-unified-reset") != "1796000000" {
		t.Errorf("usage limit: %d %v", status, h)
	}
	ok := newServer(t, fixed(Reply{Blocks: []ReplyBlock{Text("hi")}, Header: map[string]string{"anthropic-ratelimit-unified-status": "allowed_warning"}}))
	if status, h, _ := mustPost(t, ok, reqBody(t, true, "hi")); status != 200 || h.Get("anthropic-ratelimit-unified-status") != "allowed_warning" {
		t.Errorf("reply header: %d %v", status, h)
	}
}

func TestCutMidEventEndsInsideADeltaEvent(t *testing.T) {
	srv := newServer(t, fixed(Reply{Blocks: []ReplyBlock{Text("a reply long enough to cut in half")}, Fault: &Fault{CutMidEvent: true}}))
	resp, err := post(t, t.Context(), srv, reqBody(t, true, "hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Error("the body ended cleanly; want a dropped connection")
	}
	i := bytes.Index(raw, []byte("event: content_block_delta"))
	if i < 0 || bytes.HasSuffix(raw, []byte("\n\n")) || bytes.Contains(raw[i:], []byte("\n\n")) {
		t.Errorf("the body does not end inside the delta event: %q", raw)
	}
}

func TestConnResetResetsBeforeAnyByte(t *testing.T) {
	srv := newServer(t, fixed(Reply{Fault: ConnReset()}))
	resp, err := post(t, t.Context(), srv, reqBody(t, true, "hi"))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %s; want a reset connection", resp.Status)
	}
	if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "reset") && !errors.Is(err, io.EOF) {
		t.Errorf("error %v, want a connection reset", err)
	}
	if srv.Count() != 1 {
		t.Errorf("logged %d requests, want 1", srv.Count())
	}
}

func TestGoOfflineRefusesUntilComeBack(t *testing.T) {
	srv := newServer(t, fixed(Say("back")))
	srv.GoOffline()
	if resp, err := post(t, t.Context(), srv, reqBody(t, false, "hi")); err == nil {
		resp.Body.Close()
		t.Fatalf("offline, got %s", resp.Status)
	}
	srv.ComeBack()
	status, _, body := mustPost(t, srv, reqBody(t, false, "hi"))
	if status != 200 || !bytes.Contains(body, []byte("back")) {
		t.Errorf("after ComeBack: %d %s", status, body)
	}
}

// newServer is claudetest.NewServer, which this package cannot import.
func newServer(t testing.TB, h Handler) *Server {
	t.Helper()
	s, err := Start(h)
	if err != nil {
		t.Fatalf("fakeapi: %v", err)
	}
	s.Report(t.Errorf)
	t.Cleanup(s.Close)
	return s
}
