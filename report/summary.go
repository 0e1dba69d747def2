package report

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
)

// Outcome states, as Outcome.State holds them.
const (
	// Achieved: the last judge ruled the goal achieved.
	Achieved = "achieved"
	// AchievedUnmeasured: achieved, but flower could run none of the
	// goal's commands here (no sandbox): the judge's reading alone.
	AchievedUnmeasured = flower.OutcomeAchievedUnmeasured
	// AchievedExcept: achieved, but for the items the goal marked
	// unverifiable on this machine, which did not pass.
	AchievedExcept = flower.OutcomeAchievedExcept
	// NeedsLook: the judge ruled it achieved, the change report's flags
	// hold it for the person.
	NeedsLook = flower.OutcomeNeedsLook
	// NotAchieved: the rounds ran out and the last judge said not yet.
	NotAchieved = "not_achieved"
	// Accepted: the person accepted the result as it stands, though the
	// judge did not rule the goal achieved.
	Accepted = flower.OutcomeAccepted
	// Unreachable: the judge ruled the goal cannot be verified or reached
	// here.
	Unreachable = "unreachable"
	// StoppedByHuman: Ctrl-C (or a signal) ended the run.
	StoppedByHuman = "stopped"
	// Failed: a step failed; Reason is its error.
	Failed = "failed"
	// Halted: a step's check did not pass and the run went no further
	// (the clarify step's brief lacked sections, a judge's verdict could
	// not be read).
	Halted = "halted"
	// Done: every step passed and no judge ruled (a workflow of its own).
	Done = "done"
	// Running: the last step has not ended (a live run, or one killed
	// before it could write its end).
	Running = "running"
	// Unknown: no manifest row says how it went.
	Unknown = "unknown"
)

// Outcome is how a wake ended.
type Outcome struct {
	State string `json:"state"`
	// Step is the step it ended in, when that says something.
	Step string `json:"step,omitempty"`
	// Reason is why, as the run recorded it: the judge's reason, the
	// step's error.
	Reason string `json:"reason,omitempty"`
	// Missing are the sections the clarify step's brief lacked, when that
	// is what halted the run.
	Missing []string `json:"missing,omitempty"`
	// Unreadable says the last judge's round has no verdict (flower
	// recorded no decision for it).
	Unreadable bool `json:"unreadable,omitempty"`
	// Rounds is how many work rounds ran.
	Rounds int `json:"rounds,omitempty"`
	// Budget says a stopped run was stopped by its cost budget, not the
	// person.
	Budget bool `json:"budget,omitempty"`
}

