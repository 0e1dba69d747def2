package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServer is the configuration of one MCP server: MCPStdioServer,
// MCPRemoteServer or SDKServer.
type MCPServer interface{ mcpConfig(name string) any }

// MCPStdioServer is an external server the CLI starts as a process.
type MCPStdioServer struct {
	Command string
	Args    []string
	Env     map[string]string
}

// MCPRemoteServer is an external server reached over HTTP or SSE.
type MCPRemoteServer struct {
	// Type is "http" or "sse".
	Type    string
	URL     string
	Headers map[string]string
}

// SDKServer is an MCP server running in this process (built with the
// official Go MCP SDK). The CLI reaches it through the control protocol;
// its tools are named mcp__<name>__<tool>.
type SDKServer struct {
	Server *mcp.Server
	// AlwaysLoad offers the server's tools to the model from the first
	// turn. Without it the CLI (2.1.332, tool search on by default) may
	// defer them behind ToolSearch, and a model that calls one at once
	// gets an error instead of the tool.
	AlwaysLoad bool
}

func (s MCPStdioServer) mcpConfig(string) any {
	m := map[string]any{"type": "stdio", "command": s.Command}
	if len(s.Args) > 0 {
		m["args"] = s.Args
	}
	if len(s.Env) > 0 {
		m["env"] = s.Env
	}
	return m
}

func (s MCPRemoteServer) mcpConfig(string) any {
	m := map[string]any{"type": s.Type, "url": s.URL}
	if len(s.Headers) > 0 {
		m["headers"] = s.Headers
	}
	return m
}

func (s SDKServer) mcpConfig(name string) any {
	m := map[string]any{"type": "sdk", "name": name}
	if s.AlwaysLoad {
		m["alwaysLoad"] = true
	}
	return m
}

func mcpConfigJSON(servers map[string]MCPServer) (string, error) {
	cfg := map[string]any{}
	for name, s := range servers {
		cfg[name] = s.mcpConfig(name)
	}
	b, err := json.Marshal(map[string]any{"mcpServers": cfg})
	return string(b), err
}

// mcpBridge connects the CLI's tunneled JSON-RPC (mcp_message) to in-process
// servers. Each server gets a session over an in-memory connection; a fresh
// initialize starts a fresh session, since the CLI re-sends it to servers
// whose handshake failed.
type mcpBridge struct {
	mu       sync.Mutex
	servers  map[string]*mcp.Server
	sessions map[string]*mcpSession
	closed   bool
}

func newMCPBridge(servers map[string]MCPServer) *mcpBridge {
	b := &mcpBridge{servers: map[string]*mcp.Server{}, sessions: map[string]*mcpSession{}}
	for name, s := range servers {
		if sdk, ok := s.(SDKServer); ok {
			b.servers[name] = sdk.Server
		}
	}
	return b
}

func (b *mcpBridge) empty() bool { return len(b.servers) == 0 }

