package oauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/web/oauth"
)

// TestMetadataEverywhereClientsLook checks every well-known URL clients
// try, and the fields MCP clients read.
func TestMetadataEverywhereClientsLook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/.well-known/oauth-authorization-server/t/acme", "/t/acme/.well-known/oauth-authorization-server"} {
		var md oauth.ServerMetadata
		require.Equal(t, http.StatusOK, getJSON(t, e.base+p, &md), p)
		iss := e.base + "/t/acme"
		require.Equal(t, iss, md.Issuer, p)
		require.Equal(t, iss+"/oauth/authorize", md.AuthorizationEndpoint)
		require.Equal(t, iss+"/oauth/token", md.TokenEndpoint)
		require.Equal(t, iss+"/oauth/register", md.RegistrationEndpoint)
		require.Equal(t, iss+"/oauth/revoke", md.RevocationEndpoint)
		require.Equal(t, []string{"S256"}, md.CodeChallengeMethodsSupported)
		require.ElementsMatch(t, []string{"authorization_code", "refresh_token"}, md.GrantTypesSupported)
		require.ElementsMatch(t, []string{"none", "client_secret_basic", "client_secret_post"}, md.TokenEndpointAuthMethodsSupported)
		require.Contains(t, md.ScopesSupported, "tools:read")
		require.True(t, md.ClientIDMetadataDocumentSupported)
		require.True(t, md.AuthorizationResponseIssParameterSupported)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/t/acme/mcp", "/.well-known/oauth-protected-resource/t/acme",
		"/t/acme/.well-known/oauth-protected-resource", "/t/acme/mcp/.well-known/oauth-protected-resource"} {
		var prm oauth.ResourceMetadata
		require.Equal(t, http.StatusOK, getJSON(t, e.base+p, &prm), p)
		require.Equal(t, e.base+"/t/acme/mcp", prm.Resource)
		require.Equal(t, []string{e.base + "/t/acme"}, prm.AuthorizationServers)
		require.Equal(t, []string{"header"}, prm.BearerMethodsSupported)
	}
	// Browser-based clients (the MCP Inspector) preflight discovery.
	for _, p := range []string{"/.well-known/oauth-protected-resource/t/acme/mcp", "/.well-known/oauth-authorization-server/t/acme",
		"/t/acme/oauth/token", "/t/acme/oauth/register"} {
		req, _ := http.NewRequest(http.MethodOptions, e.base+p, nil)
		req.Header.Set("Origin", "http://localhost:6274")
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "mcp-protocol-version")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNoContent, res.StatusCode, p)
		require.Equal(t, "*", res.Header.Get("Access-Control-Allow-Origin"), p)
		require.Contains(t, res.Header.Get("Access-Control-Allow-Headers"), "MCP-Protocol-Version", p)
	}
	require.Equal(t, http.StatusNotFound, getJSON(t, e.base+"/.well-known/oauth-authorization-server/t/nosuch", &struct{}{}))
}

// TestDiscoveryWithoutATenant: the host-root documents and OpenID Connect
// discovery are not served, with two tenants or one, and the answer says
// where to look.
func TestDiscoveryWithoutATenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	check := func(tenants string) {
		for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server",
			"/.well-known/openid-configuration", "/.well-known/openid-configuration/t/acme", "/t/acme/.well-known/openid-configuration"} {
			res, err := http.Get(e.base + p)
			require.NoError(t, err)
			var body map[string]string
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			res.Body.Close()
			require.Equal(t, http.StatusNotFound, res.StatusCode, "%s: %s", tenants, p)
			require.Contains(t, body["error_description"], e.base+"/.well-known/oauth-", p)
		}
	}
	check("two tenants")
	_, err := e.db.Pool.Exec(context.Background(), `DELETE FROM tenants WHERE slug = 'globex'`)
	require.NoError(t, err)
	check("one tenant")
}

func TestPromptNone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	_, challenge := pkce()
	u := e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read", state: "silent-1",
		challenge: challenge, method: "S256"}) + "&prompt=none"
	b := e.browser()
	q := callback(t, b.get(u), redirect)
	require.Equal(t, "login_required", q.Get("error"))
	e.login(b, "acme", b.get(e.base+"/t/acme/login"), "alice@acme.test")
	q = callback(t, b.get(u), redirect)
	require.Equal(t, "consent_required", q.Get("error"))
	e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")
	q = callback(t, b.get(u), redirect)
	require.NotEmpty(t, q.Get("code"))
}

// TestNoSecretsStoredOrLogged runs the flow with a confidential client and
// checks that no code, token, verifier, client secret, password or session
// cookie appears in the database rows or the logs.
func TestNoSecretsStoredOrLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logs := &safeWriter{w: &buf}
	e := newEnvLog(t, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	redirect := "https://client.example/cb"
	status, rr, _ := e.register("acme", map[string]any{"client_name": "S", "redirect_uris": []string{redirect},
		"token_endpoint_auth_method": "client_secret_post"})
	require.Equal(t, http.StatusCreated, status)
	b := e.browser()
	verifier, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: rr.ClientID, redirect: redirect, state: "secret-st", challenge: challenge, method: "S256"}))
	q := callback(t, e.decide(b, e.login(b, "acme", p, "alice@acme.test"), "allow"), redirect)
	code := q.Get("code")
	status, tr := e.postForm("/t/acme/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {rr.ClientID}, "client_secret": {rr.ClientSecret}}, "", "")
	require.Equal(t, http.StatusOK, status, "%+v", tr)
	status, tr2 := e.postForm("/t/acme/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken},
		"client_id": {rr.ClientID}, "client_secret": {rr.ClientSecret}}, "", "")
	require.Equal(t, http.StatusOK, status)
	var cookie string
	for _, c := range b.c.Jar.Cookies(mustURL(t, e.base)) {
		if c.Name == "visor_session" {
			cookie = c.Value
		}
	}
	require.NotEmpty(t, cookie)

	dump := dumpTables(t, e, "oauth_clients", "oauth_tokens", "oauth_consents", "member_sessions")
	for name, secret := range map[string]string{"code": code, "verifier": verifier, "client secret": rr.ClientSecret,
		"access token": tr.AccessToken, "refresh token": tr.RefreshToken, "rotated access token": tr2.AccessToken,
		"rotated refresh token": tr2.RefreshToken, "password": password, "session cookie": cookie} {
		require.NotContains(t, dump, secret, "%s stored in the database", name)
		require.NotContains(t, logs.String(), secret, "%s logged", name)
		// The signature half of an HMAC token is stored; the key half must not be.
		if i := strings.IndexByte(secret, '.'); i > 0 {
			require.NotContains(t, dump, secret[:i], "%s key half stored", name)
		}
	}
	require.NotEmpty(t, logs.String(), "the test saw the server's logs")
}
