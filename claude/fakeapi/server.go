// Package fakeapi is a scripted fake of the Anthropic Messages API on
// 127.0.0.1: SSE and JSON replies, tool calls, injected faults and a log of
// every request. The real CLI pointed at it (ANTHROPIC_BASE_URL) runs
// offline: flower demo plays a scripted model with it, and the tests (through
// claudetest.NewServer) script every model call. It imports no testing code,
// so a program may link it.
package fakeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Handler answers one Messages API request. The server calls it from the
// request's goroutine, so calls are concurrent (a subagent or a retry can
// overlap the main thread): a Handler must be safe for concurrent use.
// ctx is cancelled when the client goes away or the server closes.
type Handler func(ctx context.Context, req *Request) Reply

// Server is a fake Anthropic Messages API listening on 127.0.0.1. It
// answers POST /v1/messages (streaming or not), HEAD / with 200, and
// everything else with a 404 error JSON. Every POST /v1/messages is
// recorded, including faulted and malformed ones.
type Server struct {
	// URL is the base URL, for ANTHROPIC_BASE_URL ("http://127.0.0.1:port").
	URL string

	// report is told of a rendering error or a panicking handler: the
	// test's Errorf under NewServer, nothing under Start (the client
	// gets the 500 either way).
	report  func(format string, args ...any)
	h       Handler
	stop    func()
	hs      *httptest.Server
	nextMsg atomic.Int64
	nextID  atomic.Int64

	mu    sync.Mutex
	cache *PromptCache
	reqs  []*Request
	again []net.Listener // ComeBack's

	serving sync.WaitGroup
}

// Start starts a fake Messages API; Close stops it. A nil h answers every
// request with Script{}'s "fake: no rule". Errors of its own (a reply it
// cannot render, a panicking handler) go nowhere until Report says where.
func Start(h Handler) (*Server, error) {
	if h == nil {
		h = Script{}.Handler()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	s := &Server{h: h, report: func(string, ...any) {}}
	base, cancel := context.WithCancel(context.Background())
	hs := httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	hs.Listener.Close()
	hs.Listener = ln
	// Request contexts derive from base, so cancelling it ends every
	// pending Delay and handler before Close waits for them.
	hs.Config.BaseContext = func(net.Listener) context.Context { return base }
	hs.Start()
	s.hs = hs
	s.URL = hs.URL
	s.stop = func() {
		cancel()
		s.closeAgain()
		hs.CloseClientConnections()
		hs.Close()
	}
	return s, nil
}

// Report sends the server's own errors (a reply it cannot render, a
// panicking handler) to f, a test's Errorf for instance. Call it before the
// first request.
func (s *Server) Report(f func(format string, args ...any)) { s.report = f }

// Close stops the server, ending every pending request.
func (s *Server) Close() { s.stop() }

// GoOffline stops listening and drops every connection: the API is gone
// (connections are refused) until ComeBack.
func (s *Server) GoOffline() {
	s.hs.Listener.Close()
	s.mu.Lock()
	for _, ln := range s.again {
		ln.Close()
	}
	s.mu.Unlock()
	s.hs.CloseClientConnections()
}

// ComeBack listens again on the address GoOffline gave up and serves as
// before. It fails the test when the port was taken meanwhile.
func (s *Server) ComeBack() {
	addr := strings.TrimPrefix(s.URL, "http://")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.report("fakeapi: listen again on %s: %v", addr, err)
		return
	}
	s.mu.Lock()
	s.again = append(s.again, ln)
	s.mu.Unlock()
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		s.hs.Config.Serve(ln) // ends when the test's cleanup closes ln
	}()
}

// closeAgain closes the listeners of ComeBack and waits for their loops.
func (s *Server) closeAgain() {
	s.mu.Lock()
	for _, ln := range s.again {
		ln.Close()
	}
	s.mu.Unlock()
	s.serving.Wait()
}

// PriceWith makes the server report usage by the prompt cache c for every
// reply that sets none: cache reads, cache writes and plain input as c
// prices the request, output by the reply's size (BytesPerToken), so the
// CLI's cost figures and everything built on them see caching as a user's
// bill shows it. Without it a reply with no usage reports 10 input and 5
// output tokens. Call it before the first request.
func (s *Server) PriceWith(c *PromptCache) {
	s.mu.Lock()
	s.cache = c
	s.mu.Unlock()
}

