package flower

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/guard"
)

// TestLoopPolicy compiles specs with each loop policy and plays four
// identical Read calls with identical results on the main thread and in a
// worker through the hooks BuildOptions installs: the 4th is refused where
// the policy watches, and OnLoop hears of it.
func TestLoopPolicy(t *testing.T) {
	cases := []struct {
		name         string
		policy       LoopPolicy
		main, worker bool // the 4th call refused
	}{
		{"the zero value watches every thread", LoopPolicy{}, true, true},
		{"WorkersOnly leaves the main thread alone", LoopPolicy{WorkersOnly: true}, false, true},
		{"Off installs nothing", LoopPolicy{Off: true}, false, false},
		{"Repeats -1 and Cycles -1 check nothing", LoopPolicy{Repeats: -1, Cycles: -1}, false, false},
		{"Repeats 5 lets four through", LoopPolicy{Repeats: 5}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var heard []string
			spec := Coordinator("lead", "", map[string]claude.AgentDefinition{"coder": Worker("codes", "code")})
			spec.Loop = c.policy
			o := build(t, spec, BuildConfig{Lang: English, OnLoop: func(agent, tool string, count int) {
				mu.Lock()
				heard = append(heard, fmt.Sprintf("%s/%s/%d", agent, tool, count))
				mu.Unlock()
			}})
			for _, agent := range []string{"", "agent-1"} {
				var refused []string
				for i := range 4 {
					in := toolCall(agent, "Read", map[string]any{"file_path": "/w/same.txt"})
					in.ToolUseID = fmt.Sprintf("%s-%d", agent, i)
					refused = denials(answers(t, o.Hooks, claude.PreToolUse, in))
					if len(refused) > 0 {
						break
					}
					in.ToolResponse = []byte(`{"type":"text","file":{"content":"same"}}`)
					answers(t, o.Hooks, claude.PostToolUse, in)
				}
				want := map[string]bool{"": c.main, "agent-1": c.worker}[agent]
				if got := len(refused) == 1 && refused[0] == fmt.Sprintf(guard.EnglishTexts.LoopRepeat, "Read", 3); got != want {
					t.Errorf("thread %q: 4th call refused %v (%q), want %v", agent, got, refused, want)
				}
			}
			var wantHeard []string
			if c.main {
				wantHeard = append(wantHeard, "/Read/4")
			}
			if c.worker {
				wantHeard = append(wantHeard, "agent-1/Read/4")
			}
			if !slices.Equal(heard, wantHeard) {
				t.Errorf("OnLoop heard %v, want %v", heard, wantHeard)
			}
		})
	}
}

// TestLoopEventText: the runtime's Loop event names the thread, the tool
// and the count in the run's language.
func TestLoopEventText(t *testing.T) {
	for _, lang := range []Lang{Chinese, English} {
		s := &stepRun{rt: &Runtime{lang: lang}, step: "work"}
		s.noteLoop("a1b2", "Bash", 4)
		s.noteLoop("", "Read", 7)
		s.loops.mu.Lock()
		evs := slices.Clone(s.loops.evs)
		s.loops.mu.Unlock()
		if len(evs) != 2 {
			t.Fatalf("%s: %d events queued, want 2", lang, len(evs))
		}
		w, m := evs[0], evs[1]
		if w.Kind != "loop" || w.Tool != "Bash" || w.Int("count") != 4 || w.Str("agent_id") != "a1b2" || !w.Subagent() || w.Str("step") != "work" {
			t.Errorf("%s: worker event %+v", lang, w)
		}
		if !strings.Contains(w.Text, "worker a1b2") || !strings.Contains(w.Text, "Bash") || !strings.Contains(w.Text, "4") {
			t.Errorf("%s: worker event text %q", lang, w.Text)
		}
		if m.Subagent() || m.Str("agent_id") != "" || !strings.HasPrefix(m.Text, "work ") {
			t.Errorf("%s: main-thread event %+v", lang, m)
		}
	}
}

func TestLoopGuardNeverCountsTheInbox(t *testing.T) {
	spec := Coordinator("lead", "", map[string]claude.AgentDefinition{"coder": Worker("codes", "code")}, WithChannel(fakeChannel{}))
	o := build(t, spec, BuildConfig{})
	for i := range 6 {
		in := toolCall("", InboxTool, map[string]any{})
		in.ToolUseID = fmt.Sprintf("inbox-%d", i)
		if d := denials(answers(t, o.Hooks, claude.PreToolUse, in)); len(d) > 0 {
			t.Fatalf("inbox look %d refused: %q", i+1, d)
		}
		in.HookEventName = claude.PostToolUse
		in.ToolResponse = json.RawMessage(`"收件箱是空的。继续干活,不用理会。"`)
		answers(t, o.Hooks, claude.PostToolUse, in)
	}
}

// The loop guard exempts the waiting tools the CLI offers (its init
// message's list, BuildConfig.OfferedTools), not a list of names fixed in
// advance: a waiting tool the CLI does not offer is counted like any other.
func TestLoopGuardExemptsTheWaitingToolsTheCLIOffers(t *testing.T) {
	for _, tc := range []struct {
		offered []string
		refused bool
	}{
		{[]string{"Agent", "Bash", "TaskOutput"}, false},
		{[]string{"Agent", "Bash"}, true},
	} {
		spec := Coordinator("lead", "", map[string]claude.AgentDefinition{"coder": Worker("codes", "code")})
		o := build(t, spec, BuildConfig{OfferedTools: func() []string { return tc.offered }})
		refused := false
		for i := range 5 {
			in := toolCall("agent-1", "TaskOutput", map[string]any{"task_id": "b1"})
			in.ToolUseID = fmt.Sprintf("poll-%d", i)
			if d := denials(answers(t, o.Hooks, claude.PreToolUse, in)); len(d) > 0 {
				refused = true
				break
			}
			in.HookEventName = claude.PostToolUse
			in.ToolResponse = json.RawMessage(`{"status":"running"}`)
			answers(t, o.Hooks, claude.PostToolUse, in)
		}
		if refused != tc.refused {
			t.Errorf("offered %v: a 5th TaskOutput poll refused %v, want %v", tc.offered, refused, tc.refused)
		}
	}
}
