// Package egressproxy is the one way out of a locked-down container's
// network: an internal Docker network (no route out, containers cannot
// reach each other) and, on its gateway, an HTTP CONNECT proxy that
// tunnels only to port 443 of the allowed hosts, at the addresses they
// had when it started. Computer use's browsers and the workspaces'
// containers use it. In: the allowed hosts (and development hosts); out:
// a network to attach the container to and the proxy URL to give it.
package egressproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/visorhq/visor/egress"
)

// Resolver looks host names up. net.DefaultResolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens the proxy's upstream connections.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Proxy is one container's egress proxy: the only way out of its
// internal network. It accepts HTTP CONNECT to port 443 of a host that was
// on the allowlist when the session started, and tunnels to the addresses
// that host had then (pinned); everything else — plain HTTP, another port,
// an IP literal, an unlisted host — is refused. A later DNS change of a
// listed host has no effect: the pinned addresses are the only ones dialed.
type Proxy struct {
	ln     net.Listener
	pinned map[string][]netip.Addr
	dialer Dialer
	log    *slog.Logger

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
	refused int
}

// Pin resolves each allowed host once, keeping only the addresses the
// outbound guard calls public (egress.Public) unless the host is one of
// the operator's development hosts. A host left with no address (it did
// not resolve, or only to private ones) is left out, so navigation to it
// fails, and reported. Hosts are compared in lower case.
func Pin(ctx context.Context, r Resolver, allowed, devHosts []string) (map[string][]netip.Addr, []string) {
	pinned := map[string][]netip.Addr{}
	var failed []string
	for _, h := range allowed {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := r.LookupNetIP(lctx, "ip", h)
		cancel()
		if !slices.Contains(devHosts, h) {
			addrs = slices.DeleteFunc(addrs, func(a netip.Addr) bool { return !egress.Public(a) })
		}
		if err != nil || len(addrs) == 0 {
			failed = append(failed, h)
			continue
		}
		pinned[h] = addrs
	}
	return pinned, failed
}

// StartProxy listens on addr (the network's gateway, port 0) and serves
// until Close.
func StartProxy(addr string, pinned map[string][]netip.Addr, d Dialer, log *slog.Logger) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("egress proxy listen on %s: %w", addr, err)
	}
	p := &Proxy{ln: ln, pinned: pinned, dialer: d, log: log, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address the container is told to use as its proxy.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Refused counts the requests the proxy refused.
func (p *Proxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Close stops listening and cuts every open tunnel.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on && p.closed {
		return false
	}
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c, true) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			p.handle(c)
		}()
	}
}

// errRefused is a request the allowlist does not allow.
var errRefused = errors.New("refused by the egress allowlist")

func (p *Proxy) handle(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReaderSize(c, 4096))
	if err != nil {
		return
	}
	addrs, err := p.allow(req)
	if err != nil {
		p.mu.Lock()
		p.refused++
		p.mu.Unlock()
		p.log.Info("egress refused", "method", req.Method, "host", hostOnly(req.Host))
		_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	up, err := p.dial(addrs)
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	if !p.track(up, true) {
		_ = up.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	_ = c.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// allow returns the pinned addresses of a CONNECT the allowlist allows.
func (p *Proxy) allow(req *http.Request) ([]netip.Addr, error) {
	if req.Method != http.MethodConnect {
		return nil, errRefused // plain http:// through the proxy
	}
	host, port, err := net.SplitHostPort(req.Host)
	if err != nil || port != "443" {
		return nil, errRefused
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	addrs, ok := p.pinned[host] // an IP literal is never a key
	if !ok {
		return nil, errRefused
	}
	return addrs, nil
}

func (p *Proxy) dial(addrs []netip.Addr) (net.Conn, error) {
	var last error
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, 443).String())
		cancel()
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
