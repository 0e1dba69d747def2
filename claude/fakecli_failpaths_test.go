package claude_test

// Failure paths of issue 9: a store that stalls or refuses, hooks that
// ignore their context, grandchildren that hold the CLI's pipes, answers
// that cannot be encoded, cancellation mid-turn.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
)

// mainTranscript is where the fake CLI's main transcript lives.
func mainTranscript() string {
	return filepath.Join(os.Getenv("CLAUDE_CONFIG_DIR"), "projects", "-proj", fakeSession+".jsonl")
}

// mirrorFrame sends one transcript_mirror frame and appends its entries to
// the local transcript, as the CLI does.
func (f *fake) mirrorFrame(path string, uuids ...string) {
	var entries []any
	var local []byte
	for _, u := range uuids {
		e := map[string]any{"type": "user", "uuid": u}
		entries = append(entries, e)
		b, _ := json.Marshal(e)
		local = append(append(local, b...), '\n')
	}
	_ = os.MkdirAll(filepath.Dir(path), 0o700)
	if fh, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fh.Write(local)
		fh.Close()
	}
	f.send(map[string]any{"type": "transcript_mirror", "filePath": path, "entries": entries})
}

// mark writes what the fake saw to $FAKE_MARK, for the test to read.
func mark(s string) {
	if p := os.Getenv("FAKE_MARK"); p != "" {
		_ = os.WriteFile(p, []byte(s), 0o600)
	}
}

