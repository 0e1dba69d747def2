package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sort"
	"strconv"
	"time"
)

// Client is a streaming session with one CLI process: send prompts, receive
// messages, and steer it (interrupt, permission mode, model) while it runs.
// Close it when done; it stops the process and everything the driver
// started for it.
type Client struct {
	c          *conn
	opts       Options
	serverInfo json.RawMessage
}

// Connect starts the CLI, registers hooks and agents through initialize and
// returns once the CLI has answered. With a SessionStore and Resume (or
// ContinueConversation) the session is first loaded from the store.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	var extraEnv map[string]string
	var mat *materialized
	if opts.SessionStore != nil && (opts.Resume != "" || opts.ContinueConversation) {
		var err error
		mat, err = materialize(ctx, &opts, opts.childEnv(nil))
		if err != nil {
			return nil, err
		}
		if mat != nil {
			extraEnv = map[string]string{"CLAUDE_CONFIG_DIR": mat.dir}
			opts.Resume, opts.ContinueConversation = mat.sessionID, false
		}
	}
	args, err := opts.args()
	if err != nil {
		if mat != nil {
			mat.remove()
		}
		return nil, err
	}
	hookIDs, hooksWire := registerHooks(opts.Hooks)
	c, err := start(ctx, &opts, args, extraEnv, hookIDs)
	if err != nil {
		if mat != nil {
			mat.remove()
		}
		return nil, err
	}
	if mat != nil {
		if c.mirror != nil {
			c.mirror.seed(mat.laid)
		}
		c.cleanup = append(c.cleanup, func() {
			// The resumed session's new turns live only in the temporary
			// directory and the store: if the store missed some (or the
			// reader stopped before the end), the directory is the only
			// full copy, so it stays, without the credentials.
			if c.streamCut.Load() || c.mirror != nil && c.mirror.failed.Load() {
				mat.keep()
				return
			}
			mat.remove()
		})
	}
	cl := &Client{c: c, opts: opts}
	init := map[string]any{"hooks": hooksWire}
	if len(opts.Agents) > 0 {
		init["agents"] = opts.Agents
	}
	if opts.ForwardSubagentText {
		init["forwardSubagentText"] = true
	}
	window := initializeTimeout(opts.InitializeTimeout)
	resp, err := c.requestWaiting(ctx, "initialize", init, window, c.stillStarting(window))
	if err != nil {
		c.close()
		return nil, fmt.Errorf("claude: initialize: %w", err)
	}
	cl.serverInfo = resp
	return cl, nil
}

func initializeTimeout(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	d = 60 * time.Second
	if ms, err := strconv.Atoi(os.Getenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT")); err == nil {
		d = max(d, time.Duration(ms)*time.Millisecond)
	}
	return d
}

// registerHooks numbers every callback hook_<n> across all events (in a
// stable event order) and builds the initialize "hooks" field.
func registerHooks(hooks map[string][]HookMatcher) (map[string]HookFunc, map[string]any) {
	ids := map[string]HookFunc{}
	if len(hooks) == 0 {
		return ids, nil
	}
	events := make([]string, 0, len(hooks))
	for e := range hooks {
		events = append(events, e)
	}
	sort.Strings(events)
	wire := map[string]any{}
	for _, event := range events {
		var matchers []map[string]any
		for _, m := range hooks[event] {
			var cbIDs []string
			for _, fn := range m.Hooks {
				if fn == nil {
					continue
				}
				id := "hook_" + strconv.Itoa(len(ids))
				ids[id] = fn
				cbIDs = append(cbIDs, id)
			}
			if len(cbIDs) == 0 {
				continue
			}
			entry := map[string]any{"matcher": nil, "hookCallbackIds": cbIDs}
			if m.Matcher != "" {
				entry["matcher"] = m.Matcher
			}
			if m.Timeout > 0 {
				entry["timeout"] = m.Timeout.Seconds()
			}
			matchers = append(matchers, entry)
		}
		if len(matchers) > 0 {
			wire[event] = matchers
		}
	}
	if len(wire) == 0 {
		return ids, nil
	}
	return ids, wire
}

// ServerInfo is the CLI's answer to initialize (commands, models, account…).
func (cl *Client) ServerInfo() json.RawMessage { return cl.serverInfo }

// Send sends a user prompt.
func (cl *Client) Send(ctx context.Context, prompt string) error {
	return cl.SendContent(ctx, prompt)
}

// SendContent sends a user message whose content is a string or a list of
// content blocks (text, image, …) marshalled as given.
func (cl *Client) SendContent(ctx context.Context, content any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Busy from now: the turn may end before write returns.
	cl.c.busy.Store(true)
	main := cl.c.mainTurn.Swap(true)
	err := cl.c.write(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": content},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
	if err != nil {
		cl.c.busy.Store(false)
		cl.c.mainTurn.Store(main)
	}
	return err
}

// Receive returns the next message. After the CLI's output ends it returns
// io.EOF, or the error that ended it (*ResultError, *ProcessError,
// *ProtocolError).
func (cl *Client) Receive(ctx context.Context) (Message, error) {
	return cl.c.msgs.pop(ctx)
}

// Messages yields every message until the output ends; a final non-nil
// error is yielded with a nil message.
func (cl *Client) Messages(ctx context.Context) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			m, err := cl.Receive(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(m, nil) {
				return
			}
		}
	}
}

// ReceiveResponse yields messages up to and including the next result.
func (cl *Client) ReceiveResponse(ctx context.Context) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for m, err := range cl.Messages(ctx) {
			if !yield(m, err) || err != nil {
				return
			}
			if _, ok := m.(*ResultMessage); ok {
				return
			}
		}
	}
}

