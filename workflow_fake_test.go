package flower

// Workflow tests on the real *Runtime driving the test binary as a
// scripted `claude` (fakeWorkflowCLI): every edge of Workflow.Run that
// needs many sessions, cheaply.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/fakecli"
	"github.com/flowerrun/flower/workbench"
)

// fakeWorkflowCLI is a scripted CLI with one session per call: a resume
// without --fork-session continues the session it names, anything else
// gets a new id (…-<call number>). It mirrors one transcript entry to the
// store, so the session exists there, and answers "reply <n>"; a prompt
// holding FAIL gets an error result (after its scripted text), one holding
// MAXTURNS the turn cap's result, one holding NOSESSION an exit before
// any message. A call with --json-schema answers in structure as the real
// CLI does (sendStructured). Each call is recorded in FLOWER_FAKE_DIR
// (fakeCall).
func fakeWorkflowCLI() {
	if fakecli.AnsweredVersion() {
		os.Exit(0)
	}
	s := fakecli.Connect()
	prompt := s.Read()
	text := fakecli.Text(prompt)
	n := recordFakeCall(text)
	resume, fork := "", false
	for _, a := range os.Args[1:] {
		if r, ok := strings.CutPrefix(a, "--resume="); ok {
			resume = r
		}
		fork = fork || a == "--fork-session"
	}
	sid := fmt.Sprintf("aaaaaaaa-bbbb-cccc-dddd-%012d", n)
	if resume != "" && !fork {
		sid = resume
	}
	if strings.Contains(text, "NOSESSION") {
		os.Exit(1)
	}
	cwd, _ := os.Getwd()
	config := os.Getenv("CLAUDE_CONFIG_DIR") // set by the driver for a resume from the store
	if config == "" {
		config = filepath.Join(os.Getenv("HOME"), ".claude")
	}
	transcript := filepath.Join(config, "projects", claude.ProjectKey(cwd), sid+".jsonl")
	s.Send(map[string]any{"type": "system", "subtype": "init", "session_id": sid, "uuid": fmt.Sprintf("i-%d", n)})
	s.Send(map[string]any{"type": "transcript_mirror", "filePath": transcript, "entries": []any{map[string]any{
		"type": "user", "uuid": fmt.Sprintf("u-%d", n), "sessionId": sid, "message": map[string]any{"role": "user", "content": text}}}})
	reply, rule := scriptedReply(n, text)
	if rule != nil {
		playTools(s, n, rule.Tools, cwd)
		for name, content := range rule.Writes {
			// As a Bash command would: no hook sees it.
			path := filepath.Join(cwd, name)
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(content), 0o644)
		}
		for name, content := range rule.Appends {
			// As `echo … >> file` would: no hook sees it.
			if f, err := os.OpenFile(filepath.Join(cwd, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
				f.WriteString(content)
				f.Close()
			}
		}
	}
	holdFakeCall(text)
	failing := strings.Contains(text, "MAXTURNS") || strings.Contains(text, "FAIL") || failMarked(text)
	if wantsStructured() && !failing {
		code := sendStructured(s, sid, n, reply)
		s.Drain()
		os.Exit(code)
	}
	s.Send(map[string]any{"type": "assistant", "session_id": sid, "uuid": fmt.Sprintf("a-%d", n), "parent_tool_use_id": nil,
		"message": map[string]any{"id": fmt.Sprintf("m-%d", n), "model": "fake", "content": []any{map[string]any{"type": "text", "text": reply}}}})
	if strings.Contains(text, "MAXTURNS") {
		s.Send(map[string]any{"type": "result", "subtype": "error_max_turns", "is_error": true, "duration_ms": 1,
			"duration_api_ms": 1, "num_turns": 3, "session_id": sid, "total_cost_usd": 0.01})
	} else if strings.Contains(text, "FAIL") || failMarked(text) {
		s.Send(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "duration_ms": 1,
			"duration_api_ms": 1, "num_turns": 1, "result": "it failed", "session_id": sid, "total_cost_usd": 0.01})
	} else {
		s.Success(sid, reply)
	}
	s.Drain()
	os.Exit(0)
}

// wantsStructured reports whether the call asks for structured output
// (--json-schema).
func wantsStructured() bool {
	for _, a := range os.Args[1:] {
		if a == "--json-schema" || strings.HasPrefix(a, "--json-schema=") {
			return true
		}
	}
	return false
}

// Replies of a fakeRule for the cases where a call under --json-schema
// goes wrong (see fakeRule). Build them with the helpers below.
const (
	// replyTwoOutputs is followed by two JSON objects, one a line: the
	// model calls StructuredOutput twice in one turn.
	replyTwoOutputs = "FAKE-STRUCTURED:TWO-OUTPUTS\n"
	// replyCutOff is followed by a JSON object whose first half the model
	// writes as text: a reply cut off before it called the tool.
	replyCutOff = "FAKE-STRUCTURED:CUT-OFF\n"
	// replyRejected is followed by a JSON object the model kept giving and
	// the CLI kept refusing: its schema check failed on every attempt.
	replyRejected = "FAKE-STRUCTURED:REJECTED\n"
	// replyEmpty is a model that answered nothing at all.
	replyEmpty = "FAKE-STRUCTURED:EMPTY"
)

// structuredReply is the reply of a model giving v as its structured
// output.
func structuredReply(v any) string { return mustJSON(v) }

// twoOutputsReply is a reply calling StructuredOutput with a, then b.
func twoOutputsReply(a, b any) string { return replyTwoOutputs + mustJSON(a) + "\n" + mustJSON(b) }

// cutOffReply is a reply cut off halfway through writing v as text.
func cutOffReply(v any) string { return replyCutOff + mustJSON(v) }

// rejectedReply is a reply whose structured output v failed the CLI's
// schema check on every attempt.
func rejectedReply(v any) string { return replyRejected + mustJSON(v) }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fake reply: %v", err))
	}
	return string(b)
}