func init() {
	// exit-during-flush: a result, then (once the host is busy flushing)
	// more transcript frames and a message, then an immediate exit.
	fakeScripts["exit-during-flush"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.mirrorFrame(mainTranscript(), "m1", "m2")
		f.result(os.Getenv("CLAUDE_CONFIG_DIR"), false)
		time.Sleep(300 * time.Millisecond)
		for i := 3; i <= 12; i++ {
			f.mirrorFrame(mainTranscript(), fmt.Sprintf("m%d", i))
		}
		f.assistantText("after the result")
		os.Exit(0)
	}
	// control-during-flush: after a result the CLI needs a hook answer and
	// answers an interrupt while the host is still flushing.
	fakeScripts["control-during-flush"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		f.mirrorFrame(mainTranscript(), "m1")
		f.result("first", false)
		r := f.reply(f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PreToolUse"),
			"input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash"}}))
		m := f.read()
		if m == nil || m["type"] != "control_request" {
			fmt.Fprintln(os.Stderr, "fake: expected an interrupt, got", m)
			os.Exit(7)
		}
		f.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m["request_id"], "response": map[string]any{}}})
		f.result(fmt.Sprint("second ", r["subtype"]), false)
		f.waitEOF()
	}
	// toolong-after-result: a line over the limit after the turn's result.
	fakeScripts["toolong-after-result"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.mirrorFrame(mainTranscript(), "m1")
		f.result(os.Getenv("CLAUDE_CONFIG_DIR"), false)
		f.mirrorFrame(mainTranscript(), "m2")
		f.assistantText(strings.Repeat("x", 2<<20))
		f.waitEOF()
	}
	// hook-then-wait: one hook call, then the CLI waits for EOF.
	fakeScripts["hook-then-wait"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PreToolUse"), "input": map[string]any{"hook_event_name": "PreToolUse"}})
		f.waitEOF()
	}
	// hook-then-exit: one hook call, then the CLI ends (code in FAKE_EXIT).
	fakeScripts["hook-then-exit"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PreToolUse"), "input": map[string]any{"hook_event_name": "PreToolUse"}})
		time.Sleep(100 * time.Millisecond)
		code, _ := strconv.Atoi(os.Getenv("FAKE_EXIT"))
		os.Exit(code)
	}
	// stderr-grandchild leaves a process behind that holds stderr.
	fakeScripts["stderr-grandchild"] = func(f *fake) {
		f.handshake()
		f.prompt()
		cmd := exec.Command("sleep", "20")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			f.result("no grandchild: "+err.Error(), true)
			os.Exit(1)
		}
		f.result(strconv.Itoa(cmd.Process.Pid), false)
		os.Exit(0)
	}
	// await-interrupt: a turn that only an interrupt (or EOF) ends; FAKE_MARK
	// says which came first.
	fakeScripts["await-interrupt"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.assistantText("working")
		m := f.read()
		if m == nil {
			mark("eof")
			os.Exit(0)
		}
		req, _ := m["request"].(map[string]any)
		mark(fmt.Sprint(m["type"], " ", req["subtype"]))
		f.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": m["request_id"], "response": map[string]any{}}})
		f.send(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "num_turns": 1,
			"session_id": "sess-1", "terminal_reason": "aborted_streaming"})
		f.waitEOF()
	}
	// bad-answers asks a hook and a permission whose answers cannot be
	// encoded, then reports the replies it got.
	fakeScripts["bad-answers"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		h := f.reply(f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PreToolUse"), "input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash"}}))
		p := f.reply(f.call("can_use_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "ls"}}))
		f.result(fmt.Sprintf("hook=%s:%v perm=%s:%v", h["subtype"], h["error"] != nil, p["subtype"], p["error"] != nil), false)
		f.waitEOF()
	}
	// echo-hook-answer reports the hookSpecificOutput the host sent.
	fakeScripts["echo-hook-answer"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		var out []string
		for _, ev := range []string{"PreToolUse", "PostToolUse"} {
			r := f.reply(f.call("hook_callback", map[string]any{"callback_id": hookID(init, ev), "input": map[string]any{"hook_event_name": ev, "tool_name": "Bash"}}))
			b, _ := json.Marshal(r["response"])
			out = append(out, string(b))
		}
		f.result(strings.Join(out, "\n"), false)
		f.waitEOF()
	}
	// bg-bash-fake: a background Bash finishes after the result and its
	// follow-up turn calls a hook.
	fakeScripts["bg-bash-fake"] = func(f *fake) {
		init := f.handshake()
		f.prompt()
		f.system("background_tasks_changed", map[string]any{"tasks": []any{map[string]any{"task_id": "b1", "task_type": "local_bash"}}})
		f.system("task_started", map[string]any{"task_id": "b1", "task_type": "local_bash"})
		f.result("first", false)
		time.Sleep(200 * time.Millisecond)
		f.system("task_notification", map[string]any{"task_id": "b1", "status": "completed"})
		f.system("background_tasks_changed", map[string]any{"tasks": []any{}})
		f.system("init", map[string]any{"cwd": "/x", "model": "fake"})
		r := f.reply(f.call("hook_callback", map[string]any{"callback_id": hookID(init, "PreToolUse"), "input": map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Bash"}}))
		f.result(fmt.Sprint("second ", r["subtype"]), false)
		f.waitEOF()
	}
}

// stallingStore stalls its first append for stall; stalled says when that
// append has returned.
type stallingStore struct {
	*claudetest.MemoryStore
	stall   time.Duration
	calls   atomic.Int32
	stalled atomic.Bool
}

func (s *stallingStore) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	if s.calls.Add(1) == 1 {
		defer s.stalled.Store(true)
		select {
		case <-time.After(s.stall):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.MemoryStore.Append(ctx, key, entries)
}

func mainIDs(t *testing.T, s claude.SessionStore, pk string) string {
	t.Helper()
	return ids(t, s, claude.SessionKey{ProjectKey: pk, SessionID: fakeSession})
}

const twelve = "m1,m2,m3,m4,m5,m6,m7,m8,m9,m10,m11,m12"

func TestFakeLinesAfterASlowFlushAreKept(t *testing.T) {
	store := &stallingStore{MemoryStore: claudetest.NewMemoryStore(), stall: 2 * time.Second}
	opts := fakeOptions(t, "exit-during-flush")
	opts.BaseEnv = append(opts.BaseEnv, "CLAUDE_CONFIG_DIR="+t.TempDir())
	opts.SessionStore = store
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := mainIDs(t, store, "-proj"); got != twelve {
		t.Errorf("stored %q, want %s: lines read after the CLI exited were dropped", got, twelve)
	}
	if a, ok := msgs[len(msgs)-1].(*claude.AssistantMessage); !ok || a.Text() != "after the result" {
		t.Errorf("last message = %#v, want the assistant message sent after the result", msgs[len(msgs)-1])
	}
}

// resumeStore holds one stored entry of fakeSession for cwd.
func resumeStore(t *testing.T, cwd string) *claudetest.MemoryStore {
	t.Helper()
	mem := claudetest.NewMemoryStore()
	key := claude.SessionKey{ProjectKey: claude.ProjectKey(cwd), SessionID: fakeSession}
	if err := mem.Append(context.Background(), key, []json.RawMessage{json.RawMessage(`{"type":"user","uuid":"m0"}`)}); err != nil {
		t.Fatal(err)
	}
	return mem
}

// resumeHome is a HOME with credentials for the resume directory to copy.
func resumeHome(t *testing.T) string {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".claude"), 0o700)
	os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte(`{"claudeAiOauth":{"accessToken":"SECRET-ACCESS"}}`), 0o600)
	os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"primaryApiKey":"SECRET-KEY"}`), 0o600)
	return home
}

// The fake's transcript paths use the project key "-proj"; on a resume
// they land under the resume directory, whose projects folder the mirror
// maps, so the keys are -proj too.
func TestFakeResumedSessionWithASlowFlushLosesNothing(t *testing.T) {
	cwd := t.TempDir()
	mem := resumeStore(t, cwd)
	store := &stallingStore{MemoryStore: mem, stall: 2 * time.Second}
	opts := fakeOptions(t, "exit-during-flush")
	opts.BaseEnv = append(opts.BaseEnv, "HOME="+resumeHome(t))
	opts.Cwd, opts.Resume, opts.SessionStore = cwd, fakeSession, store
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := lastResult(t, msgs).Result
	if got := mainIDs(t, mem, "-proj"); got != twelve {
		t.Errorf("stored %q, want %s", got, twelve)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("with every line stored the resume directory %s should be gone: %v", dir, err)
	}
}

func TestFakeResumeDirectoryIsKeptWhenLinesWereLost(t *testing.T) {
	cwd := t.TempDir()
	mem := resumeStore(t, cwd)
	opts := fakeOptions(t, "toolong-after-result")
	opts.BaseEnv = append(opts.BaseEnv, "HOME="+resumeHome(t))
	opts.Cwd, opts.Resume, opts.SessionStore = cwd, fakeSession, mem
	msgs, err := collect(t, testCtx(t), "go", opts)
	if !errors.Is(err, claude.ErrLineTooLong) {
		t.Fatalf("err = %v, want the line-too-long protocol error", err)
	}
	dir := lastResult(t, msgs).Result
	t.Cleanup(func() { os.RemoveAll(dir) })
	assertKeptWithoutSecrets(t, dir)
}

// assertKeptWithoutSecrets checks a kept resume directory: its transcript
// stays, its credentials do not.
func assertKeptWithoutSecrets(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "projects", "-proj", fakeSession+".jsonl")); err != nil {
		t.Fatalf("the resume directory (the only full copy) was not kept: %v", err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("resume directory mode = %v (%v), want 0700", info.Mode().Perm(), err)
	}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), "SECRET-") {
			t.Errorf("the kept resume directory still holds credentials in %s", p)
		}
		return nil
	})
}

func TestFakeControlIsRoutedWhileTheStoreStalls(t *testing.T) {
	store := &stallingStore{MemoryStore: claudetest.NewMemoryStore(), stall: 2 * time.Second}
	opts := fakeOptions(t, "control-during-flush")
	opts.BaseEnv = append(opts.BaseEnv, "CLAUDE_CONFIG_DIR="+t.TempDir())
	opts.SessionStore = store
	hooked := make(chan bool, 1)
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			hooked <- !store.stalled.Load()
			return nil, nil
		}}}}}
	ctx := testCtx(t)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	select {
	case during := <-hooked:
		if !during {
			t.Error("the hook was called only after the store's flush ended: the reader waited on the store")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hook was never called")
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Interrupt(ictx); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	if store.stalled.Load() {
		t.Error("the interrupt was answered only after the store's flush ended")
	}
	var results []string
	for range 2 {
		for m, err := range cl.ReceiveResponse(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := m.(*claude.ResultMessage); ok {
				results = append(results, r.Result)
				if r.Result == "first" && mainIDs(t, store, "-proj") != "m1" {
					t.Error("the first result was delivered before its entries were stored")
				}
			}
		}
	}
	if strings.Join(results, "|") != "first|second success" {
		t.Errorf("results = %q", results)
	}
}

// refusingStore refuses its first n appends (or all, with n < 0) and can
// declare itself idempotent.
type refusingStore struct {
	*claudetest.MemoryStore
	n          int32
	calls      atomic.Int32
	idempotent bool
	stall      bool // refuse by stalling until the context ends
}

func (s *refusingStore) Append(ctx context.Context, key claude.SessionKey, entries []json.RawMessage) error {
	if c := s.calls.Add(1); s.n < 0 || c <= s.n {
		if s.stall {
			<-ctx.Done()
			return ctx.Err()
		}
		return errors.New("database is locked")
	}
	return s.MemoryStore.Append(ctx, key, entries)
}

func (s *refusingStore) IdempotentAppend() bool { return s.idempotent }

func mirrorErrors(msgs []claude.Message) []*claude.MirrorError {
	var out []*claude.MirrorError
	for _, m := range msgs {
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			out = append(out, s.MirrorError)
		}
	}
	return out
}

func TestFakeRefusedBatchIsReMirroredAfterTheTurn(t *testing.T) {
	// Four refusals use up the three attempts of the flush at the result;
	// the batch is re-mirrored after the turn.
	store := &refusingStore{MemoryStore: claudetest.NewMemoryStore(), n: 3}
	msgs, err := collect(t, testCtx(t), "go", mirrorOptions(t, store))
	if err != nil {
		t.Fatal(err)
	}
	if me := mirrorErrors(msgs); len(me) != 0 {
		t.Errorf("mirror errors %+v; the batch was recovered", me[0])
	}
	if got := ids(t, store, claude.SessionKey{ProjectKey: "-proj", SessionID: fakeSession}); got != "m1,m2,m3" {
		t.Errorf("stored %q, want m1,m2,m3", got)
	}
}

func TestFakeIdempotentStoreGetsTimeoutsRetried(t *testing.T) {
	store := &refusingStore{MemoryStore: claudetest.NewMemoryStore(), n: 1, stall: true, idempotent: true}
	opts := mirrorOptions(t, store)
	opts.StoreTimeout = 100 * time.Millisecond
	var atResult string
	for m, err := range claude.Query(testCtx(t), "go", opts) {
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := m.(*claude.SystemMessage); ok && s.MirrorError != nil {
			t.Errorf("mirror error %+v", s.MirrorError)
		}
		if _, ok := m.(*claude.ResultMessage); ok {
			atResult = ids(t, store, claude.SessionKey{ProjectKey: "-proj", SessionID: fakeSession})
		}
	}
	if atResult != "m1,m2,m3" {
		t.Errorf("at the result the store held %q: the timed-out append was not retried", atResult)
	}
}

func TestFakeLostBatchIsReportedAndTheResumeDirectoryKeptWithoutSecrets(t *testing.T) {
	cwd := t.TempDir()
	mem := resumeStore(t, cwd)
	store := &refusingStore{MemoryStore: mem, n: -1}
	opts := fakeOptions(t, "exit-during-flush")
	opts.BaseEnv = append(opts.BaseEnv, "HOME="+resumeHome(t))
	opts.Cwd, opts.Resume, opts.SessionStore = cwd, fakeSession, store
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := lastResult(t, msgs).Result
	t.Cleanup(func() { os.RemoveAll(dir) })
	me := mirrorErrors(msgs)
	if len(me) != 1 {
		t.Fatalf("mirror errors = %+v, want one loss report for the session", me)
	}
	if me[0].Lost != 12 || me[0].Key.SessionID != fakeSession || !strings.Contains(me[0].Error, "database is locked") ||
		me[0].Transcript != filepath.Join(dir, "projects", "-proj", fakeSession+".jsonl") {
		t.Errorf("loss report = %+v, want 12 entries lost, the key, the cause and the kept transcript", me[0])
	}
	assertKeptWithoutSecrets(t, dir)
}

func TestFakeCloseReturnsBehindAHookThatIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	opts := fakeOptions(t, "hook-then-wait")
	opts.HandlerGrace = 300 * time.Millisecond
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			close(started)
			<-release
			return nil, nil
		}}}}}
	ctx := testCtx(t)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	if err := cl.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	<-started
	closed := make(chan struct{})
	go func() { cl.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(8 * time.Second):
		t.Fatal("Close hangs behind a hook that ignores its context")
	}
}

func TestFakeQueryReturnsBehindAHookThatIgnoresItsContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	opts := fakeOptions(t, "hook-then-exit")
	opts.HandlerGrace = 300 * time.Millisecond
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			<-release
			return nil, nil
		}}}}}
	done := make(chan struct{})
	go func() {
		collect(t, testCtx(t), "go", opts)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		t.Fatal("Query hangs behind a hook that ignores its context")
	}
}

func TestFakeHooksStopWhenTheCLIDiesMidTurn(t *testing.T) {
	stopped := make(chan struct{})
	opts := fakeOptions(t, "hook-then-exit")
	opts.BaseEnv = append(opts.BaseEnv, "FAKE_EXIT=3")
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Hooks: []claude.HookFunc{
		func(ctx context.Context, _ *claude.HookInput) (*claude.HookOutput, error) {
			<-ctx.Done()
			close(stopped)
			return nil, nil
		}}}}}
	ctx := testCtx(t)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	for _, err := range cl.Messages(ctx) {
		if err != nil {
			break
		}
	}
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the CLI died, yet the hook's context was not cancelled (only Close would)")
	}
}

func TestFakeGrandchildHoldingStderrDoesNotHoldQuery(t *testing.T) {
	start := time.Now()
	msgs, err := collect(t, testCtx(t), "go", fakeOptions(t, "stderr-grandchild"))
	d := time.Since(start)
	if len(msgs) > 0 {
		if pid, perr := strconv.Atoi(lastResult(t, msgs).Result); perr == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if d > 8*time.Second {
		t.Fatalf("Query took %s: it waited for a grandchild that inherited stderr", d)
	}
}

func TestFakeCancellingAQueryInterruptsBeforeClosing(t *testing.T) {
	markFile := filepath.Join(t.TempDir(), "mark")
	opts := fakeOptions(t, "await-interrupt")
	opts.BaseEnv = append(opts.BaseEnv, "FAKE_MARK="+markFile)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	var err error
	for m, e := range claude.Query(ctx, "go", opts) {
		if m != nil {
			cancel()
		}
		err = e
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if b, _ := os.ReadFile(markFile); string(b) != "control_request interrupt" {
		t.Fatalf("the CLI saw %q first, want the interrupt before EOF", b)
	}
}

func TestFakeUnencodableAnswersGetAnErrorReply(t *testing.T) {
	opts := fakeOptions(t, "bad-answers")
	opts.Hooks = map[string][]claude.HookMatcher{claude.PreToolUse: {{Hooks: []claude.HookFunc{
		func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{
				HookEventName: claude.PreToolUse, UpdatedInput: json.RawMessage(`{"command": `)}}, nil
		}}}}}
	opts.CanUseTool = func(context.Context, *claude.ToolPermissionRequest) (claude.PermissionResult, error) {
		return claude.AllowInput(json.RawMessage(`not json`)), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs, err := collect(t, ctx, "go", opts)
	if err != nil {
		t.Fatalf("err = %v: an answer that cannot be encoded left the CLI waiting", err)
	}
	if got := lastResult(t, msgs).Result; got != "hook=error:true perm=error:true" {
		t.Fatalf("the CLI saw %q, want an error reply to each", got)
	}
}

func TestFakeHookAnswerGetsTheEventNameFilledIn(t *testing.T) {
	opts := fakeOptions(t, "echo-hook-answer")
	opts.Hooks = map[string][]claude.HookMatcher{
		claude.PreToolUse: {{Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			return &claude.HookOutput{HookSpecificOutput: &claude.HookSpecificOutput{PermissionDecision: claude.DecisionDeny, PermissionDecisionReason: "no"}}, nil
		}}}},
		claude.PostToolUse: {{Hooks: []claude.HookFunc{func(context.Context, *claude.HookInput) (*claude.HookOutput, error) {
			return claude.AddContext("note this"), nil
		}}}},
	}
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(lastResult(t, msgs).Result, "\n")
	if len(got) != 2 || !strings.Contains(got[0], `"hookEventName":"PreToolUse"`) || !strings.Contains(got[0], `"permissionDecision":"deny"`) ||
		!strings.Contains(got[1], `"hookEventName":"PostToolUse"`) || !strings.Contains(got[1], `"additionalContext":"note this"`) {
		t.Fatalf("the CLI got %q, want each answer carrying its event's name", got)
	}
}

func TestFakeStdinStaysOpenForBackgroundBash(t *testing.T) {
	opts := fakeOptions(t, "bg-bash-fake")
	opts.Hooks = noopHook(claude.PreToolUse)
	msgs, err := collect(t, testCtx(t), "go", opts)
	if err != nil {
		t.Fatal(err)
	}
	results := resultTexts(msgs)
	if strings.Join(results, "|") != "first|second success" {
		t.Fatalf("results = %q; stdin must stay open while a background Bash runs", results)
	}
}

func TestSweepResumeDirsRemovesStaleOnesAndCredentialsOfKeptOnes(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string, kept bool, age time.Duration) string {
		dir := filepath.Join(tmp, name)
		transcript := filepath.Join(dir, "projects", "-proj", fakeSession+".jsonl")
		os.MkdirAll(filepath.Dir(transcript), 0o700)
		os.WriteFile(transcript, []byte(`{"uuid":"m1"}`+"\n"), 0o600)
		os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte(`{"claudeAiOauth":{"accessToken":"SECRET-ACCESS"}}`), 0o600)
		os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(`{"primaryApiKey":"SECRET-KEY"}`), 0o600)
		if kept {
			os.WriteFile(filepath.Join(dir, "KEPT-TRANSCRIPT.txt"), []byte("kept"), 0o600)
		}
		when := time.Now().Add(-age)
		var paths []string
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { paths = append(paths, p); return nil })
		for i := len(paths) - 1; i >= 0; i-- {
			os.Chtimes(paths[i], when, when)
		}
		return dir
	}
	crashed := mk("claude-resume-111", false, 48*time.Hour)
	kept := mk("claude-resume-222", true, 48*time.Hour)
	live := mk("claude-resume-333", false, time.Minute)
	other := mk("not-a-resume-dir", false, 48*time.Hour)
	removed, err := claude.SweepResumeDirs(24 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != crashed {
		t.Errorf("removed %q, want only the stale crash leftover %s", removed, crashed)
	}
	if _, err := os.Stat(crashed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale leftover is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, "projects", "-proj", fakeSession+".jsonl")); err != nil {
		t.Errorf("the kept transcript was removed: %v", err)
	}
	for _, name := range []string{".credentials.json", ".claude.json"} {
		if _, err := os.Stat(filepath.Join(kept, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the kept directory still holds %s: %v", name, err)
		}
		for _, dir := range []string{live, other} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s of %s was touched: %v", name, dir, err)
			}
		}
	}
}

// panickingStore panics on every append.
type panickingStore struct{ *claudetest.MemoryStore }

func (panickingStore) Append(context.Context, claude.SessionKey, []json.RawMessage) error {
	panic("store bug")
}

func TestFakePanickingStoreIsAReportedLossNotACrash(t *testing.T) {
	msgs, err := collect(t, testCtx(t), "go", mirrorOptions(t, panickingStore{claudetest.NewMemoryStore()}))
	if err != nil {
		t.Fatal(err)
	}
	me := mirrorErrors(msgs)
	if len(me) != 2 || !strings.Contains(me[0].Error, "panicked: store bug") {
		t.Fatalf("mirror errors = %+v, want the main and subagent losses with the panic", me)
	}
}

// CloseInputWhenIdle called after the turn's result was already read (a
// fast CLI answers before the caller gets to it) must still close stdin.
func TestFakeCloseInputWhenIdleAfterTheResultClosesAtOnce(t *testing.T) {
	ctx := testCtx(t)
	opts := fakeOptions(t, "text")
	opts.Hooks = noopHook(claude.PostToolUse)
	cl, err := claude.Connect(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	for m, err := range cl.ReceiveResponse(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		_ = m
	}
	cl.CloseInputWhenIdle()
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := cl.Receive(rctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Receive = %v, want io.EOF: stdin stayed open after the idle result", err)
	}
}

func init() {
	// endless-shell: a background shell that never ends.
	fakeScripts["endless-shell"] = func(f *fake) {
		f.handshake()
		f.prompt()
		f.system("task_started", map[string]any{"task_id": "b1", "task_type": "local_bash"})
		f.result("started a server", false)
		f.waitEOF()
	}
}

// A background shell may never end: stdin closes BackgroundWait after the
// last result rather than never.
func TestFakeEndlessBackgroundShellIsBoundedByBackgroundWait(t *testing.T) {
	opts := fakeOptions(t, "endless-shell")
	opts.BackgroundWait = 300 * time.Millisecond
	opts.Hooks = noopHook(claude.PreToolUse)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := collect(t, ctx, "go", opts); err != nil {
		t.Fatalf("err = %v: the query did not end while a background shell ran", err)
	}
}