func (cl *Client) control(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	resp, err := cl.c.request(ctx, subtype, fields, orDefault(cl.opts.ControlTimeout, 60*time.Second))
	var ce *ControlError
	if errors.As(err, &ce) {
		ce.Subtype = subtype
	}
	return resp, err
}

// Interrupt stops the current turn; its result reports the interruption.
// Between turns it stops nothing (background tasks run on, see WaitingOn
// and StopTask) and no result follows.
func (cl *Client) Interrupt(ctx context.Context) error {
	_, err := cl.control(ctx, "interrupt", nil)
	return err
}

// SetPermissionMode changes the permission mode for the rest of the session.
func (cl *Client) SetPermissionMode(ctx context.Context, mode string) error {
	_, err := cl.control(ctx, "set_permission_mode", map[string]any{"mode": mode})
	return err
}

// SetModel switches the model; an empty name restores the default.
func (cl *Client) SetModel(ctx context.Context, model string) error {
	var m any
	if model != "" {
		m = model
	}
	_, err := cl.control(ctx, "set_model", map[string]any{"model": m})
	return err
}

// ContextUsage asks the CLI how its context window is used (categories,
// totalTokens, maxTokens, percentage, …), returned as the CLI sent it.
func (cl *Client) ContextUsage(ctx context.Context) (json.RawMessage, error) {
	return cl.control(ctx, "get_context_usage", nil)
}

// MCPServerStatus is one MCP server as the CLI sees it.
type MCPServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // connected, failed, needs-auth, pending, disabled
	Error  string `json:"error,omitempty"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools,omitempty"`
}

// MCPStatus lists the session's MCP servers.
func (cl *Client) MCPStatus(ctx context.Context) ([]MCPServerStatus, error) {
	raw, err := cl.control(ctx, "mcp_status", nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		Servers []MCPServerStatus `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("claude: mcp_status answer: %w", err)
	}
	return r.Servers, nil
}

// ReconnectMCPServer asks the CLI to reconnect an MCP server (one that
// failed, for instance).
func (cl *Client) ReconnectMCPServer(ctx context.Context, name string) error {
	_, err := cl.control(ctx, "mcp_reconnect", map[string]any{"serverName": name})
	return err
}

// ToggleMCPServer enables or disables an MCP server for the session.
func (cl *Client) ToggleMCPServer(ctx context.Context, name string, enabled bool) error {
	_, err := cl.control(ctx, "mcp_toggle", map[string]any{"serverName": name, "enabled": enabled})
	return err
}

// StopTask stops a background task (subagent); a task_notification with
// status stopped follows.
func (cl *Client) StopTask(ctx context.Context, taskID string) error {
	_, err := cl.control(ctx, "stop_task", map[string]any{"task_id": taskID})
	return err
}

// WaitingOn reports whether the CLI is between turns with background
// tasks in flight, and their ids (sorted): an interrupt then has no turn
// to cut, and its result never comes (see Interrupt). False while a turn
// may be running, or when nothing runs at all.
func (cl *Client) WaitingOn() (tasks []string, waiting bool) { return cl.c.waitingOn() }

// CloseInput sends EOF: the CLI finishes its work and exits.
func (cl *Client) CloseInput() { cl.c.closeInput() }

// CloseInputWhenIdle sends EOF at the next result that arrives with no
// background task in flight (of any type: agents, workflows, background
// Bash), the rule Query follows, or at once when the last prompt's result
// has already arrived and nothing runs; when a task ended during that turn, EOF
// waits Options.FollowUpWait for the follow-up turn the CLI may start to
// report it. Until then hooks, permission prompts and SDK MCP servers keep
// working. While background tasks run and no turn starts, stdin stays open
// Options.BackgroundWait (30 min) at most. Use it after the last
// prompt of a session that may still be interrupted or steered.
func (cl *Client) CloseInputWhenIdle() { cl.c.closeInputWhenIdle() }

// Close stops the CLI (an interrupt if a turn is running, waiting up to 1 s
// for its answer; then EOF, then SIGTERM, then SIGKILL to its process
// group, 5 s apart by default) and waits for the session's goroutines; a
// hook or permission callback that ignores its cancelled context is waited
// for only Options.HandlerGrace (5 s) and then left behind, logged. It is
// safe to call more than once.
func (cl *Client) Close() error {
	cl.c.close()
	return nil
}

// Err is the error that ended the session, once it has ended.
func (cl *Client) Err() error {
	select {
	case <-cl.c.done:
		return cl.c.err
	default:
		return nil
	}
}

// Query runs one prompt in a new CLI process and yields its messages. Stdin
// stays open until a result arrives with no background task in flight and
// no follow-up turn coming (see Options.FollowUpWait), so that hooks,
// CanUseTool, SDK MCP servers and an interrupt keep working. A final error
// (*ResultError for an error result, *ProcessError, …) is yielded with a
// nil message. Cancelling ctx interrupts the turn (waiting up to 1 s for the
// CLI's answer) and then stops the process; so does breaking out of the
// loop.
func Query(ctx context.Context, prompt string, opts Options) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		cl, err := Connect(ctx, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		// Close interrupts a turn still running (a cancelled ctx, a
		// consumer that stopped early) before it sends EOF.
		defer cl.Close()
		cl.CloseInputWhenIdle()
		if err := cl.Send(ctx, prompt); err != nil {
			yield(nil, err)
			return
		}
		for m, err := range cl.Messages(ctx) {
			if !yield(m, err) {
				return
			}
		}
	}
}
