package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/team"
)

// The dashboard against a real team database, read by headless
// chromium: the token is asked for, what runs wrote is shown as text, a
// run submitted after the page loaded appears through the live stream,
// and a reply, a cancel and a retry posted as the page's forms post them
// reach the queue. Chromium's --dump-dom gives no clicks, so the forms'
// posts are made with plain HTTP carrying the cookie and the CSRF field
// the page holds.
func TestServeDashboard(t *testing.T) {
	t.Parallel()
	bin := chromiumPath(t)
	ctx := context.Background()
	hostile := "<script>alert(1)</script><b>x</b> \u202eevil\u202c \x1b[31mred\x1b[0m"
	tm, conn, _, repo := dashboardRuns(t, []string{"add a --json flag", hostile, "ask me something"}, "Which name? <i>sure</i>")

	const token = "0123456789abcdef0123456789abcdef"
	d, err := newDashboard(tm, token, "", flower.Lang("en"))
	if err != nil {
		t.Fatal(err)
	}
	d.streamFor = 2 * time.Second
	// Once the page opens its live stream, a fourth run is submitted:
	// it must show up without a reload.
	var once sync.Once
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/live" {
			once.Do(func() {
				go func() {
					time.Sleep(500 * time.Millisecond)
					if _, err := tm.Submit(context.Background(), team.Submission{Request: "submitted while watching", Repo: repo}); err != nil {
						t.Error(err)
					}
				}()
			})
		}
		d.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	// Without the token, or with a wrong one: 401 and how to get in.
	for _, u := range []string{base + "/", base + "/runs/r1", base + "/runs/r1/events?after=0", base + "/rows?q=x", base + "/?token=wrong", base + "/workers"} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "?token=") {
			t.Errorf("GET %s without the token: %d\n%s", u, resp.StatusCode, body)
		}
	}

	// The helper sends loopback through a dead proxy (the report must
	// load nothing); this page is on loopback, so it goes direct.
	dom, _ := chromium(t, bin, base+"/?token="+token, "--proxy-bypass-list=127.0.0.1", "--dump-dom", "--virtual-time-budget=5000")
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;", "r1", "r3", "submitted while watching"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the runs page lacks %q:\n%q", want, dom)
		}
	}
	for _, bad := range []string{"<b>x</b>", "\u202e", "\x1b"} {
		if strings.Contains(dom, bad) {
			t.Errorf("the runs page holds %q as markup or raw:\n%s", bad, dom)
		}
	}

	// A client with the cookie, as the browser has after ?token=.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cookie := login(t, client, base, token)
	get := func(path string) string {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.AddCookie(cookie)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	post := func(path string, form url.Values, origin string) int {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	page := get("/runs/r3")
	csrf := csrfField(t, page)
	if !strings.Contains(page, "Which name? &lt;i&gt;sure&lt;/i&gt;") || strings.Contains(page, token) {
		t.Fatalf("r3's page lacks its question or holds the access token:\n%s", page)
	}
	// Without the CSRF field, with the access token as one, or from
	// another origin: refused.
	if code := post("/runs/r1/cancel", url.Values{}, ""); code != http.StatusForbidden {
		t.Errorf("a cancel without the CSRF field: %d, want 403", code)
	}
	if code := post("/runs/r1/cancel", url.Values{"csrf": {token}}, ""); code != http.StatusForbidden {
		t.Errorf("a cancel with the access token for a CSRF value: %d, want 403", code)
	}
	if code := post("/runs/r1/cancel", url.Values{"csrf": {csrf}}, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a cancel from another origin: %d, want 403", code)
	}
	if r, _ := tm.Run(ctx, 1); !r.CancelRequested.IsZero() || team.Ended(r.State) {
		t.Fatalf("a refused cancel cancelled r1: %+v", r)
	}

	if code := post("/runs/r3/reply", url.Values{"csrf": {csrf}, "text": {"call it bloom"}}, base); code != http.StatusSeeOther {
		t.Errorf("the reply: %d", code)
	}
	var reply string
	if err := conn.QueryRow(ctx, "select text from team_replies where run = 3 and question = 'q1'").Scan(&reply); err != nil || reply != "call it bloom" {
		t.Errorf("the reply kept for r3's q1: %q, %v", reply, err)
	}
	if code := post("/runs/r1/cancel", url.Values{"csrf": {csrf}}, ""); code != http.StatusSeeOther {
		t.Errorf("the cancel: %d", code)
	}
	r1, err := tm.Run(ctx, 1)
	if err != nil || r1.State != team.Cancelled {
		t.Fatalf("r1 after the cancel: %s, %v", r1.State, err)
	}
	if code := post("/runs/r2/retry", url.Values{"csrf": {csrf}}, ""); code != http.StatusSeeOther {
		t.Errorf("the retry: %d", code)
	}
	if r2, err := tm.Run(ctx, 2); err != nil || r2.State != team.Queued {
		t.Errorf("r2 after the retry: %s, %v", r2.State, err)
	}
	if !strings.Contains(get("/runs/r1"), "call it bloom") && !strings.Contains(get("/runs/r3"), "call it bloom") {
		t.Errorf("r3's events lack the reply")
	}
	// A run no worker started has no state to render a report from: its
	// page offers no report, and the address says why.
	if strings.Contains(page, "/runs/r3/report") {
		t.Errorf("r3's page links a report it cannot have")
	}
	req, _ := http.NewRequest("GET", base+"/runs/r3/report", nil)
	req.AddCookie(cookie)
	if resp, err := client.Do(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "no worker has started it") {
			t.Errorf("r3's report: %d\n%s", resp.StatusCode, b)
		}
	}
	if w := get("/workers"); !strings.Contains(w, "no worker has joined yet") {
		t.Errorf("the workers page:\n%s", w)
	}
	// In Chinese when the browser asks for it.
	req, _ = http.NewRequest("GET", base+"/", nil)
	req.AddCookie(cookie)
	req.Header.Set("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	zh, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(zh), texts["serveColRequest"][0]) {
		t.Errorf("the runs page in Chinese lacks %q:\n%s", texts["serveColRequest"][0], zh)
	}

	// The screenshot of the README: FLOWER_DASHBOARD_PNG names where.
	if out := os.Getenv("FLOWER_DASHBOARD_PNG"); out != "" {
		out, _ = filepath.Abs(out)
		chromium(t, bin, base+"/?token="+token, "--proxy-bypass-list=127.0.0.1", "--screenshot="+out, "--window-size=1200,700", "--hide-scrollbars", "--virtual-time-budget=1000")
	}
}

