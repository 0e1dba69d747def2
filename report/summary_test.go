package report

import (
	"encoding/json"
	"github.com/flowerrun/flower/human"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/report/reporttest"
)

// section is the page's section id, "" when the page lacks it.
func section(page, id string) string {
	start := strings.Index(page, `<section id="`+id+`"`)
	if start < 0 {
		return ""
	}
	end := strings.Index(page[start:], "</section>")
	return page[start : start+end]
}

func TestTheSummaryAnswersWhyItCostWhatItDid(t *testing.T) {
	f := newFixture(t)
	r := gather(t, f.runDir)
	if r.Request != fixtureRequest {
		t.Errorf("request %q, want %q", r.Request, fixtureRequest)
	}
	want := Outcome{State: Unreachable, Step: "work", Reason: "the service it needs is not reachable from here", Rounds: 1}
	if r.Outcome.State != want.State || r.Outcome.Step != want.Step || r.Outcome.Reason != want.Reason || r.Outcome.Rounds != want.Rounds {
		t.Errorf("outcome %+v, want %+v", r.Outcome, want)
	}
	// The wake ran from the clarify step's start to the judge's end; the
	// side question inside it adds nothing.
	if r.DurationS != 220 || len(r.ByWake) != 1 || !near(r.ByWake[0].CostUSD, 0.57) {
		t.Errorf("duration %v, wakes %+v", r.DurationS, r.ByWake)
	}
	all := r.Threads.Main.Tokens
	all.add(r.Threads.Sub.Tokens)
	if r.Tokens != all || r.Tokens.Output != 50+100+100+300+200+200+80 {
		t.Errorf("tokens %+v, the threads hold %+v", r.Tokens, all)
	}
	// Drivers: largest first, shares of the total, adding up to it.
	sum := 0.0
	for i, d := range r.Cost.Drivers {
		sum += d.USD
		if !near(d.Share, d.USD/r.Cost.Total) || (i > 0 && d.USD > r.Cost.Drivers[i-1].USD) {
			t.Errorf("driver %d %+v out of order or with a wrong share", i, d)
		}
	}
	if !near(sum, r.Cost.Total) || r.Cost.Drivers[0].Step != "work" || r.Cost.Drivers[0].Role != "coordinator" {
		t.Errorf("drivers %+v add up to %v of %v", r.Cost.Drivers, sum, r.Cost.Total)
	}
	for name, list := range map[string][]Amount{"step": r.Cost.ByStep, "round": r.Cost.ByRound, "role": r.Cost.ByRole, "model": r.Cost.ByModel} {
		if !slices.IsSortedFunc(list, func(a, b Amount) int { return -cmpFloat(a.USD, b.USD) }) {
			t.Errorf("the costs by %s are not largest first: %+v", name, list)
		}
		for _, a := range list {
			if !near(a.Share, a.USD/r.Cost.Total) {
				t.Errorf("by %s: %+v has a wrong share", name, a)
			}
		}
	}

	page := render(t, r)
	// The summary is the first section, and holds the answers.
	if first := strings.Index(page, "<section"); first != strings.Index(page, `<section id="summary"`) {
		t.Errorf("the summary is not the first section")
	}
	sum1 := section(page, "summary")
	for _, want := range []string{fixtureRequest, `id="outcome" class="o-unreachable"`, "Unreachable: in step work the judge ruled the goal cannot be reached or verified here. 1 round ran.", want.Reason,
		`id="total-cost">$0.5700<`, "3m 40s", "of a $2.5000 budget (22.8% spent)"} {
		if !strings.Contains(sum1, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	drivers := regexp.MustCompile(`<li class="driver"><span>([^<]*)</span>.*?<span class="n">([^<]*)</span></li>`).FindAllStringSubmatch(sum1, -1)
	if len(drivers) != 3 {
		t.Fatalf("%d drivers in the summary, want 3", len(drivers))
	}
	for i, d := range drivers {
		want := r.Cost.Drivers[i]
		if d[1] != want.Step+" · "+tr("en", "role_"+want.Role) || !strings.HasSuffix(d[2], strconv.Itoa(int(want.Share*100+0.5))+"%") {
			t.Errorf("driver %d shows %q %q, want %+v", i, d[1], d[2], want)
		}
	}
	// The catch-alls are explained where they appear.
	cost := section(page, "cost")
	if !strings.Contains(cost, `id="outside-note"`) || !strings.Contains(cost, `id="unknown-note"`) {
		t.Errorf("the cost section does not explain outside rounds and model unknown")
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// endingRun writes a run directory of one wake whose rows are given, its
// step events saying which of total steps each was.
func endingRun(t *testing.T, lang string, total int, rows []flower.StepResult) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "runs")
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	var events []string
	index := 0
	seen := map[string]bool{}
	for i := range rows {
		if rows[i].StartedAt.IsZero() {
			rows[i].StartedAt = t0.Add(time.Duration(i) * time.Minute)
		}
		if rows[i].EndedAt.IsZero() && rows[i].Attempts >= 0 {
			rows[i].EndedAt = rows[i].StartedAt.Add(30 * time.Second)
		}
		if rows[i].Attempts < 0 { // still running
			rows[i].Attempts = 1
			rows[i].EndedAt = time.Time{}
		}
		base := labelRE.FindStringSubmatch(rows[i].Step)[1]
		if !seen[base] && !strings.Contains(rows[i].Step, "·") {
			seen[base] = true
			index++
			b, _ := json.Marshal(map[string]any{"run": "r1", "step": base, "kind": "step", "text": base, "time": rows[i].StartedAt,
				"payload": map[string]any{"index": index, "total": total}})
			events = append(events, string(b))
		}
		// A judge's round, decided: flower logs its decision as a verdict
		// event with the judge's label (the fixture writes the decision as
		// a verdict document in the row's text).
		if v := doc.ParseVerdict(rows[i].Text); strings.Contains(rows[i].Step, "·judge#") && v.State != "" && rows[i].Attempts >= 0 {
			b, _ := json.Marshal(map[string]any{"run": "r1", "step": base, "kind": "verdict", "text": v.Reason, "time": rows[i].EndedAt,
				"payload": map[string]any{"step": base, "state": string(v.State), "label": rows[i].Step, "failed": v.Failed}})
			events = append(events, string(b))
		}
	}
	if _, err := flower.WriteManifest(filepath.Join(dir, flower.ManifestName), "r1", rows); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "events.jsonl"), strings.Join(events, "\n")+"\n")
	writeFile(t, filepath.Join(dir, flower.RunInfoName), `{"language":"`+lang+`"}`)
	return dir
}

