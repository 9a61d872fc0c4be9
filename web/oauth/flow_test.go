package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/oauth"
)

func getJSON(t testing.TB, u string, v any) int {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode == http.StatusOK {
		require.NoError(t, json.NewDecoder(res.Body).Decode(v))
	}
	return res.StatusCode
}

var resourceMetadataRE = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// discover follows an MCP client's path from a 401 to the authorization
// server metadata.
func (e *env) discover(tenant string) oauth.ServerMetadata {
	e.t.Helper()
	status, _, h := e.call(tenant, "")
	require.Equal(e.t, http.StatusUnauthorized, status)
	m := resourceMetadataRE.FindStringSubmatch(h.Get("WWW-Authenticate"))
	require.NotNil(e.t, m, h.Get("WWW-Authenticate"))
	require.Contains(e.t, h.Get("WWW-Authenticate"), `scope="tools:read tools:write tools:admin"`)
	var prm oauth.ResourceMetadata
	require.Equal(e.t, http.StatusOK, getJSON(e.t, m[1], &prm))
	require.Equal(e.t, e.base+"/t/"+tenant+"/mcp", prm.Resource)
	require.Len(e.t, prm.AuthorizationServers, 1)
	iss, err := url.Parse(prm.AuthorizationServers[0])
	require.NoError(e.t, err)
	var md oauth.ServerMetadata
	require.Equal(e.t, http.StatusOK, getJSON(e.t, e.base+"/.well-known/oauth-authorization-server"+iss.Path, &md))
	require.Equal(e.t, prm.AuthorizationServers[0], md.Issuer)
	return md
}

// TestFlowWithMetadataDocument drives the whole flow with a Client ID
// Metadata Document: discovery from a 401, authorize with sign-in and
// consent, token with PKCE and resource, an MCP call, refresh, revoke.
func TestFlowWithMetadataDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	md := e.discover("acme")
	require.True(t, md.ClientIDMetadataDocumentSupported)

	redirect := "http://127.0.0.1:9999/callback"
	clientID := e.cimdClient("/clients/doc.json", redirect)
	b := e.browser()
	verifier, challenge := pkce()
	resource := e.base + "/t/acme/mcp"
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read tools:write",
		state: "xyz", challenge: challenge, method: "S256", resource: resource}))
	p = e.login(b, "acme", p, "alice@acme.test")
	// The consent page names the client, its redirect host and each scope in words.
	require.Contains(t, p.body, "Doc Client")
	require.Contains(t, p.body, "127.0.0.1:9999")
	require.Contains(t, p.body, "<code>tools:read</code>: see which tools")
	require.Contains(t, p.body, "<code>tools:write</code>: call tools that create or change")
	require.Contains(t, p.header.Get("Content-Security-Policy"), "default-src 'none'")
	require.Contains(t, p.header.Get("Content-Security-Policy"), "form-action 'self' http://127.0.0.1:9999")
	q := callback(t, e.decide(b, p, "allow"), redirect)
	require.Equal(t, "xyz", q.Get("state"))
	require.Equal(t, e.base+"/t/acme", q.Get("iss"))

	status, tr := e.exchange("acme", clientID, q.Get("code"), redirect, verifier, resource)
	require.Equal(t, http.StatusOK, status, "%+v", tr)
	require.NotEmpty(t, tr.RefreshToken)
	require.Equal(t, "bearer", strings.ToLower(tr.TokenType))

	status, pr, _ := e.call("acme", tr.AccessToken)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, identity.KindExternal, pr.Kind)
	require.Equal(t, e.alice.ID, pr.MemberID)
	require.Equal(t, clientID, pr.ClientID)
	require.ElementsMatch(t, []string{"tools:read", "tools:write"}, pr.Scopes)

	status, tr2 := e.refresh("acme", clientID, tr.RefreshToken)
	require.Equal(t, http.StatusOK, status, "%+v", tr2)
	require.NotEqual(t, tr.RefreshToken, tr2.RefreshToken)
	status, _, _ = e.call("acme", tr2.AccessToken)
	require.Equal(t, http.StatusOK, status)

	status, _ = e.postForm("/t/acme/oauth/revoke", url.Values{"token": {tr2.AccessToken}, "client_id": {clientID}}, "", "")
	require.Equal(t, http.StatusOK, status)
	status, _, _ = e.call("acme", tr2.AccessToken)
	require.Equal(t, http.StatusUnauthorized, status, "revoked access token still works")
	status, _ = e.refresh("acme", clientID, tr2.RefreshToken)
	require.NotEqual(t, http.StatusOK, status, "revoking the access token revokes its grant")
}
