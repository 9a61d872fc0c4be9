package oauth_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/web/oauth"
)

// TestMetadataDocumentRefusals shows each CIMD guard refusing a client:
// the authorize endpoint answers with an error page and never redirects.
func TestMetadataDocumentRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	mismatch := e.serveDoc("/bad/mismatch.json", `{"client_id":"https://elsewhere.example/doc.json","redirect_uris":["`+redirect+`"]}`)
	secret := e.serveDoc("/bad/secret.json", `{"client_id":"%s","client_secret":"s3cret","redirect_uris":["`+redirect+`"]}`)
	httpRedirect := e.serveDoc("/bad/http.json", `{"client_id":"%s","redirect_uris":["http://client.example/cb"]}`)
	noRedirects := e.serveDoc("/bad/none.json", `{"client_id":"%s","redirect_uris":[]}`)
	moved := e.serveDoc("/bad/moved.json", "redirect:/clients/doc.json")
	big := e.serveDoc("/bad/big.json", `{"client_id":"%s","client_name":"`+strings.Repeat("x", 20000)+`","redirect_uris":["`+redirect+`"]}`)
	notJSON := e.serveDoc("/bad/html.json", `<html>`)
	missing := e.docs.URL + "/bad/404.json"
	b := e.browser()
	_, challenge := pkce()
	for name, id := range map[string]string{"client_id mismatch": mismatch, "secret": secret, "http redirect": httpRedirect,
		"no redirects": noRedirects, "moved": moved, "too big": big, "not json": notJSON, "404": missing,
		"no path": e.docs.URL, "fragment": e.docs.URL + "/a#b"} {
		p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: id, redirect: redirect, state: "cimd-state",
			challenge: challenge, method: "S256"}))
		require.Equal(t, http.StatusBadRequest, p.status, name)
		require.Empty(t, p.header.Get("Location"), name)
		require.Contains(t, p.body, "not known to Acme", name)
	}
	// A valid document whose redirect_uri is not the one requested.
	ok := e.cimdClient("/clients/ok.json", redirect)
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: ok, redirect: "https://client.example/other", state: "cimd-state",
		challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusBadRequest, p.status)
}

// TestMetadataDocumentIsCached shows a fetched document is kept (per
// tenant) and not fetched on every request.
func TestMetadataDocumentIsCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	id := e.cimdClient("/clients/cached.json", redirect)
	tr := e.grant(e.browser(), "acme", id, redirect, "tools:read", "alice@acme.test")
	e.docMu.Lock()
	delete(e.doc, "/clients/cached.json") // the host goes away
	e.docMu.Unlock()
	status, tr2 := e.refresh("acme", id, tr.RefreshToken)
	require.Equal(t, http.StatusOK, status, "the cached document serves the token endpoint")
	// Once stale, a document that is gone (404) is not replaced by the cache.
	_, err := e.db.Pool.Exec(context.Background(), `UPDATE oauth_clients SET fetched_at = now() - interval '2 hours' WHERE id = $1`, id)
	require.NoError(t, err)
	status, _ = e.refresh("acme", id, tr2.RefreshToken)
	require.Equal(t, http.StatusUnauthorized, status, "invalid_client")
	// Another tenant has its own cache: it must fetch, and now cannot.
	_, challenge := pkce()
	p := e.browser().get(e.authorizeURL(authz{tenant: "globex", clientID: id, redirect: redirect, state: "cimd-state",
		challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusBadRequest, p.status)
}

// TestFetcherGuards checks the SSRF guard directly: private and loopback
// addresses are refused unless allowlisted; timeouts and size caps hold.
func TestFetcherGuards(t *testing.T) {
	t.Parallel()
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow.json" {
			<-r.Context().Done() // answers only once the fetcher has given up
			return
		}
		if r.URL.Path == "/moved.json" {
			http.Redirect(w, r, "/doc.json", http.StatusFound)
			return
		}
		w.Write([]byte(`{"client_id":"https://` + r.Host + r.URL.Path + `","redirect_uris":["https://c.example/cb"]}`))
	}))
	defer slow.Close()
	roots := x509.NewCertPool()
	roots.AddCert(slow.Certificate())
	ctx := context.Background()

	guarded := provider.NewFetcher(provider.FetcherConfig{RootCAs: roots})
	_, err := guarded.Fetch(ctx, slow.URL+"/doc.json")
	require.True(t, fault.Is(err, fault.Forbidden), "loopback without allowlist: %v", err)
	require.Contains(t, fault.Message(err), "non-public address")
	for _, u := range []string{"https://10.0.0.1/doc.json", "https://169.254.169.254/latest", "https://[::1]/doc.json",
		"https://192.168.1.1/x", "https://[fd00::1]/x", "https://100.64.0.1/x"} {
		_, err := guarded.Fetch(ctx, u)
		require.True(t, fault.Is(err, fault.Forbidden), "%s: %v", u, err)
	}
	// localhost resolves to loopback: refused at dial time.
	_, err = guarded.Fetch(ctx, strings.Replace(slow.URL, "127.0.0.1", "localhost", 1)+"/doc.json")
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)

	allowed := provider.NewFetcher(provider.FetcherConfig{RootCAs: roots, AllowPrivateHosts: []string{"127.0.0.1"}, Timeout: 500 * time.Millisecond, MaxBytes: 100})
	c, err := allowed.Fetch(ctx, slow.URL+"/doc.json")
	require.NoError(t, err)
	require.Equal(t, []string{"https://c.example/cb"}, c.RedirectURIs)
	_, err = allowed.Fetch(ctx, slow.URL+"/slow.json")
	require.True(t, fault.Is(err, fault.Unavailable), "timeout: %v", err)
	small := provider.NewFetcher(provider.FetcherConfig{RootCAs: roots, AllowPrivateHosts: []string{"127.0.0.1"}, MaxBytes: 10})
	_, err = small.Fetch(ctx, slow.URL+"/doc.json")
	require.True(t, fault.Is(err, fault.TooLarge), "%v", err)
	_, err = allowed.Fetch(ctx, "http://example.com/doc.json")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	// A redirect is not followed, and the client is told so.
	_, err = allowed.Fetch(ctx, slow.URL+"/moved.json")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	require.Contains(t, fault.Message(err), "redirects are not followed")
}

func TestDynamicRegistrationRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *oauth.Config) { c.RegisterLimit = oauth.Limit{N: 7, Per: time.Hour} })
	for name, tc := range map[string]struct {
		meta map[string]any
		code string
	}{
		"http redirect":   {map[string]any{"redirect_uris": []string{"http://client.example/cb"}}, "invalid_redirect_uri"},
		"fragment":        {map[string]any{"redirect_uris": []string{"https://client.example/cb#x"}}, "invalid_redirect_uri"},
		"custom scheme":   {map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
		"no redirect":     {map[string]any{"redirect_uris": []string{}}, "invalid_redirect_uri"},
		"implicit grant":  {map[string]any{"redirect_uris": []string{"https://c.example/cb"}, "grant_types": []string{"implicit"}}, "invalid_client_metadata"},
		"private_key_jwt": {map[string]any{"redirect_uris": []string{"https://c.example/cb"}, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"},
	} {
		status, _, eb := e.register("acme", tc.meta)
		require.Equal(t, http.StatusBadRequest, status, name)
		require.Equal(t, tc.code, eb["error"], name)
	}
	// Unknown scopes are dropped, not refused.
	status, rr, _ := e.register("acme", map[string]any{"redirect_uris": []string{"https://c.example/cb"}, "scope": "root tools:read"})
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "tools:read", rr.Scope)
	// Loopback http is fine. The limit counts every attempt per tenant.
	status, _, _ = e.register("acme", map[string]any{"redirect_uris": []string{"http://127.0.0.1:3000/cb"}})
	require.Equal(t, http.StatusTooManyRequests, status, "the 8th registration at acme exceeds the limit of 7")
	status, _, eb := e.register("globex", map[string]any{"redirect_uris": []string{"http://127.0.0.1:3000/cb", "http://[::1]/cb", "http://localhost/cb"}})
	require.Equal(t, http.StatusCreated, status, "the limit is per tenant: %v", eb)
}

func TestMetadataDocumentFetchLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *oauth.Config) { c.FetchLimit = oauth.Limit{N: 1, Per: time.Hour} })
	redirect := "https://client.example/cb"
	_, challenge := pkce()
	b := e.browser()
	first := e.cimdClient("/clients/one.json", redirect)
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: first, redirect: redirect, state: "lim", challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusOK, p.status, "the first document is fetched")
	p = b.get(e.authorizeURL(authz{tenant: "acme", clientID: first, redirect: redirect, state: "lim", challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusOK, p.status, "a cached document needs no fetch")
	second := e.cimdClient("/clients/two.json", redirect)
	p = b.get(e.authorizeURL(authz{tenant: "acme", clientID: second, redirect: redirect, state: "lim", challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "Too many client metadata documents")
	p = b.get(e.authorizeURL(authz{tenant: "globex", clientID: second, redirect: redirect, state: "lim", challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusOK, p.status, "the limit is per tenant")
}

// TestMetadataDocumentHostDown shows a stale cached document keeps serving
// (for a day) while its host is unreachable.
func TestMetadataDocumentHostDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	id := e.cimdClient("/clients/flaky.json", redirect)
	tr := e.grant(e.browser(), "acme", id, redirect, "tools:read", "alice@acme.test")
	e.docs.Close()
	ctx := context.Background()
	_, err := e.db.Pool.Exec(ctx, `UPDATE oauth_clients SET fetched_at = now() - interval '2 hours' WHERE id = $1`, id)
	require.NoError(t, err)
	status, tr2 := e.refresh("acme", id, tr.RefreshToken)
	require.Equal(t, http.StatusOK, status)
	_, err = e.db.Pool.Exec(ctx, `UPDATE oauth_clients SET fetched_at = now() - interval '25 hours' WHERE id = $1`, id)
	require.NoError(t, err)
	status, _ = e.refresh("acme", id, tr2.RefreshToken)
	require.Equal(t, http.StatusUnauthorized, status)
}
