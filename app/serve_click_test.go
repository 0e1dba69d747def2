package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower/team"
)

// The dashboard's buttons as an operator meets them (issue 45): `flower
// serve` (the built binary) in front of a real team database, and
// headless Chromium driven by clicks through the DevTools protocol
// (chromedp): log in with ?token=, then Reply (typed into the form),
// Cancel, Retry and Drain, each a real click on the page's own form.
// Chromium sends Origin: null for a form posted from a page whose
// Referrer-Policy is no-referrer, and Sec-Fetch-Site: same-origin; the
// posts were refused with 403 ("did not come from the dashboard's own
// page") while the Go client's posts, with no Origin, passed. Each click
// reaches the queue: the reply kept, r1 cancelled, r2 queued again, the
// worker asked to drain.
func TestDashboardButtonsWorkWhenClickedInChromium(t *testing.T) {
	t.Parallel()
	bin := chromiumPath(t)
	ctx := context.Background()
	tm, conn, db, _ := dashboardRuns(t, []string{"add a --json flag", "port the refunds", "ask me something"}, "Which name?")
	for _, q := range []string{
		`insert into team_workers (name, host, pid, version, rescue_seconds, concurrency, started, heartbeat, state)
			values ('machine-a', 'machine-a.example.com', 4242, 'test', 120, 2, now() - interval '1 hour', now(), 'working')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	// flower serve, as an operator starts it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const token = "0123456789abcdef0123456789abcdef"
	serve := exec.Command(flowerBin, "serve", "--addr", addr)
	serve.Env = hermeticEnv(t, "en_US.UTF-8", "FLOWER_DATABASE_URL="+db, "FLOWER_SERVE_TOKEN="+token)
	var out lockedBuffer
	serve.Stdout, serve.Stderr = &out, &out
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = serve.Process.Kill()
		_ = serve.Wait()
		if t.Failed() {
			t.Logf("flower serve:\n%s", out.String())
		}
	}()
	base := "http://" + addr
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("flower serve did not answer on %s in a minute:\n%s", addr, out.String())
		}
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.ProxyServer("127.0.0.1:9"), chromedp.Flag("proxy-bypass-list", "127.0.0.1"))
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 3*time.Minute)
	defer cancel()

	// click opens path, runs the steps that fill the form, clicks the
	// form's button and returns the page the post led to.
	click := func(path, form string, fill ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		button := chromedp.CSS(form + " button")
		steps := append([]chromedp.Action[chromedp.Void]{chromedp.Navigate(base + path), chromedp.WaitVisible(button)}, fill...)
		// The post answers with a redirect to the run's page (or a
		// refusal): the page after it is read once it has loaded.
		steps = append(steps, chromedp.Click(button), chromedp.Sleep(time.Second), chromedp.WaitReady(chromedp.CSS("body")))
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: clicking %s: %v", path, form, err)
		}
		after, err := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			t.Fatalf("%s: the page after the click: %v", path, err)
		}
		if strings.Contains(after, "did not come from") || strings.Contains(after, "Forbidden") {
			t.Errorf("%s: the click on %s was refused:\n%.2000s", path, form, after)
		}
		return after
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/?token="+token), chromedp.WaitVisible(chromedp.CSS("body"))); err != nil {
		t.Fatalf("logging in: %v", err)
	}

	if shot := os.Getenv("FLOWER_DASHBOARD_SHOT"); shot != "" {
		// The README's picture, taken from this very page:
		// FLOWER_DASHBOARD_SHOT=$PWD/doc/dashboard.png go test ./app -run Chromium
		png, err := chromedp.Run(bctx, func(ctx context.Context, tg *chromedp.Target) ([]byte, error) {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 700), chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#runs tr"))); err != nil {
				return nil, err
			}
			return chromedp.CaptureScreenshot()(ctx, tg)
		})
		if err != nil || os.WriteFile(shot, png, 0o644) != nil {
			t.Errorf("the dashboard's picture: %v", err)
		}
	}
	checkRunsListClicks(t, bctx, base)
	checkAttempts(t, bctx, conn, base)
	checkRunEventsLiveAndPaged(t, bctx, conn, base)

	click("/runs/r3", `form[action="/runs/r3/reply"]`, chromedp.SendKeys(chromedp.CSS(`form[action="/runs/r3/reply"] textarea`), "call it bloom"))
	var reply string
	if err := conn.QueryRow(ctx, "select text from team_replies where run = 3 and question = 'q1'").Scan(&reply); err != nil || reply != "call it bloom" {
		t.Errorf("the reply typed and sent for r3's q1: %q, %v", reply, err)
	}
	click("/runs/r1", `form[action="/runs/r1/cancel"]`)
	if r, err := tm.Run(ctx, 1); err != nil || r.State != team.Cancelled {
		t.Errorf("r1 after Cancel was clicked: %s, %v", r.State, err)
	}
	click("/runs/r2", `form[action="/runs/r2/retry"]`)
	if r, err := tm.Run(ctx, 2); err != nil || r.State != team.Queued {
		t.Errorf("r2 after Retry was clicked: %s, %v", r.State, err)
	}
	click("/workers", `form[action="/workers/machine-a/drain"]`)
	var drain bool
	if err := conn.QueryRow(ctx, "select drain_requested_at is not null from team_workers where name = 'machine-a'").Scan(&drain); err != nil || !drain {
		t.Errorf("machine-a after Drain was clicked: drain requested %v, %v", drain, err)
	}
}

// checkRunEventsLiveAndPaged: a run's page shows its newest events and
// takes new ones as they are recorded, without a reload; a run with more
// events than a page links to the earlier ones, which link back (issue
// 45: the run page was not live and showed the first 200 only).
func checkRunEventsLiveAndPaged(t *testing.T, bctx context.Context, conn *pgx.Conn, base string) {
	t.Helper()
	ctx := context.Background()
	events := func() string {
		s, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("events").innerText`))
		if err != nil {
			t.Fatalf("the run's events: %v", err)
		}
		return s
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/runs/r3"), chromedp.WaitVisible(chromedp.CSS("#events"))); err != nil {
		t.Fatalf("r3's page: %v", err)
	}
	// Recorded as a worker records one: the row, then the notice.
	if _, err := conn.Exec(ctx, `with e as (insert into team_events (run, worker, event)
		values (3, 'machine-a', '{"kind":"text","text":"LIVE-EVENT-MARKER"}') returning run)
		select pg_notify('flower_team_event', '3') from e`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(events(), "LIVE-EVENT-MARKER"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("an event recorded while r3's page was open never appeared on it:\n%s", events())
		}
	}
	if _, err := conn.Exec(ctx, `insert into team_events (run, worker, event)
		select 1, 'machine-a', jsonb_build_object('kind', 'text', 'text', 'page line ' || lpad(g::text, 3, '0')) from generate_series(1, 205) g`); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/runs/r1"), chromedp.WaitVisible(chromedp.CSS("#earlier"))); err != nil {
		t.Fatalf("r1's newest events with a link to earlier ones: %v", err)
	}
	if s := events(); !strings.Contains(s, "page line 205") || strings.Contains(s, "page line 005") || strings.Count(s, "\n") < 199 {
		t.Errorf("r1's newest page: %d lines, want the newest 200 (page line 006 … 205)", strings.Count(s, "\n"))
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#earlier")), chromedp.WaitVisible(chromedp.CSS("#newest"))); err != nil {
		t.Fatalf("r1's earlier events: %v", err)
	}
	if s := events(); !strings.Contains(s, "page line 001") || !strings.Contains(s, "page line 005") || strings.Contains(s, "page line 006") {
		t.Errorf("r1's earlier page:\n%s", s)
	}
	if s := events(); !regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ machine-a page line 001`).MatchString(s) {
		t.Errorf("an event's line lacks its moment with the zone:\n%s", s)
	}
}

// checkAttempts opens a failed run's page from the runs list by a click:
// each attempt is a row with its worker, its moment and why it ended
// (issue 45: which worker, when, why). r2 failed twice, on two workers.
func checkAttempts(t *testing.T, bctx context.Context, conn *pgx.Conn, base string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), `update team_runs set failures =
		'[{"host":"machine-a","at":"2026-12-01T10:00:00Z","reason":"the CLI exited 1"},{"host":"machine-b","at":"2026-12-01T10:05:00Z","reason":"the push was refused"}]'
		where id = 2`); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#r2 a`))); err != nil {
		t.Fatalf("the runs list: %v", err)
	}
	// The live stream puts the rows back in place when it connects: a
	// link found just before may be gone by the click, which is then
	// made again on the new one.
	for try := 1; ; try++ {
		err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#r2 a`)), chromedp.WaitVisible(chromedp.CSS("#attempts")))
		if err == nil {
			break
		}
		if try == 5 {
			t.Fatalf("r2's page from the list: %v", err)
		}
	}
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#attempts tbody tr")].map(r => r.innerText.replace(/\s+/g, " ").trim())`))
	if err != nil {
		t.Fatalf("r2's attempts: %v", err)
	}
	when := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+`)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "1 machine-a ") || !strings.HasSuffix(rows[0], " the CLI exited 1") ||
		!strings.HasPrefix(rows[1], "2 machine-b ") || !strings.HasSuffix(rows[1], " the push was refused") ||
		!when.MatchString(rows[0]) || !when.MatchString(rows[1]) {
		t.Errorf("r2's attempts read %q, want two rows: the number, the worker, the moment, why it ended", rows)
	}
}

// checkRunsListClicks drives the runs list as an operator does, by clicks
// and typing (issue 45): a page of two and the link to the older one; a
// search typed and the Filter button; a state chosen and the Filter
// button; each row's age with its moment, zone named. r1 is queued, r2
// failed ("port the refunds"), r3 waiting.
func checkRunsListClicks(t *testing.T, bctx context.Context, base string) {
	t.Helper()
	rows := func() string {
		ids, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[...document.querySelectorAll("#runs tr")].map(r => r.id).join(",")`))
		if err != nil {
			t.Fatalf("the runs list's rows: %v", err)
		}
		return ids
	}
	filter := chromedp.CSS("#filter button")
	steps := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// loaded waits until the page a click led to has loaded: its address
	// holds want and the document is complete (the old page's elements
	// are there until then).
	loaded := func(want string) chromedp.Action[chromedp.Void] {
		check := chromedp.Evaluate[bool](`location.href.includes(` + strconv.Quote(want) + `) && document.readyState === "complete"`)
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				// An evaluation during the navigation fails: asked again.
				if ok, err := check(ctx, tg); err == nil && ok {
					return chromedp.Void{}, nil
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					return chromedp.Void{}, fmt.Errorf("no page at an address with %q in 30 s", want)
				}
			}
		}
	}
	steps("a page of two", chromedp.Navigate(base+"/?n=2"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	if got := rows(); got != "r3,r2" {
		t.Errorf("a page of two shows %q, want r3,r2", got)
	}
	steps("the older page", chromedp.Click(chromedp.CSS("#older")), loaded("before=r2"))
	if got := rows(); got != "r1" {
		t.Errorf("the older page shows %q, want r1", got)
	}
	if err := chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS("#older"))); err != nil {
		t.Errorf("the last page links to an older one: %v", err)
	}
	steps("a search", chromedp.Navigate(base+"/"), chromedp.WaitVisible(filter),
		chromedp.SendKeys(chromedp.CSS(`#filter input[name="q"]`), "REFUNDS"), chromedp.Click(filter), loaded("q=REFUNDS"))
	if got := rows(); got != "r2" {
		t.Errorf("searching REFUNDS shows %q, want r2 (\"port the refunds\")", got)
	}
	steps("a state", chromedp.Navigate(base+"/"), chromedp.WaitVisible(filter),
		chromedp.SetValue(chromedp.CSS(`#filter select[name="state"]`), team.Waiting), chromedp.Click(filter), loaded("state=waiting"))
	if got := rows(); got != "r3" {
		t.Errorf("the state waiting shows %q, want r3", got)
	}
	// Read again while the live stream puts the rows back in place.
	moment := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+$`)
	var at string
	for deadline := time.Now().Add(10 * time.Second); !moment.MatchString(at) && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		at, _ = chromedp.Run(bctx, chromedp.Evaluate[string](`(document.querySelector("#r3 .at") || {}).textContent || ""`))
		at = strings.TrimSpace(at)
	}
	if !moment.MatchString(at) {
		t.Errorf("r3's moment reads %q, want a date, a time and a zone", at)
	}
	steps("a search that matches nothing", chromedp.Navigate(base+"/?q=no+such+words"), chromedp.WaitVisible(chromedp.CSS("#none")))
	steps("a page size that is none", chromedp.Navigate(base+"/?n=0"), chromedp.WaitVisible(chromedp.CSS("body")))
	if body, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(body, "?n=0: give 1 to 500 runs a page") {
		t.Errorf("?n=0 says %q (%v), want what to give", body, err)
	}
}
