package oauth_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/oauth"
)

// TestTenantIsolation shows a client, code, consent, session and token of
// tenant A are useless at tenant B.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	require.Equal(t, e.base+"/t/globex", e.discover("globex").Issuer)
	redirect := "https://client.example/cb"
	dcr := e.dcrClient("acme", redirect)
	doc := e.cimdClient("/clients/both.json", redirect) // a URL client id is valid at both tenants
	b := e.browser()
	tr := e.grant(b, "acme", doc, redirect, "tools:read", "alice@acme.test")

	// A's token and refresh token at B.
	status, _, h := e.call("globex", tr.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, h.Get("WWW-Authenticate"), "/t/globex/mcp")
	status, _ = e.refresh("globex", doc, tr.RefreshToken)
	require.NotEqual(t, http.StatusOK, status)
	// Revoking A's token at B does nothing to it.
	status, _ = e.postForm("/t/globex/oauth/revoke", url.Values{"token": {tr.AccessToken}, "client_id": {doc}}, "", "")
	require.Equal(t, http.StatusOK, status)
	status, _, _ = e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusOK, status)

	// A's registered client is unknown at B.
	_, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "globex", clientID: dcr, redirect: redirect, state: "iso-state", challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Empty(t, p.header.Get("Location"))

	// A's code at B's token endpoint.
	verifier, challenge := pkce()
	q := callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: doc, redirect: redirect, scope: "tools:read",
		state: "iso-state", challenge: challenge, method: "S256"})), redirect)
	status, bad := e.exchange("globex", doc, q.Get("code"), redirect, verifier, "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", bad.Error)
	status, _ = e.exchange("acme", doc, q.Get("code"), redirect, verifier, "")
	require.Equal(t, http.StatusOK, status, "the failed attempt at B did not burn A's code")

	// A's session and consent at B: B asks for its own sign-in, and B's
	// member gets a consent page of their own.
	p = b.get(e.authorizeURL(authz{tenant: "globex", clientID: doc, redirect: redirect, scope: "tools:read",
		state: "iso-state", challenge: challenge, method: "S256"}))
	require.Contains(t, p.body, "Sign in to Globex")
	// Alice's credentials do not sign in at B.
	form := url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "return_to": {field(t, returnRE, p.body)},
		"email": {"alice@acme.test"}, "password": {password}}
	res := b.post(e.base+"/t/globex/login", form, e.base)
	require.Equal(t, http.StatusUnauthorized, res.status)
	p = e.login(b, "globex", p, "bob@globex.test")
	require.Contains(t, p.body, "Allow Doc Client to use Globex")
}

func TestLoginRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *oauth.Config) { c.LoginLimit = oauth.Limit{N: 3, Per: time.Minute} })
	b := e.browser()
	p := b.get(e.base + "/t/acme/login?return_to=https://evil.example/")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	csrf := field(t, csrfRE, p.body)
	require.Equal(t, "/t/acme/dashboard", field(t, returnRE, p.body), "an outside return_to is dropped for the dashboard")

	form := url.Values{"csrf_token": {csrf}, "email": {"alice@acme.test"}, "password": {password}}
	res := b.post(e.base+"/t/acme/login", url.Values{"email": {"alice@acme.test"}, "password": {password}}, e.base)
	require.Equal(t, http.StatusForbidden, res.status, "no CSRF token")
	res = b.post(e.base+"/t/acme/login", form, "https://evil.example")
	require.Equal(t, http.StatusForbidden, res.status, "foreign Origin")
	res = e.browser().post(e.base+"/t/acme/login", form, e.base)
	require.Equal(t, http.StatusForbidden, res.status, "a CSRF token without its cookie")

	wrong := url.Values{"csrf_token": {csrf}, "email": {"alice@acme.test"}, "password": {"not the password"}}
	for range 3 {
		res = b.post(e.base+"/t/acme/login", wrong, e.base)
		require.Equal(t, http.StatusUnauthorized, res.status)
		require.Contains(t, res.body, "Wrong email or password")
	}
	res = b.post(e.base+"/t/acme/login", form, e.base)
	require.Equal(t, http.StatusTooManyRequests, res.status, "the right password after the limit is still refused")
	// Another tenant is not affected.
	g := e.browser()
	e.login(g, "globex", g.get(e.base+"/t/globex/login"), "bob@globex.test")
}

// TestMemberSessionOnAdminAPI shows a signed-in member authenticates the
// admin API with the session cookie, and that cross-site writes are refused.
func TestMemberSessionOnAdminAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	e.login(b, "acme", b.get(e.base+"/t/acme/login"), "alice@acme.test")
	p := b.get(e.base + "/api/v1/whoami")
	require.Equal(t, http.StatusOK, p.status, p.body)
	var pr identity.Principal
	require.NoError(t, json.Unmarshal([]byte(p.body), &pr))
	require.Equal(t, e.alice.ID, pr.MemberID)
	require.Equal(t, e.a.ID, pr.TenantID)
	require.True(t, pr.HasScope(identity.ScopeAdminWrite))

	res := b.post(e.base+"/api/v1/whoami", url.Values{}, e.base)
	require.Equal(t, http.StatusOK, res.status)
	res = b.post(e.base+"/api/v1/whoami", url.Values{}, "")
	require.Equal(t, http.StatusForbidden, res.status, "a cookie-authenticated write needs our Origin")
	res = b.post(e.base+"/api/v1/whoami", url.Values{}, "https://evil.example")
	require.Equal(t, http.StatusForbidden, res.status)

	// Signing out ends the session everywhere.
	lp := b.get(e.base + "/t/acme/login")
	res = b.post(e.base+"/t/acme/logout", url.Values{"csrf_token": {field(t, csrfRE, lp.body)}}, e.base)
	require.Equal(t, http.StatusSeeOther, res.status)
	req, _ := http.NewRequest(http.MethodGet, e.base+"/api/v1/whoami", nil)
	req.AddCookie(&http.Cookie{Name: "visor_session", Value: "forged"})
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, r2.Body)
	r2.Body.Close()
	require.Equal(t, http.StatusUnauthorized, r2.StatusCode)
	require.Equal(t, http.StatusUnauthorized, b.get(e.base+"/api/v1/whoami").status)
}