func TestEachEndingIsSaidWithItsReason(t *testing.T) {
	verdict := func(state, reason string) string {
		return "## Conclusion\n" + state + "\n\n## Reason\n" + reason + "\n\n## Not passed\n- x"
	}
	ok := func(step string) flower.StepResult {
		return flower.StepResult{Step: step, OK: true, CostUSD: 0.1, Attempts: 1}
	}
	judge := func(step, text string) flower.StepResult {
		r := ok(step)
		r.Text = text
		return r
	}
	failed := func(step, err string) flower.StepResult {
		return flower.StepResult{Step: step, Error: err, CostUSD: 0.1, Attempts: 1}
	}
	incomplete := ok("clarify")
	incomplete.Text = "## Goal\nexport invoices\n\n## Acceptance criteria\n- a CSV per month"
	running := ok("work#round2")
	running.Attempts = -1
	for _, c := range []struct {
		name  string
		total int
		rows  []flower.StepResult
		want  Outcome
		en    string // in the English sentence
		zh    string // in the Chinese one
	}{
		{"achieved", 3, []flower.StepResult{ok("clarify"), ok("goal"), ok("work"), judge("work·judge#1", verdict("not yet", "no tests")),
			ok("work#round2"), judge("work·judge#2", verdict("achieved", "all pass")), ok("work·bequest")},
			Outcome{State: Achieved, Step: "work", Reason: "all pass", Rounds: 2}, "Achieved in step work. 2 rounds ran.", "已达成:步骤 work。共跑了 2 轮。"},
		{"not achieved", 3, []flower.StepResult{ok("clarify"), ok("goal"), ok("work"), judge("work·judge#1", verdict("not yet", "no tests")),
			ok("work#round2"), judge("work·judge#2", verdict("not yet", "still no tests"))},
			Outcome{State: NotAchieved, Step: "work", Reason: "still no tests", Rounds: 2}, "Not achieved: in step work the rounds ran out", "未达成"},
		{"unreachable", 3, []flower.StepResult{ok("clarify"), ok("goal"), ok("work"), judge("work·judge#1", verdict("unreachable", "needs the staging VPN"))},
			Outcome{State: Unreachable, Step: "work", Reason: "needs the staging VPN", Rounds: 1}, "Unreachable", "无法达成"},
		{"killed by Ctrl-C twice", 3, []flower.StepResult{ok("clarify"), ok("goal"), failed("work", flower.KilledBySignal)},
			Outcome{State: StoppedByHuman, Step: "work", Reason: flower.KilledBySignal}, "Stopped by the human in step work", "被人叫停"},
		{"a step's error that mentions Ctrl-C", 3, []flower.StepResult{ok("clarify"), failed("goal", "exit status 130: the test script says press Ctrl-C to stop")},
			Outcome{State: Failed, Step: "goal", Reason: "exit status 130: the test script says press Ctrl-C to stop"}, "Failed in step goal", "失败"},
		{"cancelled by Ctrl-C", 3, []flower.StepResult{ok("clarify"), failed("goal", "cancelled: "+flower.QuitByHuman)},
			Outcome{State: StoppedByHuman, Step: "goal", Reason: "cancelled: flower: quit by Ctrl-C"}, "Stopped by the human in step goal", "被人叫停"},
		{"failed", 3, []flower.StepResult{ok("clarify"), ok("goal"), failed("work", "the run budget of $1.00 is spent ($1.0200 so far). Stopped cleanly here; raise the budget and run again to continue session s1.")},
			Outcome{State: Failed, Step: "work", Reason: "the run budget of $1.00 is spent ($1.0200 so far). Stopped cleanly here; raise the budget and run again to continue session s1."},
			"Failed in step work", "失败"},
		{"the brief lacks sections", 3, []flower.StepResult{incomplete},
			Outcome{State: Halted, Step: "clarify", Missing: []string{"Boundaries", "Unknowns and assumptions"}}, "Stopped after step clarify: its check did not pass", "检查没有通过"},
		{"an unreadable verdict", 3, []flower.StepResult{ok("clarify"), ok("goal"), ok("work"), judge("work·judge#1", "I think it is mostly fine")},
			Outcome{State: Halted, Step: "work", Unreadable: true, Rounds: 1}, "Stopped after step work", "停下"},
		{"a workflow of its own", 2, []flower.StepResult{ok("plan"), ok("build")},
			Outcome{State: Done, Step: "build"}, "Done: every step passed", "完成"},
		{"still running", 3, []flower.StepResult{ok("clarify"), ok("goal"), ok("work"), judge("work·judge#1", verdict("not yet", "x")), running},
			Outcome{State: Running, Step: "work", Rounds: 2}, "Still running in step work", "仍在步骤 work 运行"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := endingRun(t, "en", c.total, slices.Clone(c.rows))
			r := gather(t, dir)
			got := r.Outcome
			if got.State != c.want.State || got.Step != c.want.Step || got.Reason != c.want.Reason || got.Rounds != c.want.Rounds ||
				!slices.Equal(got.Missing, c.want.Missing) || got.Unreadable != c.want.Unreadable {
				t.Fatalf("outcome %+v, want %+v", got, c.want)
			}
			page := section(render(t, r), "summary")
			if !strings.Contains(page, `class="o-`+c.want.State+`"`) || !strings.Contains(page, c.en) {
				t.Errorf("the English summary does not say %q:\n%s", c.en, page)
			}
			reason := c.want.Reason
			if reason == flower.KilledBySignal {
				reason = "flower was stopped (Ctrl-C twice, or a signal)"
			}
			for _, want := range []string{reason, strings.Join(c.want.Missing, ", ")} {
				if want != "" && !strings.Contains(page, want) {
					t.Errorf("the summary lacks the reason %q:\n%s", want, page)
				}
			}
			if c.want.Unreadable && !strings.Contains(page, "has no verdict") {
				t.Errorf("the summary does not say the last round has no verdict")
			}
			r.Language = "zh"
			if zh := section(render(t, r), "summary"); !strings.Contains(zh, c.zh) {
				t.Errorf("the Chinese summary does not say %q:\n%s", c.zh, zh)
			}
		})
	}
}

