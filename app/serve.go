package app

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/screen"
	"github.com/flowerrun/flower/report"
	"github.com/flowerrun/flower/team"
)

//go:embed serve/*.html
var serveFiles embed.FS

// serveTokenEnv holds the dashboard's access token when no --token-file
// names one.
const serveTokenEnv = "FLOWER_SERVE_TOKEN"

// serveCookie carries the browser's session after the first visit with
// ?token=: a random id and its MAC under the token, never the token.
const serveCookie = "flower_session"

// runServe is `flower serve [--addr HOST:PORT] [--public] [--token-file F]`:
// the team's dashboard in the browser.
func (m *Command) runServe(ctx context.Context, args []string) error {
	var g globals
	var db dbFlags
	fs := newFlagSet("serve")
	g.register(fs)
	db.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "")
	public := fs.Bool("public", false, "")
	tokenFile := fs.String("token-file", "", "")
	publicURL := fs.String("public-url", "", "")
	pos, err := m.parse(fs, fmt.Sprintf(text(m.argLang(args), "serveUsage"), m.name()), args)
	if err != nil {
		return err
	}
	if err := g.checkLang(); err != nil {
		return err
	}
	lang := m.language(&g, "")
	if len(pos) > 0 {
		return usageErrorf(text(lang, "serveArgs"), m.name(), strings.Join(pos, " "))
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageErrorf(text(lang, "serveBadAddr"), *addr, err)
	}
	if !*public && !loopbackHost(host) {
		// A dashboard can cancel runs and answer their questions: on
		// another interface it is reachable by every machine that can
		// route there, so that has to be asked for by name.
		return usageErrorf(text(lang, "serveNotLoopback"), *addr)
	}
	publicOrigin, err := parsePublicURL(*publicURL)
	if err != nil {
		return usageErrorf(text(lang, "serveBadPublicURL"), *publicURL, err)
	}
	token, fresh, where, err := m.serveToken(*tokenFile, lang)
	if err != nil {
		return err
	}
	t, err := m.teamFor(ctx, db, "serve", lang)
	if err != nil {
		return err
	}
	defer t.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf(text(lang, "serveInUse"), *addr, m.name())
		}
		return fmt.Errorf(text(lang, "serveListen"), *addr, err)
	}
	d, err := newDashboard(t, token, flower.Lang(g.lang), m.language(&g, ""))
	if err == nil && publicOrigin != "" {
		err = d.trustOrigin(publicOrigin)
	}
	if err != nil {
		ln.Close()
		return err
	}
	base := "http://" + ln.Addr().String() + "/"
	if publicOrigin != "" {
		base = publicOrigin + "/"
	}
	// Ctrl-C stops only the dashboard: there is nothing here to continue.
	m.quitHint = text(lang, "serveStopped")
	if fresh {
		m.say(text(lang, "serveAtToken"), base+"?token="+token, where)
	} else {
		m.say(text(lang, "serveAt"), base, where)
	}
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	d.base = ctx
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// serveToken is the dashboard's token: --token-file's, else
// $FLOWER_SERVE_TOKEN, else the one kept in the state folder (made on the
// first start, 0600). fresh is true when it was just made; where says
// where it is kept.
func (m *Command) serveToken(file string, lang flower.Lang) (token string, fresh bool, where string, err error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", false, "", fmt.Errorf(text(lang, "serveTokenFile"), file, err)
		}
		if token = strings.TrimSpace(string(b)); len(token) < 16 {
			return "", false, "", fmt.Errorf(text(lang, "serveTokenShort"), file)
		}
		return token, false, file, nil
	}
	if token = strings.TrimSpace(m.getenv(serveTokenEnv)); token != "" {
		if len(token) < 16 {
			return "", false, "", fmt.Errorf(text(lang, "serveTokenShort"), "$"+serveTokenEnv)
		}
		return token, false, "$" + serveTokenEnv, nil
	}
	dir := human.StateHome()
	if dir == "" {
		return "", false, "", errors.New(text(lang, "serveNoState"))
	}
	path := filepath.Join(dir, "serve-token")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), false, path, nil
	}
	raw := make([]byte, 16) // 128 bits; the address with it fits 80 columns
	if _, err := rand.Read(raw); err != nil {
		return "", false, "", err
	}
	token = hex.EncodeToString(raw)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, "", fmt.Errorf(text(lang, "serveTokenFile"), path, err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", false, "", fmt.Errorf(text(lang, "serveTokenFile"), path, err)
	}
	return token, true, path, nil
}

