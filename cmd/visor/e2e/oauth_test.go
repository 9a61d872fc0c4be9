package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestOAuthAgainstRealEndpoint runs the OAuth flow against a real `visor
// serve` and its real MCP endpoint: discovery from the endpoint's 401,
// dynamic registration, sign-in and consent through the HTML forms, token
// with PKCE and resource, tools/list with the token, step-up, refresh,
// revoke. Tenant globex refuses acme's token.
func TestOAuthAgainstRealEndpoint(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w := newWorld(t)
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, srv.URL())

	// Discovery from the real endpoint's 401.
	resp := mcpSend(t, r, "", modernVersion, "", map[string]any{"id": 1, "method": "tools/list", "params": map[string]any{"_meta": modernMeta()}})
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	m := regexp.MustCompile(`resource_metadata="([^"]+)"`).FindStringSubmatch(resp.Header.Get("WWW-Authenticate"))
	require.NotNil(t, m, resp.Header.Get("WWW-Authenticate"))
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	pre, _ := http.NewRequest(http.MethodOptions, m[1], nil)
	pre.Header.Set("Origin", "http://localhost:6274")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pres, err := http.DefaultClient.Do(pre)
	require.NoError(t, err)
	pres.Body.Close()
	require.Equal(t, "*", pres.Header.Get("Access-Control-Allow-Origin"), "browser clients can read the metadata")
	oauthGetJSON(t, m[1], &prm)
	require.Equal(t, r.base+"/t/acme/mcp", prm.Resource)
	var md struct {
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		RegistrationEndpoint  string `json:"registration_endpoint"`
		RevocationEndpoint    string `json:"revocation_endpoint"`
	}
	iss, _ := url.Parse(prm.AuthorizationServers[0])
	oauthGetJSON(t, r.base+"/.well-known/oauth-authorization-server"+iss.Path, &md)

	// Dynamic registration.
	redirect := "http://127.0.0.1:7777/callback"
	body, _ := json.Marshal(map[string]any{"client_name": "E2E", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none"})
	res, err := http.Post(md.RegistrationEndpoint, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	var reg struct {
		ClientID string `json:"client_id"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&reg))
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)

	tok := oauthAuthorize(t, r, md.AuthorizationEndpoint, md.TokenEndpoint, reg.ClientID, redirect, prm.Resource, "E2E")

	// The real endpoint accepts it and lists tools.
	require.NotEmpty(t, toolNames(t, r, tok.AccessToken))
	// A tool beyond the granted scope asks for step-up.
	resp = mcpSend(t, r, tok.AccessToken, modernVersion, "", map[string]any{"id": 9, "method": "tools/call",
		"params": map[string]any{"_meta": modernMeta(), "name": "create_agent", "arguments": map[string]any{"name": "zed"}}})
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope", scope="tools:admin"`)
	// Another tenant's endpoint refuses it.
	tenantOfKey.Store(tok.AccessToken, "globex")
	resp = mcpSend(t, r, tok.AccessToken, modernVersion, "", map[string]any{"id": 2, "method": "tools/list", "params": map[string]any{"_meta": modernMeta()}})
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	tenantOfKey.Delete(tok.AccessToken)

	// Refresh, then revoke: the endpoint refuses the revoked token.
	tok2 := oauthToken(t, md.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {reg.ClientID}})
	require.NotEmpty(t, toolNames(t, r, tok2.AccessToken))
	res, err = http.PostForm(md.RevocationEndpoint, url.Values{"token": {tok2.AccessToken}, "client_id": {reg.ClientID}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	resp = mcpSend(t, r, tok2.AccessToken, modernVersion, "", map[string]any{"id": 3, "method": "tools/list", "params": map[string]any{"_meta": modernMeta()}})
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// A round token minted through the admin API is the employee on the endpoint.
	var rt struct {
		Token string `json:"token"`
	}
	w.api(t, r, http.MethodPost, "/tenants/acme/agents/"+w.ada.ID.String()+"/round-tokens",
		map[string]any{"task_id": pgtest.Task(t, w.db, w.acme.ID)}, &rt)
	require.NotEmpty(t, toolNames(t, r, rt.Token))
}

func oauthGetJSON(t *testing.T, u string, v any) {
	t.Helper()
	res, err := http.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, u)
	require.NoError(t, json.NewDecoder(res.Body).Decode(v))
}

func oauthDo(t *testing.T, c *http.Client, method, u string, form url.Values, origin string) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
	}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(raw)
}

