package oauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// Fetcher retrieves Client ID Metadata Documents from the internet without
// letting a client_id reach Visor's own network: every address it dials is
// checked at dial time (after DNS, so rebinding does not help), redirects
// are not followed, and size and time are capped.
type Fetcher struct {
	client   *http.Client
	allow    []string // hosts that may resolve to private addresses (development)
	maxBytes int64
}

// FetcherConfig configures a Fetcher.
type FetcherConfig struct {
	// AllowPrivateHosts lists host names (no port) that may resolve to
	// loopback, private or link-local addresses: local development only.
	AllowPrivateHosts []string
	// RootCAs replaces the system roots (tests).
	RootCAs  *x509.CertPool
	Timeout  time.Duration // default 5s
	MaxBytes int64         // default 16 KiB
}

// NewFetcher returns a Fetcher.
func NewFetcher(cfg FetcherConfig) *Fetcher {
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 16 << 10
	}
	f := &Fetcher{allow: cfg.AllowPrivateHosts, maxBytes: cfg.MaxBytes}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the guard
		DialContext:           f.dial,
		TLSClientConfig:       &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
	}
	f.client = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
	return f
}

var errRedirect = errors.New("redirects are not followed")

// dial connects to addr, refusing private destinations unless the host is
// allowlisted. The check runs in the dialer's Control hook, on the exact
// IP being connected to.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	allowed := slices.Contains(f.allow, strings.ToLower(host))
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		if allowed {
			return nil
		}
		return checkPublic(address)
	}}
	return d.DialContext(ctx, network, addr)
}

// checkPublic refuses loopback, private, link-local, unspecified,
// multicast and other special-purpose addresses.
func checkPublic(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unparseable address %q", address)
	}
	ip := ap.Addr().Unmap()
	if !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		ip.IsUnspecified() || ip.IsMulticast() || isSpecial(ip) {
		return fault.New(fault.Forbidden, "the client_id host resolves to a non-public address")
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

// Fetch retrieves and validates the metadata document at id.
func (f *Fetcher) Fetch(ctx context.Context, id string) (credentials.Client, error) {
	if _, err := checkMetadataURL(id); err != nil {
		return credentials.Client{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return credentials.Client{}, fault.New(fault.Invalid, "the client_id is not a usable URL")
	}
	req.Header.Set("Accept", "application/json")
	res, err := f.client.Do(req)
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return credentials.Client{}, fe
		}
		if errors.Is(err, errRedirect) {
			return credentials.Client{}, fault.New(fault.Invalid, "the client metadata document URL redirects; redirects are not followed")
		}
		return credentials.Client{}, fault.Newf(fault.Unavailable, err, "the client metadata document could not be fetched")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return credentials.Client{}, fault.New(fault.Invalid, "fetching the client metadata document returned HTTP %d", res.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, f.maxBytes+1))
	if err != nil {
		return credentials.Client{}, fault.Newf(fault.Unavailable, err, "the client metadata document could not be read")
	}
	if int64(len(body)) > f.maxBytes {
		return credentials.Client{}, fault.New(fault.TooLarge, "the client metadata document is larger than %d bytes", f.maxBytes)
	}
	return ParseClientMetadataDocument(id, body)
}