// parsePublicURL checks --public-url: the scheme and host people reach
// the dashboard by through a proxy, "" when not given.
func parsePublicURL(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	u, err := url.Parse(strings.TrimSpace(s))
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("it must start with https:// (or http://)")
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("give the scheme and host only, as https://flower.example.com")
	}
	return u.Scheme + "://" + u.Host, nil
}

// dashboard serves the pages; every handler runs behind its session check.
// The access token only opens a session: the browser's cookie holds a
// session id with its MAC under the token, and each form holds that
// session's own CSRF value, so neither a cookie nor a page gives the token
// away. Cross-origin posts are refused by net/http's CrossOriginProtection
// (Sec-Fetch-Site, else Origin against Host, whatever the scheme), with
// --public-url's origin trusted behind a proxy that rewrites Host.
type dashboard struct {
	t     *team.Team
	token string
	// secure marks the cookie Secure: the dashboard is reached by https.
	secure  bool
	origins *http.CrossOriginProtection
	// forced is --lang ("" when not given: the browser's choice rules);
	// fallback is the locale's language.
	forced, fallback flower.Lang
	tmpl             *template.Template
	mux              *http.ServeMux
	base             context.Context
	// streamFor is how long one live stream lasts (see live).
	streamFor time.Duration
}

func newDashboard(t *team.Team, token string, forced, fallback flower.Lang) (*dashboard, error) {
	d := &dashboard{t: t, token: token, forced: forced, fallback: fallback, base: context.Background(), streamFor: 25 * time.Second,
		origins: http.NewCrossOriginProtection()}
	funcs := template.FuncMap{
		// clean strips what a run wrote of control and bidi characters;
		// html/template escapes the rest.
		"clean": func(s string) string { return screen.SanitizeLines(s) },
		"t":     func(l flower.Lang, k string) string { return text(l, k) },
		"age":   func(t time.Time) string { return age(t) },
		// The moment itself, in the server's zone, named: an age alone
		// cannot be matched with a log line.
		"at":     func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05 MST") },
		"sstate": func(l flower.Lang, s string) string { return cmp.Or(text(l, "teamState_"+s), s) },
		"inc":    func(i int) int { return i + 1 },
		// attemptNow: the run has an attempt its failures do not list
		// (working, waiting, or ended by it); a queued or failed run's
		// last attempt is its last failure.
		"attemptNow": func(r team.Run) bool {
			return r.Host != "" && r.State != team.Queued && r.State != team.Failed
		},
		"name": team.RunName,
		"cost": func(r team.Run) string {
			if r.Budget > 0 {
				return fmt.Sprintf("$%.2f / $%.2f", r.Cost, r.Budget)
			}
			return fmt.Sprintf("$%.2f", r.Cost)
		},
		"state":  func(l flower.Lang, r team.Run) string { return stateText(l, r) },
		"ended":  func(r team.Run) bool { return team.Ended(r.State) },
		"wstate": func(l flower.Lang, w team.WorkerInfo) string { return text(l, "teamWorkerState_"+w.State) },
		"ev":     func(e team.Event) string { return eventLine(e) },
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(serveFiles, "serve/*.html")
	if err != nil {
		return nil, err
	}
	d.tmpl = tmpl
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", d.runsPage)
	mux.HandleFunc("GET /rows", d.runsRows)
	mux.HandleFunc("GET /live", d.live)
	mux.HandleFunc("GET /runs/{run}", d.runPage)
	mux.HandleFunc("GET /runs/{run}/report", d.reportPage)
	mux.HandleFunc("GET /runs/{run}/events", d.runEvents)
	mux.HandleFunc("POST /runs/{run}/reply", d.reply)
	mux.HandleFunc("POST /runs/{run}/cancel", d.cancel)
	mux.HandleFunc("POST /runs/{run}/retry", d.retry)
	mux.HandleFunc("GET /workers", d.workersPage)
	mux.HandleFunc("POST /workers/{name}/drain", d.drain)
	d.mux = mux
	return d, nil
}

// trustOrigin accepts posts from origin (--public-url), and marks the
// cookie Secure when it is https.
func (d *dashboard) trustOrigin(origin string) error {
	d.secure = strings.HasPrefix(origin, "https://")
	return d.origins.AddTrustedOrigin(origin)
}

// mac is the token's HMAC of what, in hex: a session's proof and its CSRF
// value, which say nothing of the token.
func (d *dashboard) mac(what string) string {
	h := hmac.New(sha256.New, []byte(d.token))
	h.Write([]byte(what))
	return hex.EncodeToString(h.Sum(nil))
}

// newSession is a fresh session's cookie value.
func (d *dashboard) newSession() (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw)
	return id + "." + d.mac("session:"+id), nil
}

