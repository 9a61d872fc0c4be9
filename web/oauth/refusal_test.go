package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/web/oauth"
)

// register performs RFC 7591 registration and returns the status and body.
func (e *env) register(tenant string, meta map[string]any) (int, oauth.RegistrationResponse, map[string]string) {
	e.t.Helper()
	body, _ := json.Marshal(meta)
	res, err := http.Post(e.base+"/t/"+tenant+"/oauth/register", "application/json", bytes.NewReader(body))
	require.NoError(e.t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var rr oauth.RegistrationResponse
	var errBody map[string]string
	if res.StatusCode == http.StatusCreated {
		require.NoError(e.t, json.Unmarshal(raw, &rr))
	} else {
		_ = json.Unmarshal(raw, &errBody)
	}
	return res.StatusCode, rr, errBody
}

func (e *env) dcrClient(tenant, redirect string) string {
	e.t.Helper()
	status, rr, eb := e.register(tenant, map[string]any{"client_name": "Dyn Client", "redirect_uris": []string{redirect},
		"token_endpoint_auth_method": "none"})
	require.Equal(e.t, http.StatusCreated, status, "%v", eb)
	return rr.ClientID
}

// TestFlowWithDynamicRegistration runs the flow with a DCR public client and
// with a confidential client using client_secret_basic.
func TestFlowWithDynamicRegistration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	md := e.discover("acme")
	require.Equal(t, e.base+"/t/acme/oauth/register", md.RegistrationEndpoint)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	tr := e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")
	status, p, _ := e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"tools:read"}, p.Scopes)

	// Confidential client: the secret is required at the token endpoint.
	status, rr, eb := e.register("acme", map[string]any{"client_name": "Secret Client", "redirect_uris": []string{redirect},
		"token_endpoint_auth_method": "client_secret_basic"})
	require.Equal(t, http.StatusCreated, status, "%v", eb)
	require.NotEmpty(t, rr.ClientSecret)
	verifier, challenge := pkce()
	pg := b.get(e.authorizeURL(authz{tenant: "acme", clientID: rr.ClientID, redirect: redirect, state: "state-123",
		challenge: challenge, method: "S256"}))
	q := callback(t, e.decide(b, pg, "allow"), redirect)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
	status, _ = e.postForm("/t/acme/oauth/token", form, rr.ClientID, "wrong-secret")
	require.Equal(t, http.StatusUnauthorized, status)
	status, tr2 := e.postForm("/t/acme/oauth/token", form, rr.ClientID, rr.ClientSecret)
	require.Equal(t, http.StatusOK, status, "%+v", tr2)
	// Without resource, the token is still bound to the tenant's MCP endpoint.
	status, _, _ = e.call("acme", tr2.AccessToken)
	require.Equal(t, http.StatusOK, status)
	status, _, _ = e.call("globex", tr2.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status)

	// Unknown scopes such as offline_access are ignored, not refused.
	tr4 := e.grant(b, "acme", clientID, redirect, "tools:read offline_access", "alice@acme.test")
	require.Equal(t, "tools:read", tr4.Scope)
	require.NotEmpty(t, tr4.RefreshToken)

	// A pre-registered client (what the admin API creates) goes the same way.
	pre, _, err := e.server.Provider().CreateClient(context.Background(), e.a.ID, credentials.ClientPreregistered,
		provider.ClientMetadata{ClientName: "Pre", RedirectURIs: []string{redirect}})
	require.NoError(t, err)
	tr3 := e.grant(b, "acme", pre.ID, redirect, "tools:read", "alice@acme.test")
	status, p, _ = e.call("acme", tr3.AccessToken)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, pre.ID, p.ClientID)
}