// handle answers one mcp_message: the JSON-RPC response for a request, an
// empty result for a notification.
func (b *mcpBridge) handle(ctx context.Context, server string, message json.RawMessage) (json.RawMessage, error) {
	msg, err := jsonrpc.DecodeMessage(message)
	if err != nil {
		return rpcError(nil, jsonrpc.CodeParseError, "invalid JSON-RPC message: "+err.Error()), nil
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq {
		// A response to a server-initiated request we never forward.
		return json.RawMessage(`{"jsonrpc":"2.0","result":{}}`), nil
	}
	srv := b.servers[server]
	if srv == nil {
		if !req.IsCall() {
			return json.RawMessage(`{"jsonrpc":"2.0","result":{}}`), nil
		}
		return rpcError(req.ID.Raw(), jsonrpc.CodeMethodNotFound, fmt.Sprintf("server %q not found", server)), nil
	}
	sess, err := b.session(ctx, server, srv, req.Method == "initialize")
	if err != nil {
		if !req.IsCall() {
			return json.RawMessage(`{"jsonrpc":"2.0","result":{}}`), nil
		}
		return rpcError(req.ID.Raw(), jsonrpc.CodeInternalError, err.Error()), nil
	}
	if !req.IsCall() {
		if err := sess.send(ctx, req); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"jsonrpc":"2.0","result":{}}`), nil
	}
	resp, err := sess.call(ctx, req)
	if err != nil {
		return rpcError(req.ID.Raw(), jsonrpc.CodeInternalError, err.Error()), nil
	}
	return resp, nil
}

func rpcError(id any, code int, msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return b
}

func (b *mcpBridge) session(ctx context.Context, name string, srv *mcp.Server, fresh bool) (*mcpSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if s := b.sessions[name]; s != nil && !fresh {
		return s, nil
	}
	if old := b.sessions[name]; old != nil {
		old.close()
	}
	s, err := startMCPSession(ctx, srv)
	if err != nil {
		return nil, err
	}
	b.sessions[name] = s
	return s, nil
}

func (b *mcpBridge) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, s := range b.sessions {
		s.close()
	}
	b.sessions = nil
}

// mcpSession is one server session over pipeConn; the driver plays the
// client's part of the connection.
type mcpSession struct {
	conn    *pipeConn
	session *mcp.ServerSession

	mu      sync.Mutex
	waiting map[string]chan json.RawMessage
}

func startMCPSession(ctx context.Context, srv *mcp.Server) (*mcpSession, error) {
	conn := newPipeConn()
	s := &mcpSession{conn: conn, waiting: map[string]chan json.RawMessage{}}
	conn.onWrite = s.deliver
	// The session must outlive this call's context: it serves the whole CLI
	// process and is closed by the bridge.
	ss, err := srv.Connect(context.WithoutCancel(ctx), serverTransport{conn}, nil)
	if err != nil {
		return nil, fmt.Errorf("start MCP session: %w", err)
	}
	s.session = ss
	return s, nil
}

func (s *mcpSession) send(ctx context.Context, req *jsonrpc.Request) error {
	return s.conn.push(ctx, req)
}

func (s *mcpSession) call(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	key := idKey(req.ID)
	ch := make(chan json.RawMessage, 1)
	s.mu.Lock()
	s.waiting[key] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
	}()
	if err := s.conn.push(ctx, req); err != nil {
		return nil, err
	}
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		// Tell the server to stop the call the CLI gave up on.
		if n, err := jsonrpc.EncodeMessage(req); err == nil {
			_ = n
		}
		cancel := &jsonrpc.Request{Method: "notifications/cancelled", Params: mustJSON(map[string]any{"requestId": req.ID.Raw()})}
		_ = s.conn.push(context.Background(), cancel)
		return nil, ctx.Err()
	case <-s.conn.done:
		return nil, ErrClosed
	}
}

// deliver routes what the server writes: responses to their callers;
// server-initiated requests (sampling, roots, elicitation) are refused, as
// the official SDK does.
func (s *mcpSession) deliver(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return
		}
		s.mu.Lock()
		ch := s.waiting[idKey(m.ID)]
		s.mu.Unlock()
		if ch != nil {
			ch <- b
		}
	case *jsonrpc.Request:
		if m.IsCall() {
			resp := &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "client requests are not supported through the Claude Code CLI"}}
			go func() { _ = s.conn.push(context.Background(), resp) }()
		}
	}
}

func (s *mcpSession) close() {
	s.conn.Close()
	if s.session != nil {
		_ = s.session.Close()
	}
}

func idKey(id jsonrpc.ID) string { return fmt.Sprint(id.Raw()) }

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// serverTransport hands the server its end of a pipeConn.
type serverTransport struct{ conn *pipeConn }

func (t serverTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// pipeConn is the server's side of an in-memory JSON-RPC connection: Read
// yields what the CLI sent, Write hands the server's messages to onWrite.
type pipeConn struct {
	in      chan jsonrpc.Message
	onWrite func(jsonrpc.Message)
	once    sync.Once
	done    chan struct{}
}

func newPipeConn() *pipeConn {
	return &pipeConn{in: make(chan jsonrpc.Message), done: make(chan struct{})}
}

func (c *pipeConn) push(ctx context.Context, m jsonrpc.Message) error {
	select {
	case c.in <- m:
		return nil
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *pipeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *pipeConn) Write(ctx context.Context, m jsonrpc.Message) error {
	select {
	case <-c.done:
		return errors.New("connection closed")
	default:
	}
	c.onWrite(m)
	return nil
}

func (c *pipeConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

func (c *pipeConn) SessionID() string { return "" }