// Requests returns a copy of the log of POST /v1/messages requests, oldest
// first. The *Request values are shared: do not modify them.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// Count returns the number of POST /v1/messages requests received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// Reset empties the request log.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodHead && r.URL.Path == "/":
		w.WriteHeader(http.StatusOK)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.serveMessages(w, r)
	default:
		writeError(w, http.StatusNotFound, "not_found_error",
			fmt.Sprintf("fakeapi: no route for %s %s", r.Method, r.URL.Path), "")
	}
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	n := s.nextMsg.Add(1)
	msgID := fmt.Sprintf("msg_fake_%04d", n)
	reqID := fmt.Sprintf("req_fake_%d", n)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		// The client went away mid-body; nothing to answer.
		s.record(&Request{Header: r.Header.Clone(), Body: body, Err: err})
		return
	}
	req, err := parseRequest(body)
	req.Header = r.Header.Clone()
	req.At = time.Now()
	s.mu.Lock()
	cache := s.cache
	s.mu.Unlock()
	if cache != nil {
		req.At = cache.Now()
	}
	s.record(req)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fakeapi: "+err.Error(), reqID)
		return
	}

	reply, ok := s.callHandler(r.Context(), req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "api_error", "fakeapi: handler panicked", reqID)
		return
	}
	if f := reply.Fault; f != nil && f.Delay > 0 {
		timer := time.NewTimer(f.Delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return
		}
	}
	if f := reply.Fault; f != nil && f.Reset {
		resetConn(w)
		return
	}
	if f := reply.Fault; f != nil && f.Status != 0 && f.Status != http.StatusOK {
		f.writeError(w, reqID)
		return
	}

	if cache != nil && reply.Usage == (Usage{}) {
		if priced, err := cache.PriceAt(body, req.At); err == nil {
			reply.Usage = priced.Usage(outputBytes(reply))
		}
	}
	s.mu.Lock()
	req.Usage = reply.Usage // under the lock: the request is in the log already
	s.mu.Unlock()
	payload, err := s.render(req, reply, msgID)
	if err != nil {
		s.report("fakeapi: %v", err)
		writeError(w, http.StatusInternalServerError, "api_error", "fakeapi: "+err.Error(), reqID)
		return
	}
	h := w.Header()
	h.Set("request-id", reqID)
	for k, v := range reply.Header {
		h.Set(k, v)
	}
	if req.Stream {
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
	} else {
		h.Set("Content-Type", "application/json")
	}
	if f := reply.Fault; f != nil && f.CutMidEvent && req.Stream {
		// Up to the middle of the first delta's data line: the client holds
		// an event it cannot finish when the connection drops.
		cut := len(payload) / 2
		if i := bytes.Index(payload, []byte("event: content_block_delta")); i >= 0 {
			end := bytes.Index(payload[i:], []byte("\n\n"))
			cut = i + max(end, 0)/2 + 20
		}
		w.WriteHeader(http.StatusOK)
		w.Write(payload[:min(cut, len(payload)-1)])
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
	if f := reply.Fault; f != nil && (f.CutStream || f.EndStreamEarly) {
		// Send the first event (or half of the JSON) without a
		// Content-Length, then drop the connection before the chunked
		// body's end, or end the body there.
		cut := len(payload) / 2
		if req.Stream {
			cut = bytes.Index(payload, []byte("\n\n")) + 2
		}
		h.Set("Connection", "close")
		w.WriteHeader(http.StatusOK)
		w.Write(payload[:cut])
		http.NewResponseController(w).Flush()
		if f.CutStream {
			panic(http.ErrAbortHandler) // net/http closes the connection silently
		}
		return
	}
	// One write with a Content-Length: no chunking and no delayed-ACK stall.
	h.Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(http.StatusOK)
	w.Write(payload)
}

// callHandler runs the handler, turning a panic into a test error.
func (s *Server) callHandler(ctx context.Context, req *Request) (reply Reply, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			s.report("fakeapi: handler panicked: %v", p)
			ok = false
		}
	}()
	return s.h(ctx, req), true
}