// The command refuses another machine's address without --public and
// says so, and an address in use at start.
func TestServeRefusesPublicAndBusyAddresses(t *testing.T) {
	t.Parallel()
	db := pgtest.Database(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		addr, want string
	}{
		{"0.0.0.0:8080", "not a loopback address"},
		{"127.0.0.1", "is not HOST:PORT"},
		{ln.Addr().String(), "is in use"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, flowerBin, "serve", "--lang", "en", "--addr", c.addr)
		cmd.Env = append(os.Environ(), "FLOWER_DATABASE_URL="+db, "FLOWER_SERVE_TOKEN=0123456789abcdef0123")
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("flower serve --addr %s: %v, want an error saying %q:\n%s", c.addr, err, c.want, out)
		}
		fmt.Fprint(io.Discard, string(out))
	}
}

// What the person starting `flower serve` sees, in English and Chinese
// at 80 and 160 columns: the first start prints the address with a token
// made for it (kept 0600), which lets a browser in; a later start prints
// the address without the token and says where it is kept.
func TestServeStartsOnATerminal(t *testing.T) {
	t.Parallel()
	db := pgtest.Database(t)
	addrRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/(\?token=[0-9a-f]+)?`)
	for _, l := range locales {
		for _, cols := range []uint16{80, 160} {
			t.Run(fmt.Sprintf("%s/%d", l.name, cols), func(t *testing.T) {
				state := t.TempDir()
				env := hermeticEnv(t, l.locale, "FLOWER_DATABASE_URL="+db, "XDG_STATE_HOME="+state)
				var token string
				for start := 0; start < 2; start++ {
					p := startPTYCols(t, cols, env, "serve", "--addr", "127.0.0.1:0")
					p.expectWithin(t, "http://127.0.0.1:", time.Minute)
					p.expectWithin(t, "serve-token", time.Minute)
					scr := p.screen()
					checkLanguage(t, l.english, scr)
					for _, line := range strings.Split(scr, "\n") {
						if strings.Contains(line, state) {
							continue // a path wraps where the terminal ends it
						}
						if w := screen.Columns(strings.TrimRight(line, "\r")); w > int(cols) {
							t.Errorf("%d columns on a terminal of %d: %q", w, cols, line)
						}
					}
					flat := strings.ReplaceAll(strings.ReplaceAll(scr, "\r", ""), "\n", "")
					addr := addrRE.FindString(strings.ReplaceAll(scr, "\r", ""))
					if start == 0 {
						if !strings.Contains(addr, "?token=") {
							t.Fatalf("the first start shows no address with its token:\n%s", scr)
						}
						token = strings.SplitN(addr, "=", 2)[1]
						fi, err := os.Stat(filepath.Join(state, "flower", "serve-token"))
						if err != nil || fi.Mode().Perm() != 0o600 {
							t.Errorf("the kept token: %v, %v; want mode 0600", fi, err)
						}
						jar, _ := cookiejar.New(nil)
						resp, err := (&http.Client{Jar: jar, Timeout: time.Minute}).Get(addr)
						if err != nil {
							t.Fatal(err)
						}
						resp.Body.Close()
						if resp.StatusCode != 200 {
							t.Errorf("GET %s: %d", addr, resp.StatusCode)
						}
					} else if addr == "" || strings.Contains(flat, token) {
						t.Errorf("the second start shows no address, or the token again:\n%s", scr)
					}
					p.cmd.Process.Signal(os.Interrupt)
					if code := p.exitWithin(t, time.Minute); code != ExitInterrupted || !strings.Contains(p.screen(), texts["serveStopped"][map[bool]int{false: 0, true: 1}[l.english]]) {
						t.Errorf("serve after Ctrl-C: exit %d, want %d and that the runs go on:\n%s", code, ExitInterrupted, p.screen())
					}
				}
				// Behind a proxy: the address to open is the proxy's.
				p := startPTYCols(t, cols, env, "serve", "--addr", "127.0.0.1:0", "--public-url", "https://flower.example.com")
				p.expectWithin(t, "https://flower.example.com/", time.Minute)
				p.cmd.Process.Signal(os.Interrupt)
				p.exitWithin(t, time.Minute)
				// A --public-url that is no origin, said in the person's language.
				p = startPTYCols(t, cols, env, "serve", "--addr", "127.0.0.1:0", "--public-url", "flower.example.com")
				if code := p.exitWithin(t, time.Minute); code == 0 || !strings.Contains(p.screen(), "https://flower.example.com") {
					t.Errorf("serve --public-url flower.example.com: exit %d, want a usage error with an example:\n%s", code, p.screen())
				}
				checkLanguage(t, l.english, p.screen())
			})
		}
	}
}

// login opens a session with the access token as a browser does (the
// address with ?token=) and returns its cookie, which must not be the
// token.
func login(t *testing.T, client *http.Client, base, token string) *http.Cookie {
	t.Helper()
	resp, err := client.Get(base + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == serveCookie {
			if strings.Contains(c.Value, token) || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Fatalf("the session cookie %+v holds the token or may leave the page", c)
			}
			return c
		}
	}
	t.Fatalf("?token= set no session cookie: %d %v", resp.StatusCode, resp.Header)
	return nil
}

var csrfFieldRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// csrfField is the CSRF value a page's forms carry.
func csrfField(t *testing.T, page string) string {
	t.Helper()
	m := csrfFieldRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no form with a CSRF value:\n%s", page)
	}
	return m[1]
}

// Behind the HTTPS proxy the README recommends, the browser's posts come
// from https://HOST: each button must work (round 4 found every one
// refused, the Origin check knowing only http://), while another site's
// post, and a session's CSRF value in another session, are refused.
// --public-url names the proxy's origin when the proxy rewrites Host.
func TestServeButtonsWorkBehindAnHTTPSProxy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tm, err := team.Open(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	repo := clones(t, 1)[0]
	for range 4 {
		if _, err := tm.Submit(ctx, team.Submission{Request: "add a --json flag", Repo: repo}); err != nil {
			t.Fatal(err)
		}
	}
	const token = "fedcba9876543210fedcba9876543210"
	d, err := newDashboard(tm, token, "", flower.Lang("en"))
	if err != nil {
		t.Fatal(err)
	}
	public, err := parsePublicURL("https://flower.example.com/")
	if err != nil || public != "https://flower.example.com" {
		t.Fatalf("parsePublicURL: %q, %v", public, err)
	}
	if err := d.trustOrigin(public); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cookie := login(t, client, srv.URL, token)
	if !cookie.Secure {
		t.Errorf("behind an https --public-url the cookie is not Secure: %+v", cookie)
	}
	other := login(t, client, srv.URL, token)
	page := func(c *http.Cookie) string {
		req, _ := http.NewRequest("GET", srv.URL+"/runs/r1", nil)
		req.AddCookie(c)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	csrf, otherCSRF := csrfField(t, page(cookie)), csrfField(t, page(other))
	if csrf == otherCSRF || csrf == token {
		t.Fatalf("two sessions share a CSRF value, or it is the token: %q %q", csrf, otherCSRF)
	}
	hostOf := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct {
		name, run, host, origin, site, csrf string
		want                                int
	}{
		{"the proxy keeps Host, the browser says https", "r1", hostOf, "https://" + hostOf, "", csrf, http.StatusSeeOther},
		{"a modern browser's own page", "r2", "flower.internal:8080", "https://flower.example.com", "same-origin", csrf, http.StatusSeeOther},
		{"the proxy rewrites Host; --public-url names it", "r3", "127.0.0.1:8080", "https://flower.example.com", "", csrf, http.StatusSeeOther},
		{"another site", "r4", hostOf, "https://evil.example", "cross-site", csrf, http.StatusForbidden},
		{"another site, an older browser", "r4", hostOf, "https://evil.example", "", csrf, http.StatusForbidden},
		{"another session's CSRF value", "r4", hostOf, "https://" + hostOf, "", otherCSRF, http.StatusForbidden},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/runs/"+c.run+"/cancel", strings.NewReader(url.Values{"csrf": {c.csrf}}.Encode()))
		req.Host = c.host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", c.origin)
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		req.AddCookie(cookie)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	for id, want := range map[int64]string{1: team.Cancelled, 2: team.Cancelled, 3: team.Cancelled, 4: team.Queued} {
		if r, err := tm.Run(ctx, id); err != nil || r.State != want {
			t.Errorf("r%d is %s after the posts (%v), want %s", id, r.State, err, want)
		}
	}
	for _, bad := range []string{"ftp://x", "flower.example.com", "https://flower.example.com/dash", "https://u:p@flower.example.com"} {
		if _, err := parsePublicURL(bad); err == nil {
			t.Errorf("--public-url %q was taken", bad)
		}
	}
}

// dashboardRuns is a team database holding a run for each request: r2
// failed, r3 waiting for an answer to its question q1 as a worker's human
// channel leaves it, the rest queued. It returns the team, a connection to
// its database, the database's URL and the repository the runs name; they
// close with t.
func dashboardRuns(t *testing.T, requests []string, question string) (tm *team.Team, conn *pgx.Conn, db, repo string) {
	t.Helper()
	ctx := context.Background()
	db = pgtest.Database(t)
	repo = clones(t, 1)[0]
	tm, err := team.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.Close)
	for _, req := range requests {
		if _, err := tm.Submit(ctx, team.Submission{Request: req, Repo: repo, Budget: 5}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err = pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	ask, _ := json.Marshal(event.New(event.Ask, "Which name?", map[string]any{"id": "q1", "state": "asked"}))
	for _, q := range []string{
		`update team_runs set state = 'failed', reason = 'failed 2 times on 2 workers', ended_at = now() where id = 2`,
		`update team_runs set state = 'waiting', step = 'plan', round = 1, question = '` + strings.ReplaceAll(question, "'", "''") + `' where id = 3`,
		`insert into team_events (run, worker, event) values (3, 'machine-a', '` + strings.ReplaceAll(string(ask), "'", "''") + `')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return tm, conn, db, repo
}