// sendStructured answers a call made under --json-schema with reply as
// CLI 2.1.332 does (claude/fakeapi/STRUCTURED.md) and returns the exit
// code the real CLI would end with: a JSON object becomes a
// StructuredOutput call the CLI accepts (assistant tool_use, user
// tool_result), and the result carries it as structured_output with its
// compact JSON as result text; a plain text ends, as after the CLI's one
// nudge, in a success with that text and no structured_output; the
// replyTwoOutputs, replyCutOff, replyRejected and replyEmpty replies play
// the bad cases.
func sendStructured(s *fakecli.Session, sid string, n int, reply string) (exitCode int) {
	msgID := fmt.Sprintf("m-%d", n)
	line := 0
	assistant := func(block map[string]any) {
		line++
		s.Send(map[string]any{"type": "assistant", "session_id": sid, "uuid": fmt.Sprintf("a-%d-%d", n, line), "parent_tool_use_id": nil,
			"message": map[string]any{"id": msgID, "model": "fake", "content": []any{block}}})
	}
	call := func(k int, input json.RawMessage) string {
		id := fmt.Sprintf("toolu_fake_%d_%d", n, k)
		assistant(map[string]any{"type": "tool_use", "id": id, "name": "StructuredOutput", "input": input})
		return id
	}
	answer := func(toolResult map[string]any) {
		line++
		s.Send(map[string]any{"type": "user", "session_id": sid, "uuid": fmt.Sprintf("u-%d-%d", n, line), "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []any{toolResult}}})
	}
	accepted := func(id string) map[string]any {
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": "Structured output provided successfully"}
	}
	result := func(text string, output json.RawMessage) {
		r := map[string]any{"type": "result", "subtype": "success", "is_error": false, "duration_ms": 1, "duration_api_ms": 1,
			"num_turns": 2, "result": text, "session_id": sid, "total_cost_usd": 0.01, "terminal_reason": "completed"}
		if output != nil {
			r["structured_output"], r["stop_reason"] = output, "tool_use"
		} else {
			r["stop_reason"] = "end_turn"
		}
		s.Send(r)
	}
	switch {
	case reply == replyEmpty:
		result("", nil)
	case strings.HasPrefix(reply, replyTwoOutputs):
		first, second, _ := strings.Cut(strings.TrimPrefix(reply, replyTwoOutputs), "\n")
		a, b := compactObject(first), compactObject(second)
		if a == nil || b == nil {
			os.Exit(5) // a test wrote a bad reply
		}
		// The CLI answers each call before it prints the next.
		answer(accepted(call(0, a)))
		answer(accepted(call(1, b)))
		result(string(b), b) // the last valid call wins
	case strings.HasPrefix(reply, replyCutOff):
		whole := strings.TrimPrefix(reply, replyCutOff)
		cut := whole[:len(whole)/2]
		assistant(map[string]any{"type": "text", "text": cut})
		result(cut, nil)
	case strings.HasPrefix(reply, replyRejected):
		input := compactObject(strings.TrimPrefix(reply, replyRejected))
		if input == nil {
			os.Exit(5)
		}
		const complaint = "Output does not match required schema: the scripted CLI refused it"
		id := call(0, input)
		answer(map[string]any{"type": "tool_result", "tool_use_id": id, "content": complaint, "is_error": true})
		s.Send(map[string]any{"type": "result", "subtype": "error_max_structured_output_retries", "is_error": true,
			"duration_ms": 1, "duration_api_ms": 1, "num_turns": 6, "session_id": sid, "total_cost_usd": 0.01,
			"stop_reason": "tool_use", "terminal_reason": "structured_output_retry_exhausted",
			"errors": []string{"Failed to provide valid structured output after 5 attempts — last StructuredOutput error: " + complaint}})
		return 1
	default:
		if obj := compactObject(reply); obj != nil {
			answer(accepted(call(0, obj)))
			result(string(obj), obj)
			return 0
		}
		assistant(map[string]any{"type": "text", "text": reply})
		result(reply, nil)
	}
	return 0
}

// compactObject returns text compacted when it is one JSON object, else
// nil.
func compactObject(text string) json.RawMessage {
	text = strings.TrimSpace(text)
	var obj map[string]json.RawMessage
	if !strings.HasPrefix(text, "{") || json.Unmarshal([]byte(text), &obj) != nil {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(text)) != nil {
		return nil
	}
	return b.Bytes()
}

// failMarked reports whether the prompt holds the text in
// FLOWER_FAKE_DIR/fail: a prompt the test cannot put FAIL into fails so.
func failMarked(text string) bool {
	marker, err := os.ReadFile(filepath.Join(os.Getenv("FLOWER_FAKE_DIR"), "fail"))
	return err == nil && len(marker) > 0 && strings.Contains(text, string(marker))
}

// recordFakeCall writes call-<n>.json for the first free n and returns n.
func recordFakeCall(prompt string) int {
	dir := os.Getenv("FLOWER_FAKE_DIR")
	for n := 1; ; n++ {
		f, err := os.OpenFile(fmt.Sprintf("%s/call-%d.json", dir, n), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			json.NewEncoder(f).Encode(fakeCall{Args: os.Args[1:], Prompt: prompt})
			f.Close()
			return n
		}
		if !os.IsExist(err) {
			os.Exit(3)
		}
	}
}

// fakeRule gives the replies to the prompts that contain Match: the k-th
// such call gets Replies[k] (the last one once they run out). The first rule
// that matches wins.
//
// A call under --json-schema reads its reply as the real CLI's model would
// answer (sendStructured): a JSON object (structuredReply) is the
// structured output; any other text is a model that never called the tool,
// which ends in a success without structured_output. The bad cases:
//   - twoOutputsReply(a, b): two StructuredOutput calls in one turn; the
//     result keeps b, the assistant lines show both;
//   - cutOffReply(v): the reply cut off, the result's text the first half
//     of v's JSON and no structured_output;
//   - replyEmpty: no answer, the result's text "" and no structured_output;
//   - rejectedReply(v): v failed the CLI's schema check on every attempt,
//     an error_max_structured_output_retries result.
//
// A prompt holding FAIL or MAXTURNS fails as without --json-schema.
type fakeRule struct {
	Match   string   `json:"match"`
	Replies []string `json:"replies"`
	// Writes are files (relative to the session's cwd) the call writes
	// before it replies, the way a worker's Bash command would: no hook
	// sees them.
	Writes map[string]string `json:"writes,omitempty"`
	// Appends are texts the call appends to files (relative to the
	// session's cwd) after Writes, as a worker's `echo … >> file` would.
	Appends map[string]string `json:"appends,omitempty"`
	// Tools are tool calls a subagent makes before the reply: each goes
	// through the driver's PreToolUse hooks, the decision is recorded in
	// tool-<call>-<k>.json, and an allowed Write writes its file.
	Tools []fakeTool `json:"tools,omitempty"`
}

// fakeTool is one scripted tool call.
type fakeTool struct {
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// playTools sends each tool call to the driver's PreToolUse hook callbacks
// as a subagent's call, records whether any denied it, and performs an
// allowed Write.
func playTools(s *fakecli.Session, n int, tools []fakeTool, cwd string) {
	req, _ := s.InitRequest["request"].(map[string]any)
	hooks, _ := req["hooks"].(map[string]any)
	matchers, _ := hooks["PreToolUse"].([]any)
	for k, tool := range tools {
		denied, reason := false, ""
		for _, m := range matchers {
			mm, _ := m.(map[string]any)
			if pat, _ := mm["matcher"].(string); pat != "" && !regexp.MustCompile("^(?:"+pat+")$").MatchString(tool.Name) {
				continue
			}
			ids, _ := mm["hookCallbackIds"].([]any)
			for j, id := range ids {
				rid := fmt.Sprintf("tool_%d_%d_%d", n, k, j)
				s.Send(map[string]any{"type": "control_request", "request_id": rid, "request": map[string]any{
					"subtype": "hook_callback", "callback_id": id, "input": map[string]any{
						"hook_event_name": "PreToolUse", "tool_name": tool.Name, "tool_input": tool.Input,
						"cwd": cwd, "session_id": "s", "agent_id": "agent-1", "agent_type": "coder"}}})
				for {
					msg := s.Read()
					if msg == nil {
						os.Exit(7)
					}
					resp, _ := msg["response"].(map[string]any)
					if msg["type"] != "control_response" || resp["request_id"] != rid {
						continue
					}
					out, _ := resp["response"].(map[string]any)
					hso, _ := out["hookSpecificOutput"].(map[string]any)
					if hso["permissionDecision"] == "deny" {
						denied = true
						reason, _ = hso["permissionDecisionReason"].(string)
					}
					break
				}
			}
		}
		if !denied && tool.Name == "Write" {
			if p, _ := tool.Input["file_path"].(string); p != "" {
				c, _ := tool.Input["content"].(string)
				os.WriteFile(p, []byte(c), 0o644)
			}
		}
		b, _ := json.Marshal(map[string]any{"tool": tool.Name, "denied": denied, "reason": reason})
		os.WriteFile(filepath.Join(os.Getenv("FLOWER_FAKE_DIR"), fmt.Sprintf("tool-%d-%d.json", n, k)), b, 0o600)
	}
}

// scriptedReply is the reply FLOWER_FAKE_DIR/replies.json scripts for call
// n with prompt text, or "reply <n>" without a script or a matching rule;
// rule is the matching rule, nil without one.
func scriptedReply(n int, text string) (string, *fakeRule) {
	dir := os.Getenv("FLOWER_FAKE_DIR")
	b, err := os.ReadFile(filepath.Join(dir, "replies.json"))
	if err != nil {
		return fmt.Sprintf("reply %d", n), nil
	}
	var rules []fakeRule
	if json.Unmarshal(b, &rules) != nil {
		os.Exit(4)
	}
	rule := func(prompt string) int {
		for i, r := range rules {
			if strings.Contains(prompt, r.Match) {
				return i
			}
		}
		return -1
	}
	i := rule(text)
	if i < 0 || len(rules[i].Replies) == 0 {
		return fmt.Sprintf("reply %d", n), nil
	}
	k := 0
	for m := 1; m < n; m++ {
		var c fakeCall
		if b, err := os.ReadFile(fmt.Sprintf("%s/call-%d.json", dir, m)); err == nil && json.Unmarshal(b, &c) == nil && rule(c.Prompt) == i {
			k++
		}
	}
	r := rules[i]
	if k > 0 {
		// Files and tools play on the rule's first call only.
		r.Writes, r.Appends, r.Tools = nil, nil, nil
	}
	return r.Replies[min(k, len(r.Replies)-1)], &r
}

// holdFakeCall, for a prompt holding the text in FLOWER_FAKE_DIR/hold,
// writes held-<k> (k from 1) and waits until release-<k> exists: the test
// acts while the session runs.
func holdFakeCall(text string) {
	dir := os.Getenv("FLOWER_FAKE_DIR")
	marker, err := os.ReadFile(filepath.Join(dir, "hold"))
	if err != nil || !strings.Contains(text, string(marker)) {
		return
	}
	k := 1
	for ; ; k++ {
		f, err := os.OpenFile(fmt.Sprintf("%s/held-%d", dir, k), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err == nil {
			f.Close()
			break
		}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("%s/release-%d", dir, k)); err == nil {
			return
		}
	}
}

func fakeSID(n int) string { return fmt.Sprintf("aaaaaaaa-bbbb-cccc-dddd-%012d", n) }

// fakeFlow is a workspace, run directory and call log for fakeWorkflowCLI.
type fakeFlow struct {
	t                *testing.T
	ws, runDir, home string
	calls            string
}

func newFakeFlow(t *testing.T) *fakeFlow {
	return &fakeFlow{t: t, ws: t.TempDir(), runDir: t.TempDir(), home: t.TempDir(), calls: t.TempDir()}
}

// runtime is a new Runtime on the flow's directories (one per "process").
func (f *fakeFlow) runtime(opts ...Option) *Runtime {
	f.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		f.t.Fatal(err)
	}
	base := []Option{
		WithLanguage(Chinese), // the original's texts, which the tests compare
		WithRunDir(f.runDir),
		WithEnv(map[string]string{"ANTHROPIC_API_KEY": "sk-fake"}),
		// One attempt per Run: the step's own retries are under test.
		WithResilience(Resilience{MaxAttempts: 1, Probe: fastResilience.Probe}),
		WithSessionOptions(func(o *claude.Options) {
			o.CLIPath = exe
			o.BaseEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "FLOWER_FAKE_CLI=workflow", "FLOWER_FAKE_DIR=" + f.calls}
		}),
	}
	rt, err := New(f.ws, append(base, opts...)...)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { rt.Close() })
	return rt
}

