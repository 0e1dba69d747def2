package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
)

// heartbeatAfter is how long a run off a terminal may stay silent before a
// heartbeat line says it is alive (a log read later, a CI job that kills
// silent jobs).
var heartbeatAfter = 60 * time.Second

// Status follows a run's events and says, in one line, where it is: step
// and round, role, model, time, tokens, cost against the budget, context
// against the handoff threshold, and what runs now. On a terminal the line
// is the screen's status line, refreshed every second; off a terminal it
// is a heartbeat after every heartbeatAfter of silence.
type Status struct {
	lang  flower.Lang
	start time.Time

	mu                  sync.Mutex
	step                string
	round, rounds       int
	maxRounds           int
	role, model         string
	tokensIn, tokensOut int
	cost, budget        float64
	context, handoffAt  int
	// running are the tool calls (and dispatched workers) not yet
	// answered, by id, in the order they started.
	running []runningCall
	// waiting is a wait that is no tool call: for the human, a usage
	// limit, the network; since when.
	waiting      string
	waitingSince time.Time
	// heard is when the last event came: how long the model has been
	// silent.
	heard time.Time
}

type runningCall struct {
	id, label string
	since     time.Time
	// sub: a dispatched worker's call, which may run on after the main
	// thread's turn ended (a worker started in the background).
	sub bool
}

// NewStatus starts the clock; budget is the run's (0: none).
func NewStatus(lang flower.Lang, budget float64) *Status {
	return &Status{lang: lang, start: time.Now(), budget: budget, heard: time.Now()}
}

// Event updates the status; safe from any goroutine.
func (s *Status) Event(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heard = time.Now()
	sub := e.Subagent()
	switch e.Kind {
	case event.Step:
		s.step, s.round, s.rounds = e.Text, 1, max(1, e.Int("rounds"))
		if s.rounds > 1 {
			s.maxRounds = s.rounds
		}
		if b := e.Float("budget"); b > 0 {
			s.budget = b
		}
		if at := e.Int("handoff_at"); at > 0 {
			s.handoffAt = at
		}
		// The step's own role from its first moment: the last step's
		// stayed until the new session's init came (one step late).
		s.role = e.Str("role")
		s.running, s.waiting = nil, ""
	case event.Verdict:
		if e.Str("state") != "achieved" && e.Int("round") < e.Int("rounds") {
			s.round = e.Int("round") + 1
		}
	case event.System:
		if e.Text == "init" {
			if r := e.Str("role"); r != "" {
				s.role = r
			}
			if m := e.Str("model"); m != "" {
				s.model = m
			}
			s.running, s.waiting = nil, ""
		}
	case event.Text, event.Thinking:
		if m := e.Str("model"); m != "" && !sub {
			s.model = m
		}
		if c := e.Int("context"); c > 0 && !sub {
			s.context = c
		}
		s.clearWait()
	case event.ToolCall:
		s.clearWait()
		label, detail := e.Tool, e.Text
		if e.Tool == "Agent" || e.Tool == "Task" {
			in, _ := e.Payload["input"].(map[string]any)
			typ, _ := in["subagent_type"].(string)
			detail, _ = in["description"].(string)
			label = fmt.Sprintf(text(s.lang, "nowWorker"), typ)
		} else if e.Tool == human.AskTool {
			label = text(s.lang, "nowAsking")
		} else if sub {
			label = fmt.Sprintf(text(s.lang, "nowSubTool"), toolName(s.lang, e.Tool))
		} else {
			label = toolName(s.lang, e.Tool)
		}
		if t := firstLine(detail); t != "" && e.Tool != human.AskTool {
			label += " " + clipRunes(t, 40)
		}
		s.running = append(s.running, runningCall{id: e.Str("id"), label: label, since: e.Time, sub: sub})
	case event.ToolResult:
		id := e.Str("tool_use_id")
		for i, c := range s.running {
			if c.id == id {
				s.running = append(s.running[:i], s.running[i+1:]...)
				break
			}
		}
	case event.Result:
		if !sub {
			s.cost += e.Float("cost_usd")
			s.tokensIn += e.Int("tokens_in")
			s.tokensOut += e.Int("tokens_out")
			// The main thread's turn is over; a worker it started in the
			// background works on, and is what runs now.
			s.running = slices.DeleteFunc(s.running, func(c runningCall) bool { return !c.sub })
			s.waiting = ""
		}
	case event.Retry:
		switch e.Str("reason") {
		case "usage_limit":
			s.setWait(text(s.lang, "nowUsageLimit"))
		case "offline":
			s.setWait(text(s.lang, "nowOffline"))
		}
	case event.Ask:
		if e.Str("kind") == "mail" {
			return
		}
		if human.State(e.Str("state")) == human.Asked {
			s.setWait(text(s.lang, "nowHuman"))
		} else {
			s.clearWait()
		}
	}
}

