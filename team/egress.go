package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flowerrun/flower"
)

// A run's network (flower submit --net): a confined run has a network of
// its own with nothing in it, and reaches the hosts its submission names,
// and those alone, through the worker. Its flower serves an HTTP proxy
// address inside the run's network (flower.NetProxyAddr) and forwards each
// connection to the run's egress socket, where the worker answers CONNECT
// (and plain http:// requests) for the listed hosts and refuses the rest.

// ParseNetHosts checks and normalises a run's host allow-list: each entry
// a host name or an IP address, with a port or without (then 80 and 443),
// a name may start with "*." for any name below it. Empty entries are
// dropped; the list is returned lower-cased.
func ParseNetHosts(entries []string) ([]string, error) {
	var out []string
	for _, e := range entries {
		for _, part := range strings.Split(e, ",") {
			part = strings.ToLower(strings.TrimSpace(part))
			if part == "" {
				continue
			}
			host, port, err := splitEntry(part)
			if err != nil || net.ParseIP(host) == nil && !validName(strings.TrimPrefix(host, "*.")) {
				return nil, fmt.Errorf("--net %q: give a host name (example.com, *.example.com) or an IP address, with :PORT or without (80 and 443), not a URL", part)
			}
			if port != "" {
				if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
					return nil, fmt.Errorf("--net %q: the port is a number from 1 to 65535", part)
				}
			}
			out = append(out, part)
		}
	}
	return out, nil
}

// splitEntry splits "host", "host:port", "[v6]:port" or a bare IPv6.
func splitEntry(e string) (host, port string, err error) {
	if net.ParseIP(e) != nil {
		return e, "", nil
	}
	if strings.Contains(e, ":") {
		return net.SplitHostPort(e)
	}
	return e, "", nil
}

// validName is a DNS name of letters, digits, hyphens and dots.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// permits reports whether hostport (a CONNECT target or an http URL's
// host, port included) is on the list, and whether the entry that allows
// it names an IP address (the only way to allow a loopback or private
// address: a name that resolves to one is refused, so a DNS answer cannot
// lead a run to the worker's own services).
func permits(allow []string, hostport string) (ok, literal bool) {
	host, port, err := net.SplitHostPort(strings.ToLower(hostport))
	if err != nil {
		return false, false
	}
	for _, e := range allow {
		eh, ep, err := splitEntry(e)
		if err != nil {
			continue
		}
		if ep == "" && port != "80" && port != "443" || ep != "" && ep != port {
			continue
		}
		switch {
		case eh == host:
			return true, net.ParseIP(eh) != nil
		case strings.HasPrefix(eh, "*.") && strings.HasSuffix(host, eh[1:]):
			return true, false
		}
	}
	return false, false
}

// egress is one run's way out: an HTTP proxy on a unix socket that only
// the run's user may open, bound into the run's confinement.
type egress struct {
	socket string
	dir    string
	srv    *http.Server
	allow  []string
	run    string
	log    *slog.Logger
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// startEgress serves run's allow-list on a socket of its own, owned by
// uid (-1: this process's user).
func startEgress(run string, allow []string, uid int, log *slog.Logger) (*egress, error) {
	dir, socket, ln, err := listenSocket("flower-net-", "net.sock", 0o600, uid)
	if err != nil {
		return nil, fmt.Errorf("the run's network: %w", err)
	}
	e := &egress{socket: socket, dir: dir, allow: allow, run: run, log: log, conns: map[net.Conn]struct{}{}}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// env is what the run's processes get: the proxy's address for every
// program that honours one, and the socket its flower forwards to.
func (e *egress) env() map[string]string {
	proxy := "http://" + flower.NetProxyAddr
	return map[string]string{
		"HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy, "https_proxy": proxy,
		// The model's API is the run's own loopback address.
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
		flower.NetSocketEnv: e.socket,
	}
}

func (e *egress) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
	e.mu.Lock()
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	os.RemoveAll(e.dir)
}

func (e *egress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if r.Method != http.MethodConnect {
		if r.URL.Scheme != "http" || r.URL.Host == "" {
			http.Error(w, "flower: this is the run's network proxy: give it CONNECT or an http:// address", http.StatusBadRequest)
			return
		}
		target = r.URL.Host
		if r.URL.Port() == "" {
			target = net.JoinHostPort(r.URL.Hostname(), "80")
		}
	}
	ok, literal := permits(e.allow, target)
	if !ok {
		e.refuse(w, target, "is not on this run's network allow-list (flower submit --net)")
		return
	}
	dialer := net.Dialer{Timeout: 15 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, _ := net.SplitHostPort(address)
		if ip := net.ParseIP(host); ip != nil && !literal && !publicIP(ip) {
			return &privateAddrError{target: target, ip: ip}
		}
		return nil
	}}
	up, err := dialer.DialContext(r.Context(), "tcp", target)
	if err != nil {
		if pe := (*privateAddrError)(nil); errors.As(err, &pe) {
			e.refuse(w, target, pe.Error())
			return
		}
		http.Error(w, "flower: "+target+" cannot be reached: "+err.Error(), http.StatusBadGateway)
		return
	}
	e.log.Info("flower worker: a run reached a host of its --net", "run", e.run, "host", target)
	if r.Method != http.MethodConnect {
		// A plain http:// request: sent on as it came, in origin form.
		r.RequestURI, r.Close = "", true
		r.Header.Del("Proxy-Connection")
		r.Header.Del("Proxy-Authorization")
		if err := r.Write(up); err != nil {
			up.Close()
			http.Error(w, "flower: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	e.tunnel(w, up, r.Method == http.MethodConnect)
}

// privateAddrError: a listed name led to an address of this machine or
// its private network.
type privateAddrError struct {
	target string
	ip     net.IP
}

func (e *privateAddrError) Error() string {
	return fmt.Sprintf("resolves to %s, an address of this machine or its private network: list the address itself to allow it", e.ip)
}

// tunnel joins the client's connection to up, after saying the tunnel is
// open when the client asked for one (CONNECT).
func (e *egress) tunnel(w http.ResponseWriter, up net.Conn, connect bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "flower: the proxy cannot take over the connection", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	e.mu.Lock()
	e.conns[client], e.conns[up] = struct{}{}, struct{}{}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.conns, client)
		delete(e.conns, up)
		e.mu.Unlock()
		client.Close()
		up.Close()
	}()
	if connect {
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// What the client sent past the request's head first.
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
		_, _ = io.Copy(up, client)
		if c, ok := up.(*net.TCPConn); ok {
			_ = c.CloseWrite()
		}
	}()
	_, _ = io.Copy(client, up)
	client.Close()
	<-done
}

func (e *egress) refuse(w http.ResponseWriter, target, why string) {
	e.log.Warn("flower worker: a run's connection was refused", "run", e.run, "host", target, "why", why)
	http.Error(w, "flower: "+target+" "+why, http.StatusForbidden)
}

// publicIP: not loopback, link-local, private, unspecified or multicast.
func publicIP(ip net.IP) bool {
	return !(ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsPrivate() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast())
}
