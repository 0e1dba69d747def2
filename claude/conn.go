package claude

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// conn is one running CLI process: a reader that routes every stdout line, a
// serialized writer on stdin, a goroutine per incoming control request, and
// the shutdown escalation. Nothing it starts outlives close.
type conn struct {
	opts  *Options
	cmd   *exec.Cmd
	stdin *os.File

	writeMu     sync.Mutex
	inputClosed bool

	hooks   map[string]HookFunc
	secrets *secrets // masked in every line read from the CLI
	bridge  *mcpBridge
	mirror  *mirror

	pendingMu sync.Mutex
	pending   map[string]chan controlReply
	nextReq   atomic.Uint64

	inflightMu sync.Mutex
	inflight   map[string]context.CancelFunc
	handlers   sync.WaitGroup
	handlerCtx context.Context
	stopAll    context.CancelFunc

	msgs *queue

	// Read and written by the reader goroutine only.
	lastErrResult *ResultMessage

	// The stdin rule's state: written by the reader, read by
	// CloseInputWhenIdle too.
	ruleMu sync.Mutex
	tasks  map[string]bool // background tasks in flight, of every type
	// foreground are the tasks the CLI started as not backgrounded (a
	// subagent the model waits for): their notification belongs to the
	// turn that waited, and no follow-up turn reports them.
	foreground map[string]bool
	// idle: a result came and no turn has started since. notified: a
	// notification of a task that may bring a follow-up turn arrived in the
	// current turn or since the last result.
	idle, notified bool
	// closeOnResult makes the reader close stdin at the first result that
	// arrives with no background task in flight and no follow-up turn
	// coming (one-shot queries).
	closeOnResult atomic.Bool
	// followGen numbers the armed follow-up wait; a turn that starts (or a
	// newer wait) invalidates the older one.
	followGen atomic.Uint64
	// busy is set while a turn may be running: from a prompt sent (or a
	// turn's message) to its result. Close interrupts a busy CLI first.
	busy atomic.Bool
	// mainTurn is busy by the main thread alone: a background subagent's
	// messages after the result (older CLIs stream them) start no turn
	// that an interrupt could cut (WaitingOn).
	mainTurn atomic.Bool
	// streamCut is set when the reader stopped before the end of stdout:
	// what followed (transcript frames included) was never read.
	streamCut atomic.Bool

	stderr *tail

	exited   chan struct{} // the process was reaped
	done     chan struct{} // the reader finished; err is final
	err      error
	exitCode int

	// signaled is set when shutdown had to signal the process, whose exit
	// status is then ours, not the CLI's failure.
	signaled  atomic.Bool
	closeOnce sync.Once
	cleanup   []func()
}

// controlTrace, when set (by benchmarks), sees when each CLI request was
// read and when its reply was written.
var controlTrace func(received, replied time.Time)

type controlReply struct {
	resp json.RawMessage
	err  error
}