func TestInterruptWordsAndAnswersAreOnTheTimeline(t *testing.T) {
	f := newFixture(t)
	ev, _ := os.ReadFile(filepath.Join(f.runDir, "events.jsonl"))
	var more string
	for i, words := range []string{"use tabs, not spaces", ""} {
		b, _ := json.Marshal(map[string]any{"run": "run-1", "step": "work", "kind": "retry", "text": "interrupted: resuming", "time": f.t0.Add(time.Duration(80+i) * time.Second),
			"payload": map[string]any{"step": "work", "attempt": 1, "reason": "interrupt", "words": words}})
		more += string(b) + "\n"
	}
	writeFile(t, filepath.Join(f.runDir, "events.jsonl"), string(ev)+more)
	r := gather(t, f.runDir)
	var got []string
	for _, m := range r.Timeline {
		switch m.Kind {
		case "interrupt":
			got = append(got, "interrupt:"+m.Text)
		case "ask":
			got = append(got, "ask:"+m.Text+"→"+m.Answer)
		case "verdict":
			got = append(got, "verdict:"+m.Step+":"+m.Text)
		}
	}
	want := []string{"ask:Which database?→PostgreSQL", "interrupt:use tabs, not spaces", "interrupt:", "verdict:work·judge#1:unreachable"}
	if !slices.Equal(got, want) {
		t.Errorf("timeline %q, want %q", got, want)
	}
	tl := section(render(t, r), "timeline")
	for _, want := range []string{`<tr class="m-interrupt">`, "use tabs, not spaces", "(no words)", "<td>PostgreSQL</td>", `<tr class="m-verdict">`} {
		if !strings.Contains(tl, want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
}

var cjk = regexp.MustCompile(`\p{Han}`)

func TestThePageSpeaksTheRunsLanguage(t *testing.T) {
	for _, l := range []string{"en", "zh"} {
		t.Run(l, func(t *testing.T) {
			run := reporttest.LongRun(t, reporttest.Long{Lang: l, Rounds: 3, TurnsPerRound: 4})
			page := render(t, gather(t, run.RunDir))
			if !strings.Contains(page, `<html lang="`+l+`">`) {
				t.Errorf("the page is not marked %s", l)
			}
			for _, key := range []string{"summary", "drivers", "context", "timeline", "cost_title", "verdicts", "steps", "legend_context", "legend_ok"} {
				if !strings.Contains(page, texts[l][key]) {
					t.Errorf("the %s page lacks its %s label %q", l, key, texts[l][key])
				}
			}
			if l == "en" && cjk.MatchString(page) {
				t.Errorf("the English page holds Chinese: %q", cjk.FindAllString(page, 5))
			}
			if l == "zh" && strings.Contains(page, texts["en"]["summary"]) {
				t.Errorf("the Chinese page has an English heading")
			}
		})
	}
}

func TestEveryLabelIsInBothLanguages(t *testing.T) {
	for key := range texts["en"] {
		if _, ok := texts["zh"][key]; !ok {
			t.Errorf("%s has no Chinese text", key)
		}
	}
	for key := range texts["zh"] {
		if _, ok := texts["en"][key]; !ok {
			t.Errorf("%s has no English text", key)
		}
	}
	// Every label the template names, and every value it translates.
	for _, m := range regexp.MustCompile(`\{\{-?\s*T[f]? "([a-z_]+)"`).FindAllStringSubmatch(pageText, -1) {
		if _, ok := texts["en"][m[1]]; !ok {
			t.Errorf("the page uses %s, which has no text", m[1])
		}
	}
	for _, kind := range []string{"step", "session", "retry", "interrupt", "usage_limit", "offline", "handoff", "ask", "verdict", "rate_limit", "loop"} {
		if _, ok := texts["zh"]["kind_"+kind]; !ok {
			t.Errorf("the timeline's kind %s has no text", kind)
		}
	}
	for _, s := range []string{Achieved, NotAchieved, Unreachable, StoppedByHuman, Failed, Halted, Done, Running, Unknown} {
		if _, ok := texts["zh"]["out_"+s]; !ok {
			t.Errorf("the outcome %s has no sentence", s)
		}
	}
	for _, key := range []string{"why_killed", "why_interrupted", "rounds_ran", "rounds_1", "rounds_n", "round_n", "outside_rounds", "unknown_model"} {
		if _, ok := texts["en"][key]; !ok {
			t.Errorf("%s, which the page's functions use, has no text", key)
		}
	}
	for _, role := range []string{"coordinator", "worker", "judge", "clarifier", "oracle"} {
		if _, ok := texts["zh"]["role_"+role]; !ok {
			t.Errorf("the role %s has no text", role)
		}
	}
}

func TestUntrustedTextIsEscapedAndThePolicyKept(t *testing.T) {
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	run := reporttest.LongRun(t, reporttest.Long{Lang: "en", Rounds: 3, TurnsPerRound: 4, Untrusted: evil})
	// A run directory whose name is hostile, holding a file that cannot
	// be read: the problem names it.
	bad := filepath.Join(filepath.Dir(run.RunDir), "runs"+strings.ReplaceAll(evil, "/", ""))
	if err := os.Rename(run.RunDir, bad); err != nil {
		t.Fatal(err)
	}
	t.Setenv(human.StateDirEnv, t.TempDir())
	os.MkdirAll(human.Dir(bad), 0o700)
	writeFile(t, filepath.Join(human.Dir(bad), "pending.json"), "{")
	r := gather(t, bad)
	if len(r.Problems) == 0 || !strings.Contains(r.Problems[0], "<img") {
		t.Fatalf("problems %q do not name the hostile path", r.Problems)
	}
	page := render(t, r)
	for _, tag := range []string{"<script", "<img", "onerror=alert"} {
		if strings.Contains(strings.ToLower(page), tag) && tag != "onerror=alert" {
			t.Errorf("the page holds %s raw", tag)
		}
	}
	if regexp.MustCompile(`<[^>]*onerror=`).MatchString(page) {
		t.Error("an attribute of the untrusted text became markup")
	}
	// Each path shows the text, escaped.
	for _, id := range []string{"summary", "problems", "timeline", "verdicts", "questions", "steps"} {
		if !strings.Contains(section(page, id), "&lt;script&gt;alert(1)") {
			t.Errorf("section %s does not show the untrusted text escaped", id)
		}
	}
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`) {
		t.Error("the page lost its content security policy")
	}
}

func TestEmptyPanelsAreLeftOut(t *testing.T) {
	dir := endingRun(t, "en", 1, []flower.StepResult{{Step: "plan", OK: true, CostUSD: 0.2, Attempts: 1}})
	page := render(t, gather(t, dir))
	var shown []string
	for _, id := range Sections {
		if section(page, id) != "" {
			shown = append(shown, id)
		}
	}
	if want := []string{"summary", "timeline", "cost", "steps"}; !slices.Equal(shown, want) {
		t.Errorf("sections shown %v, want %v", shown, want)
	}
	// Nothing of the empty panels' old placeholders is left.
	for _, gone := range []string{"no judge ruled", "no question was asked", "no message from the human", "Every file that exists could be read"} {
		if strings.Contains(page, gone) {
			t.Errorf("the page still says %q", gone)
		}
	}
}

// polylineYs are the context line's y coordinates.
func polylineYs(t *testing.T, page string) []float64 {
	t.Helper()
	m := regexp.MustCompile(`<polyline class="watermark"[^>]*points="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no context line")
	}
	var ys []float64
	for _, p := range strings.Fields(m[1]) {
		_, y, _ := strings.Cut(p, ",")
		v, err := strconv.ParseFloat(y, 64)
		if err != nil {
			t.Fatal(err)
		}
		ys = append(ys, v)
	}
	return ys
}

