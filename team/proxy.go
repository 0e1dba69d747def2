package team

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flowerrun/flower"
)

// defaultAPI is the Messages API's address when the worker's environment
// names none.
const defaultAPI = "https://api.anthropic.com"

// keyProxy serves the Messages API to the worker's runs on 127.0.0.1 and
// adds the worker's own key to what it forwards: a run's processes hold
// only a token of their own, valid while the run's attempt lasts, so a
// Bash call that prints its environment finds nothing it could use
// elsewhere or after the run.
type keyProxy struct {
	upstream *url.URL
	// header and value are how the key is sent upstream: x-api-key for an
	// API key, Authorization for a bearer token.
	header, value string
	// envKey is the variable the runs get their token in, the same kind
	// as the worker's own.
	envKey string

	ln  net.Listener
	srv *http.Server
	log *slog.Logger
	// socket is the same proxy on a unix socket: a confined run has a
	// network of its own with nothing in it, and reaches the proxy only
	// through this socket, bound into its confinement (APISocketEnv).
	socket    string
	socketDir string
	socketLn  net.Listener

	mu     sync.Mutex
	tokens map[string]string // token → run
}

// holdsKey says env holds a key for the model's API: the worker then
// serves it to its runs through its proxy.
func holdsKey(env []string) bool {
	last := map[string]string{} // the last of a name wins, as for newKeyProxy
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			last[k] = v
		}
	}
	return last["ANTHROPIC_API_KEY"] != "" || last["ANTHROPIC_AUTH_TOKEN"] != ""
}

// newKeyProxy starts the proxy when env holds a key (nil, nil when it
// holds none: the runs then have nothing to be kept from).
func newKeyProxy(env []string, log *slog.Logger) (*keyProxy, error) {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if key, v, ok := strings.Cut(env[i], "="); ok && key == k {
				return v
			}
		}
		return ""
	}
	p := &keyProxy{tokens: map[string]string{}, log: log}
	switch {
	case get("ANTHROPIC_API_KEY") != "":
		p.header, p.value, p.envKey = "X-Api-Key", get("ANTHROPIC_API_KEY"), "ANTHROPIC_API_KEY"
	case get("ANTHROPIC_AUTH_TOKEN") != "":
		p.header, p.value, p.envKey = "Authorization", "Bearer "+get("ANTHROPIC_AUTH_TOKEN"), "ANTHROPIC_AUTH_TOKEN"
	default:
		return nil, nil
	}
	base := get("ANTHROPIC_BASE_URL")
	if base == "" {
		base = defaultAPI
	}
	up, err := url.Parse(base)
	if err != nil || up.Scheme == "" || up.Host == "" {
		return nil, fmt.Errorf("ANTHROPIC_BASE_URL=%q is not an http(s) address", base)
	}
	p.upstream = up
	p.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the runs' API proxy cannot listen on 127.0.0.1: %w", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.upstream)
			r.Out.Header.Del("X-Api-Key")
			r.Out.Header.Del("Authorization")
			r.Out.Header.Set(p.header, p.value)
			r.Out.Host = p.upstream.Host
		},
		// Streamed answers (server-sent events) pass as they come.
		FlushInterval: -1,
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	p.srv = &http.Server{Handler: p.guard(rp), ReadHeaderTimeout: 30 * time.Second}
	if err := p.listenUnix(); err != nil {
		p.ln.Close()
		return nil, err
	}
	for _, ln := range []net.Listener{p.ln, p.socketLn} {
		go func() {
			if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Warn("flower worker: the runs' API proxy stopped", "err", err)
			}
		}()
	}
	return p, nil
}

// listenUnix opens the proxy's unix socket (listenSocket), open to every
// run's user (a root worker's runs run as others; the token is the key),
// removed at Close.
func (p *keyProxy) listenUnix() (err error) {
	p.socketDir, p.socket, p.socketLn, err = listenSocket("flower-api-", "api.sock", 0o666, -1)
	if err != nil {
		return fmt.Errorf("the runs' API proxy: %w", err)
	}
	return nil
}

