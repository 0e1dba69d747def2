package app

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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