func TestConsentRememberedAndDeny(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")

	// Same member, client and scopes: no consent page.
	_, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "again-123", challenge: challenge, method: "S256"}))
	q := callback(t, p, redirect)
	require.NotEmpty(t, q.Get("code"))

	// More scopes: asked again; deny returns access_denied with state and iss.
	p = b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read tools:admin",
		state: "more-1234", challenge: challenge, method: "S256"}))
	require.Contains(t, p.body, "tools:admin")
	q = callback(t, e.decide(b, p, "deny"), redirect)
	require.Equal(t, "access_denied", q.Get("error"))
	require.Equal(t, "more-1234", q.Get("state"))
	require.Equal(t, e.base+"/t/acme", q.Get("iss"))
	require.Empty(t, q.Get("code"))

	// A consent form posted without its CSRF token, or from another origin, is refused.
	p = b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read tools:admin",
		state: "more-1234", challenge: challenge, method: "S256"}))
	action := e.base + field(t, actionRE, p.body)
	res := b.post(action, url.Values{"decision": {"allow"}}, e.base)
	require.Equal(t, http.StatusForbidden, res.status)
	res = b.post(action, url.Values{"decision": {"allow"}, "csrf_token": {field(t, csrfRE, p.body)}}, "https://evil.example")
	require.Equal(t, http.StatusForbidden, res.status)
	// Another browser (no session) posting the decision sees the login page, not a code.
	res = e.browser().post(action, url.Values{"decision": {"allow"}}, e.base)
	require.Equal(t, http.StatusOK, res.status)
	require.Contains(t, res.body, loginTitle)
}

func TestPKCERefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test") // sign in and consent once

	for name, a := range map[string]authz{
		"missing":   {challenge: ""},
		"plain":     {challenge: strings.Repeat("p", 43), method: "plain"},
		"no method": {challenge: strings.Repeat("p", 43), method: ""},
	} {
		a.tenant, a.clientID, a.redirect, a.scope, a.state = "acme", clientID, redirect, "tools:read", "pkce-state"
		q := callback(t, b.get(e.authorizeURL(a)), redirect)
		require.Equal(t, "invalid_request", q.Get("error"), name)
		require.Empty(t, q.Get("code"), name)
	}
	// A wrong verifier is refused at the token endpoint.
	_, challenge := pkce()
	q := callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "pkce-state", challenge: challenge, method: "S256"})), redirect)
	other, _ := pkce()
	status, tr := e.exchange("acme", clientID, q.Get("code"), redirect, other, "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", tr.Error)
	// ... and so is a missing one.
	q = callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "pkce-state", challenge: challenge, method: "S256"})), redirect)
	status, _ = e.exchange("acme", clientID, q.Get("code"), redirect, "", "")
	require.Equal(t, http.StatusBadRequest, status)
}

func TestCodeReplayRevokesGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")
	verifier, challenge := pkce()
	q := callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "replay-st", challenge: challenge, method: "S256"})), redirect)
	status, tr := e.exchange("acme", clientID, q.Get("code"), redirect, verifier, "")
	require.Equal(t, http.StatusOK, status)
	status, _, _ = e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusOK, status)

	status, tr2 := e.exchange("acme", clientID, q.Get("code"), redirect, verifier, "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", tr2.Error)
	status, _, _ = e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status, "a replayed code must revoke what it issued")
	status, _ = e.refresh("acme", clientID, tr.RefreshToken)
	require.Equal(t, http.StatusBadRequest, status)
}

func TestRedirectURIMustMatchExactly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	clientID := e.dcrClient("acme", "http://127.0.0.1:8000/cb")
	web := e.dcrClient("acme", "https://client.example/cb")
	b := e.browser()
	_, challenge := pkce()
	for _, ru := range []string{"https://client.example:8443/cb", "https://client.example/cb/", "https://client.example/cb?x=1",
		"https://evil.example/cb", "http://client.example/cb"} {
		p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: web, redirect: ru, state: "redir-st",
			challenge: challenge, method: "S256"}))
		require.Equal(t, http.StatusBadRequest, p.status, ru)
		require.Empty(t, p.header.Get("Location"), ru)
		require.Contains(t, p.body, "redirect_uri is not one this application registered")
	}
	// A loopback port may vary (see TestNativeClientRedirects); nothing else may.
	for _, ru := range []string{"http://127.0.0.1:8000/cb/", "http://127.0.0.1:8000/cb?x=1", "http://localhost:8000/cb",
		"http://[::1]:8000/cb", "https://127.0.0.1:8000/cb"} {
		p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: ru, state: "redir-st",
			challenge: challenge, method: "S256"}))
		require.Equal(t, http.StatusBadRequest, p.status, ru)
		require.Empty(t, p.header.Get("Location"), ru)
		require.Contains(t, p.body, "redirect_uri is not one this application registered")
	}
	// The redirect_uri at the token endpoint must equal the one authorized.
	verifier, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: "http://127.0.0.1:8000/cb", state: "redir-st",
		challenge: challenge, method: "S256"}))
	q := callback(t, e.decide(b, e.login(b, "acme", p, "alice@acme.test"), "allow"), "http://127.0.0.1:8000/cb")
	status, _ := e.exchange("acme", clientID, q.Get("code"), "http://127.0.0.1:8001/cb", verifier, "")
	require.Equal(t, http.StatusBadRequest, status)
	// Unknown client: an error page, no redirect.
	p = b.get(e.authorizeURL(authz{tenant: "acme", clientID: "vc_nosuch", redirect: "https://client.example/cb", state: "x",
		challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Empty(t, p.header.Get("Location"))
}

func TestStateIsOptionalAndNeverInvented(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")
	_, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		challenge: challenge, method: "S256"}))
	q := callback(t, p, redirect)
	require.NotEmpty(t, q.Get("code"))
	require.False(t, q.Has("state"))
	require.Equal(t, e.base+"/t/acme", q.Get("iss"))
}

