package app

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/report"
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
	for _, id := range report.Sections {
		if !strings.Contains(dom, `<section id="`+id+`"`) {
			t.Errorf("the DOM lacks section %s", id)
		}
	}
	for _, id := range []string{"context-chart", "timeline-chart"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("the DOM lacks the chart %s", id)
		}
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	chromium(t, browser, "file://"+page, "--window-size=1200,900", "--hide-scrollbars", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The context chart is the first section, under the 56-pixel header:
	// count its line's color there.
	line := 0
	for y := 56; y < min(420, img.Bounds().Dy()); y++ {
		for x := 0; x < min(1100, img.Bounds().Dx()); x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near8(r, 0xc2) && near8(g, 0x18) && near8(b, 0x5b) {
				line++
			}
		}
	}
	if line < 200 {
		t.Errorf("the chart area shows %d pixels of the context line: blank", line)
	}
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