// start spawns the CLI and its goroutines. extraEnv is laid over the child's
// environment last (the resume path sets CLAUDE_CONFIG_DIR there).
func start(ctx context.Context, opts *Options, args []string, extraEnv map[string]string, hookIDs map[string]HookFunc) (*conn, error) {
	cli, err := FindCLI(opts.CLIPath)
	if err != nil {
		return nil, err
	}
	if err := checkCwd(opts.Cwd); err != nil {
		return nil, err
	}
	if !opts.SkipVersionCheck && os.Getenv("CLAUDE_AGENT_SDK_SKIP_VERSION_CHECK") == "" {
		checkVersion(ctx, cli)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, &ConnectionError{Msg: "create stdin pipe", Err: err}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, &ConnectionError{Msg: "create stdout pipe", Err: err}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, &ConnectionError{Msg: "create stderr pipe", Err: err}
	}
	cmd := exec.Command(cli, args...)
	if len(opts.Launcher) > 0 {
		cmd = exec.Command(opts.Launcher[0], append(append(slices.Clone(opts.Launcher[1:]), cli), args...)...)
	}
	cmd.Dir = opts.Cwd
	cmd.Env = opts.childEnv(extraEnv)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	ownProcessGroup(cmd)
	project, temp := privateProject(cmd.Env, opts.Cwd), tempProject(cmd.Env, opts.Cwd)
	err = cmd.Start()
	// The child holds its own copies; ours would keep EOF from arriving.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, &ConnectionError{Msg: "start " + cli, Err: err}
	}
	hctx, stop := context.WithCancel(context.Background())
	c := &conn{
		opts: opts, cmd: cmd, stdin: inW,
		hooks: map[string]HookFunc{}, bridge: newMCPBridge(opts.MCPServers),
		pending: map[string]chan controlReply{}, inflight: map[string]context.CancelFunc{},
		handlerCtx: hctx, stopAll: stop, msgs: newQueue(), tasks: map[string]bool{}, foreground: map[string]bool{},
		stderr: newTail(16 << 10), exited: make(chan struct{}), done: make(chan struct{}),
	}
	c.hooks, c.secrets = hookIDs, secretsOf(cmd.Env)
	started := time.Now()
	c.cleanup = append(c.cleanup, func() {
		c.secrets.maskFiles(project, started.Add(-time.Second))
		c.secrets.maskFiles(temp, started.Add(-time.Second))
		privateFiles(project)
	})
	if opts.SessionStore != nil {
		c.mirror = newMirror(opts.SessionStore, filepath.Join(configDir(cmd.Env), "projects"),
			opts.SessionStoreFlush, orDefault(opts.StoreTimeout, 60*time.Second),
			func(m *SystemMessage) { c.msgs.push(m) })
		c.mirror.secrets = c.secrets
		c.mirror.watch(opts.SessionID)
		c.mirror.watch(opts.Resume)
	}
	var stderrDone sync.WaitGroup
	stderrDone.Add(1)
	go func() {
		defer stderrDone.Done()
		c.readStderr(errR)
	}()
	go func() {
		err := cmd.Wait()
		c.exitCode = exitCode(err)
		close(c.exited)
	}()
	go func() {
		c.readLoop(outR)
		stderrDone.Wait()
		c.finish()
	}()
	return c, nil
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ee.ExitCode() >= 0 {
			return ee.ExitCode()
		}
		return 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
	}
	return -1
}

// exitIdle is how long a pipe may stay silent after the CLI has exited
// before its reader stops: by then only a grandchild that inherited the pipe
// can hold it open, and nothing it writes is the CLI's.
const exitIdle = time.Second

// idleDeadline bounds a pipe's reader once the CLI has exited: the read
// deadline is armed at the exit and pushed back after every line, so a pipe
// is still read to its end while data flows.
type idleDeadline struct {
	f     *os.File
	armed atomic.Bool
}

// watchIdle arms f's idle deadline when exited closes; its goroutine ends
// then or when stop closes.
func watchIdle(f *os.File, exited, stop <-chan struct{}) *idleDeadline {
	d := &idleDeadline{f: f}
	go func() {
		select {
		case <-exited:
			d.armed.Store(true)
			_ = f.SetReadDeadline(time.Now().Add(exitIdle))
		case <-stop:
		}
	}()
	return d
}

func (d *idleDeadline) touch() {
	if d.armed.Load() {
		_ = d.f.SetReadDeadline(time.Now().Add(exitIdle))
	}
}

