package team

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The runs' proxy forwards a run's model calls and their token counts
// with the worker's key, and nothing else: the rest of the API (batches,
// files, models, any path), other methods and the betas that reach stored
// objects are refused before anything is sent upstream, and the refusal
// is logged with the run's name. Before, any path went through with the
// worker's key.
func TestTheRunsProxyForwardsOnlyModelCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" key="+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer upstream.Close()
	var logged strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logged.Write(b)
	}), nil))
	p, err := newKeyProxy([]string{"ANTHROPIC_API_KEY=sk-worker-key", "ANTHROPIC_BASE_URL=" + upstream.URL}, log)
	if err != nil || p == nil {
		t.Fatalf("newKeyProxy: %v", err)
	}
	defer p.Close()
	env, revoke := p.issue("r7")
	base, tok := env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_API_KEY"]

	send := func(method, path, beta, token string) int {
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", token)
		if beta != "" {
			req.Header.Set("Anthropic-Beta", beta)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusForbidden && !strings.Contains(string(body), `"permission_error"`) {
			t.Errorf("%s %s refused without the API's error shape: %s", method, path, body)
		}
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, beta string
		want               int
	}{
		{"POST", "/v1/messages?beta=true", "interleaved-thinking-2025-05-14", 200},
		{"POST", "/v1/messages/count_tokens?beta=true", "", 200},
		{"GET", "/v1/models", "", 403},
		{"POST", "/v1/messages/batches", "message-batches-2024-09-24", 403},
		{"GET", "/v1/messages/batches/msgbatch_1", "", 403},
		{"POST", "/v1/files", "files-api-2025-04-14", 403},
		{"GET", "/v1/organizations/me", "", 403},
		{"DELETE", "/v1/messages", "", 403},
		{"GET", "/v1/messages", "", 403},
		{"POST", "/v1/messages", "claude-code-20250219, files-api-2025-04-14", 403},
		{"POST", "/v1/messages/../models", "", 403},
		{"POST", "/V1/MESSAGES", "", 403},
		{"POST", "/v1/messages", "", 200},
	} {
		if code := send(c.method, c.path, c.beta, tok); code != c.want {
			t.Errorf("%s %s (beta %q): %d, want %d", c.method, c.path, c.beta, code, c.want)
		}
	}
	if code := send("POST", "/v1/messages", "", "flower-run-forged"); code != http.StatusUnauthorized {
		t.Errorf("a forged token: %d, want 401", code)
	}
	revoke()
	if code := send("POST", "/v1/messages", "", tok); code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d, want 401", code)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"POST /v1/messages key=sk-worker-key", "POST /v1/messages/count_tokens key=sk-worker-key", "POST /v1/messages key=sk-worker-key"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("upstream was sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "run=r7") || !strings.Contains(logged.String(), "path=/v1/models") {
		t.Errorf("the refusals are not logged with the run:\n%s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
