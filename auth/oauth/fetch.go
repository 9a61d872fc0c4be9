package oauth

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// Fetcher retrieves Client ID Metadata Documents from the internet without
// letting a client_id reach Visor's own network: it fetches through an
// egress.Client (every dialled address checked after DNS, no redirects,
// size and time capped).
type Fetcher struct {
	client *egress.Client
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
	return &Fetcher{client: egress.New(egress.Config{AllowPrivateHosts: cfg.AllowPrivateHosts, RootCAs: cfg.RootCAs,
		Timeout: cfg.Timeout, MaxBytes: cfg.MaxBytes})}
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
		// A redirect is also a fault (egress refuses it as it refuses an
		// address), so it is told apart first.
		if errors.Is(err, egress.ErrRedirect) {
			return credentials.Client{}, fault.New(fault.Invalid, "the client metadata document URL redirects; redirects are not followed")
		}
		var fe *fault.Error
		if errors.As(err, &fe) {
			return credentials.Client{}, fault.New(fe.Code, "the client_id %s", strings.TrimPrefix(fe.Msg, "the "))
		}
		return credentials.Client{}, fault.Newf(fault.Unavailable, err, "the client metadata document could not be fetched")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return credentials.Client{}, fault.New(fault.Invalid, "fetching the client metadata document returned HTTP %d", res.StatusCode)
	}
	body, err := f.client.ReadBody(res)
	if fault.Is(err, fault.TooLarge) {
		return credentials.Client{}, fault.New(fault.TooLarge, "the client metadata document is %s", strings.TrimPrefix(fault.Message(err), "the response is "))
	}
	if err != nil {
		return credentials.Client{}, fault.Newf(fault.Unavailable, err, "the client metadata document could not be read")
	}
	return ParseClientMetadataDocument(id, body)
}