// readLoop reads stdout to EOF. It never waits on anything but the pipe:
// the mirror writes in its own goroutine and results wait behind a barrier
// in the queue. Once the process has exited, a grandchild that inherited
// stdout must not keep the reader waiting: an idle deadline ends it.
func (c *conn) readLoop(out *os.File) {
	stop := make(chan struct{})
	defer close(stop)
	defer out.Close()
	idle := watchIdle(out, c.exited, stop)
	r := bufio.NewReaderSize(out, 64<<10)
	limit := c.opts.maxLineBytes()
	for {
		line, err := readLine(r, limit)
		idle.touch()
		c.secrets.mask(line)
		if len(line) > 0 && (err == nil || errors.Is(err, io.EOF) || errors.Is(err, os.ErrDeadlineExceeded)) {
			if perr := c.route(line, err != nil); perr != nil {
				c.fail(perr)
				return
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, os.ErrClosed):
			return
		case errors.Is(err, ErrLineTooLong):
			c.fail(&ProtocolError{Line: lineStart(line), Err: fmt.Errorf("%w (%d bytes; raise Options.MaxLineBytes)", ErrLineTooLong, limit)})
			return
		default:
			c.fail(&ConnectionError{Msg: "read stdout", Err: err})
			return
		}
	}
}

// readLine returns one '\n'-terminated line without its terminator. A line
// longer than limit returns its start and ErrLineTooLong.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > limit+1 {
			return append(buf, chunk[:min(len(chunk), 200)]...), ErrLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil {
			buf = buf[:len(buf)-1]
		}
		return buf, err
	}
}

// fail ends the session because of a stream the driver cannot read: the
// CLI is stopped and the consumer gets err.
func (c *conn) fail(err error) {
	c.streamCut.Store(true)
	c.setErr(err)
	go c.close()
}

func (c *conn) setErr(err error) {
	c.pendingMu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.pendingMu.Unlock()
}

