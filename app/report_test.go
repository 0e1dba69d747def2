package app

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/report"
	"github.com/flowerrun/flower/report/reporttest"
)

// smallRun is a run directory with one manifest row and nothing else.
func smallRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "runs")
	now := time.Now()
	_, err := flower.WriteManifest(filepath.Join(dir, flower.ManifestName), "r1",
		[]flower.StepResult{{Step: "work", SessionID: "s1", OK: true, CostUSD: 0.25, NumTurns: 2, Attempts: 1, StartedAt: now.Add(-time.Minute), EndedAt: now}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReportCommand(t *testing.T) {
	t.Parallel()
	run := smallRun(t)
	t.Run("writes the page and prints its path", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "page.html")
		code, stdout, stderr := runCmd(t, "", "report", "-o", out, run)
		if code != ExitOK || strings.TrimSpace(stdout) != out || stderr != "" {
			t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
		}
		page, err := os.ReadFile(out)
		if err != nil || !strings.Contains(string(page), `id="total-cost">$0.2500<`) {
			t.Errorf("page: %v\n%.400s", err, page)
		}
	})
	t.Run("the default run directory is the workspace's", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "page.html")
		code, _, stderr := runCmd(t, "", "-w", filepath.Dir(run), "report", "-o", out)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, stdout, stderr := runCmd(t, "", "report", "--json", run)
		var r report.Report
		if code != ExitOK || json.Unmarshal([]byte(stdout), &r) != nil || r.Cost.Total != 0.25 || len(r.Steps) != 1 {
			t.Errorf("exit %d %s %s", code, stdout, stderr)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing directory", []string{"report", filepath.Join(t.TempDir(), "gone")}, ExitFailure, "no such run directory"},
		{"no run there", []string{"report", t.TempDir()}, ExitFailure, "no flower run in this directory"},
		{"two directories", []string{"report", run, run}, ExitUsage, "takes one run directory"},
		{"json and a page", []string{"report", "--json", "-o", "x.html", run}, ExitUsage, "writes no page"},
		{"unknown flag", []string{"report", "--pdf", run}, ExitUsage, "pdf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, "", c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("exit %d (want %d), stderr %q (want %q on one line)", code, c.code, stderr, c.want)
			}
		})
	}
	t.Run("help", func(t *testing.T) {
		_, stdout, _ := runCmd(t, "", "report", "--help")
		for _, want := range []string{"Usage: flower report", "--output FILE", "--open", "--json", "Examples:", "flower report --json", "Exit codes:"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("report --help lacks %q", want)
			}
		}
		_, stdout, _ = runCmd(t, "", "--help")
		if !strings.Contains(stdout, "flower report [run_dir]") {
			t.Errorf("flower --help does not list report:\n%s", stdout)
		}
	})
	t.Run("open", func(t *testing.T) {
		bin, got := t.TempDir(), filepath.Join(t.TempDir(), "opened")
		script := "#!/bin/sh\nprintf %s \"$1\" > " + got + "\n"
		if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "page.html")
		var so, se bytes.Buffer
		m := &Command{Stdin: strings.NewReader(""), Stdout: &so, Stderr: &se, Getenv: func(k string) string {
			if k == "PATH" {
				return bin
			}
			return ""
		}}
		if code := m.Run(context.Background(), []string{"report", "--open", "-o", out, run}); code != ExitOK {
			t.Fatalf("exit %d: %s", code, se.String())
		}
		if data, err := os.ReadFile(got); err != nil || string(data) != out {
			t.Errorf("xdg-open got %q %v, want %s", data, err, out)
		}
		// No opener: said, and the page is still written.
		so.Reset()
		se.Reset()
		m.Getenv = func(string) string { return "" }
		if code := m.Run(context.Background(), []string{"report", "--open", "-o", out, run}); code != ExitOK || !strings.Contains(se.String(), "no xdg-open or open") {
			t.Errorf("exit %d stderr %q", code, se.String())
		}
	})
}