// call is the n-th CLI call (1 first).
func (f *fakeFlow) call(n int) fakeCall {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.calls, fmt.Sprintf("call-%d.json", n)))
	if err != nil {
		f.t.Fatalf("call %d: %v", n, err)
	}
	var c fakeCall
	if err := json.Unmarshal(b, &c); err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fakeFlow) count() int {
	m, _ := filepath.Glob(filepath.Join(f.calls, "call-*.json"))
	return len(m)
}

// labels are the manifest's step labels, in order.
func labels(t *testing.T, rt *Runtime) []string {
	t.Helper()
	rows, err := ReadManifest(rt.ManifestPath())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Step)
	}
	return out
}

// resumed is the session a call resumed, "" for a new one; fork tells
// whether it forked.
func (c fakeCall) resumed() (sid string, fork bool) {
	for _, a := range c.Args {
		if r, ok := strings.CutPrefix(a, "--resume="); ok {
			sid = r
		}
		fork = fork || a == "--fork-session"
	}
	return sid, fork
}

func wfSpec() AgentSpec { return AgentSpec{Name: "w", AllowedTools: []string{"Read"}} }

func TestFakeWorkflowRetriesAreLabelledAndStartOver(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	var gates int
	wf := &Workflow{NoContinuity: true, Steps: []Step{{
		Name: "a", Spec: wfSpec(), Prompt: Text("do a"), Retries: 2,
		Gate: func(context.Context, StepResult, *Ctx) (bool, error) { gates++; return false, nil },
	}}}
	c, err := wf.Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(t, rt); !slices.Equal(got, []string{"a", "a#retry1", "a#retry2"}) {
		t.Errorf("labels = %v", got)
	}
	if gates != 3 {
		t.Errorf("the gate ran %d times for 3 attempts", gates)
	}
	for n := 1; n <= 3; n++ {
		call := f.call(n)
		if sid, _ := call.resumed(); sid != "" || !strings.HasPrefix(call.Prompt, "do a") {
			t.Errorf("retry %d resumed %q with prompt %q; a retry without OnReject starts over", n, sid, call.Prompt)
		}
	}
	if at, ok := c.FailedAt(); !ok || at != "a" {
		t.Errorf("FailedAt = %q, %v", at, ok)
	}
	if _, err := c.Output("a"); !errors.Is(err, ErrNoOutput) {
		t.Errorf("a failed step's output: %v, want ErrNoOutput", err)
	}
	if r, ok := c.Result("a"); !ok || r.Step != "a#retry2" {
		t.Errorf("the last result is not recorded: %+v", r)
	}
}