// route handles one stdout line. partial is true for a trailing line
// without a newline, which is dropped if it does not parse.
func (c *conn) route(line []byte, partial bool) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		// Some CLI builds print debug lines to stdout.
		return nil
	}
	var env struct {
		Type      string          `json:"type"`
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
		Response  json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		if partial {
			return nil
		}
		return &ProtocolError{Line: lineStart(line), Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	switch env.Type {
	case "control_response":
		c.deliverControl(env.Response)
		return nil
	case "control_request":
		c.startHandler(env.RequestID, env.Request, time.Now())
		return nil
	case "control_cancel_request":
		c.inflightMu.Lock()
		cancel := c.inflight[env.RequestID]
		c.inflightMu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil
	case "transcript_mirror":
		if c.mirror != nil {
			c.mirror.add(line)
		}
		return nil
	}
	msg, err := ParseMessage(line)
	if err != nil {
		// A known type in a shape we cannot read: keep it visible and raw
		// rather than ending a long run over a CLI change.
		slog.Warn("claude: unreadable message kept raw", "type", env.Type, "err", err)
		msg = &UnknownMessage{Type: env.Type, Raw: json.RawMessage(bytes.Clone(line))}
	}
	if sm, ok := msg.(*SystemMessage); ok && sm.Subtype == "init" && c.mirror != nil {
		c.mirror.watch(sm.SessionID)
	}
	c.ruleMu.Lock()
	defer c.ruleMu.Unlock()
	c.observe(msg)
	if _, ok := msg.(*ResultMessage); ok {
		// The store holds the turn before the consumer sees its result;
		// the reader itself goes on at once.
		var wait <-chan struct{}
		if c.mirror != nil {
			wait = c.mirror.barrier()
		}
		c.msgs.pushAfter(msg, wait)
		c.afterResult()
		return nil
	}
	c.msgs.push(msg)
	return nil
}

// closeInputWhenIdle sets the stdin rule for the rest of the session and
// applies it at once when the CLI is already idle: the turn's result may
// have been read before the caller got here.
func (c *conn) closeInputWhenIdle() {
	c.ruleMu.Lock()
	defer c.ruleMu.Unlock()
	c.closeOnResult.Store(true)
	if c.idle && !c.busy.Load() {
		c.afterResult()
	}
}

func (c *conn) waitingOn() ([]string, bool) {
	c.ruleMu.Lock()
	defer c.ruleMu.Unlock()
	if c.mainTurn.Load() || len(c.tasks) == 0 {
		return nil, false
	}
	return slices.Sorted(maps.Keys(c.tasks)), true
}

// observe (under ruleMu) tracks what the stdin rule and error reporting need: background
// tasks in flight (of every type: a background Bash's follow-up turn needs
// the host as much as an agent's), whether a turn is running, task
// notifications, and the last error result.
func (c *conn) observe(msg Message) {
	switch m := msg.(type) {
	case *SystemMessage:
		switch m.Subtype {
		case "init":
			c.turnStarted()
			c.mainTurn.Store(true)
		case "background_tasks_changed":
			// The CLI's live list is the authority.
			var l struct {
				Tasks []struct {
					TaskID string `json:"task_id"`
				} `json:"tasks"`
			}
			if json.Unmarshal(m.Raw, &l) == nil {
				clear(c.tasks)
				for _, t := range l.Tasks {
					c.tasks[t.TaskID] = true
				}
				c.tasksChanged()
			}
		}
		if m.Task != nil {
			switch m.Subtype {
			case "task_started":
				c.tasks[m.Task.TaskID] = true
				if b := m.Task.Backgrounded; b != nil && !*b {
					c.foreground[m.Task.TaskID] = true
				}
			case "task_notification":
				delete(c.tasks, m.Task.TaskID)
				// A task the CLI did not say was in the foreground may be
				// reported by a follow-up turn: wait for it after the result.
				c.notified = c.notified || !c.foreground[m.Task.TaskID]
				delete(c.foreground, m.Task.TaskID)
				c.tasksChanged()
			case "task_updated":
				var p struct {
					Status string `json:"status"`
				}
				_ = json.Unmarshal(m.Task.Patch, &p)
				switch p.Status {
				case "completed", "failed", "stopped", "killed":
					delete(c.tasks, m.Task.TaskID)
					c.tasksChanged()
				}
			}
		}
		if m.Subtype != "session_state_changed" {
			c.lastErrResult = nil
		}
	case *ResultMessage:
		c.idle = true
		c.busy.Store(false)
		c.mainTurn.Store(false)
		if m.IsError {
			c.lastErrResult = m
		} else {
			c.lastErrResult = nil
		}
	case *AssistantMessage, *UserMessage, *StreamEvent:
		c.turnStarted()
		if parentToolUse(msg) == "" {
			c.mainTurn.Store(true)
		}
		c.lastErrResult = nil
	default:
		c.lastErrResult = nil
	}
}

// parentToolUse is the Agent call a subagent's message belongs to; "" for
// the main thread's.
func parentToolUse(msg Message) string {
	switch m := msg.(type) {
	case *AssistantMessage:
		return m.ParentToolUseID
	case *UserMessage:
		return m.ParentToolUseID
	case *StreamEvent:
		return m.ParentToolUseID
	}
	return ""
}

// turnStarted notes that the CLI is working on a turn again.
func (c *conn) turnStarted() {
	c.busy.Store(true)
	if c.idle {
		c.idle, c.notified = false, false
		c.followGen.Add(1) // a follow-up wait is answered
	}
}

// afterResult applies the stdin rule at a result. A task still running
// keeps stdin open (its end is watched), for Options.BackgroundWait at most
// when no turn starts meanwhile: a background shell may never end. A task
// notification in this turn may bring a follow-up turn of its own, or may
// have been absorbed by the turn that just ended (the CLI does both): stdin
// stays open for Options.FollowUpWait, and closes unless a turn starts.
func (c *conn) afterResult() {
	if !c.closeOnResult.Load() {
		return
	}
	switch {
	case len(c.tasks) > 0:
		c.closeAfter(c.opts.backgroundWait(), "background tasks still running long after the last result; closing the session's input")
	case c.notified:
		c.armFollowUp()
	default:
		c.closeInput()
	}
}

// tasksChanged re-applies the stdin rule between turns: when the last task
// ends, its notification turn should start at once.
func (c *conn) tasksChanged() {
	if c.idle && len(c.tasks) == 0 && c.closeOnResult.Load() {
		c.armFollowUp()
	}
}

func (c *conn) armFollowUp() { c.closeAfter(c.opts.followUpWait(), "") }

// closeAfter closes stdin after d unless a turn starts (or another wait is
// armed) first; warn, if set, is logged then.
func (c *conn) closeAfter(d time.Duration, warn string) {
	gen := c.followGen.Add(1)
	time.AfterFunc(d, func() {
		if c.followGen.Load() == gen {
			if warn != "" {
				slog.Warn("claude: "+warn, "wait", d)
			}
			c.closeInput()
		}
	})
}

// finish runs when stdout has ended: it settles the session's error, fails
// every pending request with it, and ends the message stream.
func (c *conn) finish() {
	select {
	case <-c.exited:
	case <-time.After(orDefault(c.opts.ShutdownGrace, 5*time.Second)):
		// stdout closed but the process lingers: stop it.
		c.signaled.Store(true)
		signalGroup(c.cmd, syscall.SIGKILL)
		<-c.exited
	}
	// The CLI is gone: nobody waits for a callback's answer any more.
	c.stopAll()
	c.followGen.Add(1)
	if c.mirror != nil {
		// Late subagent frames arrive after the last result.
		c.mirror.close(c.exitCode != 0 || c.signaled.Load() || c.streamCut.Load())
	}
	c.pendingMu.Lock()
	if c.err == nil && c.exitCode != 0 && !c.signaled.Load() {
		pe := &ProcessError{ExitCode: c.exitCode, Stderr: c.stderr.String()}
		if c.lastErrResult != nil {
			c.err = &ResultError{Result: c.lastErrResult, Process: pe}
		} else {
			c.err = pe
		}
	}
	err := c.err
	pend := c.pending
	c.pending = map[string]chan controlReply{}
	c.pendingMu.Unlock()
	failWith := err
	if failWith == nil {
		failWith = ErrClosed
	}
	for _, ch := range pend {
		ch <- controlReply{err: failWith}
	}
	close(c.done)
	c.msgs.finish(err)
}

// readStderr keeps the stderr tail. Like stdout, it is read to its end, with
// an idle bound once the CLI has exited (a grandchild may hold it for good).
func (c *conn) readStderr(f *os.File) {
	stop := make(chan struct{})
	defer close(stop)
	defer f.Close()
	idle := watchIdle(f, c.exited, stop)
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := readLine(r, 64<<10)
		idle.touch()
		if len(line) > 0 {
			s := strings.TrimRight(string(line), "\r")
			c.stderr.add(s)
			if c.opts.Stderr != nil {
				c.opts.Stderr(s)
			}
		}
		if err != nil && !errors.Is(err, ErrLineTooLong) {
			return
		}
	}
}