// session is the id of the session r's cookie holds, false when it holds
// none this dashboard's token made.
func (d *dashboard) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(serveCookie)
	if err != nil {
		return "", false
	}
	id, proof, ok := strings.Cut(c.Value, ".")
	if !ok || id == "" || !hmac.Equal([]byte(proof), []byte(d.mac("session:"+id))) {
		return "", false
	}
	return id, true
}

// csrf is the value a session's forms carry.
func (d *dashboard) csrf(session string) string { return d.mac("csrf:" + session) }

type sessionKey struct{}

// csrfOf is the CSRF value of the request's session (set by ServeHTTP).
func csrfOf(r *http.Request) string {
	s, _ := r.Context().Value(sessionKey{}).(string)
	return s
}

// ServeHTTP checks the session before anything: ?token= opens one (it
// sets the cookie and drops the token from the address), the cookie
// carries it; a POST must come from this dashboard's origin and carry the
// session's CSRF value in its form (a page of another site cannot read it).
func (d *dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	lang := d.lang(r)
	if q := r.URL.Query().Get("token"); q != "" && r.Method == http.MethodGet {
		if !d.good(q) {
			d.refuse(w, lang)
			return
		}
		session, err := d.newSession()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: serveCookie, Value: session, Path: "/", HttpOnly: true, Secure: d.secure, SameSite: http.SameSiteStrictMode})
		u := *r.URL
		v := u.Query()
		v.Del("token")
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	session, ok := d.session(r)
	if !ok {
		d.refuse(w, lang)
		return
	}
	csrf := d.csrf(session)
	if r.Method == http.MethodPost {
		if err := d.origins.Check(r); err != nil {
			http.Error(w, text(lang, "serveCSRF"), http.StatusForbidden)
			return
		}
		if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(csrf)) {
			http.Error(w, text(lang, "serveCSRF"), http.StatusForbidden)
			return
		}
	}
	d.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, csrf)))
}

func (d *dashboard) good(s string) bool {
	return subtle.ConstantTimeCompare([]byte(s), []byte(d.token)) == 1
}

func (d *dashboard) refuse(w http.ResponseWriter, lang flower.Lang) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	d.tmpl.ExecuteTemplate(w, "refused", page{L: lang})
}

// lang is --lang, else the first of the browser's languages flower
// speaks, else the locale's.
func (d *dashboard) lang(r *http.Request) flower.Lang {
	if d.forced != "" {
		return d.forced.Canonical()
	}
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag := strings.ToLower(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]))
		switch {
		case strings.HasPrefix(tag, "zh"):
			return flower.Lang("zh").Canonical()
		case strings.HasPrefix(tag, "en"):
			return flower.Lang("en").Canonical()
		}
	}
	return d.fallback
}

type page struct {
	L    flower.Lang
	CSRF string
	// State and Query are the runs list's filter, States the states it
	// offers, Older the address of its next page ("" on the last).
	State, Query, Older string
	States              []string
	// Newer leads from an earlier page of a run's events back to the
	// newest, which is Live (its script appends what comes); LastEvent
	// is the id of the last event shown.
	Newer     string
	Live      bool
	LastEvent int64
	Runs      []team.Run
	Run       team.Run
	Events    []team.Event
	Workers   []team.WorkerInfo
	Note      string
}