func TestFakeWorkflowOnRejectResumesTheRejectedSession(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	var gates int
	rejects := []string{"add the tests", ""}
	step := Step{
		Name: "b", Spec: wfSpec(), Prompt: Text("do b"), Retries: 3, Fork: true,
		Gate: func(_ context.Context, r StepResult, _ *Ctx) (bool, error) { gates++; return gates == 4, nil },
		OnReject: func(context.Context, StepResult, *Ctx) (string, error) {
			text := rejects[0]
			rejects = append(rejects[1:], "again")
			return text, nil
		},
	}
	wf := &Workflow{NoContinuity: true, Steps: []Step{step}}
	c, err := wf.Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := labels(t, rt); !slices.Equal(got, []string{"b", "b#round2", "b#round3", "b#round4"}) {
		t.Errorf("labels = %v", got)
	}
	// Round 2 continues round 1's session with the rejection's text.
	if sid, fork := f.call(2).resumed(); sid != fakeSID(1) || fork || !strings.HasPrefix(f.call(2).Prompt, "add the tests") {
		t.Errorf("round 2 resumed %q (fork %v) with %q", sid, fork, f.call(2).Prompt)
	}
	// An empty rejection starts over: no resume, the original prompt.
	if sid, _ := f.call(3).resumed(); sid != "" || !strings.HasPrefix(f.call(3).Prompt, "do b") {
		t.Errorf("after an empty rejection round 3 resumed %q with %q", sid, f.call(3).Prompt)
	}
	if sid, _ := f.call(4).resumed(); sid != fakeSID(3) || !strings.HasPrefix(f.call(4).Prompt, "again") {
		t.Errorf("round 4 resumed %q with %q", sid, f.call(4).Prompt)
	}
	if v, err := c.Output("b"); err != nil || v != "reply 4" {
		t.Errorf("ctx[b] = %q, %v", v, err)
	}
	// The Step was not written back: a second run starts from its prompt.
	if _, err := wf.Run(runCtx(t), rt, nil, nil); err != nil {
		t.Fatal(err)
	}
	if p := f.call(5).Prompt; !strings.HasPrefix(p, "do b") {
		t.Errorf("the second run's first prompt is %q: the step was modified", p)
	}
}

func TestFakeWorkflowStepAbortSpendsNoMoreRetries(t *testing.T) {
	t.Parallel()
	for _, onFail := range []OnFail{"", OnFailSkip} {
		t.Run(string(onFail), func(t *testing.T) {
			f := newFakeFlow(t)
			rt := f.runtime()
			wf := &Workflow{NoContinuity: true, Steps: []Step{
				{Name: "a", Spec: wfSpec(), Prompt: Text("do a"), Retries: 3, OnFail: onFail,
					Gate: func(context.Context, StepResult, *Ctx) (bool, error) {
						return false, fmt.Errorf("judged: %w", &StepAbort{Reason: "the environment lacks a compiler"})
					}},
				{Name: "next", Spec: wfSpec(), Prompt: Text("after")},
			}}
			c, err := wf.Run(runCtx(t), rt, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := labels(t, rt); got[0] != "a" || slices.Contains(got, "a#retry1") {
				t.Errorf("labels = %v: StepAbort must not use the remaining retries", got)
			}
			if why, _ := c.Aborted(); why != "the environment lacks a compiler" {
				t.Errorf("aborted = %q", why)
			}
			at, failed := c.FailedAt()
			_, ranNext := c.Result("next")
			switch onFail {
			case "":
				if !failed || at != "a" || ranNext {
					t.Errorf("stop: FailedAt %q %v, next ran %v", at, failed, ranNext)
				}
			case OnFailSkip:
				if failed || !ranNext {
					t.Errorf("skip: FailedAt %q %v, next ran %v", at, failed, ranNext)
				}
			}
		})
	}
}

func TestFakeWorkflowOnFailHasThreeMeanings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		onFail  OnFail
		value   string // ctx[a], "" = absent
		nextRan bool
	}{
		{"", "", false},
		{OnFailStop, "", false},
		{OnFailSkip, "", true},
		{OnFailContinue, "reply 1", true},
	} {
		t.Run(string(tc.onFail), func(t *testing.T) {
			f := newFakeFlow(t)
			rt := f.runtime()
			var steps []string
			wf := &Workflow{NoContinuity: true, Steps: []Step{
				{Name: "a", Spec: wfSpec(), Prompt: Text("FAIL here"), OnFail: tc.onFail,
					Reduce: func(StepResult, *Ctx) string { return "REDUCED" },
					Gate: func(context.Context, StepResult, *Ctx) (bool, error) {
						t.Error("the gate ran on a result that is not OK")
						return true, nil
					}},
				{Name: "next", Spec: wfSpec(), Prompt: func(c *Ctx) (string, error) {
					if tc.onFail == OnFailContinue {
						return c.Output("a")
					}
					return "after", nil
				}},
			}}
			c, err := wf.Run(runCtx(t), rt, nil, func(s Step, r StepResult) { steps = append(steps, s.Name) })
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.Output("a")
			if tc.value == "" && !errors.Is(err, ErrNoOutput) || tc.value != "" && v != tc.value {
				t.Errorf("ctx[a] = %q, %v; want %q (continue writes the text unreduced)", v, err, tc.value)
			}
			if _, ok := c.Result("a"); !ok {
				t.Error("the failed step's result is not in _results")
			}
			if _, ran := c.Result("next"); ran != tc.nextRan {
				t.Errorf("next ran = %v", ran)
			}
			at, failed := c.FailedAt()
			if failed != !tc.nextRan || failed && at != "a" {
				t.Errorf("FailedAt = %q, %v", at, failed)
			}
			if !slices.Contains(steps, "a") {
				t.Errorf("OnStep was not told of the failure: %v", steps)
			}
		})
	}
}

