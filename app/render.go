package app

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
)

// Renderer turns events into screen lines. One renderer lives for the whole
// command, so the running total and the clock are the run's (the original
// made one per event and showed $0.00 and 0:00 on once).
type Renderer struct {
	ui      *UI
	verbose bool
	start   time.Time

	mu    sync.Mutex
	total float64
	ctx   int
	// shown are the questions whose asking is on the screen: one settled
	// at once (the input piped, an answer from flower reply) says its
	// question with its settlement.
	shown map[string]bool
	// cutting: flower interrupted the round and its resume has not
	// begun. A failed tool call then is one the interrupt cut, and the
	// CLI words it as a refusal to the model ("The user doesn't want to
	// proceed… STOP…"), and the round's result as a failure: neither is
	// the person's to read.
	cutting bool
	// open are the tool calls without a result yet; cut, those open when
	// the interrupt came. A background worker the interrupt stopped
	// reports its cut call when it will, maybe after the main thread's
	// next result has ended the cutting (ci: the words' turn answered
	// first on a loaded machine): it is shown as cut all the same.
	open, cut map[string]bool
}

// Interrupting says flower is interrupting the round (or not, when the
// runtime did not take it): until the round resumes, its cut calls and
// its end are shown as cut, not as the CLI words them.
func (r *Renderer) Interrupting(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cutting = on
	if !on {
		r.cut = nil
		return
	}
	for id := range r.open {
		if r.cut == nil {
			r.cut = map[string]bool{}
		}
		r.cut[id] = true
	}
}

// NewRenderer starts the clock.
func NewRenderer(ui *UI, verbose bool) *Renderer {
	return &Renderer{ui: ui, verbose: verbose, start: time.Now()}
}

// Elapsed is M:SS, or H:MM:SS past an hour, since the command started.
func (r *Renderer) Elapsed() string { return clock(time.Since(r.start)) }

func clock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// Tokens formats a token count as 36.8K.
func Tokens(n int) string { return flower.TokenCount(n) }

// Event renders one event; safe from any goroutine.
func (r *Renderer) Event(e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, t := r.ui.Screen, r.ui.T
	sub := e.Subagent()
	bar := "  "
	if sub {
		bar = "  | "
	}
	if c := e.Int("context"); c > 0 && !sub {
		r.ctx = c
	}
	switch e.Kind {
	case event.Text:
		if sub && !r.verbose {
			return
		}
		c := screen.Plain
		if sub {
			c = screen.Dim
		}
		s.Block(c, indent(bar, e.Text)...)
	case event.Thinking:
		if !sub {
			s.Block(screen.Dim, indent("  ~ ", e.Text)...)
		}
	case event.Prompt:
		if r.verbose {
			s.Block(screen.Dim, indent(bar+"> ", e.Text)...)
		}
	case event.ToolCall:
		if id := e.Str("id"); id != "" {
			if r.open == nil {
				r.open = map[string]bool{}
			}
			r.open[id] = true
		}
		if e.Tool == flower.StructuredOutputTool && !sub {
			// A judge's structured answer: flower says what it made of it
			// (the goal, the round's verdict), not the raw call.
			return
		}
		if e.Tool == "Agent" || e.Tool == "Task" {
			in, _ := e.Payload["input"].(map[string]any)
			typ, _ := in["subagent_type"].(string)
			desc, _ := in["description"].(string)
			s.Line(screen.Cyan, bar+fmt.Sprintf(t("dispatch"), typ, clipRunes(desc, 60)))
			return
		}
		s.Block(screen.Plain, toolCallLines(bar, toolName(r.ui.Lang, e.Tool), toolCallText(e), s.Width())...)
	case event.ToolResult:
		id := e.Str("tool_use_id")
		cut := r.cut[id]
		delete(r.open, id)
		delete(r.cut, id)
		if e.Bool("is_error") && (r.cutting || cut) {
			s.Line(screen.Yellow, bar+t("toolCut"))
		} else if e.Bool("is_error") {
			s.Line(screen.Red, bar+"x "+firstLine(e.Text))
		} else if r.verbose && e.Text != "" {
			s.Line(screen.Dim, bar+"  "+firstLine(e.Text))
		}
	case event.Result:
		if sub {
			return
		}
		cost := e.Float("cost_usd")
		r.total += cost
		if e.Bool("is_error") && r.cutting {
			// The interrupt ended the round: the runtime's next line
			// says it resumes.
		} else if e.Bool("is_error") {
			s.Line(screen.Red, "  "+fmt.Sprintf(t("failed"), firstLine(firstNonEmpty(e.Str("result"), e.Text))))
		} else {
			r.cutting = false
			s.Line(screen.Green, "  "+doneLine(t, e.Int("num_turns"), flower.USD(cost), r.Elapsed()))
		}
		r.status()
	case event.Error:
		s.Line(screen.Yellow, bar+"! "+firstLine(e.Text))
	case event.Retry, event.Reset:
		// Words given between turns start a turn while the background
		// workers the interrupt stopped still report their cut calls:
		// the main thread's next result ends the cutting then.
		if e.Str("reason") == "interrupt" && !e.Bool("between_turns") {
			r.cutting = false
		}
		s.Line(screen.Dim, "  ~ "+firstLine(e.Text))
	case event.Handoff:
		s.Line(screen.Cyan, "# "+firstLine(e.Text))
	case event.Task:
		if e.Str("goal_guard") != "" {
			// The goal guard's word to the person: a verdict that could
			// not pass, or a protected file put back. Wrapped, not cut:
			// the reason is the point.
			r.guardLine(e.Text)
		} else if r.verbose {
			s.Line(screen.Dim, "  # "+e.Str("kind"))
		}
	case event.Ask:
		r.ask(e)
	case event.Verdict:
		r.verdict(e)
	}
}