// write sends one JSON line on stdin.
func (c *conn) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("claude: encode message: %w", err)
	}
	b = append(b, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.inputClosed {
		return &ConnectionError{Msg: "input is closed", Err: ErrClosed}
	}
	if _, err := c.stdin.Write(b); err != nil {
		return &ConnectionError{Msg: "write to CLI", Err: err}
	}
	return nil
}

// closeInput sends EOF; the CLI exits once its work is done.
func (c *conn) closeInput() {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if !c.inputClosed {
		c.inputClosed = true
		_ = c.stdin.Close()
	}
}

// request sends a control request and waits for its response.
func (c *conn) request(ctx context.Context, subtype string, fields map[string]any, timeout time.Duration) (json.RawMessage, error) {
	return c.requestWaiting(ctx, subtype, fields, timeout, nil)
}

// requestWaiting is request whose wait, when window runs out, asks
// moreTime (if not nil) whether to wait another window.
func (c *conn) requestWaiting(ctx context.Context, subtype string, fields map[string]any, window time.Duration, moreTime func() bool) (json.RawMessage, error) {
	id := fmt.Sprintf("req_%d_%s", c.nextReq.Add(1), randomHex(4))
	body := map[string]any{"subtype": subtype}
	for k, v := range fields {
		body[k] = v
	}
	ch := make(chan controlReply, 1)
	c.pendingMu.Lock()
	select {
	case <-c.done:
		err := c.err
		c.pendingMu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		return nil, err
	default:
	}
	c.pending[id] = ch
	c.pendingMu.Unlock()
	forget := func() {
		c.pendingMu.Lock()
		delete(c.pending, id)
		c.pendingMu.Unlock()
	}
	if err := c.write(map[string]any{"type": "control_request", "request_id": id, "request": body}); err != nil {
		forget()
		return nil, err
	}
	start := time.Now()
	timer := time.NewTimer(window)
	defer timer.Stop()
	for {
		select {
		case r := <-ch:
			if r.err != nil {
				return nil, r.err
			}
			return r.resp, nil
		case <-timer.C:
			if moreTime != nil && moreTime() {
				timer.Reset(window)
				continue
			}
			forget()
			return nil, &ControlTimeoutError{Subtype: subtype, After: time.Since(start).Round(time.Second)}
		case <-ctx.Done():
			forget()
			return nil, ctx.Err()
		}
	}
}