// chromiumPath is the headless browser of the page test: Debian's
// chromium, which scripts/test installs.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: scripts/test installs it (apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium (scripts/test does it) to run the page test")
	return ""
}

// chromium runs headless chromium on url with no network: every request
// would go to a proxy on a dead port, and the net log records what was
// asked for. It returns the output and the URLs that pages requested.
func chromium(t *testing.T, bin, url string, args ...string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	netlog := filepath.Join(dir, "net.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	argv := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-default-apps", "--proxy-server=127.0.0.1:9",
		"--proxy-bypass-list=<-loopback>", "--user-data-dir=" + filepath.Join(dir, "profile"), "--log-net-log=" + netlog}, args...)
	cmd := exec.CommandContext(ctx, bin, append(argv, url)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	data, err := os.ReadFile(netlog)
	if err != nil {
		t.Fatalf("chromium wrote no net log: %v", err)
	}
	// A request shows as an event whose params hold its url and its
	// priority. The browser's own background fetches (its clock, its
	// updater, spelling dictionaries) all run at priority IDLE; what a
	// page loads never does. The log of a browser that exits may lack its
	// closing brackets, so it is searched, not parsed whole.
	var urls []string
	for _, m := range netlogParams.FindAllSubmatch(data, -1) {
		var p struct {
			URL      string `json:"url"`
			Priority string `json:"priority"`
		}
		if json.Unmarshal(m[1], &p) == nil && p.URL != "" && p.Priority != "" && p.Priority != "IDLE" {
			urls = append(urls, p.URL)
		}
	}
	return stdout.String(), urls
}

var netlogParams = regexp.MustCompile(`"params":(\{[^{}]*\})`)

func requestsOut(urls []string) []string {
	var out []string
	for _, u := range urls {
		if !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "about:") && !strings.HasPrefix(u, "chrome") {
			out = append(out, u)
		}
	}
	return out
}

