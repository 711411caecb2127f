// Package tcpproxy is a TCP forwarder for tests that need a dependency to
// go away on cue: point a process at the proxy, then Close it, and every
// open connection and every new dial fails as if the service were down.
package tcpproxy

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards 127.0.0.1:<port> to a target address.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// Start listens on a free local port and forwards to target until Close
// (called at the latest when the test ends).
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	return StartOn(t, "127.0.0.1:0", target)
}

// StartOn is Start listening on addr: a closed proxy's Addr brings the
// service back where its clients look for it.
func StartOn(t testing.TB, addr, target string) *Proxy {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		var d net.Dialer
		u, err := d.DialContext(context.Background(), "tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, u) {
			return
		}
		go pipe(c, u)
		go pipe(u, c)
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			_ = c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// Close stops listening and cuts every forwarded connection. Idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}