func (d *dashboard) show(w http.ResponseWriter, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := d.tmpl.ExecuteTemplate(w, name, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (d *dashboard) fail(w http.ResponseWriter, err error, code int) {
	http.Error(w, screen.SanitizeLines(err.Error()), code)
}

func (d *dashboard) runsPage(w http.ResponseWriter, r *http.Request) {
	p, err := d.runsOf(r)
	if err != nil {
		d.fail(w, err, statusOf(err))
		return
	}
	p.CSRF = csrfOf(r)
	d.show(w, "runs", p)
}

// runsRows is the runs table's body alone, for the same filter and page:
// what the page's script puts in place when the live stream says a run
// changed.
func (d *dashboard) runsRows(w http.ResponseWriter, r *http.Request) {
	p, err := d.runsOf(r)
	if err != nil {
		d.fail(w, err, statusOf(err))
		return
	}
	d.show(w, "rows", p)
}

// runsPageSize is how many runs a page of the runs list shows; ?n=
// chooses another (1 to maxRunsPage).
const (
	runsPageSize = 50
	maxRunsPage  = 500
)

// runsOf is the page of runs the address asks for: ?state= keeps one
// state, ?q= the runs whose request holds the words, ?before=rN the runs
// older than rN (the next page), ?n= the page's size. Older links to the
// next page when there is one.
func (d *dashboard) runsOf(r *http.Request) (page, error) {
	q := r.URL.Query()
	p := page{L: d.lang(r), State: q.Get("state"), Query: strings.TrimSpace(q.Get("q")), States: team.States}
	f := team.RunFilter{Search: p.Query, Limit: runsPageSize}
	if p.State != "" {
		f.States = []string{p.State}
	}
	if n := q.Get("n"); n != "" {
		size, err := strconv.Atoi(n)
		if err != nil || size < 1 || size > maxRunsPage {
			return p, badAddress{fmt.Errorf(text(p.L, "serveBadPage"), n, maxRunsPage)}
		}
		f.Limit = size
	}
	if b := q.Get("before"); b != "" {
		id, err := team.ParseRun(b)
		if err != nil {
			return p, badAddress{err}
		}
		f.Before = id
	}
	size := f.Limit
	f.Limit++ // one more says whether an older page exists
	runs, err := d.t.Runs(r.Context(), f)
	if err != nil {
		return p, err
	}
	if len(runs) > size {
		runs = runs[:size]
		next := url.Values{"before": {team.RunName(runs[size-1].ID)}}
		for _, k := range []string{"state", "q", "n"} {
			if v := q.Get(k); v != "" {
				next.Set(k, v)
			}
		}
		p.Older = "/?" + next.Encode()
	}
	p.Runs = runs
	return p, nil
}

// live streams server-sent events: one "run" event, naming the run, for
// each event any run records (Team.Follow). A stream ends after
// streamFor and the browser opens the next a second later (retry): a
// proxy never holds one for long, and a headless browser's virtual clock,
// which stops while a request is open, moves on. Each stream starts with
// a "run" event for every run ("*"), so the page reloads its rows after
// a gap in which it heard nothing.
func (d *dashboard) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), d.streamFor)
	defer cancel()
	ids := make(chan int64, 64)
	go func() {
		err := d.t.Follow(ctx, func(e team.Event) {
			select {
			case ids <- e.Run:
			default: // the page reloads its rows on the next one anyway
			}
		})
		if err != nil && ctx.Err() == nil {
			cancel()
		}
	}()
	fmt.Fprint(w, "retry: 1000\nevent: run\ndata: *\n\n")
	fl.Flush()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-ids:
			fmt.Fprintf(w, "event: run\ndata: %s\n\n", team.RunName(id))
		}
		fl.Flush()
	}
}

func (d *dashboard) runID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := team.ParseRun(r.PathValue("run"))
	if err != nil {
		d.fail(w, err, http.StatusNotFound)
		return 0, false
	}
	return id, true
}

func (d *dashboard) runPage(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	run, err := d.t.Run(r.Context(), id)
	if err != nil {
		d.fail(w, err, http.StatusNotFound)
		return
	}
	p := page{L: d.lang(r), CSRF: csrfOf(r), Run: run, Note: r.URL.Query().Get("note")}
	// The newest page follows the run live; ?before=ID is the page of
	// events before that one, which stays as it is.
	if b := r.URL.Query().Get("before"); b != "" {
		before, err := strconv.ParseInt(b, 10, 64)
		if err != nil || before <= 0 {
			d.fail(w, fmt.Errorf(text(p.L, "serveBadBefore"), b), http.StatusBadRequest)
			return
		}
		p.Events, err = d.t.EventsBefore(r.Context(), id, before, eventsPage)
		if err != nil {
			d.fail(w, err, http.StatusBadGateway)
			return
		}
		p.Newer = "/runs/" + team.RunName(id)
	} else {
		p.Events, err = d.t.Events(r.Context(), id, 0, eventsPage)
		if err != nil {
			d.fail(w, err, http.StatusBadGateway)
			return
		}
		p.Live = true
	}
	if len(p.Events) > 0 {
		first := p.Events[0].ID
		if earlier, err := d.t.EventsBefore(r.Context(), id, first, 1); err == nil && len(earlier) > 0 {
			p.Older = "/runs/" + team.RunName(id) + "?before=" + strconv.FormatInt(first, 10)
		}
		p.LastEvent = p.Events[len(p.Events)-1].ID
	}
	d.show(w, "run", p)
}

// badAddress is an address the dashboard cannot read (a 400); other
// errors are the database's (a 502).
type badAddress struct{ error }

func (b badAddress) Unwrap() error { return b.error }