func TestReportOfTheDemoLoadsInHeadlessChromium(t *testing.T) {
	t.Parallel()
	cli := claudetest.CLIPath(t)
	browser := chromiumPath(t)
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	demo := exec.CommandContext(ctx, flowerBin, "demo", "--lang", "en", "-w", ws)
	demo.Env = append(claudetest.BaseEnv(), "HOME="+t.TempDir(), "FLOWER_CLAUDE="+cli)
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("flower demo: %v\n%s", err, out)
	}
	runDir := filepath.Join(ws, "runs")
	page := filepath.Join(t.TempDir(), "report.html")
	rep := exec.CommandContext(ctx, flowerBin, "report", "-o", page, runDir)
	out, err := rep.Output()
	if err != nil || strings.TrimSpace(string(out)) != page {
		t.Fatalf("flower report: %v %q", err, out)
	}
	js, err := exec.CommandContext(ctx, flowerBin, "report", "--json", runDir).Output()
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(js, &r); err != nil {
		t.Fatal(err)
	}
	checkDemoFigures(t, &r, runDir)
	html, _ := os.ReadFile(page)
	for _, want := range []string{"verdict-not_yet", "verdict-achieved", "What should hello.txt say?", `<polyline class="watermark"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the page lacks %q", want)
		}
	}

	// The check of the net log can fail: a page with no policy that
	// loads an image shows in it.
	control := filepath.Join(t.TempDir(), "control.html")
	os.WriteFile(control, []byte(`<!DOCTYPE html><img src="http://127.0.0.1:9/probe.png">`), 0o600)
	if _, urls := chromium(t, browser, "file://"+control, "--dump-dom"); len(requestsOut(urls)) == 0 {
		t.Fatalf("the net log shows no request of a page that makes one: %v", urls)
	}

	dom, urls := chromium(t, browser, "file://"+page, "--dump-dom")
	if out := requestsOut(urls); len(out) > 0 {
		t.Errorf("the page asked for %v", out)
	}
	// The demo has no problem, no inbox message and no workbench script
	// (and its fake reports no cache tokens): those panels are left out.
	empty := []string{"problems", "inbox", "workbench"}
	if r.Tokens.CacheRead+r.Tokens.CacheCreation == 0 {
		empty = append(empty, "cache")
	}
	for _, id := range report.Sections {
		if has := strings.Contains(dom, `<section id="`+id+`"`); has != !slices.Contains(empty, id) {
			t.Errorf("section %s in the DOM: %v", id, has)
		}
	}
	boxes := layout(t, browser, frame{page, 1200})[0]
	checkSummaryFirst(t, boxes, 900, "Achieved")
	img := screenshot(t, browser, page, 1200, int(boxes["timeline-chart"].Bottom)+10)
	if n := countColor(img, boxes["context-chart"], report.ContextLineColor); n < 200 {
		t.Errorf("the context chart shows %d pixels of its line: blank", n)
	}
}

// box is an element's place on the page, in CSS pixels from the top of
// the page, with its text and, for a list, its items.
type box struct {
	Top, Bottom, Left, Right float64
	Text                     string
	Items                    int
}

// layoutIDs are the elements whose place the page tests check.
var layoutIDs = []string{"summary", "request", "outcome", "outcome-reason", "fig-duration", "fig-tokens", "fig-cost", "drivers",
	"context-chart", "timeline-chart", "verdicts", "questions", "tools", "workbench"}

// frame is a page to measure at a window width.
type frame struct {
	page  string
	width int
}

// layout loads each page in headless chromium at its width and returns
// where its elements are, under "sections" the ids of its sections (in
// Text, comma-separated) and under "page" the page's width with its
// content (Right: the document's scrollWidth) and its rendered text. The page allows no script, so each is loaded
// in a frame of a page that measures them (file: pages may read each
// other with --allow-file-access-from-files): the report is measured as it
// is. A frame is tall enough to need no scrollbar, so it lays the page out
// at the full width, as a screenshot does. One browser measures them all:
// a start of chromium takes seconds.
func layout(t *testing.T, bin string, frames ...frame) []map[string]box {
	t.Helper()
	wrap := filepath.Join(t.TempDir(), "measure.html")
	ids, _ := json.Marshal(layoutIDs)
	var iframes strings.Builder
	widest := 0
	for _, f := range frames {
		fmt.Fprintf(&iframes, `<iframe src="%s" style="border:0;display:block;width:%dpx;height:30000px"></iframe>`, (&url.URL{Scheme: "file", Path: f.page}).String(), f.width)
		widest = max(widest, f.width)
	}
	script := `<!DOCTYPE html><html><body style="margin:0"><pre id="out">not measured</pre>` + iframes.String() + `<script>
var frames = document.querySelectorAll('iframe'), loaded = 0;
function measure() {
  var all = [];
  frames.forEach(function (f) {
    var out = {};
    try {
      var d = f.contentDocument;
      ` + string(ids) + `.forEach(function (id) {
        var e = d.getElementById(id);
        if (!e) return;
        var r = e.getBoundingClientRect();
        out[id] = {Top: r.top, Bottom: r.bottom, Left: r.left, Right: r.right, Text: e.textContent, Items: e.querySelectorAll('li').length};
      });
      out.sections = {Text: Array.prototype.map.call(d.querySelectorAll('section'), function (s) { return s.id; }).join(',')};
      out.page = {Right: d.documentElement.scrollWidth, Text: d.documentElement.innerText};
    } catch (err) { out = {error: {Text: String(err)}}; }
    all.push(out);
  });
  document.getElementById('out').textContent = JSON.stringify(all);
}
frames.forEach(function (f) { f.addEventListener('load', function () { if (++loaded === frames.length) measure(); }); });
</script></body></html>`
	if err := os.WriteFile(wrap, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	// The page measures once every frame has loaded; under CI's load
	// chromium's virtual time ran out before the frames did (ci9: "not
	// measured" after 20 s), so a page still unmeasured is loaded again,
	// twice at most, each time with a longer budget, and the test says so.
	var m []string
	for try, budget := range []int{10000, 30000, 60000} {
		dom, _ := chromium(t, bin, "file://"+wrap, "--allow-file-access-from-files", fmt.Sprintf("--virtual-time-budget=%d", budget),
			fmt.Sprintf("--window-size=%d,1000", widest+40), "--dump-dom")
		m = regexp.MustCompile(`<pre id="out">(.*?)</pre>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the measuring page did not run:\n%.2000s", dom)
		}
		if m[1] != "not measured" {
			break
		}
		t.Logf("try %d: chromium dumped the page before its %d frames loaded (virtual time %d ms)", try+1, len(frames), budget)
	}
	var boxes []map[string]box
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &boxes); err != nil || len(boxes) != len(frames) {
		t.Fatalf("measures %q: %v", m[1], err)
	}
	for i, b := range boxes {
		if e, ok := b["error"]; ok {
			t.Fatalf("%s could not be measured: %s", frames[i].page, e.Text)
		}
	}
	return boxes
}

