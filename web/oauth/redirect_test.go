package oauth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/web/oauth"
)

// nativeClients are the redirect URIs real MCP clients register and the one
// each comes back on, as their own code and bug reports show them.
var nativeClients = []struct {
	name       string
	registered []string
	comesBack  string
}{
	// Claude Code picks a free port and registers it.
	{"Claude Code", []string{"http://localhost:53124/callback"}, "http://localhost:53124/callback"},
	// Claude Desktop and claude.ai custom connectors come back through claude.ai.
	{"Claude Desktop", []string{"https://claude.ai/api/mcp/auth_callback", "https://claude.com/api/mcp/auth_callback"},
		"https://claude.ai/api/mcp/auth_callback"},
	{"Cursor", []string{"cursor://anysphere.cursor-mcp/oauth/callback", "https://www.cursor.com/agents/mcp/oauth/callback"},
		"cursor://anysphere.cursor-mcp/oauth/callback"},
	// VS Code registers port 33418 and a portless loopback URI, and comes
	// back on another port when 33418 is taken.
	{"VS Code", []string{"https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect", "http://127.0.0.1/", "http://127.0.0.1:33418/"},
		"http://127.0.0.1:59656/"},
	{"VS Code (web)", []string{"https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect", "http://127.0.0.1/", "http://127.0.0.1:33418/"},
		"https://vscode.dev/redirect"},
	// mcp-remote registers a port it derives from the server's URL.
	{"mcp-remote", []string{"http://localhost:16445/oauth/callback"}, "http://localhost:16445/oauth/callback"},
	// The Inspector's web UI, and its CLI.
	{"MCP Inspector", []string{"http://localhost:6274/oauth/callback", "http://localhost:6274/oauth/callback/debug"},
		"http://localhost:6274/oauth/callback/debug"},
	{"MCP Inspector CLI", []string{"http://127.0.0.1:6276/oauth/callback"}, "http://127.0.0.1:6276/oauth/callback"},
	{"a native app (RFC 8252 §7.1)", []string{"com.example.app:/oauth2redirect/visor"}, "com.example.app:/oauth2redirect/visor"},
	{"IPv6 loopback", []string{"http://[::1]/cb"}, "http://[::1]:61000/cb"},
}

// TestNativeClientRedirects registers each client as it registers itself
// (dynamically, as a public client) and runs the whole flow to a token,
// coming back on the URI the client really uses.
func TestNativeClientRedirects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *oauth.Config) { c.RegisterLimit = oauth.Limit{N: 100, Per: time.Hour} })
	b := e.browser()
	for _, c := range nativeClients {
		status, rr, eb := e.register("acme", map[string]any{"client_name": c.name, "redirect_uris": c.registered,
			"token_endpoint_auth_method": "none"})
		require.Equal(t, http.StatusCreated, status, "%s: %v", c.name, eb)
		tr := e.grant(b, "acme", rr.ClientID, c.comesBack, "tools:read", "alice@acme.test")
		status, _, _ = e.call("acme", tr.AccessToken)
		require.Equal(t, http.StatusOK, status, c.name)
	}
}

// TestNativeClientByMetadataDocument: Claude Code's client metadata
// document lists portless loopback URIs; it comes back on a free port.
// A document may name a private-use scheme too.
func TestNativeClientByMetadataDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	id := e.serveDoc("/oauth/claude-code-client-metadata", `{"client_id":"%s","client_name":"Claude Code",
		"redirect_uris":["http://localhost/callback","http://127.0.0.1/callback"],"token_endpoint_auth_method":"none"}`)
	e.grant(b, "acme", id, "http://localhost:55611/callback", "tools:read", "alice@acme.test")
	e.grant(b, "acme", id, "http://127.0.0.1:55612/callback", "tools:read", "alice@acme.test")
	app := e.serveDoc("/clients/app.json", `{"client_id":"%s","redirect_uris":["cursor://anysphere.cursor-mcp/oauth/callback"]}`)
	e.grant(b, "acme", app, "cursor://anysphere.cursor-mcp/oauth/callback", "tools:read", "alice@acme.test")
	bad := e.serveDoc("/clients/bad.json", `{"client_id":"%s","redirect_uris":["javascript://x/%%0aalert(1)"]}`)
	_, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: bad, redirect: "javascript://x/%0aalert(1)", state: "s",
		challenge: challenge, method: "S256"}))
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "never allowed")
}