func oauthField(t *testing.T, name, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + name + `" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, "no %s in\n%s", name, page)
	return html.UnescapeString(m[1])
}

type oauthTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

func oauthToken(t *testing.T, endpoint string, form url.Values) oauthTokens {
	t.Helper()
	res, err := http.PostForm(endpoint, form)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode, string(raw))
	var tr oauthTokens
	require.NoError(t, json.Unmarshal(raw, &tr))
	return tr
}

// oauthAuthorize signs the acme owner in through the HTML forms, consents
// and exchanges the code (PKCE, resource) for tokens.
func oauthAuthorize(t *testing.T, r *replica, authorizeURL, tokenURL, clientID, redirect, resource, clientName string) oauthTokens {
	t.Helper()
	return oauthAuthorizeScope(t, r, authorizeURL, tokenURL, clientID, redirect, resource, clientName, "tools:read")
}

// oauthAuthorizeScope is oauthAuthorize asking for scope.
func oauthAuthorizeScope(t *testing.T, r *replica, authorizeURL, tokenURL, clientID, redirect, resource, clientName, scope string) oauthTokens {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := strings.Repeat("e2e-verifier-", 5)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {scope},
		"state": {"e2e-state"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {resource}}
	status, _, page := oauthDo(t, b, http.MethodGet, authorizeURL+"?"+q.Encode(), nil, r.base)
	require.Equal(t, http.StatusOK, status, page)
	status, h, _ := oauthDo(t, b, http.MethodPost, r.base+"/t/acme/login", url.Values{"csrf_token": {oauthField(t, "csrf_token", page)},
		"return_to": {oauthField(t, "return_to", page)}, "email": {"owner@acme.test"}, "password": {"correct horse battery"}}, r.base)
	require.Equal(t, http.StatusSeeOther, status)
	_, _, page = oauthDo(t, b, http.MethodGet, r.base+h.Get("Location"), nil, r.base)
	require.Contains(t, page, "Allow "+clientName+" to use Acme")
	action := html.UnescapeString(regexp.MustCompile(`<form method="post" action="([^"]+)"`).FindStringSubmatch(page)[1])
	status, h, _ = oauthDo(t, b, http.MethodPost, r.base+action, url.Values{"csrf_token": {oauthField(t, "csrf_token", page)}, "decision": {"allow"}}, r.base)
	require.Equal(t, http.StatusSeeOther, status)
	cb, err := url.Parse(h.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "e2e-state", cb.Query().Get("state"))
	require.Equal(t, r.base+"/t/acme", cb.Query().Get("iss"))
	tok := oauthToken(t, tokenURL, url.Values{"grant_type": {"authorization_code"}, "code": {cb.Query().Get("code")},
		"redirect_uri": {redirect}, "client_id": {clientID}, "code_verifier": {verifier}, "resource": {resource}})
	require.NotEmpty(t, tok.AccessToken)
	return tok
}

// TestOAuthMetadataDocumentAgainstRealEndpoint registers by Client ID
// Metadata Document with a real `visor serve`: the document is served over
// TLS on loopback, which the replica may fetch only because the host is in
// VISOR_OAUTH_CIMD_DEV_HOSTS and trusts the test certificate.
func TestOAuthMetadataDocumentAgainstRealEndpoint(t *testing.T) {
	t.Parallel()
	redirect := "http://127.0.0.1:7778/callback"
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":"https://%s/client.json","client_name":"Doc E2E","redirect_uris":[%q]}`, req.Host, redirect)
	}))
	defer docs.Close()
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(pemFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: docs.Certificate().Raw}), 0o600))

	srv := privateRedis(t)
	w := newWorld(t)
	_, err := w.ids.CreateMember(context.Background(), w.acme.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	r := startReplica(t, "A", w.dbURL, srv.URL(), "VISOR_OAUTH_CIMD_DEV_HOSTS=127.0.0.1", "SSL_CERT_FILE="+pemFile)
	clientID := docs.URL + "/client.json"
	tok := oauthAuthorize(t, r, r.base+"/t/acme/oauth/authorize", r.base+"/t/acme/oauth/token", clientID, redirect, r.base+"/t/acme/mcp", "Doc E2E")
	require.NotEmpty(t, toolNames(t, r, tok.AccessToken))
	tok2 := oauthToken(t, r.base+"/t/acme/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}})
	require.NotEmpty(t, toolNames(t, r, tok2.AccessToken))

	// Without the allowlist the same document is refused: loopback.
	r2 := startReplica(t, "B", w.dbURL, srv.URL(), "SSL_CERT_FILE="+pemFile)
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	other := docs.URL + "/client.json?v=2"
	q := url.Values{"response_type": {"code"}, "client_id": {other}, "redirect_uri": {redirect}, "code_challenge": {strings.Repeat("c", 43)},
		"code_challenge_method": {"S256"}}
	status, h, page := oauthDo(t, b, http.MethodGet, r2.base+"/t/acme/oauth/authorize?"+q.Encode(), nil, r2.base)
	require.Equal(t, http.StatusBadRequest, status, page)
	require.Empty(t, h.Get("Location"))
	require.Contains(t, page, "non-public address")
}
