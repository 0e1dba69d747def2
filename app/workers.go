package app

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/team"
)

// runWorkers is `flower workers`: every worker that ever joined the team.
func (m *Command) runWorkers(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	fs := newFlagSet("workers")
	g.register(fs)
	db.register(fs)
	pos, err := m.parse(fs, m.workersUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	lang := m.language(&g, "")
	if len(pos) > 0 {
		return usageErrorf(text(lang, "teamWorkersArgs"), m.name(), strings.Join(pos, " "), m.name())
	}
	t, err := m.teamFor(ctx, db, "workers", lang)
	if err != nil {
		return err
	}
	defer t.Close()
	workers, err := t.Workers(ctx)
	if err != nil {
		return err
	}
	if len(workers) == 0 {
		m.say(text(lang, "teamNoWorkers"), m.name())
		return nil
	}
	rows := [][]string{strings.Split(text(lang, "teamWorkersHeader"), "\t")}
	var notes []string
	for _, w := range workers {
		state := text(lang, "teamWorkerState_"+w.State)
		if w.State == team.WorkerGone && !w.DrainRequested.IsZero() {
			state = text(lang, "teamWorkerState_drained")
		}
		held := strconv.Itoa(len(w.Runs))
		if w.Concurrency > 0 {
			held += "/" + strconv.Itoa(w.Concurrency)
		}
		if len(w.Runs) > 0 {
			names := make([]string, len(w.Runs))
			for i, id := range w.Runs {
				names[i] = team.RunName(id)
			}
			held += " " + strings.Join(names, ",")
		}
		heard := fmt.Sprintf(text(lang, "teamAgo"), span(w.Silence))
		rows = append(rows, []string{w.Name, state, held, heard, age(w.Started), w.Host, w.Version})
		switch w.State {
		case team.WorkerBroken:
			notes = append(notes, fmt.Sprintf(text(lang, "teamWorkerBrokenNote"), w.Name, w.Reason))
		case team.WorkerSilent:
			notes = append(notes, fmt.Sprintf(text(lang, "teamWorkerSilentNote"), w.Name, span(w.Silence), w.Rescue))
		}
		if w.Live() && len(w.PassEnv) > 0 {
			notes = append(notes, fmt.Sprintf(text(lang, "teamWorkerPassesNote"), w.Name, strings.Join(w.PassEnv, ", ")))
		}
		// A second or two is the heartbeat's trip; a minute is a clock.
		if skew := w.ClockSkew.Round(time.Second); w.Live() && (skew > 30*time.Second || skew < -30*time.Second) {
			key := "teamClockAhead"
			if skew < 0 {
				key, skew = "teamClockBehind", -skew
			}
			notes = append(notes, fmt.Sprintf(text(lang, key), w.Name, skew))
		}
	}
	width := m.stdoutWidth()
	if whole, _ := table(slices.Clone(rows), 0); width > 0 && widest(whole) > width {
		// Too narrow for every column: the version goes first (it is
		// the same on most workers), the rest is cut to fit.
		for i := range rows {
			rows[i] = rows[i][:len(rows[i])-1]
		}
	}
	for _, line := range fitTable(rows, width) {
		m.say("%s", line)
	}
	for _, n := range notes {
		// A note may hold what a worker's environment said: sanitized,
		// and wrapped within the terminal, its further lines indented.
		for i, line := range screen.Wrap(screen.Sanitize(n), max(width-2, 0)) {
			if i > 0 {
				line = "  " + line
			}
			m.say("%s", line)
		}
	}
	return nil
}

// fitTable is table with the first column (the workers' names, which
// table keeps whole) cut too when the rest cannot make the lines fit
// width, down to a name still told apart from others most of the time.
func fitTable(rows [][]string, width int) []string {
	lines, _ := table(rows, width)
	if width <= 0 {
		return lines
	}
	first := 0
	for _, r := range rows {
		first = max(first, screen.Columns(r[0]))
	}
	if over := widest(lines) - width; over > 0 && first > 14 {
		for _, r := range rows {
			r[0] = screen.Cut(r[0], max(first-over, 14))
		}
		lines, _ = table(rows, width)
	}
	return lines
}

// widest is the display width of the widest line.
func widest(lines []string) int {
	n := 0
	for _, l := range lines {
		n = max(n, screen.Columns(l))
	}
	return n
}

// drainWorker is `flower worker --drain NAME`.
func (m *Command) drainWorker(ctx context.Context, db dbFlags, name string, lang flower.Lang) error {
	if strings.TrimSpace(name) == "" {
		return usageErrorf(text(lang, "teamDrainName"), m.name(), m.name())
	}
	t, err := m.teamFor(ctx, db, "worker", lang)
	if err != nil {
		return err
	}
	defer t.Close()
	w, err := t.Drain(ctx, name)
	var unknown *team.UnknownWorkerError
	var gone *team.WorkerGoneError
	switch {
	case errors.As(err, &unknown) && len(unknown.Names) == 0:
		return fmt.Errorf(text(lang, "teamDrainNoWorkers"), name)
	case errors.As(err, &unknown):
		return fmt.Errorf(text(lang, "teamDrainUnknown"), name, strings.Join(unknown.Names, ", "), m.name())
	case errors.As(err, &gone):
		return fmt.Errorf(text(lang, "teamDrainGone"), name, gone.Worker.Heartbeat.Local().Format("2006-01-02 15:04:05"))
	case err != nil:
		return err
	}
	if w.State == team.WorkerSilent {
		m.say(text(lang, "teamDrainSilent"), w.Name, span(w.Silence))
		return nil
	}
	runs := text(lang, "teamDrainNoRuns")
	if len(w.Runs) > 0 {
		names := make([]string, len(w.Runs))
		for i, id := range w.Runs {
			names[i] = team.RunName(id)
		}
		runs = strings.Join(names, ", ")
	}
	m.say(text(lang, "teamDrainAsked"), w.Name, runs, w.Rescue/4, m.name())
	return nil
}

// runPrune is `flower runs prune --ended-before AGE [RUN...]`.
func (m *Command) runPrune(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	var before string
	fs := newFlagSet("runs prune")
	g.register(fs)
	db.register(fs)
	fs.StringVar(&before, "ended-before", "", "")
	pos, err := m.parse(fs, m.pruneUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	lang := m.language(&g, "")
	var ids []int64
	for _, p := range pos {
		id, err := team.ParseRun(p)
		if err != nil {
			return usageErrorf("%v", err)
		}
		ids = append(ids, id)
	}
	var cutoff time.Time
	switch {
	case isSet(fs, "ended-before") && len(ids) > 0:
		return usageErrorf(text(lang, "teamPruneBoth"), m.name())
	case isSet(fs, "ended-before"):
		if cutoff, err = parseAge(before, time.Now()); err != nil {
			return usageErrorf(text(lang, "teamPruneAge"), before)
		}
	case len(ids) == 0:
		return usageErrorf(text(lang, "teamPruneNeeds"), m.name(), m.name())
	}
	t, err := m.teamFor(ctx, db, "runs", lang)
	if err != nil {
		return err
	}
	defer t.Close()
	var res team.PruneResult
	if len(ids) > 0 {
		res, err = t.PruneRuns(ctx, ids...)
	} else {
		res, err = t.Prune(ctx, cutoff)
	}
	if live := (*team.LiveRunError)(nil); errors.As(err, &live) {
		return fmt.Errorf(text(lang, "teamPruneLive"), live.Run.Name(), stateText(lang, team.Run{State: live.Run.State}), m.name(), live.Run.Name())
	}
	if err != nil {
		return err
	}
	if len(res.Runs) == 0 {
		m.say(text(lang, "teamPruneNone"), cutoff.Local().Format("2006-01-02 15:04"))
		return nil
	}
	names := make([]string, len(res.Runs))
	for i, id := range res.Runs {
		names[i] = team.RunName(id)
	}
	m.say(text(lang, "teamPruned"), len(res.Runs), clip(strings.Join(names, " "), 60), res.Rows(), bytesText(res.Bytes()))
	for _, tb := range res.Tables {
		if tb.Rows > 0 {
			m.say("  %-18s %7d  %s", tb.Table, tb.Rows, bytesText(tb.Bytes))
		}
	}
	return nil
}

// dayAge is an age in days (Go's durations stop at hours).
var dayAge = regexp.MustCompile(`^([0-9]+)d$`)

// parseAge reads --ended-before: an age before now (30d, 12h, 90m, or any
// Go duration) or a moment (2026-01-31, 2026-01-31T15:04, RFC 3339) in
// the local time zone unless it names one.
func parseAge(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if m := dayAge.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n > 100000 {
			return time.Time{}, fmt.Errorf("%q: too many days", s)
		}
		return now.AddDate(0, 0, -n), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: an age is not negative", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither an age nor a date", s)
}

// bytesText is n bytes for a person: 812 B, 14.2 KB, 3.1 MB.
func bytesText(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