func TestFakeWorkflowWhenFalseSkipsEntirelyAndResumeFromItFails(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	var log eventLog
	wf := &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "maybe", Spec: wfSpec(), Prompt: Text("x"),
			When: func(context.Context, *Ctx) (bool, error) { return false, nil }},
		{Name: "uses", Spec: wfSpec(), Prompt: Text("y"), ResumeFrom: "maybe"},
	}}
	c, err := wf.Run(runCtx(t), rt, log.add, nil)
	if !errors.Is(err, ErrNoSession) || !strings.Contains(err.Error(), "maybe") {
		t.Fatalf("err = %v, want ErrNoSession naming the step", err)
	}
	if f.count() != 0 {
		t.Errorf("%d CLI calls; a resume_from without a session must not start anything", f.count())
	}
	if _, ok := c.Result("maybe"); ok {
		t.Error("a skipped step has a result")
	}
	if _, err := c.Output("maybe"); !errors.Is(err, ErrNoOutput) {
		t.Errorf("a skipped step's output: %v", err)
	}
	if evs := log.of(event.Step, ""); len(evs) != 0 {
		t.Errorf("step events %v; a skipped step emits none and the failing one never began", evs)
	}
}

func TestFakeWorkflowResumeFromAndForkAndReduce(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	var log eventLog
	wf := &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "first", Spec: wfSpec(), Prompt: Text("one"),
			Reduce: func(r StepResult, _ *Ctx) string { return "R(" + r.Text + ")" }},
		{Name: "same", Spec: wfSpec(), ResumeFrom: "first", Prompt: func(c *Ctx) (string, error) {
			v, err := c.Output("first")
			return "two after " + v, err
		}},
		{Name: "branch", Spec: wfSpec(), ResumeFrom: "first", Fork: true, Prompt: Text("three")},
	}}
	c, err := wf.Run(runCtx(t), rt, log.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Output("first"); v != "R(reply 1)" {
		t.Errorf("ctx[first] = %q, want the reduced value", v)
	}
	if p := f.call(2).Prompt; !strings.HasPrefix(p, "two after R(reply 1)") {
		t.Errorf("second prompt = %q", p)
	}
	if sid, fork := f.call(2).resumed(); sid != fakeSID(1) || fork {
		t.Errorf("resume_from resumed %q fork %v", sid, fork)
	}
	if sid, fork := f.call(3).resumed(); sid != fakeSID(1) || !fork {
		t.Errorf("resume_from with fork resumed %q fork %v", sid, fork)
	}
	if s := c.Sessions(); s["first"] != fakeSID(1) || s["same"] != fakeSID(1) || s["branch"] != fakeSID(3) {
		t.Errorf("sessions = %v", s)
	}
	evs := log.of(event.Step, "")
	if len(evs) != 3 {
		t.Fatalf("step events = %v", evs)
	}
	for i, e := range evs {
		if e.Int("index") != i+1 || e.Int("total") != 3 || e.Bool("resumed") || e.Int("woke") != 1 || e.Text != wf.Steps[i].Name {
			t.Errorf("step event %d = %+v", i, e)
		}
	}
	if _, err := os.Stat(filepath.Join(f.runDir, LineageName)); !os.IsNotExist(err) {
		t.Errorf("NoContinuity wrote a lineage: %v", err)
	}
}

func TestFakeWorkflowContinuesTheSameNamedStepFromTheLineage(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	build := func() *Workflow {
		return &Workflow{Steps: []Step{
			{Name: "work", Spec: wfSpec(), Prompt: Text("the task"), ResumePrompt: Text("carry on")},
			{Name: "check", Spec: wfSpec(), Prompt: Text("check it"), Retries: 1,
				Gate: func(_ context.Context, _ StepResult, c *Ctx) (bool, error) {
					// A judge the gate runs on the same Runtime: its
					// session must never enter the lineage.
					if _, err := c.Runtime().Run(runCtx(t), wfSpec(), "judge", RunOptions{StepName: "check·判定#1"}); err != nil {
						return false, err
					}
					return false, nil // so that check retries: its label must not enter the lineage either
				}},
		}}
	}
	var log1 eventLog
	c1, err := build().Run(runCtx(t), f.runtime(), log1.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Calls: 1 work, 2 check, 3 judge, 4 check#retry1, 5 judge.
	lin := OpenLineage(f.runDir, f.ws)
	if got := lin.Steps(); len(got) != 2 || got["work"] != fakeSID(1) || got["check"] != fakeSID(4) {
		t.Errorf("lineage steps = %v; want work → 1 and check → its current session 4, no label, no judge", got)
	}
	if lin.Woke() != 1 || c1.Woke() != 1 {
		t.Errorf("woke = %d / %d, want 1", lin.Woke(), c1.Woke())
	}

	var log2 eventLog
	rt2 := f.runtime() // a new process on the same run directory
	c2, err := build().Run(runCtx(t), rt2, log2.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := 6
	if sid, fork := f.call(next).resumed(); sid != fakeSID(1) || fork || !strings.HasPrefix(f.call(next).Prompt, "carry on") {
		t.Errorf("the second run's work step resumed %q (fork %v) with %q; want session 1 with the resume prompt", sid, fork, f.call(next).Prompt)
	}
	if sid, _ := f.call(next + 1).resumed(); sid != fakeSID(4) {
		t.Errorf("the second run's check step resumed %q, want its current session %s", sid, fakeSID(4))
	}
	evs := log2.of(event.Step, "")
	if len(evs) != 2 || !evs[0].Bool("resumed") || evs[0].Int("woke") != 2 {
		t.Errorf("second run's step events = %+v; want resumed, woke 2", evs)
	}
	if c2.Woke() != 2 || c2.Lineage() == nil {
		t.Errorf("ctx woke = %d lineage %v", c2.Woke(), c2.Lineage())
	}
}

func TestFakeWorkflowALineageSessionTheStoreLacksStartsNew(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	if err := OpenLineage(f.runDir, f.ws).Remember("work", "99999999-bbbb-cccc-dddd-000000000000"); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	wf := &Workflow{Steps: []Step{{Name: "work", Spec: wfSpec(), Prompt: Text("task")}}}
	if _, err := wf.Run(runCtx(t), rt, log.add, nil); err != nil {
		t.Fatal(err)
	}
	if sid, _ := f.call(1).resumed(); sid != "" {
		t.Errorf("resumed %q, which the store does not hold", sid)
	}
	if evs := log.of(event.System, ""); len(evs) == 0 || !strings.Contains(evs[0].Text, "已不在会话库里") {
		t.Errorf("the dropped session was not said: %v", evs)
	}
}

func TestFakeWorkflowACorruptLineageIsSaidAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	if err := os.WriteFile(filepath.Join(f.runDir, LineageName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	var log eventLog
	wf := &Workflow{Steps: []Step{{Name: "work", Spec: wfSpec(), Prompt: Text("task")}}}
	c, err := wf.Run(runCtx(t), rt, log.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, failed := c.FailedAt(); failed {
		t.Error("a corrupt lineage failed the run")
	}
	evs := log.of(event.System, "")
	if len(evs) == 0 || !strings.Contains(evs[0].Text, "not a lineage JSON object") {
		t.Errorf("the corrupt lineage was not said: %v", evs)
	}
	if got := OpenLineage(f.runDir, f.ws); got.Ignored() != nil || got.Steps()["work"] != fakeSID(1) || got.Woke() != 1 {
		t.Errorf("the next write did not replace the corrupt file: %v %v", got.Ignored(), got.Steps())
	}
}

func TestFakeWorkflowAStepThatCannotStartStopsTheWorkflowWithAnError(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	bad := wfSpec()
	bad.Compact = &CompactPolicy{Mode: "sideways"}
	wf := &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "ran", Spec: wfSpec(), Prompt: Text("FAIL softly"), OnFail: OnFailSkip},
		{Name: "broken", Spec: bad, Prompt: Text("never"), Retries: 2},
		{Name: "after", Spec: wfSpec(), Prompt: Text("never either")},
	}}
	c, err := wf.Run(runCtx(t), rt, nil, nil)
	var se *StepError
	if err == nil || errors.As(err, &se) || !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), "could not start") {
		t.Fatalf("err = %v; want a could-not-start error wrapping the cause", err)
	}
	if f.count() != 1 {
		t.Errorf("%d CLI calls; the failed step ran once, the broken one never, no retry", f.count())
	}
	if _, ok := c.Result("broken"); ok {
		t.Error("a step that never started has a result")
	}
	if _, ok := c.Result("after"); ok {
		t.Error("the workflow went on after a step that could not start")
	}
	if _, ok := c.Result("ran"); !ok {
		t.Error("the step that ran and failed is not recorded")
	}
}