func TestTheContextChartIsScaledToItsData(t *testing.T) {
	plot := float64(chartH - padT - padB)
	for _, c := range []struct {
		name              string
		tokens            []int
		window, handoffAt int
		limits            int // dashed lines drawn
		offScale          bool
	}{
		// The demo's case: a few thousand tokens under a window of a
		// million. Before, the line lay flat on the axis.
		{"far under the window", []int{8000, 9000, 12000, 10000, 15000}, 1_000_000, 750_000, 0, true},
		{"near the threshold", []int{90_000, 120_000, 145_000, 30_000}, 200_000, 150_000, 2, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Report{Window: c.window, HandoffAt: c.handoffAt, Generated: time.Now()}
			for i, v := range c.tokens {
				r.Context = append(r.Context, Turn{N: i + 1, Step: "work", Tokens: v})
			}
			page := render(t, r)
			ys := polylineYs(t, page)
			spread := slices.Max(ys) - slices.Min(ys)
			lo, hi := slices.Min(c.tokens), slices.Max(c.tokens)
			// The line spans at least half the share of the plot that
			// its data spans of its own top.
			if want := 0.5 * plot * float64(hi-lo) / float64(hi); spread < want {
				t.Errorf("the line spans %.0f of %.0f pixels, want at least %.0f", spread, plot, want)
			}
			if n := strings.Count(page, `<line class="limit"`); n != c.limits {
				t.Errorf("%d limit lines drawn, want %d", n, c.limits)
			}
			if got := strings.Contains(section(page, "context"), html.EscapeString(texts["en"]["off_scale"])); got != c.offScale {
				t.Errorf("the off-scale note shown: %v", got)
			}
		})
	}
}