func (c *conn) deliverControl(raw json.RawMessage) {
	var r struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		slog.Warn("claude: unreadable control response", "err", err)
		return
	}
	c.pendingMu.Lock()
	ch := c.pending[r.RequestID]
	delete(c.pending, r.RequestID)
	c.pendingMu.Unlock()
	if ch == nil {
		return
	}
	if r.Subtype == "error" {
		ch <- controlReply{err: &ControlError{Msg: r.Error}}
		return
	}
	ch <- controlReply{resp: r.Response}
}

// startHandler answers a CLI request in its own goroutine so that hooks run
// concurrently and the reader never waits on one.
func (c *conn) startHandler(id string, raw json.RawMessage, received time.Time) {
	ctx, cancel := context.WithCancel(c.handlerCtx)
	c.inflightMu.Lock()
	c.inflight[id] = cancel
	c.inflightMu.Unlock()
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		defer func() {
			c.inflightMu.Lock()
			delete(c.inflight, id)
			c.inflightMu.Unlock()
			cancel()
		}()
		resp, err := c.answer(ctx, raw)
		if ctx.Err() != nil {
			// Cancelled by the CLI (or shutting down): it expects no reply.
			return
		}
		if err == nil {
			// Encode here: an answer that cannot be encoded (an invalid
			// json.RawMessage) must still get a reply, or the CLI waits.
			b, merr := json.Marshal(resp)
			if merr != nil {
				err = fmt.Errorf("the callback's answer cannot be encoded as JSON (check its json.RawMessage fields): %w", merr)
			} else {
				resp = json.RawMessage(b)
			}
		}
		var frame map[string]any
		if err != nil {
			frame = map[string]any{"subtype": "error", "request_id": id, "error": err.Error()}
		} else {
			frame = map[string]any{"subtype": "success", "request_id": id, "response": resp}
		}
		if werr := c.write(map[string]any{"type": "control_response", "response": frame}); werr != nil {
			slog.Debug("claude: control response not sent", "request_id", id, "err", werr)
		}
		if t := controlTrace; t != nil {
			t(received, time.Now())
		}
	}()
}