// Wake is one run of the directory (one Runtime), a column of the page.
type Wake struct {
	N         int       `json:"n"`
	Run       string    `json:"run"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// DurationS is the wake's wall-clock time, its first step's start to
	// its last step's end.
	DurationS float64 `json:"duration_s"`
	Steps     int     `json:"steps"`
	CostUSD   float64 `json:"cost_usd"`
	Outcome   Outcome `json:"outcome"`
}

// Driver is a cost driver: what one role did in one step (its rounds,
// retries and judges together), with its share of the run's cost.
type Driver struct {
	Step  string  `json:"step"`
	Role  string  `json:"role"`
	USD   float64 `json:"usd"`
	Share float64 `json:"share"`
}

// stoppedByHuman reports whether a row's error means the human (or a
// signal) stopped it: the runtime's own markers, and the cause the command
// gives its context when the human quits (an error of a model or a tool
// that merely mentions Ctrl-C is not one).
func stoppedByHuman(err string) bool {
	return err == flower.KilledBySignal || err == flower.ErrInterrupted || strings.HasSuffix(err, flower.QuitByHuman)
}

// isAux reports whether a label is a step's appendix (the bequest, "·交代"
// or "·bequest"), which does not decide how the run went.
func isAux(label string) bool {
	for _, l := range []flower.Lang{flower.English, flower.Chinese} {
		if strings.HasSuffix(label, flower.StarterNamesFor(l).Bequest) {
			return true
		}
	}
	return false
}

// wakes builds the per-wake columns and the run's outcome (its last
// wake's), duration (the wakes' summed) and request.
func (g *gatherer) wakes() {
	r := g.r
	r.ByWake = []Wake{}
	for i, run := range r.Runs {
		w := Wake{N: i + 1, Run: run}
		var rows []Step
		for _, s := range r.Steps {
			if s.Aside || s.Run != run {
				continue
			}
			rows = append(rows, s)
			w.Steps++
			w.CostUSD += s.CostUSD
			if !s.StartedAt.IsZero() && (w.StartedAt.IsZero() || s.StartedAt.Before(w.StartedAt)) {
				w.StartedAt = s.StartedAt
			}
			end := s.EndedAt
			if end.IsZero() {
				end = r.Generated
			}
			if end.After(w.EndedAt) {
				w.EndedAt = end
			}
		}
		if !w.StartedAt.IsZero() && w.EndedAt.After(w.StartedAt) {
			w.DurationS = w.EndedAt.Sub(w.StartedAt).Seconds()
		}
		w.Outcome = g.outcome(rows, run)
		r.ByWake = append(r.ByWake, w)
		r.DurationS += w.DurationS
	}
	// A side question's cost belongs to the wake it was asked in.
	for _, s := range r.Steps {
		if !s.Aside {
			continue
		}
		for i := range r.ByWake {
			w := &r.ByWake[i]
			if !s.StartedAt.Before(w.StartedAt) && !s.StartedAt.After(w.EndedAt) {
				w.CostUSD += s.CostUSD
				break
			}
		}
	}
	if n := len(r.ByWake); n > 0 {
		r.Outcome = r.ByWake[n-1].Outcome
	} else {
		r.Outcome = Outcome{State: Unknown}
	}
	r.Request = g.request()
}

// outcome reads how a wake ended from its manifest rows (in the order
// they ran) and its step events.
func (g *gatherer) outcome(rows []Step, run string) Outcome {
	var o Outcome
	for _, s := range rows {
		o.Rounds = max(o.Rounds, s.Round)
	}
	var last *Step
	for i := len(rows) - 1; i >= 0; i-- {
		if !isAux(rows[i].Label) {
			last = &rows[i]
			break
		}
	}
	if last == nil {
		o.State = Unknown
		if g.stepEvents(run) > 0 {
			o.State = Running
		}
		return o
	}
	o.Step = labelRE.FindStringSubmatch(last.Label)[1]
	if d, ok := g.decidedOutcome(run); ok {
		// The run recorded the outcome it showed the person: the page
		// shows the same, never a second reading of the rows.
		o.State = d.State
		o.Step = cmp.Or(d.Step, o.Step)
		o.Reason, o.Budget = d.Reason, d.Budget
		return o
	}
	switch {
	case last.EndedAt.IsZero():
		o.State = Running
		return o
	case !last.OK && stoppedByHuman(last.Error):
		o.State, o.Reason = StoppedByHuman, last.Error
		return o
	case !last.OK:
		o.State, o.Reason = Failed, last.Error
		return o
	}
	if m := labelRE.FindStringSubmatch(last.Label); m[5] != "" {
		v := g.verdictOf(*last)
		o.Reason = v.Reason
		switch v.State {
		case doc.Achieved:
			o.State = Achieved
		case doc.Unreachable:
			o.State = Unreachable
		case doc.NotYet:
			o.State = NotAchieved
		default:
			o.State, o.Unreadable = Halted, true
		}
		return o
	}
	// The last step passed; did the workflow go on past it?
	index, total := g.lastStepEvent(run)
	if total == 0 || index >= total {
		o.State = Done
		return o
	}
	o.State = Halted
	if o.Step == flower.StarterNamesFor(flower.English).Clarify || o.Step == flower.StarterNamesFor(flower.Chinese).Clarify {
		o.Missing = doc.ParseBrief(last.text).Missing(doc.Lang(pageLang(g.r.Language)))
	}
	return o
}

// decidedOutcome is the outcome the run decided (flower.RunOutcome) and
// logged as its outcome event; ok false for a run that logged none (an
// older flower, a run killed before its end).
func (g *gatherer) decidedOutcome(run string) (flower.Outcome, bool) {
	var o flower.Outcome
	found := false
	for _, e := range g.events {
		if e.Run != run || e.Kind != event.System || e.Text != "outcome" || e.Str("outcome") == "" {
			continue
		}
		o = flower.Outcome{State: e.Str("outcome"), Reason: e.Str("reason"), Step: e.Str("step"), Round: e.Int("round"), Budget: e.Bool("budget")}
		found = true
	}
	return o, found
}

// stepEvents counts a run's step events.
func (g *gatherer) stepEvents(run string) int {
	n := 0
	for _, e := range g.events {
		if e.Run == run && e.Kind == event.Step {
			n++
		}
	}
	return n
}

// lastStepEvent is a run's last step event's index and total (0, 0 when
// there is none).
func (g *gatherer) lastStepEvent(run string) (index, total int) {
	for _, e := range g.events {
		if e.Run == run && e.Kind == event.Step {
			index, total = e.Int("index"), e.Int("total")
		}
	}
	return index, total
}

// request is the prompt that started the run's current request: the
// first user text of the first step's session, as the session store keeps
// it (the starter flow's clarify step is given the human's request as it
// was typed). A run directory where something new was started (/new,
// --new) keeps the old request's rows; the lineage counts the wakes since
// then, so only those runs' rows are read, and the page never shows the
// old request beside the new one's outcome.
func (g *gatherer) request() string {
	current := map[string]bool{}
	if w := g.r.Wakes; w > 0 && w <= len(g.r.Runs) {
		for _, run := range g.r.Runs[len(g.r.Runs)-w:] {
			current[run] = true
		}
	}
	for _, s := range g.r.Steps {
		if s.Aside || (len(current) > 0 && !current[s.Run]) {
			continue
		}
		for _, sid := range append(slices.Clone(s.Retired), s.SessionID) {
			if p := g.main.prompts[sid]; p != "" {
				return p
			}
		}
	}
	return ""
}

// drivers splits the run's cost by step (its rounds, retries and judges
// together) and role, largest first, with shares.
func drivers(parts map[[2]string]float64, total float64) []Driver {
	out := []Driver{}
	for k, usd := range parts {
		d := Driver{Step: k[0], Role: k[1], USD: usd}
		if total > 0 {
			d.Share = usd / total
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].USD != out[j].USD {
			return out[i].USD > out[j].USD
		}
		return out[i].Step+out[i].Role < out[j].Step+out[j].Role
	})
	return out
}