func TestALongRunStaysReadable(t *testing.T) {
	run := reporttest.LongRun(t, reporttest.Long{Lang: "en"})
	r := gather(t, run.RunDir)
	if len(r.Problems) != 0 || len(r.Context) < 500 || run.MainTurns != len(r.Context) || !near(r.Cost.Total, run.Total) {
		t.Fatalf("problems %q, %d turns (the store has %d), cost %v of %v", r.Problems, len(r.Context), run.MainTurns, r.Cost.Total, run.Total)
	}
	if len(r.ByWake) != 2 || r.ByWake[0].Outcome.State != StoppedByHuman || r.ByWake[1].Outcome.State != Achieved || r.Outcome.Rounds != 25 {
		t.Errorf("wakes %+v", r.ByWake)
	}
	page := render(t, r)
	if len(page) > 2<<20 {
		t.Errorf("the page is %d bytes, over 2 MB", len(page))
	}
	for _, id := range Sections {
		if has := section(page, id) != ""; has != (id != "problems") {
			t.Errorf("section %s shown: %v", id, has)
		}
	}
	// Readable: one line, no dot per turn; a row per step name and role,
	// not per round; a column per wake.
	if n := strings.Count(page, "<circle"); n != 0 {
		t.Errorf("%d dots on a chart of %d turns", n, len(r.Context))
	}
	if lanes := strings.Count(section(page, "timeline"), `text-anchor="end" fill="#333"`); lanes > 6 {
		t.Errorf("the timeline chart has %d rows", lanes)
	}
	if n := strings.Count(page, `class="wake-column"`); n != 2 {
		t.Errorf("%d wake columns, want 2", n)
	}
	if got := regexp.MustCompile(`<th>wake \d+</th>`).FindAllString(section(page, "summary"), -1); len(got) != 2 {
		t.Errorf("the summary's wakes table has columns %q", got)
	}
	t.Logf("%d turns, %d handoffs, page %d bytes", len(r.Context), run.Handoffs, len(page))
}