// TestRedirectRefusals shows what registration refuses, and that at the
// authorization endpoint only a loopback port may differ from what was
// registered.
func TestRedirectRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *oauth.Config) { c.RegisterLimit = oauth.Limit{N: 100, Per: time.Hour} })
	for _, ru := range []string{
		"javascript:alert(1)", "javascript://x/%0aalert(1)", "data:text/html,<script>x</script>", "file:///etc/passwd",
		"vbscript:msgbox", "blob:https://a.example/x", "chrome-extension://abc/cb",
		"https.evil.example:/cb", "httpx://x/cb", "hxxps.example:/cb" + "#f", // lookalikes
		"Cursor://anysphere.cursor-mcp/cb", "1app.example:/cb", "my_app.example:/cb", "app..example:/cb", "-app.example:/cb",
		"myapp:/cb", "slack://open", // single words Visor does not know
		"cursor:", "com.example.app:/", // nothing after the scheme
		"cursor://user:pw@anysphere.cursor-mcp/cb", "cursor://anysphere.cursor-mcp/cb#x",
		"http://client.example/cb", "http://localhost.evil.example/cb", "http://127.0.0.1.nip.io/cb", "https:///cb",
		"/relative/cb", "cb", strings.Repeat("a", 3000) + ".example:/cb",
	} {
		status, _, eb := e.register("acme", map[string]any{"redirect_uris": []string{ru}, "token_endpoint_auth_method": "none"})
		require.Equal(t, http.StatusBadRequest, status, ru)
		require.Equal(t, "invalid_redirect_uri", eb["error"], ru)
	}
	// A confidential client is not a native app: no private-use scheme.
	status, _, eb := e.register("acme", map[string]any{"redirect_uris": []string{"cursor://anysphere.cursor-mcp/oauth/callback"},
		"token_endpoint_auth_method": "client_secret_basic"})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, eb["error_description"], "only public clients")

	b := e.browser()
	_, challenge := pkce()
	cursor := e.dcrClient("acme", "cursor://anysphere.cursor-mcp/oauth/callback")
	loop := e.dcrClient("acme", "http://127.0.0.1/callback")
	for id, rus := range map[string][]string{
		cursor: {"cursor://anysphere.cursor-mcp/oauth/callback2", "cursor://evil.example/oauth/callback",
			"vscode://anysphere.cursor-mcp/oauth/callback", "cursor://anysphere.cursor-mcp/oauth/callback?x=1"},
		loop: {"http://localhost:5000/callback", "http://127.0.0.2:5000/callback", "http://127.0.0.1:5000/callback/x",
			"http://127.0.0.1:5000/callback?x=1", "https://127.0.0.1:5000/callback", "http://u@127.0.0.1:5000/callback"},
	} {
		for _, ru := range rus {
			p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: id, redirect: ru, state: "s", challenge: challenge, method: "S256"}))
			require.Equal(t, http.StatusBadRequest, p.status, ru)
			require.Empty(t, p.header.Get("Location"), ru)
		}
	}
}

// TestConsentNamesTheApp: a private-use redirect is named as an app on the
// member's device, and the page's CSP lets the form lead there.
func TestConsentNamesTheApp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.dcrClient("acme", "cursor://anysphere.cursor-mcp/oauth/callback")
	b := e.browser()
	_, challenge := pkce()
	p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: id, redirect: "cursor://anysphere.cursor-mcp/oauth/callback",
		state: "s", challenge: challenge, method: "S256"}))
	p = e.login(b, "acme", p, "alice@acme.test")
	require.Contains(t, p.body, "cursor://anysphere.cursor-mcp (an application on your device)")
	require.Contains(t, p.header.Get("Content-Security-Policy"), "form-action 'self' cursor:;")
}
