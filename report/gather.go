package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/guard"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/workbench"
)

// Records are the files whose presence makes a directory a run directory.
var Records = []string{flower.ManifestName, "events.jsonl", flower.LineageName, "sessions.db"}

// Gather reads the run directory runDir and the workbench of workspace
// ("" means the workspace lineage.json records, else runDir's parent). It
// fails only when runDir does not exist (ErrNoDir), holds no run
// (ErrNoRun) or ctx ends; every file it cannot read is a Problem.
func Gather(ctx context.Context, runDir, workspace string) (*Report, error) {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", runDir, ErrNoDir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w (it does not exist or is no directory); give the run directory of a flower run (default <workspace>/runs, or -w DIR / -r DIR)", abs, ErrNoDir)
	}
	found := false
	for _, name := range Records {
		if _, err := os.Lstat(filepath.Join(abs, name)); err == nil {
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: %w: it holds none of %s; give the run directory of a flower run (default <workspace>/runs, or -w DIR / -r DIR)", abs, ErrNoRun, strings.Join(Records, ", "))
	}
	g := &gatherer{r: &Report{RunDir: abs, Generated: time.Now(), Runs: []string{}, Problems: []string{}}}
	g.readLanguage()
	g.readLineage(workspace)
	g.r.Steps = g.readManifest(filepath.Join(abs, flower.ManifestName), false)
	g.r.Steps = append(g.r.Steps, g.readManifest(filepath.Join(abs, "aside", flower.ManifestName), true)...)
	g.readEvents(filepath.Join(abs, "events.jsonl"))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	g.main = g.readStore(ctx, filepath.Join(abs, "sessions.db"))
	g.aside = g.readStore(ctx, filepath.Join(abs, "aside", "sessions.db"))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	g.build()
	return g.r, nil
}

type gatherer struct {
	r           *Report
	events      []logged
	main, aside *storeData
	// decided are the goal guard's verdict events by run and judge label,
	// the last of each (verdictOf), made on first use.
	decided map[[2]string]*doc.Verdict
}

// logged is one line of events.jsonl.
type logged struct {
	Run  string `json:"run"`
	Step string `json:"step"`
	event.Event
}

// wbRoot is the workbench's folder: the workspace's, the isolated one
// beside it, or the one -W puts in the run directory, whichever exists.
func (g *gatherer) wbRoot() string {
	cands := []string{workbench.Location(g.r.Workspace, false), workbench.Location(g.r.Workspace, true), filepath.Join(g.r.RunDir, "workbench")}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
	}
	return cands[0]
}

func (g *gatherer) problem(format string, a ...any) {
	g.r.Problems = append(g.r.Problems, fmt.Sprintf(format, a...))
}

// readFile reads an optional file: nil, false when it does not exist; a
// problem when it exists and cannot be read.
func (g *gatherer) readFile(path string) ([]byte, bool) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		g.problem("%s could not be read: %v", path, err)
		return nil, false
	}
	return data, true
}

func (g *gatherer) readLanguage() {
	data, ok := g.readFile(filepath.Join(g.r.RunDir, flower.RunInfoName))
	if !ok {
		return
	}
	var info struct {
		Language string `json:"language"`
	}
	if err := json.Unmarshal(data, &info); err != nil {
		g.problem("%s is not JSON (%v): the language is unknown", filepath.Join(g.r.RunDir, flower.RunInfoName), err)
		return
	}
	g.r.Language = info.Language
}

func (g *gatherer) readLineage(workspace string) {
	path := filepath.Join(g.r.RunDir, flower.LineageName)
	var lin struct {
		Workspace string `json:"workspace"`
		Woke      int    `json:"woke"`
	}
	if data, ok := g.readFile(path); ok {
		if err := json.Unmarshal(data, &lin); err != nil {
			g.problem("%s is not a JSON object (%v): wakes and workspace unknown", path, err)
		}
	}
	g.r.Wakes = lin.Woke
	switch {
	case workspace != "":
		g.r.Workspace, _ = filepath.Abs(workspace)
	case lin.Workspace != "":
		g.r.Workspace = lin.Workspace
	default:
		g.r.Workspace = filepath.Dir(g.r.RunDir)
	}
}