// The page drops the control characters of what it shows, but the report
// it was given (which --json prints) keeps the data as read.
func TestRenderLeavesTheReportAsItWas(t *testing.T) {
	const odd = "reason \x1b[31mred\u202eTXT.EXE"
	r := &Report{Language: "en", Verdicts: []Verdict{{Step: "work", State: "not_yet", Reason: odd, Failed: []string{odd}}}}
	page := render(t, r)
	if strings.Contains(page, "\x1b") || strings.Contains(page, "\u202e") || !strings.Contains(page, "reason redTXT.EXE") {
		t.Errorf("the page shows %q", section(page, "verdicts"))
	}
	if r.Verdicts[0].Reason != odd || r.Verdicts[0].Failed[0] != odd {
		t.Errorf("Render changed the report: %q %q", r.Verdicts[0].Reason, r.Verdicts[0].Failed)
	}
}

// A wake whose first step has not ended names no step: the headline read
// "Still running in step , or ended" while a run woke.
func TestARunningWakeWithNoStepEndedNamesNoStep(t *testing.T) {
	ok := flower.StepResult{Step: "clarify", OK: true, CostUSD: 0.1, Attempts: 1}
	r := gather(t, endingRun(t, "en", 3, []flower.StepResult{ok}))
	r.Outcome = Outcome{State: Running}
	for lang, want := range map[string]string{"en": "Still running: no step has ended yet", "zh": "仍在运行:还没有哪一步结束"} {
		r.Language = lang
		page := section(render(t, r), "summary")
		if !strings.Contains(page, want) || strings.Contains(page, "step ,") || strings.Contains(page, "步骤  运行") {
			t.Errorf("%s: the summary does not say %q:\n%s", lang, want, page)
		}
	}
}