func statusOf(err error) int {
	if errors.As(err, new(badAddress)) || errors.Is(err, team.ErrNoState) {
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// eventsPage is how many events a page of a run's shows.
const eventsPage = 200

// runEvents is the lines of a run's events after ?after=ID, for the run
// page's script to append when the live stream names the run.
func (d *dashboard) runEvents(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	after, err := strconv.ParseInt(cmp.Or(r.URL.Query().Get("after"), "0"), 10, 64)
	if err != nil || after < 0 {
		d.fail(w, fmt.Errorf(text(d.lang(r), "serveBadBefore"), r.URL.Query().Get("after")), http.StatusBadRequest)
		return
	}
	evs, err := d.t.Events(r.Context(), id, after, 0)
	if err != nil {
		d.fail(w, err, http.StatusBadGateway)
		return
	}
	p := page{L: d.lang(r), Events: evs, LastEvent: after}
	if len(evs) > 0 {
		p.LastEvent = evs[len(evs)-1].ID
	}
	w.Header().Set("X-Last-Event", strconv.FormatInt(p.LastEvent, 10))
	d.show(w, "events", p)
}

// back returns to the run's page with a note of what the action did.
func (d *dashboard) back(w http.ResponseWriter, r *http.Request, id int64, note string) {
	http.Redirect(w, r, "/runs/"+team.RunName(id)+"?note="+url.QueryEscape(note), http.StatusSeeOther)
}

func (d *dashboard) reply(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	lang := d.lang(r)
	answer := strings.TrimSpace(r.PostFormValue("text"))
	if answer == "" {
		d.back(w, r, id, text(lang, "serveReplyEmpty"))
		return
	}
	kept, err := d.t.Reply(r.Context(), id, r.PostFormValue("question"), answer, false)
	if err != nil {
		d.back(w, r, id, err.Error())
		return
	}
	d.back(w, r, id, fmt.Sprintf(text(lang, "serveReplied"), kept.Question))
}

func (d *dashboard) cancel(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	if _, err := d.t.Cancel(r.Context(), id); err != nil {
		d.back(w, r, id, err.Error())
		return
	}
	d.back(w, r, id, text(d.lang(r), "serveCancelled"))
}

func (d *dashboard) retry(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	if _, err := d.t.Retry(r.Context(), id, "dashboard"); err != nil {
		d.back(w, r, id, err.Error())
		return
	}
	d.back(w, r, id, text(d.lang(r), "serveRetried"))
}

func (d *dashboard) workersPage(w http.ResponseWriter, r *http.Request) {
	ws, err := d.t.Workers(r.Context())
	if err != nil {
		d.fail(w, err, http.StatusBadGateway)
		return
	}
	d.show(w, "workers", page{L: d.lang(r), CSRF: csrfOf(r), Workers: ws, Note: r.URL.Query().Get("note")})
}

func (d *dashboard) drain(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	note := fmt.Sprintf(text(d.lang(r), "serveDraining"), name)
	if _, err := d.t.Drain(r.Context(), name); err != nil {
		note = err.Error()
	}
	http.Redirect(w, r, "/workers?note="+url.QueryEscape(note), http.StatusSeeOther)
}

// reportPage renders the run's report from the database (the run page
// links it once a worker has started the run: before, it has no state), as `flower
// report RUN` does, into a temporary folder removed after. The page's
// links to the run's files do not follow (they are not served).
func (d *dashboard) reportPage(w http.ResponseWriter, r *http.Request) {
	id, ok := d.runID(w, r)
	if !ok {
		return
	}
	run, err := d.t.Run(r.Context(), id)
	if err != nil {
		d.fail(w, err, http.StatusNotFound)
		return
	}
	dir, err := os.MkdirTemp("", "flower-serve-")
	if err != nil {
		d.fail(w, err, http.StatusInternalServerError)
		return
	}
	defer os.RemoveAll(dir)
	name := team.RunName(id)
	ws := filepath.Join(dir, name)
	runDir := filepath.Join(ws, "runs")
	if err := d.t.LayOut(r.Context(), id, runDir, filepath.Join(ws, ".flower")); err != nil {
		// Most often a run no worker has started: it has no state yet.
		d.fail(w, err, http.StatusNotFound)
		return
	}
	rep, err := report.Gather(r.Context(), runDir, ws)
	if err != nil {
		d.fail(w, err, http.StatusBadGateway)
		return
	}
	rep.RunDir = name + " · " + d.t.URL()
	rep.Workspace = run.Repo + " " + run.Branch
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The report carries its own inline styles and scripts and needs
	// nothing from elsewhere.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:")
	if err := report.Render(w, rep, dir); err != nil {
		d.fail(w, err, http.StatusInternalServerError)
	}
}
