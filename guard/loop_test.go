package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// loopCall is one tool call of a scripted thread: what it asks and what
// comes back (a PostToolUseFailure with the result as error when failed).
type loopCall struct {
	agent, tool, input, result string
	failed                     bool
}

// loopRun plays calls through the three hooks of a loop guard, one after
// the other as the CLI does, and returns the indexes of the refused calls
// with their texts. A refused call gets no PostToolUse, as in the CLI.
func loopRun(t *testing.T, hooks map[string][]claude.HookMatcher, calls []loopCall) ([]int, []string) {
	t.Helper()
	var refused []int
	var texts []string
	for i, c := range calls {
		id := fmt.Sprintf("toolu_%d", i)
		in := &claude.HookInput{HookEventName: claude.PreToolUse, AgentID: c.agent, ToolName: c.tool,
			ToolInput: json.RawMessage(c.input), ToolUseID: id}
		if reason, denied := denial(call(t, hooks[claude.PreToolUse][0], in)); denied {
			refused = append(refused, i)
			texts = append(texts, reason)
			continue
		}
		post := &claude.HookInput{HookEventName: claude.PostToolUse, AgentID: c.agent, ToolName: c.tool,
			ToolInput: json.RawMessage(c.input), ToolUseID: id, ToolResponse: json.RawMessage(c.result)}
		event := claude.PostToolUse
		if c.failed {
			post.HookEventName, post.ToolResponse, post.Error = claude.PostToolUseFailure, nil, c.result
			event = claude.PostToolUseFailure
		}
		if out := call(t, hooks[event][0], post); out != nil {
			t.Fatalf("call %d: the %s hook answered %+v; it must only record", i, event, out)
		}
	}
	return refused, texts
}

// times repeats c n times.
func times(n int, c ...loopCall) []loopCall {
	var out []loopCall
	for range n {
		out = append(out, c...)
	}
	return out
}