func TestFakeWorkflowKeepsWordsTypedBetweenSteps(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	wf := &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "one", Spec: wfSpec(), Prompt: Text("first")},
		{Name: "skipped", Spec: wfSpec(), Prompt: Text("never"), When: func(_ context.Context, c *Ctx) (bool, error) {
			c.Runtime().Interrupt("and use tabs")
			return false, nil
		}},
		{Name: "two", Spec: wfSpec(), Prompt: Text("second")},
	}}
	_, err := wf.Run(runCtx(t), rt, nil, func(s Step, _ StepResult) {
		if s.Name == "one" {
			rt.Interrupt("prefer short names")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	p := f.call(2).Prompt
	if !strings.HasPrefix(p, "second") || !strings.Contains(p, "prefer short names") || !strings.Contains(p, "and use tabs") {
		t.Errorf("the next step's prompt lost the words typed between steps:\n%s", p)
	}
}

func TestFakeWorkflowGivesAnEventChannelTheRunsSink(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	ch := &sinkChannel{}
	var log eventLog
	wf := &Workflow{NoContinuity: true, Channel: ch, Steps: []Step{{Name: "one", Spec: wfSpec(), Prompt: Text("x")}}}
	c, err := wf.Run(runCtx(t), rt, log.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch.mu.Lock()
	sink := ch.sink
	ch.mu.Unlock()
	if sink == nil {
		t.Fatal("the channel got no event sink")
	}
	sink(event.New(event.Ask, "a question", nil))
	if len(log.of(event.Ask, "")) != 1 {
		t.Error("the channel's sink is not the run's")
	}
	// And the run's log has it: a team's worker follows events.jsonl.
	if data, err := os.ReadFile(filepath.Join(rt.RunDir(), "events.jsonl")); err != nil || !strings.Contains(string(data), `"a question"`) {
		t.Errorf("the channel's event is not in events.jsonl (%v):\n%s", err, data)
	}
	if c.OnEvent() == nil || c.Runtime() != rt {
		t.Error("_on_event or _runtime missing from ctx")
	}
	// A channel with a sink of its own keeps it.
	var own eventLog
	wired := &sinkChannel{sink: own.add}
	wf = &Workflow{NoContinuity: true, Channel: wired, Steps: []Step{{Name: "one", Spec: wfSpec(), Prompt: Text("x")}}}
	if _, err := wf.Run(runCtx(t), rt, log.add, nil); err != nil {
		t.Fatal(err)
	}
	wired.sink(event.New(event.Ask, "mine", nil))
	if len(own.of(event.Ask, "")) != 1 || len(log.of(event.Ask, "")) != 1 {
		t.Error("the workflow replaced the channel's own sink")
	}
}

type sinkChannel struct {
	mu   sync.Mutex
	sink func(Event)
}

func (c *sinkChannel) MCPServers() map[string]claude.MCPServer { return nil }
func (c *sinkChannel) AttachOnEvent(f func(Event)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sink != nil {
		return false
	}
	c.sink = f
	return true
}

// The human channel is an EventChannel.
var _ EventChannel = (*human.Channel)(nil)

func TestWorkflowRefusesInvalidStepsBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	ok := Step{Name: "a", Spec: wfSpec(), Prompt: Text("x")}
	for name, steps := range map[string][]Step{
		"no name":   {{Spec: wfSpec(), Prompt: Text("x")}},
		"private":   {{Name: "_x", Spec: wfSpec(), Prompt: Text("x")}},
		"label":     {{Name: "a#retry1", Spec: wfSpec(), Prompt: Text("x")}},
		"no prompt": {{Name: "a", Spec: wfSpec()}},
		"on_fail":   {{Name: "a", Spec: wfSpec(), Prompt: Text("x"), OnFail: "retry"}},
		"retries":   {{Name: "a", Spec: wfSpec(), Prompt: Text("x"), Retries: -1}},
		"duplicate": {ok, ok},
	} {
		if _, err := (&Workflow{Steps: steps}).Run(runCtx(t), rt, nil, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if f.count() != 0 {
		t.Errorf("%d CLI calls for invalid workflows", f.count())
	}
	if _, err := os.Stat(filepath.Join(f.runDir, LineageName)); !os.IsNotExist(err) {
		t.Error("an invalid workflow bumped the lineage")
	}
}

func TestStepLabels(t *testing.T) {
	plain := Step{Name: "x"}
	rejecting := Step{Name: "x", OnReject: func(context.Context, StepResult, *Ctx) (string, error) { return "", nil }}
	for _, tc := range []struct {
		s       Step
		attempt int
		want    string
	}{
		{plain, 0, "x"}, {plain, 1, "x#retry1"}, {plain, 2, "x#retry2"},
		{rejecting, 0, "x"}, {rejecting, 1, "x#round2"}, {rejecting, 2, "x#round3"},
	} {
		if got := tc.s.Label(tc.attempt); got != tc.want {
			t.Errorf("Label(%d) = %q, want %q", tc.attempt, got, tc.want)
		}
	}
}

func TestWorkflowCallbacksHonourTheContextAndTheirErrorsStopTheRun(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime()
	ctx, cancel := context.WithCancel(context.Background())
	wf := &Workflow{NoContinuity: true, Steps: []Step{{Name: "a", Spec: wfSpec(), Prompt: Text("x"),
		When: func(ctx context.Context, _ *Ctx) (bool, error) {
			cancel() // a human gives up while When waits
			<-ctx.Done()
			return false, ctx.Err()
		}}}}
	if _, err := wf.Run(ctx, rt, nil, nil); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "When") {
		t.Errorf("err = %v; want When's cancellation", err)
	}
	boom := errors.New("the judge's disk is full")
	wf = &Workflow{NoContinuity: true, Steps: []Step{
		{Name: "a", Spec: wfSpec(), Prompt: Text("x"), Retries: 2,
			Gate: func(context.Context, StepResult, *Ctx) (bool, error) { return false, boom }},
		{Name: "b", Spec: wfSpec(), Prompt: Text("y")},
	}}
	c, err := wf.Run(runCtx(t), rt, nil, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "gate") {
		t.Errorf("err = %v; want the gate's error", err)
	}
	if f.count() != 1 {
		t.Errorf("%d CLI calls; a gate's error is no reason to retry", f.count())
	}
	if _, ok := c.Result("a"); !ok {
		t.Error("the step that ran is not recorded")
	}
}

func TestCtxReportsAbsenceAndSurvivesForeignValues(t *testing.T) {
	t.Parallel()
	var c Ctx // the zero value is usable
	if _, err := c.Output("clarify"); !errors.Is(err, ErrNoOutput) || !strings.Contains(err.Error(), "clarify") {
		t.Errorf("Output of a missing step = %v", err)
	}
	c.Set("clarify", "")
	if v, err := c.Output("clarify"); err != nil || v != "" {
		t.Errorf("an empty output is a value: %q, %v", v, err)
	}
	c.Set("n", 3)
	if _, err := c.Output("n"); err == nil {
		t.Error("a non-string value read as an output")
	}
	c.Set(KeySessions, "not a map") // a careless callback
	c.Set(KeyResults, 7)
	c.setSession("a", "s1")
	c.setResult("a", StepResult{Step: "a"})
	if sid, ok := c.Session("a"); !ok || sid != "s1" {
		t.Errorf("Session = %q, %v", sid, ok)
	}
	if r, ok := c.Result("a"); !ok || r.Step != "a" {
		t.Errorf("Result = %+v, %v", r, ok)
	}
	if _, ok := c.FailedAt(); ok {
		t.Error("FailedAt on a fresh ctx")
	}
	if c.Woke() != 0 || c.Runtime() != nil || c.Lineage() != nil || c.OnEvent() != nil {
		t.Error("accessors of absent keys are not zero")
	}
}

func ExampleWorkflow() {
	terse := AgentSpec{Name: "terse", Instructions: "Answer in one line.", AllowedTools: []string{"Read", "Glob"}, MaxTurns: 4}
	wf := &Workflow{Steps: []Step{
		// A new session that sees only its prompt.
		{Name: "word", Spec: terse, Prompt: Text("Read seed.txt and answer only the word in it.")},
		// The previous step's output injected into the prompt: a step that
		// wrote none (skipped, failed) is an error, not an empty string.
		{Name: "sentence", Spec: terse, Prompt: func(c *Ctx) (string, error) {
			w, err := c.Output("word")
			return "Write a five-word sentence with " + w + ".", err
		}},
	}}
	rt, err := New(".", WithRunDir("runs"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	c, err := wf.Run(context.Background(), rt, nil, func(s Step, r StepResult) {
		fmt.Printf("%s ok=%v $%.4f\n", s.Name, r.OK, r.CostUSD)
	})
	switch at, failed := c.FailedAt(); {
	case err != nil:
		fmt.Println("could not go on:", err)
	case failed:
		fmt.Println("failed at", at)
	default:
		v, _ := c.Output("sentence")
		fmt.Println(v, "· wake", c.Woke())
	}
}

func TestFakeWorkflowSaysWhenItsWorkbenchIsNotTheRuntimes(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime(WithLanguage(English))
	var log eventLog
	wf := &Workflow{NoContinuity: true, Workbench: workbench.At(f.ws, false), Steps: []Step{{Name: "one", Spec: wfSpec(), Prompt: Text("x")}}}
	if _, err := wf.Run(runCtx(t), rt, log.add, nil); err != nil {
		t.Fatal(err)
	}
	if evs := workbenchNotices(&log); len(evs) != 1 || !strings.Contains(evs[0].Text, "WithWorkbench") {
		t.Errorf("workbench notices = %v", evs)
	}
	same := f.runtime(WithWorkbench(workbench.At(f.ws, false)))
	var quiet eventLog
	if _, err := wf.Run(runCtx(t), same, quiet.add, nil); err != nil {
		t.Fatal(err)
	}
	if evs := workbenchNotices(&quiet); len(evs) != 0 {
		t.Errorf("a shared workbench was reported: %v", evs)
	}
}

func workbenchNotices(l *eventLog) []Event {
	var out []Event
	for _, e := range l.of(event.System, "") {
		if e.Str("workbench") != "" {
			out = append(out, e)
		}
	}
	return out
}

// One setting on the Runtime reaches everything it runs: a ClarifyStep,
// a role and a channel given no language take the Chinese Runtime's (step
// names, brief block, rule text, channel texts), and Ctx.Output("clarify")
// finds the step under its Chinese name.
func TestFakeWorkflowStepsWithoutALanguageFollowTheRuntime(t *testing.T) {
	t.Parallel()
	f := newFakeFlow(t)
	rt := f.runtime() // Chinese
	brief := filepath.Join(f.ws, "brief.md")
	if err := os.WriteFile(brief, []byte("## Goal\ng\n## Acceptance criteria\na\n## Boundaries\nb\n## Unknowns and assumptions\nu\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ch := human.New()
	wf := &Workflow{NoContinuity: true, Channel: ch, Steps: []Step{
		ClarifyStep(ch, brief, Text("x"), ClarifyOptions{}),
		{Name: "use", Spec: Judge("j", nil), Prompt: func(c *Ctx) (string, error) {
			b, err := c.Output("clarify")
			return "brief: " + b, err
		}},
	}}
	if wf.Steps[0].Name != "clarify" {
		t.Fatalf("built name %q: the zero Lang is English until a Runtime runs it", wf.Steps[0].Name)
	}
	c, err := wf.Run(runCtx(t), rt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("确认需求"); !ok {
		t.Errorf("the clarify step did not run under its Chinese name: %v", c.Keys())
	}
	if ch.Lang() != Chinese || ch.Texts() != human.ChineseTexts {
		t.Errorf("the channel speaks %q", ch.Lang())
	}
	call := f.call(1)
	if !strings.Contains(call.Prompt, "brief: ## 目标") {
		t.Errorf("the prompt did not get the Chinese brief block through Output(\"clarify\"): %q", call.Prompt)
	}
	if args := strings.Join(call.Args, "\n"); !strings.Contains(args, strings.TrimSpace(PromptsFor(Chinese).JudgeRules)[:40]) {
		t.Errorf("the judge's rules are not the Chinese ones: %.300s", args)
	}
	if wf.Steps[0].Name != "clarify" {
		t.Error("Run changed the workflow's steps")
	}
}

func TestCtxOutputFindsStarterStepsInEitherLanguage(t *testing.T) {
	c := NewCtx()
	c.Set("确认需求", "zh brief")
	c.Set("goal", "en goal")
	for name, want := range map[string]string{"clarify": "zh brief", "确认需求": "zh brief", "设定目标": "en goal", "goal": "en goal"} {
		if got, err := c.Output(name); err != nil || got != want {
			t.Errorf("Output(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := c.Output("work"); !errors.Is(err, ErrNoOutput) {
		t.Errorf("Output(work) with neither name set: %v", err)
	}
}

// structuredCall is what the driver read from one scripted call.
type structuredCall struct {
	calls   []*claude.ToolUseBlock // the StructuredOutput calls, in order
	results []*claude.ToolResultBlock
	texts   []string
	result  *claude.ResultMessage
	err     error
}

// queryScripted runs one prompt on the scripted CLI with replies as its
// only rule's replies, with --json-schema when schema is set.
func queryScripted(t *testing.T, schema string, reply string) structuredCall {
	t.Helper()
	f := newFakeFlow(t)
	b, err := json.Marshal([]fakeRule{{Match: "SCENARIO", Replies: []string{reply}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.calls, "replies.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts := claude.Options{CLIPath: exe, Cwd: f.ws, SkipVersionCheck: true,
		BaseEnv: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "FLOWER_FAKE_CLI=workflow", "FLOWER_FAKE_DIR=" + f.calls}}
	if schema != "" {
		opts.JSONSchema = json.RawMessage(schema)
	}
	var got structuredCall
	for m, err := range claude.Query(runCtx(t), "SCENARIO judge", opts) {
		if err != nil {
			got.err = err
			continue
		}
		switch m := m.(type) {
		case *claude.AssistantMessage:
			for _, b := range m.Content {
				switch b := b.(type) {
				case *claude.ToolUseBlock:
					if b.Name == "StructuredOutput" {
						got.calls = append(got.calls, b)
					}
				case *claude.TextBlock:
					got.texts = append(got.texts, b.Text)
				}
			}
		case *claude.UserMessage:
			for _, b := range m.Content {
				if b, ok := b.(*claude.ToolResultBlock); ok {
					got.results = append(got.results, b)
				}
			}
		case *claude.ResultMessage:
			got.result = m
		}
	}
	if got.result == nil {
		t.Fatalf("no result (err %v)", got.err)
	}
	return got
}

func TestFakeWorkflowCLIAnswersUnderJSONSchemaAsTheRealCLI(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object"}`
	verdict := map[string]any{"conclusion": "not_yet", "items": []any{map[string]any{"id": "c1", "status": "failed"}}}
	other := map[string]any{"conclusion": "achieved", "items": []any{}}
	compact := func(v any) string { return string(compactObject(mustJSON(v))) }

	t.Run("an object is the structured output", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, schema, structuredReply(verdict))
		r := got.result
		if r.IsError || r.Subtype != "success" || string(r.StructuredOutput) != compact(verdict) || r.Result != compact(verdict) {
			t.Errorf("result: %s is_error %v structured_output %s text %q; want the object in both", r.Subtype, r.IsError, r.StructuredOutput, r.Result)
		}
		if len(got.calls) != 1 || string(got.calls[0].Input) != compact(verdict) || len(got.results) != 1 || got.results[0].IsError ||
			got.results[0].ToolUseID != got.calls[0].ID {
			t.Errorf("calls %v, results %v; want one accepted StructuredOutput call", got.calls, got.results)
		}
	})
	t.Run("text ends without structured output", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, schema, "## Verdict\nAchieved")
		r := got.result
		if r.IsError || r.Subtype != "success" || r.StructuredOutput != nil || r.Result != "## Verdict\nAchieved" || len(got.calls) != 0 {
			t.Errorf("result: %s is_error %v structured_output %s text %q, %d calls", r.Subtype, r.IsError, r.StructuredOutput, r.Result, len(got.calls))
		}
	})
	t.Run("two outputs in one turn: both shown, the last kept", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, schema, twoOutputsReply(verdict, other))
		if len(got.calls) != 2 || string(got.calls[0].Input) != compact(verdict) || string(got.calls[1].Input) != compact(other) {
			t.Errorf("calls = %v; want both", got.calls)
		}
		if string(got.result.StructuredOutput) != compact(other) || got.result.IsError {
			t.Errorf("structured_output = %s, want the second", got.result.StructuredOutput)
		}
	})
	t.Run("a reply cut off", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, schema, cutOffReply(verdict))
		whole := compact(verdict)
		r := got.result
		if r.StructuredOutput != nil || r.IsError || r.Result != whole[:len(whole)/2] || json.Valid([]byte(r.Result)) {
			t.Errorf("result: structured_output %s is_error %v text %q; want half of %s", r.StructuredOutput, r.IsError, r.Result, whole)
		}
	})
	t.Run("an empty reply", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, schema, replyEmpty)
		r := got.result
		if r.StructuredOutput != nil || r.IsError || r.Result != "" || len(got.texts)+len(got.calls) != 0 {
			t.Errorf("result: structured_output %s is_error %v text %q, texts %q calls %d; want nothing", r.StructuredOutput, r.IsError, r.Result, got.texts, len(got.calls))
		}
	})
	t.Run("rejected by the schema on every attempt", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, schema, rejectedReply(map[string]any{"conclusion": "maybe"}))
		r := got.result
		if !r.IsError || r.Subtype != "error_max_structured_output_retries" || r.StructuredOutput != nil || len(r.Errors) != 1 {
			t.Errorf("result: %s is_error %v structured_output %s errors %q", r.Subtype, r.IsError, r.StructuredOutput, r.Errors)
		}
		if len(got.results) != 1 || !got.results[0].IsError {
			t.Errorf("tool results = %v; want the CLI's refusal", got.results)
		}
		var re *claude.ResultError
		if !errors.As(got.err, &re) || re.Result.Subtype != "error_max_structured_output_retries" {
			t.Errorf("err = %v; want the result's error, as the real CLI exits 1", got.err)
		}
	})
	t.Run("without --json-schema an object stays text", func(t *testing.T) {
		t.Parallel()
		got := queryScripted(t, "", structuredReply(verdict))
		if got.result.StructuredOutput != nil || got.result.Result != mustJSON(verdict) || len(got.calls) != 0 {
			t.Errorf("result: structured_output %s text %q, %d calls", got.result.StructuredOutput, got.result.Result, len(got.calls))
		}
	})
}