// An ask nobody answered shows how it was settled, in words, on the
// timeline: the text the model was given instead ("decide yourself…") is
// not the person's answer, and crushed the timeline's other columns.
func TestAnAskNobodyAnsweredShowsHowItWasSettled(t *testing.T) {
	f := newFixture(t)
	modelText := "Nobody answered in time: decide for yourself, and record the assumption in the notes so that a person can check it later."
	for state, words := range map[string][2]string{
		"timeout":   {"no answer in time", "没有按时回答"},
		"cancelled": {"cancelled", "已取消"},
		"declined":  {"skipped", "跳过了"},
	} {
		writeFile(t, filepath.Join(f.ws, ".flower", "notes", "qa-log.md"),
			"# Q&A\n\n- **Q**(q1) Which database?\n  - Options: PostgreSQL / SQLite\n  - **A**["+state+"] "+modelText+"\n")
		r := gather(t, f.runDir)
		i := slices.IndexFunc(r.Timeline, func(m Moment) bool { return m.Kind == "ask" })
		if i < 0 || r.Timeline[i].Settled != state {
			t.Fatalf("%s: the timeline's ask: %+v", state, r.Timeline)
		}
		for k, lang := range []string{"en", "zh"} {
			r.Language = lang
			tl := section(render(t, r), "timeline")
			if !strings.Contains(tl, words[k]) || strings.Contains(tl, "decide for yourself") {
				t.Errorf("%s/%s: the timeline does not say %q, or shows the model's text:\n%s", state, lang, words[k], tl)
			}
		}
	}
}