// toolCallShownLines is how many lines of a tool call's text (a Bash
// script) the screen shows; the rest is said to be there by "...".
const toolCallShownLines = 6

// toolCallText is what a tool call shows: a Bash call's whole command
// (the event's text is cut to a summary), else the event's text.
func toolCallText(e event.Event) string {
	if in, ok := e.Payload["input"].(map[string]any); ok && e.Tool == "Bash" {
		if c, ok := in["command"].(string); ok && c != "" {
			return c
		}
	}
	return e.Text
}

// toolCallLines are a tool call's screen lines: "* Tool" and the first line
// of its text, the next lines indented under the text (so a multi-line
// script still reads as this call's), each cut at cols (0: no cut) with
// an ellipsis, at most toolCallShownLines of them.
func toolCallLines(bar, tool, text string, cols int) []string {
	head := bar + "* " + tool + " "
	under := bar + strings.Repeat(" ", screen.Columns("* "+tool+" "))
	if screen.Columns(under) > cols/2 && cols > 0 {
		under = bar + "  "
	}
	src := strings.Split(strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), "\n")
	var lines []string
	for i, l := range src {
		if i == toolCallShownLines {
			lines = append(lines, under+"...")
			break
		}
		prefix := under
		if i == 0 {
			prefix = head
		}
		line := prefix + screen.Sanitize(l)
		if cols > 0 {
			line = screen.Cut(line, cols)
		}
		lines = append(lines, line)
	}
	return lines
}

// doneLine is a step's closing line: "Done, 1 turn", "Done, 2 turns".
func doneLine(t func(string) string, turns int, cost, elapsed string) string {
	if turns == 1 {
		return fmt.Sprintf(t("done1"), cost, elapsed)
	}
	return fmt.Sprintf(t("done"), turns, cost, elapsed)
}

// verdict is the goal guard's ruling, labelled with its round.
func (r *Renderer) verdict(e event.Event) {
	t := r.ui.T
	round, rounds := e.Int("round"), max(e.Int("round"), e.Int("rounds"))
	reason := firstLine(e.Text)
	if reason == "" {
		reason = t("noReasonGiven")
	}
	switch e.Str("state") {
	case "achieved":
		if n := e.Int("flags"); n > 0 {
			r.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(t("verdictNeedsLook"), round, rounds, n))
			return
		}
		if n := e.Int("except"); n > 0 {
			r.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(t("verdictAchievedExcept"), round, rounds, n))
			return
		}
		if items := e.Str("unmeasured"); items != "" {
			r.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(t("verdictAchievedUnmeasured"), round, rounds, items))
			return
		}
		r.ui.Screen.Line(screen.Green, "  "+fmt.Sprintf(t("verdictAchieved"), round, rounds))
	case "unreachable":
		r.ui.Screen.Line(screen.Red, "  "+fmt.Sprintf(t("verdictUnreachable"), round, rounds, reason))
	case "":
		r.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(t("verdictUnclear"), round, rounds))
	default:
		r.ui.Screen.Line(screen.Yellow, "  "+fmt.Sprintf(t("verdictNotYet"), round, rounds, reason))
	}
}