func (s *Status) setWait(what string) { s.waiting, s.waitingSince = what, time.Now() }
func (s *Status) clearWait()          { s.waiting = "" }

// Rounds is the rounds of the last step that had more than one, 0 when
// none had.
func (s *Status) Rounds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRounds
}

// Line is the status line: "- work · round 1/3 · 1:23 · now: Bash go test
// (0:12) · coordinator · <model> · $0.1200 / $5.0000 · context 36.8K of
// 150.0K tokens (handoff) · tokens 12.0K in / 800 out". What is not known
// yet is left out.
func (s *Status) Line() string { return s.LineFor(0) }

// LineFor is Line fitted into cols columns (0: any): the parts at its end
// go first, so that where the run is and what runs now stay.
func (s *Status) LineFor(cols int) string {
	parts, now := s.parts()
	line := "- " + strings.Join(parts, " · ")
	// Where the run is, the clock and what runs now are never dropped.
	for cols > 0 && screen.Columns(line) > cols && len(parts) > 3 {
		parts = parts[:len(parts)-1]
		line = "- " + strings.Join(parts, " · ")
	}
	// What runs now gives up the end of its label, never its time (a
	// long command cut at the line's end took the time with it).
	if over := screen.Columns(line) - cols; cols > 0 && over > 0 && now >= 0 && now < len(parts) {
		p := parts[now]
		if i := strings.LastIndex(p, " ("); i > 0 && screen.Columns(p[:i])-over >= 8 {
			parts[now] = screen.Cut(p[:i], screen.Columns(p[:i])-over) + p[i:]
			line = "- " + strings.Join(parts, " · ")
		}
	}
	if cols > 0 {
		line = screen.Cut(line, cols)
	}
	return line
}

// parts are the status line's parts, and the index of what runs now
// (-1: nothing is said to run).
func (s *Status) parts() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := func(k string) string { return text(s.lang, k) }
	var parts []string
	if s.step != "" {
		step := s.step
		if s.rounds > 1 {
			step += " · " + fmt.Sprintf(t("roundOf"), s.round, s.rounds)
		}
		parts = append(parts, step)
	}
	parts = append(parts, clock(time.Since(s.start)))
	now := len(parts)
	switch {
	case s.waiting != "":
		parts = append(parts, t("now")+s.waiting+" ("+clock(time.Since(s.waitingSince))+")")
	case len(s.running) > 0:
		c := s.running[len(s.running)-1]
		parts = append(parts, t("now")+c.label+" ("+clock(time.Since(c.since))+")")
	case s.step != "":
		parts = append(parts, t("nowModel")+" ("+clock(time.Since(s.heard))+")")
	default:
		now = -1
	}
	if s.role != "" {
		parts = append(parts, s.role)
	}
	if s.model != "" {
		parts = append(parts, s.model)
	}
	if s.budget > 0 {
		parts = append(parts, flower.USD(s.cost)+" / "+flower.USD(s.budget))
	} else {
		parts = append(parts, flower.USD(s.cost))
	}
	if s.context > 0 {
		if s.handoffAt > 0 {
			parts = append(parts, fmt.Sprintf(t("contextOf"), Tokens(s.context), Tokens(s.handoffAt)))
		} else {
			parts = append(parts, fmt.Sprintf(t("context"), Tokens(s.context)))
		}
	}
	if s.tokensIn+s.tokensOut > 0 {
		parts = append(parts, fmt.Sprintf(t("tokensInOut"), Tokens(s.tokensIn), Tokens(s.tokensOut)))
	}
	return parts, now
}

// Show keeps the status visible until ctx ends: on a terminal the screen's
// status line, redrawn every second; off one a heartbeat line whenever the
// screen was silent for heartbeatAfter. It returns when ctx ends, the
// status line removed.
func (s *Status) Show(ctx context.Context, sc *screen.Screen) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	if sc.Terminal() {
		defer sc.SetStatus("")
		sc.SetStatus(s.LineFor(sc.Width() - 1))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if sc.Terminal() {
			sc.SetStatus(s.LineFor(sc.Width() - 1))
			continue
		}
		if sc.Quiet() >= heartbeatAfter {
			sc.Line(screen.Dim, fmt.Sprintf(text(s.lang, "heartbeat"), s.Line()))
		}
	}
}