// checkSummaryFirst checks that the outcome, the figures and the top
// cost drivers are on the first screen (height pixels), above the first
// chart, and that the outcome says want.
func checkSummaryFirst(t *testing.T, boxes map[string]box, height int, want string) {
	t.Helper()
	chart := boxes["context-chart"]
	if tl, ok := boxes["timeline-chart"]; !ok || (chart != box{} && tl.Top < chart.Top) || chart == (box{}) {
		chart = tl
	}
	if chart == (box{}) {
		t.Fatal("the page has no chart")
	}
	for _, id := range []string{"request", "outcome", "fig-duration", "fig-tokens", "fig-cost", "drivers"} {
		b, ok := boxes[id]
		switch {
		case !ok:
			t.Errorf("the page has no %s", id)
		case b.Bottom > chart.Top:
			t.Errorf("%s ends at %.0f, below the first chart's top %.0f", id, b.Bottom, chart.Top)
		case b.Bottom > float64(height):
			t.Errorf("%s ends at %.0f, off the first screen of %d pixels", id, b.Bottom, height)
		case b.Bottom-b.Top < 8:
			t.Errorf("%s is %.0f pixels high: not shown", id, b.Bottom-b.Top)
		}
	}
	if d := boxes["drivers"]; d.Items != 3 {
		t.Errorf("%d cost drivers shown, want 3", d.Items)
	}
	if o := boxes["outcome"]; !strings.Contains(o.Text, want) {
		t.Errorf("the outcome says %q, want %q in it", o.Text, want)
	}
}

// screenshot is the page at width×height.
func screenshot(t *testing.T, bin, page string, width, height int) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	chromium(t, bin, "file://"+page, fmt.Sprintf("--window-size=%d,%d", width, height), "--hide-scrollbars", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("FLOWER_KEEP_SHOTS"); keep != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_")+".png"), data, 0o644)
	}
	return img
}

// countColor counts the pixels of color (#rrggbb) inside b.
func countColor(img image.Image, b box, color string) int {
	var want [3]int
	fmt.Sscanf(color, "#%02x%02x%02x", &want[0], &want[1], &want[2])
	n := 0
	for y := max(int(b.Top), img.Bounds().Min.Y); y < min(int(b.Bottom), img.Bounds().Max.Y); y++ {
		for x := max(int(b.Left), img.Bounds().Min.X); x < min(int(b.Right), img.Bounds().Max.X); x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near8(r, want[0]) && near8(g, want[1]) && near8(bl, want[2]) {
				n++
			}
		}
	}
	return n
}

func near8(v uint32, want int) bool { return math.Abs(float64(v>>8)-float64(want)) <= 24 }

