package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/internal/gitwork"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/report"
	"github.com/flowerrun/flower/team"
)

// teamFor opens the team's database the command's flags name: the two
// steps every team command but the worker (which keeps the URL) takes.
func (m *Command) teamFor(ctx context.Context, d dbFlags, cmd string, lang flower.Lang) (*team.Team, error) {
	url, err := m.teamDB(d, cmd, lang)
	if err != nil {
		return nil, err
	}
	return m.openTeam(ctx, url, lang)
}

func (m *Command) openTeam(ctx context.Context, url string, lang flower.Lang) (*team.Team, error) {
	t, err := team.Open(ctx, url)
	if err != nil {
		if de := (*team.DatabaseError)(nil); errors.As(err, &de) {
			err = fmt.Errorf(text(lang, "teamDBAt"), de.URL, oneLine{de.Err})
		}
		return nil, fmt.Errorf("%w\n%s", oneLine{err}, text(lang, "teamDBHint"))
	}
	return t, nil
}

// oneLine shows an error on one line, each of its lines once: pgx puts
// every address it tried on a line of its own (with TLS, then without),
// most often the same refusal twice.
type oneLine struct{ error }

func (e oneLine) Error() string {
	var parts []string
	seen := map[string]bool{}
	for _, l := range strings.Split(e.error.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !seen[l] {
			seen[l] = true
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

func (e oneLine) Unwrap() error { return e.error }

// runSubmit is `flower submit --repo REPO [--branch B] [--budget USD] "request"`.
func (m *Command) runSubmit(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	var repo, base string
	var budget float64
	var noCheck bool
	var netHosts []string
	fs := newFlagSet("submit")
	g.register(fs)
	db.register(fs)
	fs.StringVar(&repo, "repo", "", "")
	fs.StringVar(&base, "branch", "", "")
	fs.Var(budgetValue{&budget}, "budget", "")
	fs.BoolVar(&noCheck, "no-check", false, "")
	fs.Var(listValue{&netHosts}, "net", "")
	pos, err := m.parse(fs, m.submitUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	lang := m.language(&g, "")
	request := strings.TrimSpace(strings.Join(pos, " "))
	switch {
	case request == "":
		return usageErrorf(text(lang, "submitNoRequest"), m.name(), m.name())
	case strings.TrimSpace(repo) == "":
		return usageErrorf(text(lang, "submitNoRepo"), m.name())
	}
	if netHosts, err = team.ParseNetHosts(netHosts); err != nil {
		return usageErrorf("%v", err)
	}
	// Asked here, where a person submits it: the worker that runs it
	// later has nobody to ask.
	ui := m.newUI(lang)
	err = checkRequest(ctx, ui, g.yes, request)
	ui.Screen.Close()
	if err != nil {
		return err
	}
	url, err := m.teamDB(db, "submit", lang)
	if err != nil {
		return err
	}
	if !noCheck {
		// Refused here rather than parked later: a repository this machine
		// cannot reach is most often a typo.
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(cctx, "git", "-c", "core.hooksPath=/dev/null", "ls-remote", "--", repo, "HEAD").CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf(text(lang, "teamRepoUnreachable"), gitwork.Redact(repo), gitwork.Mask(repo, strings.TrimSpace(string(out))))
		}
		if base != "" {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			out, err := exec.CommandContext(cctx, "git", "-c", "core.hooksPath=/dev/null", "ls-remote", "--heads", "--", repo, base).Output()
			cancel()
			if err == nil && len(strings.TrimSpace(string(out))) == 0 {
				return fmt.Errorf(text(lang, "teamNoBranch"), gitwork.Redact(repo), base)
			}
		}
	}
	t, err := m.openTeam(ctx, url, lang)
	if err != nil {
		return err
	}
	defer t.Close()
	host, _ := os.Hostname()
	r, err := t.Submit(ctx, team.Submission{Request: request, Repo: repo, Base: base, Budget: budget, By: host, NetHosts: netHosts})
	if err != nil {
		return err
	}
	m.say(text(lang, "teamSubmitted"), r.Name(), r.Branch)
	if len(r.NetHosts) > 0 {
		m.say(text(lang, "teamSubmittedNet"), strings.Join(r.NetHosts, ", "))
	}
	m.say(text(lang, "teamFollow"), m.name(), r.Name(), m.name(), r.Name(), m.name(), r.Name())
	return nil
}

// runWorker is `flower worker [--concurrency N] [--dir DIR]`.
func (m *Command) runWorker(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	var dir, name string
	var rescue time.Duration
	var concurrency, maxFailures int
	var teamBudget float64
	var unconfined bool
	var readable, passEnv []string
	var drain string
	var keepFailed, keepEnded time.Duration
	var logFormat, metricsAddr string
	fs := newFlagSet("worker")
	fs.StringVar(&drain, "drain", "", "")
	fs.DurationVar(&keepFailed, "keep-failed", team.DefaultKeepFailed, "")
	fs.DurationVar(&keepEnded, "keep-ended", 0, "")
	fs.StringVar(&logFormat, "log-format", "text", "")
	fs.StringVar(&metricsAddr, "metrics", "", "")
	fs.BoolVar(&unconfined, "unconfined", false, "")
	fs.Var(listValue{&readable}, "readable", "")
	fs.Var(listValue{&passEnv}, "pass-env", "")
	g.register(fs)
	db.register(fs)
	fs.StringVar(&dir, "dir", "flower-worker", "")
	fs.StringVar(&name, "name", "", "")
	fs.IntVar(&concurrency, "concurrency", 1, "")
	fs.IntVar(&maxFailures, "max-failures", team.DefaultMaxFailures, "")
	fs.DurationVar(&rescue, "rescue", team.DefaultRescue, "")
	fs.Var(budgetValue{&teamBudget}, "team-budget", "")
	if _, err := m.parse(fs, m.workerUsage(m.argLang(args)), args); err != nil {
		return err
	}
	lang := m.language(&g, "")
	if isSet(fs, "drain") {
		return m.drainWorker(ctx, db, drain, lang)
	}
	switch {
	case keepFailed <= 0:
		return usageErrorf(text(lang, "teamKeepFailed"), keepFailed)
	case concurrency < 1:
		return usageErrorf(text(lang, "workerConcurrency"), concurrency)
	case maxFailures < 1:
		return usageErrorf(text(lang, "workerMaxFailures"), maxFailures)
	case rescue < team.MinRescue:
		return usageErrorf(text(lang, "teamRescueShort"), rescue, team.MinRescue)
	}
	for i, p := range readable {
		if _, err := os.Stat(p); !filepath.IsAbs(p) || err != nil {
			return usageErrorf(text(lang, "workerReadable"), p)
		}
		readable[i] = filepath.Clean(p)
	}
	for _, name := range passEnv {
		if team.CheckPassEnv(name) != nil {
			return usageErrorf(text(lang, "workerPassEnv"), name)
		}
	}
	// One line per record, on stderr, folded and masked by the handler
	// itself; the library's own lines go through it too. In json every
	// line the worker writes is a record: a collector reads its output
	// whole.
	handler, err := team.NewLogHandler(m.Stderr, logFormat)
	if err != nil {
		return usageErrorf(text(lang, "teamLogFormat"), logFormat)
	}
	logger := slog.New(handler)
	slog.SetDefault(logger)
	say := m.say
	if logFormat == "json" {
		say = func(format string, a ...any) { logger.Info(fmt.Sprintf(format, a...)) }
	}
	// Once the worker has its name, its lines carry it as its library's
	// lines do.
	named := func(name string) {
		if logFormat == "json" {
			l := logger.With("worker", name)
			say = func(format string, a ...any) { l.Info(fmt.Sprintf(format, a...)) }
		}
	}
	// Listened on before anything else: a worker whose metrics cannot be
	// served does not start, rather than run unwatched.
	var metrics net.Listener
	if metricsAddr != "" {
		if metrics, err = listenMetrics(metricsAddr, lang); err != nil {
			return err
		}
		defer metrics.Close()
	}
	url, err := m.teamDB(db, "worker", lang)
	if err != nil {
		return err
	}
	t, err := m.openTeam(ctx, url, lang)
	if err != nil {
		return err
	}
	defer t.Close()
	// The key the runs' proxy adds may be in the .env chain (flower
	// setup's file): the worker reads it, the runs never do.
	rep, _ := flower.Environment{Lang: lang}.LoadDotenv()
	for _, w := range rep.Warnings {
		say("! %s", w)
	}
	var runArgs []string
	if g.lang != "" {
		runArgs = append(runArgs, "--lang", g.lang)
	}
	// --team-budget 0 lifts the team's budget; left out, it stays as set.
	var budgetGiven *float64
	if isSet(fs, "team-budget") {
		budgetGiven = &teamBudget
	}
	w, err := t.NewWorker(url, team.WorkerOptions{
		Name: name, Dir: dir, Concurrency: concurrency, Rescue: rescue, TeamBudget: budgetGiven,
		MaxFailures: maxFailures, Args: runArgs, Unconfined: unconfined, Readable: readable, PassEnv: passEnv, Lang: lang, KeepFailed: keepFailed, KeepEnded: keepEnded,
		Log: logger, Metrics: metrics,
	})
	if short := (*team.RescueTooShortError)(nil); errors.As(err, &short) {
		return usageErrorf(text(lang, "teamRescueShort"), short.Rescue, team.MinRescue)
	}
	if err != nil {
		return err
	}
	named(w.Name())
	// SIGTERM, SIGHUP and Ctrl-C stop taking runs and release those in
	// flight (each records its step as resumable and pushes its work).
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	m.hooks.mu.Lock()
	m.hooks.stop = stop
	m.hooks.mu.Unlock()
	say(text(lang, "teamWorking"), w.Name(), t.URL(), concurrency, w.Dir())
	switch own, confined := w.RunsAsOwnUsers(); {
	case own:
		say("%s", text(lang, "teamRunUsers"))
	case confined:
		say(text(lang, "teamRunsShareUser"), currentUserName())
	}
	if metrics != nil {
		say(text(lang, "teamMetricsServing"), metrics.Addr(), metrics.Addr())
	}
	if budgetGiven != nil && *budgetGiven == 0 {
		say("%s", text(lang, "teamBudgetLifted"))
	}
	err = w.Run(wctx)
	if taken := (*team.NameTakenError)(nil); errors.As(err, &taken) {
		return fmt.Errorf(text(lang, "teamNameTaken"), taken.Name, taken.Host, taken.PID, taken.Heartbeat.Local().Format("15:04:05"))
	}
	if w.Drained() {
		say(text(lang, "teamWorkerDrained"), w.Name())
	} else {
		say(text(lang, "teamWorkerStopped"), w.Name())
	}
	return err
}

// listenMetrics listens on addr for the worker's metrics: an address in
// use or one this machine does not have is said with what to give.
func listenMetrics(addr string, lang flower.Lang) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, usageErrorf(text(lang, "teamMetricsAddr"), addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf(text(lang, "teamMetricsInUse"), addr)
	case err != nil:
		return nil, fmt.Errorf(text(lang, "teamMetricsAddr"), addr, err)
	}
	return ln, nil
}

// runRuns is `flower runs [RUN]` and `flower runs prune ...`.
func (m *Command) runRuns(ctx context.Context, args []string) error {
	// "prune" is no run's name (runs are r1, r2, ...): wherever it is
	// among the flags, the command is the prune.
	if i := slices.Index(args, "prune"); i >= 0 {
		return m.runPrune(ctx, append(slices.Clone(args[:i]), args[i+1:]...))
	}
	var g globals
	var db dbFlags
	var states string
	var limit int
	fs := newFlagSet("runs")
	g.register(fs)
	db.register(fs)
	fs.StringVar(&states, "state", "", "")
	fs.IntVar(&limit, "limit", defaultRunsPage, "")
	pos, err := m.parse(fs, m.runsUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	lang := m.language(&g, "")
	if len(pos) > 1 {
		return usageErrorf(text(lang, "runsArgs"), m.name(), strings.Join(pos, " "))
	}
	filter := team.RunFilter{Limit: limit}
	if limit < 0 {
		return usageErrorf(text(lang, "teamRunsLimit"), limit)
	}
	for _, s := range strings.Split(states, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			if !slices.Contains(team.States, s) {
				return usageErrorf(text(lang, "teamRunsState"), s, strings.Join(team.States, ","))
			}
			filter.States = append(filter.States, s)
		}
	}
	url, err := m.teamDB(db, "runs", lang)
	if err != nil {
		return err
	}
	var id int64
	if len(pos) == 1 {
		if id, err = team.ParseRun(pos[0]); err != nil {
			return usageErrorf("%v", err)
		}
	}
	t, err := m.openTeam(ctx, url, lang)
	if err != nil {
		return err
	}
	defer t.Close()
	if id != 0 {
		return m.showRun(ctx, t, id, lang)
	}
	runs, err := t.Runs(ctx, filter)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		if len(filter.States) > 0 {
			m.say(text(lang, "teamNoRunsIn"), strings.Join(filter.States, ","))
			return nil
		}
		m.say(text(lang, "teamNoRuns"), m.name())
		return nil
	}
	listing := func(hosts bool) [][]string {
		rows := [][]string{strings.Split(text(lang, "teamRunsHeader"), "\t")}
		for _, r := range runs {
			state := stateText(lang, r)
			if !hosts {
				state = stateText(lang, team.Run{State: r.State})
			}
			rows = append(rows, []string{r.Name(), state, stepText(r), costText(r),
				age(r.Created), screen.Cut(firstLine(r.Request), 40), screen.Cut(firstLine(r.Reason), 60)})
		}
		return rows
	}
	width := m.stdoutWidth()
	lines, squeezed := table(listing(true), width)
	if squeezed {
		// A narrow terminal: the states whole, without their hosts
		// (`flower runs RUN` names the host).
		lines, _ = table(listing(false), width)
	}
	for _, line := range lines {
		m.say("%s", line)
	}
	if limit > 0 && len(runs) == limit {
		if total, err := t.CountRuns(ctx, team.RunFilter{States: filter.States}); err == nil && total > limit {
			more := m.name() + " runs --limit " + strconv.Itoa(total)
			if states != "" {
				more += " --state " + strings.Join(filter.States, ",")
			}
			m.say(text(lang, "teamRunsMore"), total-limit, limit, more)
		}
	}
	if budget, err := t.TeamBudget(ctx); err == nil && budget > 0 {
		spent, _ := t.Spent(ctx)
		line := fmt.Sprintf(text(lang, "teamBudgetLine"), spent, budget)
		if spent >= budget {
			line += text(lang, "teamBudgetSpent")
		}
		m.say("%s", line)
	}
	return nil
}

func (m *Command) showRun(ctx context.Context, t *team.Team, id int64, lang flower.Lang) error {
	r, err := t.Run(ctx, id)
	if err != nil {
		return err
	}
	var rows [][]string
	row := func(k, v string) {
		label := text(lang, k)
		for _, line := range strings.Split(strings.TrimSpace(v), "\n") {
			if line != "" {
				rows = append(rows, []string{label, line})
				label = ""
			}
		}
	}
	row("teamRun", r.Name())
	row("teamState", stateText(lang, r))
	row("teamRequest", r.Request)
	row("teamRepo", r.Repo)
	row("teamBranch", r.Branch+" ← "+orNone(lang, r.Base))
	row("teamStep", stepText(r))
	row("teamCost", costText(r))
	if len(r.NetHosts) > 0 {
		row("teamNet", strings.Join(r.NetHosts, ", "))
	}
	row("teamQuestion", r.Question)
	row("teamReason", r.Reason)
	row("teamPushed", r.Pushed)
	row("teamVersion", r.Version)
	row("teamAge", age(r.Created))
	if !r.Ended.IsZero() {
		row("teamEnded", r.Ended.Local().Format("2006-01-02 15:04:05"))
	}
	for _, f := range r.Failures {
		row("teamFailure", f.At.Local().Format("15:04:05")+" "+f.Host+": "+firstLine(f.Reason))
	}
	lines, _ := table(rows, 0)
	for _, line := range lines {
		m.say("%s", line)
	}
	evs, err := t.Events(ctx, id, 0, 15)
	if err != nil {
		return err
	}
	if len(evs) > 0 {
		m.say("\n%s", text(lang, "teamRecent"))
		for _, e := range evs {
			m.say("  %s  %-10s %s", e.At.Local().Format("15:04:05"), e.Kind, clip(eventLine(e), 100))
		}
	}
	if r.State == team.Waiting {
		m.say("\n"+text(lang, "teamReplyHint"), m.name(), r.Name())
	}
	return nil
}

func eventLine(e team.Event) string {
	if e.Text == "team_state" {
		s := e.Str("state")
		if h := e.Str("host"); h != "" {
			s += " @ " + h
		}
		if why := e.Str("reason"); why != "" {
			s += ": " + firstLine(why)
		}
		return s
	}
	if e.Tool != "" {
		return e.Tool + " " + e.Text
	}
	if line := askLine(e); line != "" {
		return line
	}
	return firstLine(e.Text)
}

func stateText(lang flower.Lang, r team.Run) string {
	s := text(lang, "teamState_"+r.State)
	if s == "" {
		s = r.State
	}
	if (r.State == team.Running || r.State == team.Waiting) && r.Host != "" {
		s += fmt.Sprintf(text(lang, "teamOnHost"), r.Host)
	}
	return s
}

func stepText(r team.Run) string {
	if r.Step == "" {
		return "-"
	}
	if r.Round > 0 {
		return fmt.Sprintf("%s #%d", r.Step, r.Round)
	}
	return r.Step
}

func costText(r team.Run) string {
	if r.Budget > 0 {
		return flower.USD(r.Cost) + "/" + flower.USD(r.Budget)
	}
	return flower.USD(r.Cost)
}

func age(t time.Time) string { return span(time.Since(t)) }

// span is d in its largest whole unit: 12s, 5m, 3h, 4d.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// table lays rows out in columns two spaces apart, padded by display
// width (a Chinese label is twice as wide as its runes; tabwriter counts
// runes and misaligns it). Within width columns (0: no limit) the last two
// columns, the request and why, are cut to fit, then the second: a row
// never wraps. squeezed says the second column was cut.
func table(rows [][]string, width int) (lines []string, squeezed bool) {
	const gap = 2
	var cols []int
	for _, row := range rows {
		for i, cell := range row {
			cell = screen.Sanitize(cell)
			row[i] = cell
			if i >= len(cols) {
				cols = append(cols, 0)
			}
			cols[i] = max(cols[i], screen.Columns(cell))
		}
	}
	if n := len(cols); width > 0 && n >= 2 {
		total := gap * (n - 1)
		for _, c := range cols {
			total += c
		}
		shrink := func(i, least int) {
			if over := total - width; over > 0 {
				cut := min(over, max(cols[i]-least, 0))
				cols[i] -= cut
				total -= cut
			}
		}
		// The reason gives way first, then the request, each down to a
		// width that still says something, and only then the state.
		for _, c := range []struct{ col, least int }{
			{n - 1, 24}, {n - 2, 20}, {n - 1, 8}, {n - 2, 10}, {1, 10}, {n - 1, screen.Columns(rows[0][n-1])},
		} {
			had := cols[c.col]
			shrink(c.col, c.least)
			squeezed = squeezed || (c.col == 1 && cols[1] < had)
		}
	}
	out := make([]string, 0, len(rows))
	for _, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			cell = screen.Cut(cell, cols[i])
			if i == len(row)-1 {
				b.WriteString(cell)
				break
			}
			b.WriteString(screen.Pad(cell, cols[i]+gap))
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out, squeezed
}

// stdoutWidth is the terminal's width when the output is one, else 0.
func (m *Command) stdoutWidth() int {
	if f, ok := m.Stdout.(*os.File); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// runCancel is `flower cancel RUN`.
func (m *Command) runCancel(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	fs := newFlagSet("cancel")
	g.register(fs)
	db.register(fs)
	pos, err := m.parse(fs, m.cancelUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	lang := m.language(&g, "")
	if len(pos) != 1 {
		return usageErrorf(text(lang, "cancelArgs"), m.name(), m.name())
	}
	id, err := team.ParseRun(pos[0])
	if err != nil {
		return usageErrorf("%v", err)
	}
	t, err := m.teamFor(ctx, db, "cancel", lang)
	if err != nil {
		return err
	}
	defer t.Close()
	r, err := t.Cancel(ctx, id)
	if ended := (*team.EndedError)(nil); errors.As(err, &ended) {
		return fmt.Errorf(text(lang, "teamAlreadyEnded"), ended.Run.Name(), stateText(lang, team.Run{State: ended.Run.State}),
			ended.Run.Ended.Local().Format("2006-01-02 15:04"))
	}
	if err != nil {
		return err
	}
	if r.State == team.Cancelled {
		m.say(text(lang, "teamCancelled"), r.Name())
	} else {
		m.say(text(lang, "teamCancelling"), r.Name(), r.Host)
	}
	return nil
}

// runRetry is `flower retry RUN`.
func (m *Command) runRetry(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	fs := newFlagSet("retry")
	g.register(fs)
	db.register(fs)
	pos, err := m.parse(fs, m.retryUsage(m.argLang(args)), args)
	if err != nil {
		return err
	}
	lang := m.language(&g, "")
	if len(pos) != 1 {
		return usageErrorf(text(lang, "teamRetryOne"), m.name(), m.name())
	}
	id, err := team.ParseRun(pos[0])
	if err != nil {
		return usageErrorf("%v", err)
	}
	t, err := m.teamFor(ctx, db, "retry", lang)
	if err != nil {
		return err
	}
	defer t.Close()
	host, _ := os.Hostname()
	r, err := t.Retry(ctx, id, host)
	if refused := (*team.EndedError)(nil); errors.As(err, &refused) {
		return fmt.Errorf(text(lang, "teamRetryRefused"), refused.Run.Name(), stateText(lang, refused.Run), m.name(), refused.Run.Name())
	}
	if err != nil {
		return err
	}
	m.say(text(lang, "teamRetried"), r.Name(), r.Branch)
	return nil
}

// defaultRunsPage is how many runs `flower runs` lists unless told.
const defaultRunsPage = 50

// replyTeam: see reply.go.

// reportTeam renders `flower report RUN` from the database: the
// run's files laid out in a folder beside the page (the page links its
// notes and handoffs, so they stay), the page written as for a run
// directory and headed with the run's name, database and branch. --json
// lays them out in a temporary folder, removed after.
func (m *Command) reportTeam(ctx context.Context, url string, pos []string, lang flower.Lang, out string, open, asJSON bool) error {
	if len(pos) != 1 {
		return usageErrorf(text(lang, "reportTeamNoRun"), m.name(), m.name())
	}
	id, err := team.ParseRun(pos[0])
	if err != nil {
		return usageErrorf("%v", err)
	}
	t, err := m.openTeam(ctx, url, lang)
	if err != nil {
		return err
	}
	defer t.Close()
	run, err := t.Run(ctx, id)
	if err != nil {
		return err
	}
	name := team.RunName(id)
	var dir string
	if asJSON {
		if dir, err = os.MkdirTemp("", "flower-report-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else {
		if out == "" {
			out = filepath.Join(os.TempDir(), "flower-report-"+name+".html")
		}
		if out, err = filepath.Abs(out); err != nil {
			return fmt.Errorf("flower report: %w", err)
		}
		if dir, err = os.MkdirTemp(filepath.Dir(out), strings.TrimSuffix(filepath.Base(out), ".html")+"-files-"); err != nil {
			return fmt.Errorf("flower report: a folder for the run's files beside %s: %w; choose a writable file with -o FILE", out, err)
		}
	}
	ws := filepath.Join(dir, name)
	runDir := filepath.Join(ws, "runs")
	if err := t.LayOut(ctx, id, runDir, filepath.Join(ws, ".flower")); err != nil {
		return err
	}
	return m.renderReport(ctx, runDir, ws, out, open, asJSON, func(rep *report.Report) {
		rep.RunDir = name + " · " + t.URL()
		rep.Workspace = run.Repo + " " + run.Branch
	})
}

// currentUserName names this process's user: its account's name, or its
// uid when it has none.
func currentUserName() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}
