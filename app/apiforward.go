package app

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/flowerrun/flower"
)

// forwardAPI serves the model's API inside a confined team run: the run
// has a network of its own with nothing in it, so this process listens on
// the address ANTHROPIC_BASE_URL names (the worker's proxy's, free in this
// network) and forwards each connection to the proxy's unix socket, bound
// into the confinement (flower.APISocketEnv). The CLI finds the API where
// it was told; nothing else of the host is reachable. Nothing to do when
// the environment names no socket.
func (m *Command) forwardAPI() error {
	socket := m.getenv(flower.APISocketEnv)
	if socket == "" {
		return nil
	}
	base, err := url.Parse(m.getenv("ANTHROPIC_BASE_URL"))
	if err != nil || base.Scheme != "http" || base.Host == "" {
		return usageErrorf("%s=%q needs ANTHROPIC_BASE_URL to be an http address on this run's loopback, not %q", flower.APISocketEnv, socket, m.getenv("ANTHROPIC_BASE_URL"))
	}
	if err := serveForward(base.Host, socket, "API"); err != nil {
		return err
	}
	// The hosts its submission lists (flower submit --net), the same way.
	if netSocket := m.getenv(flower.NetSocketEnv); netSocket != "" {
		return serveForward(flower.NetProxyAddr, netSocket, "network")
	}
	return nil
}

// serveForward listens on addr in the run's own network and forwards each
// connection to socket.
func serveForward(addr, socket, what string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("flower: a confined team run cannot serve its %s address %s in its own network (%w): was it started outside its confinement?", what, addr, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				fmt.Fprintf(os.Stderr, "flower: the run's %s forwarder stopped: %v\n", what, err)
				return
			}
			go forwardConn(c, socket)
		}
	}()
	return nil
}

// forwardConn copies c to a fresh connection to the socket and back. The
// client's end of its sending is passed on (a half close); the proxy's end
// ends the exchange: c is closed then, so a client that keeps it open
// holds no goroutine here.
func forwardConn(c net.Conn, socket string) {
	defer c.Close()
	up, err := net.DialTimeout("unix", socket, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "flower: the worker's proxy (%s) cannot be reached: %v\n", socket, err)
		return
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, c)
		_ = up.(*net.UnixConn).CloseWrite()
	}()
	_, _ = io.Copy(c, up)
	c.Close()
	wg.Wait()
}