// checkDemoFigures recomputes the demo's figures from manifest.json and
// sessions.db, by other means than the report.
func checkDemoFigures(t *testing.T, r *report.Report, runDir string) {
	t.Helper()
	var rows []struct {
		Cost float64 `json:"cost_usd"`
	}
	data, _ := os.ReadFile(filepath.Join(runDir, "manifest.json"))
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, row := range rows {
		total += row.Cost
	}
	if math.Abs(r.Cost.Total-total) > 1e-9 || len(r.Steps) != len(rows) || len(rows) < 6 {
		t.Errorf("cost %v over %d steps; the manifest says %v over %d", r.Cost.Total, len(r.Steps), total, len(rows))
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(runDir, "sessions.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mainEntries, subEntries, mainTurns int
	db.QueryRow(`SELECT count(*) FROM entries WHERE store_key NOT LIKE '%/%/%'`).Scan(&mainEntries)
	db.QueryRow(`SELECT count(*) FROM entries WHERE store_key LIKE '%/%/%'`).Scan(&subEntries)
	db.QueryRow(`SELECT count(DISTINCT store_key || json_extract(payload, '$.message.id')) FROM entries
		WHERE store_key NOT LIKE '%/%/%' AND json_extract(payload, '$.type') = 'assistant' AND json_extract(payload, '$.message.usage') IS NOT NULL
		AND json_extract(payload, '$.message.model') != '<synthetic>'`).Scan(&mainTurns)
	if r.Threads.Main.Entries != mainEntries || r.Threads.Sub.Entries != subEntries || r.Threads.Main.Turns != mainTurns || len(r.Context) != mainTurns || subEntries == 0 {
		t.Errorf("threads %+v, %d context points; the store has %d main entries, %d subagent entries, %d main turns",
			r.Threads, len(r.Context), mainEntries, subEntries, mainTurns)
	}
	if r.Window == 0 || r.HandoffAt == 0 {
		t.Errorf("the demo's window (%d) and handoff threshold (%d) are not recorded", r.Window, r.HandoffAt)
	}
}

func TestReportPutsTheOutcomeAndTheTopCostDriversAboveTheFirstChart(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	type view struct {
		lang, outcome string
		width         int
	}
	var views []view
	var frames []frame
	for _, c := range []struct{ lang, outcome string }{{"en", "Achieved in step work"}, {"zh", "已达成:步骤 干活"}} {
		run := reporttest.LongRun(t, reporttest.Long{Lang: c.lang})
		page := filepath.Join(t.TempDir(), "report.html")
		if out, err := exec.Command(flowerBin, "report", "-o", page, run.RunDir).CombinedOutput(); err != nil {
			t.Fatalf("flower report: %v\n%s", err, out)
		}
		// A desktop window and a narrow laptop one.
		for _, width := range []int{1200, 900} {
			views = append(views, view{c.lang, c.outcome, width})
			frames = append(frames, frame{page, width})
		}
	}
	for i, boxes := range layout(t, browser, frames...) {
		v := views[i]
		t.Run(fmt.Sprintf("%s at %d pixels", v.lang, v.width), func(t *testing.T) {
			checkSummaryFirst(t, boxes, 900, v.outcome)
		})
	}
}

// hostileText is what a model, a tool or a file name may put in a run's
// record to mislead the person who reads the report: colour and hyperlink
// escapes, C0 and C1 controls, a right-to-left override that would make
// TXT.EXE read EXE.TXT, the other bidi controls, and one long word that
// would widen the page. It fits in a file name (under 255 bytes, no
// slash).
var hostileText = "\x1b[31mred\x1b[0m \x1b]8;;http://evil.example\x07link\x1b]8;;\x07 bell\x07 back\x08 del\x7f c1\u0085\u009b2J " +
	"\u202eTXT.EXE\u202c \u2066iso\u2069 \u200emarks\u200f \u061calm " + strings.Repeat("MW", 60)

// The report page shows what came from outside without its control and
// bidi characters (a verdict's reason, a question, a tool call, a file
// name) and fits a 1200-pixel window, long words and all.
func TestTheReportShowsNoControlTextAndFitsTheWindow(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	if len(hostileText) > 250 {
		t.Fatalf("the payload is %d bytes: too long for a file name", len(hostileText))
	}
	var frames []frame
	langs := []string{"en", "zh"}
	for _, lang := range langs {
		run := reporttest.LongRun(t, reporttest.Long{Lang: lang, Rounds: 3, TurnsPerRound: 6, Untrusted: hostileText})
		page := filepath.Join(t.TempDir(), "report.html")
		if out, err := exec.Command(flowerBin, "report", "-o", page, run.RunDir).CombinedOutput(); err != nil {
			t.Fatalf("flower report: %v\n%s", err, out)
		}
		frames = append(frames, frame{page, 1200})
	}
	for i, boxes := range layout(t, browser, frames...) {
		t.Run(langs[i], func(t *testing.T) {
			p := boxes["page"]
			for _, r := range p.Text {
				if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) || (r >= 0x202a && r <= 0x202e) ||
					(r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c {
					t.Errorf("the page shows the control character %U", r)
				}
			}
			for _, left := range []string{"[31m", "]8;;", "2J"} {
				if strings.Contains(p.Text, left) {
					t.Errorf("the page shows what is left of an escape sequence: %q", left)
				}
			}
			// Each place the payload was put shows its words, in order.
			for _, id := range []string{"verdicts", "questions", "tools", "workbench"} {
				if !strings.Contains(boxes[id].Text, "TXT.EXE") || !strings.Contains(boxes[id].Text, "red link") {
					t.Errorf("section %s does not show the words of the payload: %.300q", id, boxes[id].Text)
				}
			}
			if p.Right > 1200 {
				t.Errorf("the page is %.0f pixels wide in a 1200-pixel window", p.Right)
			}
		})
	}
}

func TestTheReportOfA500TurnRunIsReadableInHeadlessChromium(t *testing.T) {
	t.Parallel()
	browser := chromiumPath(t)
	run := reporttest.LongRun(t, reporttest.Long{Lang: "en"})
	if run.MainTurns < 500 {
		t.Fatalf("the fixture has %d main-thread turns", run.MainTurns)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if out, err := exec.Command(flowerBin, "report", "-o", page, run.RunDir).CombinedOutput(); err != nil {
		t.Fatalf("flower report: %v\n%s", err, out)
	}
	fi, err := os.Stat(page)
	if err != nil || fi.Size() > 2<<20 {
		t.Fatalf("the page: %v, %d bytes (the bound is 2 MB)", err, fi.Size())
	}
	boxes := layout(t, browser, frame{page, 1200})[0]
	for _, id := range report.Sections {
		if has := slices.Contains(strings.Split(boxes["sections"].Text, ","), id); has != (id != "problems") {
			t.Errorf("section %s in the DOM: %v", id, has)
		}
	}
	checkSummaryFirst(t, boxes, 900, "Achieved")
	img := screenshot(t, browser, page, 1200, int(boxes["timeline-chart"].Bottom)+10)
	// Each chart draws what it is for, in its own colors: not blank.
	for _, c := range []struct {
		chart, color, what string
		least              int
	}{
		{"context-chart", report.ContextLineColor, "the context line", 3000},
		{"context-chart", "#6a1b9a", "the handoffs", 200},
		{"timeline-chart", "#2e7d32", "the steps that passed", 3000},
		{"timeline-chart", "#1565c0", "the judges", 200},
		{"timeline-chart", "#c62828", "the step Ctrl-C stopped", 50},
	} {
		if n := countColor(img, boxes[c.chart], c.color); n < c.least {
			t.Errorf("%s shows %d pixels of %s (want %d or more)", c.chart, n, c.what, c.least)
		}
	}
	t.Logf("%d turns, %d handoffs, page %d bytes", run.MainTurns, run.Handoffs, fi.Size())
}