// guardLine writes a goal guard's message as "! " and its text, wrapped to
// the terminal's width with the following lines indented.
func (r *Renderer) guardLine(text string) {
	s := r.ui.Screen
	cols := s.Width() - 2
	if !s.Terminal() || cols <= 0 {
		cols = 0
	}
	lines := screen.Wrap(strings.TrimSpace(text), cols)
	for i := range lines {
		if i == 0 {
			lines[i] = "! " + lines[i]
		} else {
			lines[i] = "  " + lines[i]
		}
	}
	s.Block(screen.Yellow, lines...)
}

// status is the line under a round: context, running total, clock.
func (r *Renderer) status() {
	t := r.ui.T
	if r.ctx > 0 {
		r.ui.Screen.Line(screen.Dim, "  "+fmt.Sprintf(t("status"), Tokens(r.ctx), flower.USD(r.total), r.Elapsed()))
		return
	}
	r.ui.Screen.Line(screen.Dim, "  "+fmt.Sprintf(t("statusNoCtx"), flower.USD(r.total), r.Elapsed()))
}

// ask renders the human channel's events: the question and its outcome.
func (r *Renderer) ask(e event.Event) {
	s, t := r.ui.Screen, r.ui.T
	if e.Str("kind") == "mail" {
		if e.Str("state") == "delivered" {
			s.Line(screen.Green, "  + "+e.Text)
		}
		return
	}
	state := human.State(e.Str("state"))
	if state != human.Asked && !r.shown[e.Str("id")] && strings.TrimSpace(e.Text) != "" {
		s.Block(screen.Yellow, askLines(e)...)
	}
	if r.shown == nil {
		r.shown = map[string]bool{}
	}
	r.shown[e.Str("id")] = true
	switch state {
	case human.Asked:
		lines := askLines(e)
		if _, ok := e.Payload["remaining"]; ok && e.Int("remaining") >= 0 {
			lines = append(lines, "     "+fmt.Sprintf(t("remaining"), e.Int("remaining")))
		}
		s.Block(screen.Yellow, lines...)
	case human.Answered:
		s.Line(screen.Green, "  + "+e.Str("answer"))
	case human.TimedOut:
		s.Line(screen.Yellow, "  "+t("noAnswer"))
	case human.OverBudget:
		s.Line(screen.Yellow, "  "+t("quotaOut"))
	case human.Declined:
		s.Line(screen.Dim, "  "+t("skipped"))
	}
}

// askLines are an ask event's question and its numbered options.
func askLines(e event.Event) []string {
	lines := questionLines(e.Text)
	if opts, ok := e.Payload["options"].([]any); ok {
		for i, o := range opts {
			lines = append(lines, fmt.Sprintf("     %d) %v", i+1, o))
		}
	} else if opts, ok := e.Payload["options"].([]string); ok {
		for i, o := range opts {
			lines = append(lines, fmt.Sprintf("     %d) %s", i+1, o))
		}
	}
	return lines
}

// questionLines are a question's screen lines: "? " and its first line,
// the next lines indented under it, each as a person reads it (markdown's
// emphasis, code marks and heading signs taken away: the question is
// written for flower reply's file and a model alike, the terminal shows
// the words).
func questionLines(text string) []string {
	src := strings.Split(strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n")), "\n")
	lines := make([]string, 0, len(src))
	for i, l := range src {
		prefix := "    "
		if i == 0 {
			prefix = "  ? "
		}
		lines = append(lines, prefix+markdownAsText(l))
	}
	return lines
}

// markdownAsText is one line of markdown as plain words: **bold**,
// __bold__ and `code` lose their marks, a heading its #s.
func markdownAsText(l string) string {
	l = strings.NewReplacer("**", "", "__", "", "`", "").Replace(l)
	if t := strings.TrimLeft(l, "#"); t != l && strings.HasPrefix(t, " ") {
		l = strings.TrimSpace(t)
	}
	return l
}

// Total is the cost of this process's rounds so far.
func (r *Renderer) Total() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

func indent(prefix, text string) []string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return lines
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// toolName is a tool as a person reads it: flower's own tools by what they
// do, another MCP server's as "server: tool", the CLI's as they are
// (Bash, Read, Edit are the names people know).
func toolName(lang flower.Lang, tool string) string {
	switch tool {
	case human.AskTool:
		return text(lang, "toolAsk")
	case human.InboxTool:
		return text(lang, "toolInbox")
	}
	if rest, ok := strings.CutPrefix(tool, "mcp__"); ok {
		if server, name, ok := strings.Cut(rest, "__"); ok && server != "" && name != "" {
			return server + ": " + name
		}
	}
	return tool
}
