package team

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNetHostsAreCheckedAndMatched(t *testing.T) {
	got, err := ParseNetHosts([]string{"Registry.NPMjs.org, *.golang.org", "10.0.0.7:8080", "[::1]:443", ""})
	if err != nil || strings.Join(got, " ") != "registry.npmjs.org *.golang.org 10.0.0.7:8080 [::1]:443" {
		t.Fatalf("ParseNetHosts = %q, %v", got, err)
	}
	for _, bad := range []string{"http://example.com", "exa mple.com", "example.com:0", "example.com:http", "-x.com", "a..b", "*"} {
		if _, err := ParseNetHosts([]string{bad}); err == nil || !strings.Contains(err.Error(), "--net") {
			t.Errorf("ParseNetHosts(%q) = %v, want a refusal naming --net", bad, err)
		}
	}
	for _, c := range []struct {
		target      string
		ok, literal bool
	}{
		{"registry.npmjs.org:443", true, false},
		{"registry.npmjs.org:80", true, false},
		{"registry.npmjs.org:22", false, false},
		{"evil-registry.npmjs.org:443", false, false},
		{"proxy.golang.org:443", true, false},
		{"golang.org:443", false, false},
		{"sum.golang.org.evil.com:443", false, false},
		{"10.0.0.7:8080", true, true},
		{"10.0.0.7:443", false, false},
		{"[::1]:443", true, true},
		{"no-port", false, false},
	} {
		ok, literal := permits(got, c.target)
		if ok != c.ok || literal != c.literal {
			t.Errorf("permits(%s) = %v, %v; want %v, %v", c.target, ok, literal, c.ok, c.literal)
		}
	}
}

// The egress answers what its list allows and refuses the rest: a listed
// address (plainly and by CONNECT), an unlisted one, and a listed name
// that leads to this machine's loopback.
func TestEgressLetsThroughOnlyItsList(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served "+r.URL.Path) })}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	e, err := startEgress("r1", []string{addr, "localhost:" + port}, -1, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ask := func(request string) string {
		t.Helper()
		c, err := net.DialTimeout("unix", e.socket, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, request)
		b, _ := io.ReadAll(c)
		return string(b)
	}
	if got := ask("GET http://" + addr + "/plain HTTP/1.1\r\nHost: " + addr + "\r\n\r\n"); !strings.Contains(got, "200 OK") || !strings.Contains(got, "served /plain") {
		t.Errorf("a listed address, plainly:\n%s", got)
	}
	// CONNECT, then a request of its own inside the tunnel.
	c, err := net.DialTimeout("unix", e.socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	if !strings.Contains(line, "200") {
		t.Fatalf("CONNECT to a listed address: %q", line)
	}
	br.ReadString('\n')
	fmt.Fprintf(c, "GET /tunnel HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	if got, _ := io.ReadAll(br); !strings.Contains(string(got), "served /tunnel") {
		t.Errorf("through the tunnel:\n%s", got)
	}
	c.Close()
	if got := ask("CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n"); !strings.Contains(got, "403") || !strings.Contains(got, "not on this run's network allow-list") {
		t.Errorf("an unlisted address:\n%s", got)
	}
	if got := ask("CONNECT localhost:" + port + " HTTP/1.1\r\nHost: localhost\r\n\r\n"); !strings.Contains(got, "403") || !strings.Contains(got, "an address of this machine") {
		t.Errorf("a listed name leading to loopback:\n%s", got)
	}
}