func TestLoopRefusesRepeatsAndCycles(t *testing.T) {
	const (
		catF  = `{"command":"cat f"}`
		catG  = `{"command":"cat g"}`
		same  = `{"stdout":"hello","stderr":"","interrupted":false}`
		other = `{"stdout":"changed","stderr":"","interrupted":false}`
	)
	w := func(input, result string) loopCall {
		return loopCall{agent: "w1", tool: "Bash", input: input, result: result}
	}
	a, b := w(catF, same), w(catG, other)
	tests := []struct {
		name  string
		loop  Loop
		calls []loopCall
		want  []int
	}{
		{"three identical calls pass, the fourth and fifth are refused", Loop{}, times(5, a), []int{3, 4}},
		{"a different result resets the count", Loop{},
			[]loopCall{a, a, w(catF, other), w(catF, other), w(catF, other), w(catF, other)}, []int{5}},
		{"results that keep changing are no loop", Loop{},
			[]loopCall{a, w(catF, other), a, w(catF, other), a, w(catF, other)}, nil},
		{"a different input in between resets the count", Loop{}, []loopCall{a, a, b, a, a}, nil},
		{"the input is compared canonically (key order, spacing)", Loop{},
			[]loopCall{w(`{"command":"cat f","description":"x"}`, same), w(`{"description":"x","command":"cat f"}`, same),
				w(`{ "command" : "cat f", "description" : "x" }`, same), w(`{"description":"x","command":"cat f"}`, same)}, []int{3}},
		{"the same input to another tool is another call", Loop{},
			[]loopCall{a, a, a, {agent: "w1", tool: "Read", input: catF, result: same}}, nil},
		{"an A-B cycle of three rounds refuses the next A", Loop{}, append(times(3, a, b), a, b), []int{6}},
		{"a cycle with one changed result is no loop", Loop{}, []loopCall{a, b, a, w(catG, same), a, b, a}, nil},
		{"two rounds of a cycle pass", Loop{}, append(times(2, a, b), a, b), nil},
		{"Cycles 2 refuses after two rounds", Loop{Cycles: 2}, append(times(2, a, b), a), []int{4}},
		{"Repeats 1 refuses the second identical call", Loop{Repeats: 1}, times(3, a), []int{1, 2}},
		{"negative thresholds turn the checks off", Loop{Repeats: -1, Cycles: -1}, append(times(5, a), times(4, a, b)...), nil},
		{"identical failures count like identical results", Loop{},
			times(4, loopCall{agent: "w1", tool: "Read", input: catF, result: "File does not exist.", failed: true}), []int{3}},
		{"a failure and a success with the same text differ", Loop{},
			[]loopCall{a, a, {agent: "w1", tool: "Bash", input: catF, result: same, failed: true}, a}, nil},
		{"threads are counted apart", Loop{},
			[]loopCall{a, {agent: "w2", tool: "Bash", input: catF, result: same}, a, {agent: "w2", tool: "Bash", input: catF, result: same}, a, a},
			[]int{5}},
		{"the main thread is not watched by default", Loop{}, times(5, loopCall{tool: "Bash", input: catF, result: same}), nil},
		{"MainThread watches it", Loop{MainThread: true}, times(5, loopCall{tool: "Bash", input: catF, result: same}), []int{3, 4}},
		{"waiting tools are exempt and break nothing", Loop{},
			[]loopCall{a, {agent: "w1", tool: "TaskOutput", input: `{"task_id":"b1"}`, result: same}, a, a,
				{agent: "w1", tool: "TaskOutput", input: `{"task_id":"b1"}`, result: same},
				{agent: "w1", tool: "TaskOutput", input: `{"task_id":"b1"}`, result: same},
				{agent: "w1", tool: "TaskOutput", input: `{"task_id":"b1"}`, result: same}, a}, []int{7}},
		{"a waiting tool the CLI offers is exempt", Loop{Offered: func() []string { return []string{"Bash", "TaskOutput"} }},
			times(5, loopCall{agent: "w1", tool: "TaskOutput", input: `{"task_id":"b1"}`, result: same}), nil},
		{"a waiting tool's name is not enough when the CLI does not offer it", Loop{Offered: func() []string { return []string{"Bash", "Read"} }},
			times(4, loopCall{agent: "w1", tool: "TaskOutput", input: `{"task_id":"b1"}`, result: same}), []int{3}},
		{"an explicitly exempt tool is never counted", Loop{Exempt: []string{"Bash"}}, times(6, a), nil},
		// The evasions: free text changed on every call, and cycles longer
		// than two calls.
		{"a description changed on every call is still the same call", Loop{},
			[]loopCall{w(`{"command":"cat f","description":"look"}`, same), w(`{"command":"cat f","description":"look again"}`, same),
				w(`{"command":"cat f","description":"once more"}`, same), w(`{"command":"cat f","description":"really"}`, same)}, []int{3}},
		{"an Agent dispatch with a new description is the same dispatch", Loop{MainThread: true},
			[]loopCall{
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it","description":"try 1"}`, result: `{"content":[{"type":"text","text":"cannot"}]}`},
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it","description":"try 2"}`, result: `{"content":[{"type":"text","text":"cannot"}]}`},
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it","description":"try 3"}`, result: `{"content":[{"type":"text","text":"cannot"}]}`},
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it","description":"try 4"}`, result: `{}`},
			}, []int{3}},
		{"a timeout changed on every call is still the same command", Loop{},
			[]loopCall{w(`{"command":"cat f","timeout":1000}`, same), w(`{"command":"cat f","timeout":2000}`, same),
				w(`{"command":"cat f","timeout":3000}`, same), w(`{"command":"cat f","timeout":4000}`, same)}, []int{3}},
		{"a three-call cycle of three rounds refuses the next call", Loop{}, append(times(3, a, b, w(`{"command":"cat h"}`, same)), a), []int{9}},
		{"a four-call cycle of three rounds refuses the next call", Loop{},
			append(times(3, a, b, w(`{"command":"cat h"}`, same), w(`{"command":"cat i"}`, same)), a), []int{12}},
		{"a five-call cycle is not recognised", Loop{},
			append(times(3, a, b, w(`{"command":"cat h"}`, same), w(`{"command":"cat i"}`, same), w(`{"command":"cat j"}`, same)), a), nil},
		{"an Agent report is compared without its id, duration and token counts", Loop{MainThread: true},
			[]loopCall{
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it"}`, result: `{"status":"completed","content":[{"type":"text","text":"cannot"}],"agentId":"a1","totalDurationMs":1200,"totalTokens":900,"totalToolUseCount":3,"usage":{"input_tokens":5}}`},
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it"}`, result: `{"status":"completed","content":[{"type":"text","text":"cannot"}],"agentId":"a2","totalDurationMs":1500,"totalTokens":950,"totalToolUseCount":4,"usage":{"input_tokens":6}}`},
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it"}`, result: `{"status":"completed","content":[{"type":"text","text":"cannot"}],"agentId":"a3","totalDurationMs":900,"totalTokens":990,"totalToolUseCount":2,"usage":{"input_tokens":7}}`},
				{tool: "Agent", input: `{"subagent_type":"coder","prompt":"fix it"}`, result: `{}`},
			}, []int{3}},
		{"a different Agent report is another result", Loop{MainThread: true},
			[]loopCall{
				{tool: "Agent", input: `{"prompt":"fix it"}`, result: `{"content":[{"type":"text","text":"cannot"}],"agentId":"a1"}`},
				{tool: "Agent", input: `{"prompt":"fix it"}`, result: `{"content":[{"type":"text","text":"cannot"}],"agentId":"a2"}`},
				{tool: "Agent", input: `{"prompt":"fix it"}`, result: `{"content":[{"type":"text","text":"fixed"}],"agentId":"a3"}`},
				{tool: "Agent", input: `{"prompt":"fix it"}`, result: `{}`},
			}, nil},
		{"an unreadable input is compared by its bytes", Loop{},
			times(4, loopCall{agent: "w1", tool: "Bash", input: `{not json`, result: same}), []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := loopRun(t, LoopHooks(tt.loop), tt.calls)
			if !slices.Equal(got, tt.want) {
				t.Errorf("refused calls %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLoopTellsTheModelWhatItIsDoingAndEscalates(t *testing.T) {
	type report struct {
		agent, tool string
		count       int
	}
	var mu sync.Mutex
	var reports []report
	onLoop := func(agent, tool string, count int) {
		mu.Lock()
		reports = append(reports, report{agent, tool, count})
		mu.Unlock()
	}
	a := loopCall{agent: "w1", tool: "Bash", input: `{"command":"cat f"}`, result: `{"stdout":"x"}`}
	b := loopCall{agent: "w1", tool: "Read", input: `{"file_path":"g"}`, result: `"y"`}
	for _, tt := range []struct {
		texts Texts
		calls []loopCall
		want  []string
		rep   []report
	}{
		{EnglishTexts, times(5, a),
			[]string{fmt.Sprintf(EnglishTexts.LoopRepeat, "Bash", 3), fmt.Sprintf(EnglishTexts.LoopRepeat, "Bash", 3)},
			[]report{{"w1", "Bash", 4}, {"w1", "Bash", 5}}},
		{Texts{}, times(4, a), []string{fmt.Sprintf(ChineseTexts.LoopRepeat, "Bash", 3)}, []report{{"w1", "Bash", 4}}},
		{EnglishTexts, append(times(3, a, b), a, a),
			[]string{fmt.Sprintf(EnglishTexts.LoopCycle, "Bash", "Read", 3), fmt.Sprintf(EnglishTexts.LoopCycle, "Bash", "Read", 3)},
			[]report{{"w1", "Bash", 7}, {"w1", "Bash", 8}}},
	} {
		reports = nil
		_, texts := loopRun(t, tt.texts.Loop(Loop{OnLoop: onLoop}), tt.calls)
		if !slices.Equal(texts, tt.want) {
			t.Errorf("refusals %q, want %q", texts, tt.want)
		}
		if !slices.Equal(reports, tt.rep) {
			t.Errorf("OnLoop got %v, want %v", reports, tt.rep)
		}
	}
	if !strings.Contains(EnglishTexts.LoopRepeat, "refused") || !strings.Contains(ChineseTexts.LoopRepeat, "拒绝") {
		t.Error("the refusal texts must say the call was refused")
	}
}

// A refused call (by this guard or another) and a call whose result never
// came are not part of the history: they neither count nor break a loop.
func TestLoopCountsOnlyCompletedCalls(t *testing.T) {
	g := Texts{}.loopGuard(Loop{})
	hooks := g.hooks()
	pre := hooks[claude.PreToolUse][0]
	post := hooks[claude.PostToolUse][0]
	in := func(event, id string) *claude.HookInput {
		return &claude.HookInput{HookEventName: event, AgentID: "w", ToolName: "Bash", ToolUseID: id,
			ToolInput: json.RawMessage(`{"command":"ls"}`), ToolResponse: json.RawMessage(`{"stdout":"a"}`)}
	}
	// Calls another guard refused: PreToolUse only, many of them.
	for i := range maxPending + 10 {
		if _, denied := denial(call(t, pre, in(claude.PreToolUse, fmt.Sprint("refused", i)))); denied {
			t.Fatalf("call %d refused with no completed call before it", i)
		}
	}
	// Parallel calls: three PreToolUse first, their results in another order.
	for _, id := range []string{"p1", "p2", "p3"} {
		call(t, pre, in(claude.PreToolUse, id))
	}
	for _, id := range []string{"p3", "p1", "p2"} {
		call(t, post, in(claude.PostToolUse, id))
	}
	if _, denied := denial(call(t, pre, in(claude.PreToolUse, "p4"))); !denied {
		t.Error("a fourth identical call after three identical results passed")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) > maxPending || len(g.order) != len(g.pending) {
		t.Errorf("%d calls pending (%d in order), want at most %d", len(g.pending), len(g.order), maxPending)
	}
}

func TestLoopThreadsConcurrently(t *testing.T) {
	var mu sync.Mutex
	counts := map[string][]int{}
	hooks := LoopHooks(Loop{OnLoop: func(agent, _ string, count int) {
		mu.Lock()
		counts[agent] = append(counts[agent], count)
		mu.Unlock()
	}})
	const workers = 16
	var wg sync.WaitGroup
	refused := make([][]int, workers)
	for w := range workers {
		wg.Go(func() {
			agent := fmt.Sprint("w", w)
			for i := range 6 {
				id := fmt.Sprintf("%s-%d", agent, i)
				in := &claude.HookInput{HookEventName: claude.PreToolUse, AgentID: agent, ToolName: "Read", ToolUseID: id,
					ToolInput: json.RawMessage(`{"file_path":"same"}`)}
				out, err := hooks[claude.PreToolUse][0].Hooks[0](context.Background(), in)
				if err != nil {
					t.Error(err)
					return
				}
				if _, denied := denial(out); denied {
					refused[w] = append(refused[w], i)
					continue
				}
				in.HookEventName, in.ToolResponse = claude.PostToolUse, json.RawMessage(`"content"`)
				if _, err := hooks[claude.PostToolUse][0].Hooks[0](context.Background(), in); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		if !slices.Equal(refused[w], []int{3, 4, 5}) {
			t.Errorf("worker %d: refused calls %v, want [3 4 5]", w, refused[w])
		}
		if got := counts[fmt.Sprint("w", w)]; !slices.Equal(got, []int{4, 5, 6}) {
			t.Errorf("worker %d: OnLoop counts %v, want [4 5 6]", w, got)
		}
	}
}