// listenSocket listens on a unix socket named name in a folder of its own
// (prefix and random letters): short, as a socket's path has room for
// about 100 bytes; the folder 0711 (passable, not listable), the socket
// of mode perm and, when uid is not -1, owned by uid. The caller removes
// dir.
func listenSocket(prefix, name string, perm os.FileMode, uid int) (dir, path string, ln net.Listener, err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err == nil && len(dir) > 90 {
		os.Remove(dir)
		dir, err = os.MkdirTemp("/tmp", prefix)
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("no folder for its socket: %w", err)
	}
	path = filepath.Join(dir, name)
	if ln, err = net.Listen("unix", path); err == nil {
		err = errors.Join(os.Chmod(dir, 0o711), os.Chmod(path, perm))
		if err == nil && uid >= 0 {
			err = os.Lchown(path, uid, uid)
		}
		if err != nil {
			ln.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", "", nil, fmt.Errorf("cannot listen on %s: %w", path, err)
	}
	return dir, path, ln, nil
}

// guard lets through only requests that carry a live run's token and
// are on proxyAllowed: the worker's key is for a run's model calls, not
// for the rest of the API (batches, files, models, the organisation's).
func (p *keyProxy) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get("X-Api-Key")
		if tok == "" {
			tok = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		run, ok := p.runOf(tok)
		if !ok {
			refuse(w, http.StatusUnauthorized, "authentication_error", "flower worker: this run's API token is unknown or its run has ended")
			return
		}
		if why := proxyRefuses(r); why != "" {
			p.log.Warn("flower worker: the API proxy refused a run's request", "run", run, "method", r.Method, "path", r.URL.Path, "why", why)
			refuse(w, http.StatusForbidden, "permission_error", "flower worker: "+why)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// proxyAllowed are the requests a run's CLI makes of the API: its model
// calls and their token counts. Anything else is refused.
var proxyAllowed = map[string]string{
	"/v1/messages":              http.MethodPost,
	"/v1/messages/count_tokens": http.MethodPost,
}

// proxyRefusedBetas are the betas that would reach stored objects
// (batches, files) through an allowed path.
var proxyRefusedBetas = []string{"message-batches", "files-api"}

// proxyRefuses says why r is not forwarded ("" when it is).
func proxyRefuses(r *http.Request) string {
	if method, ok := proxyAllowed[r.URL.Path]; !ok || r.Method != method {
		return fmt.Sprintf("a run may only call POST /v1/messages and POST /v1/messages/count_tokens through this proxy, not %s %s", r.Method, r.URL.Path)
	}
	for _, h := range r.Header.Values("Anthropic-Beta") {
		for _, beta := range strings.Split(h, ",") {
			beta = strings.TrimSpace(beta)
			for _, refused := range proxyRefusedBetas {
				if strings.HasPrefix(beta, refused) {
					return fmt.Sprintf("the beta %q is not for a run", beta)
				}
			}
		}
	}
	return ""
}

// refuse answers as the API does, with an error of its kind.
func refuse(w http.ResponseWriter, status int, kind, message string) {
	body, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// runOf is the run tok was issued to.
func (p *keyProxy) runOf(tok string) (string, bool) {
	if tok == "" {
		return "", false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	run, ok := p.tokens[tok]
	return run, ok
}

// issue gives run a token and the variables its process gets instead of
// the worker's key; revoke ends the token.
func (p *keyProxy) issue(run string) (env map[string]string, revoke func()) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "flower-run-" + hex.EncodeToString(b)
	p.mu.Lock()
	p.tokens[tok] = run
	p.mu.Unlock()
	env = map[string]string{
		"ANTHROPIC_BASE_URL": "http://" + p.ln.Addr().String(),
		p.envKey:             tok,
		// Inside its own network the run's flower serves that address
		// itself and forwards to the socket (app's forwardAPI).
		flower.APISocketEnv: p.socket,
	}
	return env, func() {
		p.mu.Lock()
		delete(p.tokens, tok)
		p.mu.Unlock()
	}
}

func (p *keyProxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	os.RemoveAll(p.socketDir)
}
