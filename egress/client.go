package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/visorhq/visor/services/fault"
)

// Config configures a Client.
type Config struct {
	// AllowPrivateHosts lists host names (no port) that may resolve to
	// loopback, private or link-local addresses: local development only.
	AllowPrivateHosts []string
	// RootCAs replaces the system roots (tests).
	RootCAs  *x509.CertPool
	Timeout  time.Duration // whole request; default 5s
	MaxBytes int64         // largest response body read; default 16 KiB
	// IdleConnsPerHost is how many kept-alive connections to one host
	// wait for reuse (8 if zero); set it to the requests a caller sends
	// one host at once, so that a steady flow reuses its connections
	// instead of dialing (and handshaking) anew.
	IdleConnsPerHost int
}

// Client is an SSRF-guarded HTTP client.
type Client struct {
	http     *http.Client
	allow    []string
	maxBytes int64
}

// ErrRedirect is returned (wrapped) for a response that redirects. It is a
// fault.Forbidden error, as a refused address is, so a caller outside web/
// tells both refusals from a failure worth retrying by fault.Is alone.
var ErrRedirect error = fault.New(fault.Forbidden, "redirects are not followed")

// New returns a Client.
func New(cfg Config) *Client {
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 16 << 10
	}
	if cfg.IdleConnsPerHost <= 0 {
		cfg.IdleConnsPerHost = 8
	}
	c := &Client{allow: cfg.AllowPrivateHosts, maxBytes: cfg.MaxBytes}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the guard
		DialContext:           c.dial,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          max(64, cfg.IdleConnsPerHost),
		MaxIdleConnsPerHost:   cfg.IdleConnsPerHost,
		IdleConnTimeout:       30 * time.Second,
	}
	c.http = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return ErrRedirect }}
	return c
}

// Do sends req. A dial to a refused address fails with a fault.Forbidden
// error; a redirect with ErrRedirect.
func (c *Client) Do(req *http.Request) (*http.Response, error) { return c.http.Do(req) }

// ReadBody reads at most the configured size of res's body; a larger body
// is fault.TooLarge.
func (c *Client) ReadBody(res *http.Response) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(res.Body, c.maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > c.maxBytes {
		return nil, fault.New(fault.TooLarge, "the response is larger than %d bytes", c.maxBytes)
	}
	return body, nil
}

// dial connects to addr, refusing what is not Public unless the host is
// allowlisted. The check runs in the dialer's Control hook, on the exact
// IP being connected to, so a name that resolves (or rebinds) to a private
// address is refused as its literal would be.
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	allowed := slices.Contains(c.allow, strings.ToLower(host))
	if !allowed && localName(strings.ToLower(host)) {
		return nil, fault.Newf(fault.Forbidden, ErrNotPublic, "the host resolves to a non-public address")
	}
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if allowed {
			return nil
		}
		return CheckPublic(address)
	}}
	return d.DialContext(ctx, network, addr)
}

// Streaming returns an HTTP client on c's guarded transport without c's
// whole-request timeout, for long-lived streams (server-sent events) whose
// requests the caller bounds with a context. Redirects are refused as by
// c, and the response header timeout still applies.
func (c *Client) Streaming() *http.Client {
	return &http.Client{Transport: c.http.Transport, CheckRedirect: c.http.CheckRedirect}
}