func (g *gatherer) readManifest(path string, aside bool) []Step {
	rows, err := flower.ReadManifest(path)
	if err != nil {
		g.problem("%s could not be read (%v): the step table and the costs lack its rows", path, err)
		return nil
	}
	steps := make([]Step, 0, len(rows))
	for _, row := range rows {
		st := Step{Label: row.Step, Run: row.Run, OK: row.OK, Error: row.Error, CostUSD: row.CostUSD,
			TokensIn: row.TokensIn, TokensOut: row.TokensOut, NumTurns: row.NumTurns, Attempts: row.Attempts, Resumed: row.Resumed, SessionID: row.SessionID,
			Retired: row.Retired, Context: row.Context, StartedAt: row.StartedAt, EndedAt: row.EndedAt,
			DurationS: row.DurationS(), Errors: row.Errors, Aside: aside, text: row.Text}
		if aside {
			st.Role = "oracle"
		}
		steps = append(steps, st)
	}
	return steps
}

func (g *gatherer) readEvents(path string) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		g.problem("%s could not be read: %v", path, err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	bad, line := 0, 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var e logged
		if err := json.Unmarshal(b, &e); err != nil {
			bad++
			continue
		}
		g.events = append(g.events, e)
	}
	if err := sc.Err(); err != nil {
		g.problem("%s could not be read past line %d: %v", path, line, err)
	}
	if bad > 0 {
		g.problem("%s: %d of %d lines are not JSON events and were skipped", path, bad, line)
	}
}

// labelRE splits a step label: base, then #round<N>, #retry<N>, or a
// judge's ·judge#<N> / ·判定#<N>.
var labelRE = regexp.MustCompile(`^(.*?)(?:#round(\d+)|#retry(\d+)|(·judge|·判定)#(\d+))?$`)

func (g *gatherer) build() {
	r := g.r
	wake := map[string]int{}
	addRun := func(id string) {
		if id != "" && wake[id] == 0 {
			r.Runs = append(r.Runs, id)
			wake[id] = len(r.Runs)
		}
	}
	for _, s := range r.Steps {
		if !s.Aside {
			addRun(s.Run)
		}
	}
	for _, e := range g.events {
		addRun(e.Run)
	}
	g.roles(wake)
	g.timeline(wake)
	g.costs()
	g.threads()
	g.verdicts()
	g.questions()
	g.putBack()
	g.answers()
	g.wakes()
	g.tools()
	g.workbench()
	g.documents()
}