// answer dispatches one CLI request; a panicking callback becomes an error
// reply rather than a crash of the host.
func (c *conn) answer(ctx context.Context, raw json.RawMessage) (resp any, err error) {
	var head struct {
		Subtype string `json:"subtype"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("unreadable control request: %v", err)
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("claude: callback panicked", "subtype", head.Subtype, "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, fmt.Errorf("%s callback panicked: %v", head.Subtype, p)
		}
	}()
	switch head.Subtype {
	case "hook_callback":
		return c.answerHook(ctx, raw)
	case "can_use_tool":
		return c.answerPermission(ctx, raw)
	case "mcp_message":
		var r struct {
			ServerName string          `json:"server_name"`
			Message    json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("unreadable mcp_message: %v", err)
		}
		out, err := c.bridge.handle(ctx, r.ServerName, r.Message)
		if err != nil {
			return nil, err
		}
		return map[string]any{"mcp_response": out}, nil
	}
	return nil, fmt.Errorf("Unsupported control request subtype: %s", head.Subtype)
}

func (c *conn) answerHook(ctx context.Context, raw json.RawMessage) (any, error) {
	var r struct {
		CallbackID string          `json:"callback_id"`
		Input      json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("unreadable hook_callback: %v", err)
	}
	fn := c.hooks[r.CallbackID]
	if fn == nil {
		return nil, fmt.Errorf("no hook callback with id %q", r.CallbackID)
	}
	in := &HookInput{Raw: r.Input, secrets: c.secrets}
	if len(r.Input) > 0 {
		if err := json.Unmarshal(r.Input, in); err != nil {
			return nil, fmt.Errorf("unreadable hook input: %v", err)
		}
	}
	out, err := fn(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("hook %s (%s): %w", r.CallbackID, in.HookEventName, err)
	}
	if out == nil {
		return map[string]any{}, nil
	}
	if hs := out.HookSpecificOutput; hs != nil && hs.HookEventName == "" {
		// The CLI ignores an event-specific answer without its event name
		// (a deny would fail open): the driver knows the event.
		filled, spec := *out, *hs
		spec.HookEventName = in.HookEventName
		filled.HookSpecificOutput = &spec
		out = &filled
	}
	return out, nil
}

func (c *conn) answerPermission(ctx context.Context, raw json.RawMessage) (any, error) {
	if c.opts.CanUseTool == nil {
		return nil, errors.New("canUseTool callback is not provided")
	}
	req := &ToolPermissionRequest{Raw: raw}
	if err := json.Unmarshal(raw, req); err != nil {
		return nil, fmt.Errorf("unreadable can_use_tool request: %v", err)
	}
	res, err := c.opts.CanUseTool(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("permission callback for %s: %w", req.ToolName, err)
	}
	return res.wire(req.Input), nil
}

// close stops the CLI: an interrupt if a turn is running (waiting up to
// the grace for the answer: on EOF alone the CLI would finish the turn and
// be killed after the grace; a busy machine's CLI took over a second to
// answer, and was signalled), then EOF, then SIGTERM, then SIGKILL to
// its whole process group, each after a grace period; then it waits for
// the goroutines (callbacks only HandlerGrace).
func (c *conn) close() {
	c.closeOnce.Do(func() {
		grace := orDefault(c.opts.ShutdownGrace, 5*time.Second)
		if c.busy.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			if _, err := c.request(ctx, "interrupt", nil, grace); err != nil {
				slog.Debug("claude: no interrupt before closing", "err", err)
			}
			cancel()
		}
		c.closeInput()
		if !waitFor(c.exited, grace) {
			c.signaled.Store(true)
			signalGroup(c.cmd, syscall.SIGTERM)
			if !waitFor(c.exited, grace) {
				signalGroup(c.cmd, syscall.SIGKILL)
				<-c.exited
			}
		}
		<-c.done
		c.stopAll()
		c.waitHandlers(orDefault(c.opts.HandlerGrace, 5*time.Second))
		c.bridge.close()
		for _, f := range c.cleanup {
			f()
		}
	})
}

// waitHandlers waits up to grace for the callbacks, whose contexts are
// cancelled; one that ignores its context is left running (and logged)
// rather than hanging Close. Its late answer goes nowhere.
func (c *conn) waitHandlers(grace time.Duration) {
	all := make(chan struct{})
	go func() {
		c.handlers.Wait()
		close(all)
	}()
	if waitFor(all, grace) {
		return
	}
	c.inflightMu.Lock()
	ids := make([]string, 0, len(c.inflight))
	for id := range c.inflight {
		ids = append(ids, id)
	}
	c.inflightMu.Unlock()
	slog.Warn("claude: callbacks still running after their context was cancelled; not waiting for them", "grace", grace, "requests", ids)
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// tail keeps the last bytes of a stream of lines (the CLI's stderr).
type tail struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func newTail(limit int) *tail { return &tail{limit: limit} }

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, line...)
	t.buf = append(t.buf, '\n')
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