func TestResourceIndicators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	tr := e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")

	verifier, challenge := pkce()
	for _, res := range []string{e.base + "/t/globex/mcp", e.base + "/t/acme", "https://other.example/mcp"} {
		q := callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
			state: "res-state", challenge: challenge, method: "S256", resource: res})), redirect)
		require.Equal(t, "invalid_target", q.Get("error"), res)
	}
	q := callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "res-state", challenge: challenge, method: "S256", resource: e.base + "/t/acme/mcp"})), redirect)
	status, bad := e.exchange("acme", clientID, q.Get("code"), redirect, verifier, e.base+"/t/globex/mcp")
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_target", bad.Error)
	status, _ = e.refresh("acme", clientID, tr.RefreshToken) // still fine: the bad request used nothing
	require.Equal(t, http.StatusOK, status)
	// The canonical URL with a trailing slash names the same resource.
	q = callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "res-state", challenge: challenge, method: "S256", resource: e.base + "/t/acme/mcp/"})), redirect)
	require.NotEmpty(t, q.Get("code"))
}

func TestRefreshRotationAndReuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	tr := e.grant(e.browser(), "acme", clientID, redirect, "tools:read", "alice@acme.test")
	status, tr2 := e.refresh("acme", clientID, tr.RefreshToken)
	require.Equal(t, http.StatusOK, status)
	status, _, _ = e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status, "rotation retires the old access token")
	status, _, _ = e.call("acme", tr2.AccessToken)
	require.Equal(t, http.StatusOK, status)

	// Reusing the old refresh token revokes the whole grant.
	status, reuse := e.refresh("acme", clientID, tr.RefreshToken)
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_grant", reuse.Error)
	status, _, _ = e.call("acme", tr2.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = e.refresh("acme", clientID, tr2.RefreshToken)
	require.Equal(t, http.StatusBadRequest, status)

	// A refresh token is not a bearer for the MCP endpoint, and another
	// client cannot use this client's refresh token.
	tr3 := e.grant(e.browser(), "acme", clientID, redirect, "tools:read", "alice@acme.test")
	status, _, _ = e.call("acme", tr3.RefreshToken)
	require.Equal(t, http.StatusUnauthorized, status)
	other := e.dcrClient("acme", redirect)
	status, _ = e.refresh("acme", other, tr3.RefreshToken)
	require.Equal(t, http.StatusBadRequest, status)
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	tr := e.grant(e.browser(), "acme", clientID, redirect, "tools:read", "alice@acme.test")
	status, _ := e.postForm("/t/acme/oauth/revoke", url.Values{"token": {tr.RefreshToken}, "token_type_hint": {"refresh_token"},
		"client_id": {clientID}}, "", "")
	require.Equal(t, http.StatusOK, status)
	status, _ = e.refresh("acme", clientID, tr.RefreshToken)
	require.Equal(t, http.StatusBadRequest, status)
	status, _, _ = e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status, "revoking the refresh token revokes the grant's access token")
	// Unknown tokens revoke quietly (RFC 7009 §2.2).
	status, _ = e.postForm("/t/acme/oauth/revoke", url.Values{"token": {"ory_at_nonsense"}, "client_id": {clientID}}, "", "")
	require.Equal(t, http.StatusOK, status)
}

func TestStepUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	tr := e.grant(e.browser(), "acme", clientID, redirect, "tools:read", "alice@acme.test")
	req, _ := http.NewRequest(http.MethodPost, e.base+"/t/acme/mcp/write", nil)
	req.Header.Set("Authorization", "Bearer "+tr.AccessToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	h := res.Header.Get("WWW-Authenticate")
	require.Contains(t, h, `error="insufficient_scope"`)
	require.Contains(t, h, `scope="tools:write"`)
}