// roles gives each row its role, round and wake.
func (g *gatherer) roles(wake map[string]int) {
	clarify, goal := map[string]bool{}, map[string]bool{}
	for _, l := range []flower.Lang{"en", "zh"} {
		n := flower.StarterNamesFor(l)
		clarify[n.Clarify], goal[n.Goal] = true, true
	}
	rounded := map[string]bool{}
	for _, s := range g.r.Steps {
		m := labelRE.FindStringSubmatch(s.Label)
		if m[2] != "" || m[5] != "" {
			rounded[m[1]] = true
		}
	}
	for i := range g.r.Steps {
		s := &g.r.Steps[i]
		s.Wake = wake[s.Run]
		if s.Aside {
			continue
		}
		m := labelRE.FindStringSubmatch(s.Label)
		base := m[1]
		switch {
		case m[5] != "":
			s.Role, s.Round = "judge", atoi(m[5])
		case m[2] != "":
			s.Role, s.Round = "coordinator", atoi(m[2])
		case clarify[base]:
			s.Role = "clarifier"
		case goal[base]:
			s.Role = "judge"
		default:
			s.Role = "coordinator"
			if rounded[base] {
				s.Round = 1
			}
		}
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// timeline lists the steps, sessions, retries, waits and handoffs.
func (g *gatherer) timeline(wake map[string]int) {
	r := g.r
	asks := map[string]Moment{} // by tool_use id
	seen := map[string]bool{}   // step label + session
	for _, e := range g.events {
		m := Moment{Time: e.Time, Run: e.Run, Wake: wake[e.Run], Step: e.Step}
		switch e.Kind {
		case event.Step:
			m.Kind, m.Text = "step", e.Text
			if b := e.Float("budget"); b > 0 {
				r.Budget = b
			}
			if w := e.Int("window"); w > 0 {
				r.Window, r.HandoffAt = w, e.Int("handoff_at")
			}
		case event.Result:
			sid := e.Str("session_id")
			if sid == "" || seen[e.Step+"\x00"+sid] {
				continue
			}
			seen[e.Step+"\x00"+sid] = true
			m.Kind, m.Text = "session", sid
		case event.Retry:
			m.Kind, m.Text = "retry", e.Text
			if reason := e.Str("reason"); reason != "" {
				m.Kind = reason
			}
			if m.Kind == "interrupt" {
				m.Text = e.Str("words") // "" for an interrupt with no words
			}
		case event.Handoff:
			if e.Str("phase") != "done" {
				continue
			}
			if w := e.Int("window"); w > 0 && r.Window == 0 {
				r.Window = w
			}
			m.Kind, m.Text = "handoff", e.Text
		case event.Loop:
			m.Kind, m.Text = "loop", e.Text
		case event.System:
			if e.Text != "rate_limit_event" || e.Str("status") == "allowed" || e.Str("status") == "" {
				continue
			}
			m.Kind, m.Text = "rate_limit", e.Str("rate_limit_type")+" "+e.Str("status")
		case event.ToolCall:
			if e.Tool != human.AskTool {
				continue
			}
			q, _ := e.Payload["input"].(map[string]any)
			text, _ := q["question"].(string)
			m.Kind, m.Text = "ask", text
			asks[e.Str("id")] = m
			continue // placed when its answer came, with the wait
		case event.ToolResult:
			a, ok := asks[e.Str("tool_use_id")]
			if !ok {
				continue
			}
			delete(asks, e.Str("tool_use_id"))
			if !a.Time.IsZero() && !e.Time.IsZero() {
				a.Seconds = e.Time.Sub(a.Time).Seconds()
			}
			m = a
		default:
			continue
		}
		r.Timeline = append(r.Timeline, m)
	}
	for _, a := range asks { // still waiting
		a.Text += " (waiting)"
		r.Timeline = append(r.Timeline, a)
	}
	for _, s := range r.Steps {
		if s.Aside || s.Role != "judge" || s.Round == 0 || s.EndedAt.IsZero() {
			continue
		}
		state := string(g.verdictOf(s).State)
		if state == "" {
			state = "none"
		}
		r.Timeline = append(r.Timeline, Moment{Time: s.EndedAt, Run: s.Run, Wake: s.Wake, Step: s.Label, Kind: "verdict", Text: state})
	}
	sort.SliceStable(r.Timeline, func(i, j int) bool { return r.Timeline[i].Time.Before(r.Timeline[j].Time) })
	if r.Timeline == nil {
		r.Timeline = []Moment{}
	}
}

// costs splits every row's cost over rounds, roles, models and drivers.
func (g *gatherer) costs() {
	r := g.r
	c := Cost{Budget: r.Budget}
	byStep, byRound, byRole, byModel := newSums(), newSums(), newSums(), newSums()
	parts := map[[2]string]float64{}
	r.TokensIn, r.TokensOut = 0, 0
	for i, s := range r.Steps {
		c.Total += s.CostUSD
		// The tokens from the same rows as the cost: the figures the
		// terminal's ending showed.
		r.TokensIn += s.TokensIn
		r.TokensOut += s.TokensOut
		byStep.add(s.Label, s.CostUSD)
		if s.Round > 0 {
			byRound.add("round "+strconv.Itoa(s.Round), s.CostUSD)
		} else {
			byRound.add(OutsideRounds, s.CostUSD)
		}
		base := labelRE.FindStringSubmatch(s.Label)[1]
		st := g.main
		if s.Aside {
			st = g.aside
		}
		weights, total := map[[2]string]float64{}, 0.0
		for _, t := range st.turnsOf(r.Steps, i) {
			role := s.Role
			if t.sub {
				role = "worker"
			}
			w := t.usage.weight()
			weights[[2]string{role, modelName(t.model)}] += w
			total += w
		}
		if total == 0 {
			byRole.add(s.Role, s.CostUSD)
			byModel.add(UnknownModel, s.CostUSD)
			parts[[2]string{base, s.Role}] += s.CostUSD
			continue
		}
		for k, w := range weights {
			byRole.add(k[0], s.CostUSD*w/total)
			byModel.add(k[1], s.CostUSD*w/total)
			parts[[2]string{base, k[0]}] += s.CostUSD * w / total
		}
	}
	c.ByStep, c.ByRound, c.ByRole, c.ByModel = byStep.list(c.Total), byRound.list(c.Total), byRole.list(c.Total), byModel.list(c.Total)
	c.Drivers = drivers(parts, c.Total)
	r.Cost = c
}

func modelName(m string) string {
	if m == "" {
		return "unknown"
	}
	return m
}

type sums struct {
	order []string
	usd   map[string]float64
}

func newSums() *sums { return &sums{usd: map[string]float64{}} }

func (s *sums) add(name string, usd float64) {
	if _, ok := s.usd[name]; !ok {
		s.order = append(s.order, name)
	}
	s.usd[name] += usd
}

// list is the sums largest first (ties by name), each with its share of
// total.
func (s *sums) list(total float64) []Amount {
	out := []Amount{}
	for _, n := range s.order {
		a := Amount{Name: n, USD: s.usd[n]}
		if total > 0 {
			a.Share = a.USD / total
		}
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].USD != out[j].USD {
			return out[i].USD > out[j].USD
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// threads fills Threads, Sessions and the context watermark.
func (g *gatherer) threads() {
	r := g.r
	st := g.main
	r.Sessions = []Session{}
	r.Context = []Turn{}
	for _, id := range st.order {
		s := st.sessions[id]
		r.Sessions = append(r.Sessions, *s)
		r.Threads.Main.add(s.Main)
		r.Threads.Sub.add(s.Sub)
	}
	tok := r.Threads.Main.Tokens
	tok.add(r.Threads.Sub.Tokens)
	if n := tok.CacheRead + tok.CacheCreation; n > 0 {
		r.Threads.CacheReuse = float64(tok.CacheRead) / float64(n)
	}
	r.Tokens = tok
	for _, t := range g.aside.turns {
		r.Tokens.add(t.usage)
	}
	// A successor session: the second and later of a row's sessions.
	successor := map[string]bool{}
	for _, s := range r.Steps {
		if s.Aside {
			continue
		}
		sids := append(slices.Clone(s.Retired), s.SessionID)
		for _, sid := range sids[1:] {
			successor[sid] = true
		}
	}
	seen := map[string]bool{}
	for _, t := range st.mainTurns() {
		step := ""
		if i := rowOf(r.Steps, t, false); i >= 0 {
			step = r.Steps[i].Label
		}
		turn := Turn{N: len(r.Context) + 1, Step: step, Session: t.session, Time: t.time, Tokens: t.usage.Input + t.usage.CacheRead + t.usage.CacheCreation}
		if !seen[t.session] {
			seen[t.session] = true
			turn.Handoff = successor[t.session]
		}
		r.Context = append(r.Context, turn)
	}
}

func (t *Thread) add(o Thread) {
	t.Entries += o.Entries
	t.Turns += o.Turns
	t.Chars += o.Chars
	t.Tokens.add(o.Tokens)
}

func (g *gatherer) verdicts() {
	g.r.Verdicts = []Verdict{}
	for _, s := range g.r.Steps {
		m := labelRE.FindStringSubmatch(s.Label)
		if s.Aside || m[5] == "" {
			continue
		}
		v := g.verdictOf(s)
		state := string(v.State)
		if state == "" {
			state = "none"
		}
		g.r.Verdicts = append(g.r.Verdicts, Verdict{Step: s.Label, Round: s.Round, State: state, Reason: v.Reason, Failed: v.Failed})
	}
}

// questions reads the Q&A log (settled asks and delivered mail), pending.json
// (waiting asks) and replies not yet taken (mail on its way). The log is
// read from flower's own copy in the human's folder, never from the
// workspace's file, which a tool can write: a workspace log that differs
// from the copy is named (LogWrittenByTool), and one without a copy is
// read but marked unchecked.
func (g *gatherer) questions() {
	r := g.r
	r.Questions, r.Inbox = []Question{}, []Mail{}
	notes := filepath.Join(g.wbRoot(), "notes")
	hdir := human.Dir(r.RunDir)
	qRE := regexp.MustCompile(`^- \*\*Q\*\*\((.*?)\) (.*)$`)
	aRE := regexp.MustCompile(`^  - \*\*A\*\*\[(.*?)\] ?(.*)$`)
	for _, l := range []flower.Lang{flower.English, flower.Chinese} {
		t, names := human.TextsFor(l), flower.StarterNamesFor(l)
		logPath := filepath.Join(notes, names.Log)
		data, ok := g.readFile(filepath.Join(hdir, names.Log))
		if ok {
			if shown, _ := os.ReadFile(logPath); !bytes.Equal(shown, data) {
				r.LogWrittenByTool = logPath
			}
		} else if data, ok = g.readFile(logPath); ok {
			r.LogUnchecked = true
		}
		if !ok {
			continue
		}
		mRE := regexp.MustCompile(`^- \*\*` + regexp.QuoteMeta(t.LogMail) + `\*\*\((.*?)\) (.*)$`)
		var q *Question
		for _, line := range strings.Split(string(data), "\n") {
			switch m := qRE.FindStringSubmatch(line); {
			case m != nil:
				r.Questions = append(r.Questions, Question{ID: m[1], Question: m[2], State: "asked"})
				q = &r.Questions[len(r.Questions)-1]
				continue
			}
			if m := mRE.FindStringSubmatch(line); m != nil {
				r.Inbox = append(r.Inbox, Mail{ID: m[1], Text: m[2], State: "delivered"})
				q = nil
				continue
			}
			if q == nil {
				continue
			}
			if m := aRE.FindStringSubmatch(line); m != nil {
				q.State, q.Answer = m[1], m[2]
			} else if opts, ok := strings.CutPrefix(line, "  - "+t.LogOptions); ok {
				q.Options = strings.Split(opts, " / ")
			}
		}
	}
	if data, ok := g.readFile(filepath.Join(hdir, human.PendingName)); ok {
		var p human.PendingFile
		if err := json.Unmarshal(data, &p); err != nil {
			g.problem("%s is not JSON (%v): waiting questions unknown", filepath.Join(hdir, human.PendingName), err)
		}
		for _, pq := range p.Questions {
			r.Questions = append(r.Questions, Question{ID: pq.ID, Question: pq.Question, Options: pq.Options, State: "waiting"})
		}
	}
	replies, _ := os.ReadDir(filepath.Join(hdir, human.RepliesDir))
	for _, e := range replies {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(hdir, human.RepliesDir, e.Name())
		data, ok := g.readFile(path)
		if !ok {
			continue
		}
		var rep human.Reply
		if err := json.Unmarshal(data, &rep); err != nil {
			g.problem("%s is not a reply (%v)", path, err)
			continue
		}
		r.Inbox = append(r.Inbox, Mail{ID: rep.ID, Text: rep.Text, State: "not taken yet"})
	}
}

// putBack lists the goal guard's words on the files a tool wrote and it
// put back (the brief, the goal, the Q&A log), each once, in order: after
// the put-back the files show nothing, and these lines are what says a
// tool wrote them.
func (g *gatherer) putBack() {
	g.r.PutBack = []string{}
	for _, e := range g.events {
		if e.Kind == event.Task && e.Str("goal_guard") == "restored" && !slices.Contains(g.r.PutBack, e.Text) {
			g.r.PutBack = append(g.r.PutBack, e.Text)
		}
	}
}

// denyMarkers are the long literal parts of the walls' refusals, in every
// language: a main-thread error result holding one is a denial.
func denyMarkers() []string {
	var out []string
	verb := regexp.MustCompile(`%(\[\d+\])?[a-z]`)
	for _, t := range []guard.Texts{guard.ChineseTexts, guard.EnglishTexts} {
		for _, s := range []string{t.DelegateDeny, t.WhitelistDeny, t.WorkerDeny, t.WorkerMissing, t.GlanceBackground} {
			// Every long literal part: the event's text is cut at 500
			// characters, so a refusal may hold only its first.
			for _, part := range verb.Split(s, -1) {
				if len([]rune(strings.TrimSpace(part))) >= 10 {
					out = append(out, part)
				}
			}
		}
	}
	return out
}

// tools counts the calls, the denials and the spill pointers.
func (g *gatherer) tools() {
	r := g.r
	counts := map[string]*ToolCount{}
	calls := map[string]logged{}
	markers := denyMarkers()
	r.Denials = []Denial{}
	for _, e := range g.events {
		switch e.Kind {
		case event.ToolCall:
			c := counts[e.Tool]
			if c == nil {
				c = &ToolCount{Tool: e.Tool}
				counts[e.Tool] = c
			}
			if e.Subagent() {
				c.Sub++
			} else {
				c.Main++
			}
			calls[e.Str("id")] = e
		case event.ToolResult:
			if strings.Contains(e.Text, "/spill/") || strings.Contains(e.Text, string(filepath.Separator)+"spill"+string(filepath.Separator)) {
				r.Spills.Pointers++
			}
			if !e.Bool("is_error") || e.Subagent() {
				continue
			}
			for _, mk := range markers {
				if strings.Contains(e.Text, mk) {
					call := calls[e.Str("tool_use_id")]
					tried := call.Text
					if tried == "" && call.Payload["input"] != nil {
						b, _ := json.Marshal(call.Payload["input"])
						tried = string(b)
					}
					r.Denials = append(r.Denials, Denial{Step: e.Step, Tool: call.Tool, Tried: tried, Why: e.Text})
					break
				}
			}
		}
	}
	r.Tools = []ToolCount{}
	for _, c := range counts {
		r.Tools = append(r.Tools, *c)
	}
	sort.Slice(r.Tools, func(i, j int) bool {
		a, b := r.Tools[i], r.Tools[j]
		if a.Main+a.Sub != b.Main+b.Sub {
			return a.Main+a.Sub > b.Main+b.Sub
		}
		return a.Tool < b.Tool
	})
}

// workbench lists the spill files and the scripts with their runs.
func (g *gatherer) workbench() {
	r := g.r
	root := g.wbRoot()
	spill, _ := os.ReadDir(filepath.Join(root, "spill"))
	for _, e := range spill {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			r.Spills.Files++
			r.Spills.Bytes += info.Size()
		}
	}
	r.Scripts = []Script{}
	scripts, _ := os.ReadDir(filepath.Join(root, "scripts"))
	for _, e := range scripts {
		if e.IsDir() {
			continue
		}
		s := Script{Name: e.Name()}
		for _, ev := range g.events {
			if ev.Kind == event.ToolCall && ev.Tool == "Bash" && strings.Contains(ev.Text, "scripts/"+e.Name()) {
				s.Runs++
			}
		}
		r.Scripts = append(r.Scripts, s)
	}
}

// documents lists the notes (brief, goal, Q&A log, handoffs) and the
// bequest files.
func (g *gatherer) documents() {
	r := g.r
	r.Documents = []Document{}
	notes := filepath.Join(g.wbRoot(), "notes")
	entries, _ := os.ReadDir(notes)
	for _, e := range entries {
		if !e.IsDir() {
			r.Documents = append(r.Documents, Document{Name: "notes/" + e.Name(), Path: filepath.Join(notes, e.Name()), Exists: true})
		}
	}
	for _, name := range flower.BequestFiles {
		p := filepath.Join(r.Workspace, name)
		_, err := os.Stat(p)
		r.Documents = append(r.Documents, Document{Name: name + " (bequest)", Path: p, Exists: err == nil})
	}
	for _, e := range g.events {
		if e.Kind == event.Handoff && e.Str("phase") == "done" && e.Str("path") != "" {
			p := e.Str("path")
			if !slices.ContainsFunc(r.Documents, func(d Document) bool { return d.Path == p }) {
				_, err := os.Stat(p)
				r.Documents = append(r.Documents, Document{Name: "handoff " + e.Step, Path: p, Exists: err == nil})
			}
		}
	}
}

// answers puts each answer of the Q&A log beside its ask on the timeline:
// the asks in order, each taking the first unused logged question of the
// same text.
func (g *gatherer) answers() {
	used := make([]bool, len(g.r.Questions))
	for i := range g.r.Timeline {
		m := &g.r.Timeline[i]
		if m.Kind != "ask" {
			continue
		}
		for j, q := range g.r.Questions {
			if !used[j] && q.Question == m.Text && q.State != "asked" && q.State != "waiting" {
				used[j], m.Answer, m.Settled = true, q.Answer, q.State
				break
			}
		}
	}
}

// verdictOf is the verdict of judge step s: flower's decision, from the
// verdict event the goal guard logged with the judge's label. A round
// without one has no verdict (State ""): the judge's prose is never read
// for one, since words are not a decision.
func (g *gatherer) verdictOf(s Step) *doc.Verdict {
	if g.decided == nil {
		g.decided = map[[2]string]*doc.Verdict{}
		for _, e := range g.events {
			label := e.Str("label")
			if e.Kind != event.Verdict || label == "" {
				continue
			}
			v := &doc.Verdict{State: doc.State(e.Str("state")), Reason: e.Text}
			if failed, ok := e.Payload["failed"].([]any); ok {
				for _, f := range failed {
					if f, ok := f.(string); ok {
						v.Failed = append(v.Failed, f)
					}
				}
			}
			g.decided[[2]string{e.Run, label}] = v
		}
	}
	if v, ok := g.decided[[2]string{s.Run, s.Label}]; ok {
		return v
	}
	return &doc.Verdict{}
}