// Reply is a handler's answer: content blocks, or a Fault.
type Reply struct {
	Blocks []ReplyBlock
	// StopReason defaults to "tool_use" when a block is a tool_use, else
	// "end_turn".
	StopReason string
	// Usage defaults to 10 input and 5 output tokens when all zero.
	Usage Usage
	// Fault, when set, replaces or disturbs the answer.
	Fault *Fault
	// Header adds response headers (rate-limit headers, for instance).
	Header map[string]string
}

// Say returns a reply of one text block.
func Say(text string) Reply { return Reply{Blocks: []ReplyBlock{Text(text)}} }

// NewReply returns a reply of the given blocks.
func NewReply(blocks ...ReplyBlock) Reply { return Reply{Blocks: blocks} }

// Usage is the token accounting reported for a reply.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// ReplyBlock is one content block of a reply: text or tool_use.
type ReplyBlock struct {
	Type string // "text" or "tool_use"
	Text string
	ID   string // tool_use id; empty means toolu_fake_<n>
	Name string
	// Input is the tool input, marshalled to JSON when the reply is sent
	// (a json.RawMessage is sent as is; nil becomes {}).
	Input any
}

// Text returns a text block.
func Text(s string) ReplyBlock { return ReplyBlock{Type: "text", Text: s} }

// ToolUse returns a tool_use block. An empty id is replaced by a unique
// toolu_fake_<n>.
func ToolUse(id, name string, input any) ReplyBlock {
	return ReplyBlock{Type: "tool_use", ID: id, Name: name, Input: input}
}

// wireBlock is a reply block as the API sends it.
type wireBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type wireMessage struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []wireBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        Usage       `json:"usage"`
}

// render turns a reply into an SSE stream or a JSON message, per req.Stream.
func (s *Server) render(req *Request, reply Reply, msgID string) ([]byte, error) {
	blocks := make([]wireBlock, 0, len(reply.Blocks))
	stop := reply.StopReason
	for _, b := range reply.Blocks {
		switch b.Type {
		case "text":
			text := b.Text
			blocks = append(blocks, wireBlock{Type: "text", Text: &text})
		case "tool_use":
			input, err := marshalInput(b.Input)
			if err != nil {
				return nil, fmt.Errorf("tool_use %s input: %w", b.Name, err)
			}
			id := b.ID
			if id == "" {
				id = fmt.Sprintf("toolu_fake_%04d", s.nextID.Add(1))
			}
			blocks = append(blocks, wireBlock{Type: "tool_use", ID: id, Name: b.Name, Input: input})
			if stop == "" {
				stop = "tool_use"
			}
		default:
			return nil, fmt.Errorf("reply block type %q: want text or tool_use", b.Type)
		}
	}
	if stop == "" {
		stop = "end_turn"
	}
	usage := reply.Usage
	if usage == (Usage{}) {
		usage = Usage{InputTokens: 10, OutputTokens: 5}
	}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	msg := wireMessage{ID: msgID, Type: "message", Role: "assistant", Model: model,
		Content: blocks, StopReason: &stop, Usage: usage}
	if !req.Stream {
		return json.Marshal(msg)
	}

	var buf bytes.Buffer
	var encErr error
	event := func(name string, data any) {
		b, err := json.Marshal(data)
		encErr = errors.Join(encErr, err)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", name, b)
	}
	start := msg
	start.Content, start.StopReason = []wireBlock{}, nil
	start.Usage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		var first wireBlock
		var delta map[string]any
		if b.Type == "text" {
			empty := ""
			first = wireBlock{Type: "text", Text: &empty}
			delta = map[string]any{"type": "text_delta", "text": *b.Text}
		} else {
			first = wireBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage("{}")}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(b.Input)}
		}
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": first})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
	return buf.Bytes(), encErr
}

// outputBytes is the size of what a reply's model wrote: its texts, its
// tool calls' names and inputs.
func outputBytes(r Reply) int {
	n := 0
	for _, b := range r.Blocks {
		n += len(b.Text) + len(b.Name)
		if b.Type == "tool_use" {
			if in, err := marshalInput(b.Input); err == nil {
				n += len(in)
			}
		}
	}
	return n
}

func marshalInput(in any) (json.RawMessage, error) {
	switch v := in.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, errors.New("invalid JSON")
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return nil, err
		}
		return c.Bytes(), nil
	default:
		return json.Marshal(in)
	}
}

