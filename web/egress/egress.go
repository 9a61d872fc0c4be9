// Package egress sends HTTP requests to URLs that callers chose — a client
// metadata document, an AI employee runtime's webhook — without letting
// them reach Visor's own network. Every address a Client dials is checked
// when it is dialled (after DNS, so rebinding does not help) and refused
// when it is loopback, private, link-local or otherwise special, unless
// its host is on a development allowlist. Redirects are not followed, no
// proxy is used, and time and response size are capped.
package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
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
	c := &Client{allow: cfg.AllowPrivateHosts, maxBytes: cfg.MaxBytes}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the guard
		DialContext:           c.dial,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   8,
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

// dial connects to addr, refusing private destinations unless the host is
// allowlisted. The check runs in the dialer's Control hook, on the exact
// IP being connected to.
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	allowed := slices.Contains(c.allow, strings.ToLower(host))
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if allowed {
			return nil
		}
		return CheckPublic(address)
	}}
	return d.DialContext(ctx, network, addr)
}

// CheckPublic refuses loopback, private, link-local, unspecified,
// multicast and other special-purpose addresses ("ip:port").
func CheckPublic(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unparseable address %q", address)
	}
	ip := ap.Addr().Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsUnspecified() || ip.IsMulticast() || isSpecial(ip) {
		return fault.New(fault.Forbidden, "the host resolves to a non-public address")
	}
	return nil
}

var specialNets = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 can reach private IPv4
	netip.MustParsePrefix("2002::/16"),      // 6to4 likewise
	netip.MustParsePrefix("fc00::/7"),       // unique local
	netip.MustParsePrefix("169.254.0.0/16"), // link-local (metadata services)
}

func isSpecial(ip netip.Addr) bool {
	for _, p := range specialNets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// maxURL bounds a URL that callers give.
const maxURL = 2000

// CheckURL refuses a URL that a Client should never be pointed at: not
// absolute https (plain http only for a host on devHosts), with
// credentials or a fragment, or naming localhost or a non-public IP
// literal (unless its host is on devHosts). Host names are checked again
// on every dial, after DNS. It returns the URL normalized; errors are
// fault.Invalid with what is wrong.
func CheckURL(raw string, devHosts []string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || len(raw) > maxURL || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return "", fault.New(fault.Invalid, "must be an absolute https URL of at most %d bytes, without credentials or fragment", maxURL)
	}
	host := strings.ToLower(u.Hostname())
	dev := slices.Contains(devHosts, host)
	if u.Scheme != "https" && (u.Scheme != "http" || !dev) {
		return "", fault.New(fault.Invalid, "must use https")
	}
	if dev {
		return u.String(), nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if CheckPublic(netip.AddrPortFrom(ip, 443).String()) != nil {
			return "", fault.New(fault.Invalid, "names a private or special address (%s); it must be reachable on the public internet", ip)
		}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return "", fault.New(fault.Invalid, "names localhost; it must be reachable on the public internet")
	}
	return u.String(), nil
}