// Fault disturbs a reply: an HTTP error, a cut stream, a delay, or a
// delay followed by one of the others.
type Fault struct {
	// Status is the HTTP status to answer with (429, 500, 529, 400…);
	// zero or 200 means answer normally (after Delay, unless CutStream).
	Status int
	// Type is the error type in the body ("overloaded_error"…); empty
	// picks the usual one for Status.
	Type string
	// Message is the error message; empty means "fake error".
	Message string
	// RetryAfter, when positive, is sent as Retry-After in whole seconds,
	// rounded up. CLI 2.1.332 waits that long before retrying (it ignores
	// retry-after-ms, so none is sent).
	RetryAfter time.Duration
	// CutStream sends the reply's first SSE event (message_start), or half
	// of a non-streaming JSON body, then drops the connection: the client
	// sees a network error. CLI 2.1.332 retries the streaming request
	// after its backoff (about 0.5 s).
	CutStream bool
	// EndStreamEarly sends the first SSE event (or half of the JSON body),
	// then ends the response cleanly: the stream stops without
	// message_stop. CLI 2.1.332 then repeats the request non-streaming.
	EndStreamEarly bool
	// CutMidEvent sends a streaming reply up to the middle of its first
	// content_block_delta event (a half data line), then drops the
	// connection. A non-streaming request is answered normally.
	CutMidEvent bool
	// Reset closes the connection with a TCP reset right after the request
	// is read, before any byte of an answer: the client sees ECONNRESET.
	Reset bool
	// Delay is waited before answering; it ends early, without an answer,
	// when the request is cancelled or the server closes.
	Delay time.Duration
	// Header adds response headers to the error (for instance the
	// anthropic-ratelimit-unified-* headers of a usage-limit rejection).
	Header map[string]string
}

// UsageLimited returns a 429 that rejects the request for a usage limit
// resetting at resetsAt, with the unified rate-limit headers the CLI reads
// into a rate_limit_event.
func UsageLimited(resetsAt time.Time) *Fault {
	reset := strconv.FormatInt(resetsAt.Unix(), 10)
	return &Fault{Status: 429, Type: "rate_limit_error", Message: "fake usage limit", Header: map[string]string{
		"anthropic-ratelimit-unified-status":               "rejected",
		"anthropic-ratelimit-unified-reset":                reset,
		"anthropic-ratelimit-unified-5h-reset":             reset,
		"anthropic-ratelimit-unified-representative-claim": "five_hour",
	}}
}

// Overloaded returns a 529 overloaded_error.
func Overloaded() *Fault {
	return &Fault{Status: 529, Type: "overloaded_error", Message: "Overloaded"}
}

// ServerError returns a 500 api_error.
func ServerError() *Fault {
	return &Fault{Status: 500, Type: "api_error", Message: "fake error"}
}

// RateLimited returns a 429 rate_limit_error with the given Retry-After.
func RateLimited(retryAfter time.Duration) *Fault {
	return &Fault{Status: 429, Type: "rate_limit_error", Message: "fake rate limit", RetryAfter: retryAfter}
}

// PromptTooLong returns the 400 the API sends when the context is full.
func PromptTooLong() *Fault {
	return &Fault{Status: 400, Type: "invalid_request_error",
		Message: "prompt is too long: 210000 tokens > 200000 maximum"}
}

// ConnReset returns a fault that resets the connection (see Fault.Reset).
func ConnReset() *Fault { return &Fault{Reset: true} }

// resetConn takes the connection from net/http and closes it with SO_LINGER
// 0, which sends an RST instead of a FIN.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // cannot hijack: drop it the usual way
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func (f *Fault) writeError(w http.ResponseWriter, reqID string) {
	typ := f.Type
	if typ == "" {
		typ = errorType(f.Status)
	}
	msg := f.Message
	if msg == "" {
		msg = "fake error"
	}
	if f.RetryAfter > 0 {
		secs := (f.RetryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.Itoa(int(secs)))
	}
	for k, v := range f.Header {
		w.Header().Set(k, v)
	}
	writeError(w, f.Status, typ, msg, reqID)
}

// errorType is the Anthropic error type usually sent with status.
func errorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// writeError writes an Anthropic-shaped error body.
func writeError(w http.ResponseWriter, status int, typ, msg, reqID string) {
	body, _ := json.Marshal(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
	if reqID != "" {
		w.Header().Set("request-id", reqID)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}
