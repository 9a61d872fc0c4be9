package upstream_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
)

// codeUpstream is an MCP server behind an authorization server that issues
// tokens by the authorization code flow only: PKCE with S256 required,
// the resource indicator checked, clients registered dynamically or named
// by a metadata document URL, refresh tokens rotated, revocation offered.
// Its authorize endpoint consents at once for the user named by the
// "user" query parameter (what a person's sign-in would decide).
type codeUpstream struct {
	*httptest.Server
	dcr, cimd bool
	ttl       int      // expires_in of access tokens
	methods   []string // code_challenge_methods_supported

	mu         sync.Mutex
	registered []string          // client ids registered dynamically
	codes      map[string]grant  // code -> what it was issued for
	live       map[string]string // access token -> user
	refresh    map[string]string // refresh token -> user
	grants     []string          // grant types asked for, in order
	revoked    []string
	users      []string // user of each MCP request that had a live token
	authorized []url.Values
}

type grant struct{ challenge, client, redirect, user string }

func newCodeUpstream(t *testing.T, f *fixture, dcr, cimd bool) *codeUpstream {
	u := &codeUpstream{dcr: dcr, cimd: cimd, ttl: 3600, methods: []string{"S256"}, codes: map[string]grant{}, live: map[string]string{}, refresh: map[string]string{}}
	mcp := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil)
	js := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		js(w, 200, map[string]any{"resource": u.URL + "/mcp", "authorization_servers": []string{u.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		m := map[string]any{"issuer": u.URL, "authorization_endpoint": u.URL + "/authorize", "token_endpoint": u.URL + "/token",
			"revocation_endpoint": u.URL + "/revoke", "code_challenge_methods_supported": u.methods,
			"client_id_metadata_document_supported": u.cimd}
		if u.dcr {
			m["registration_endpoint"] = u.URL + "/register"
		}
		js(w, 200, m)
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			RedirectURIs []string `json:"redirect_uris"`
			AuthMethod   string   `json:"token_endpoint_auth_method"`
		}
		if json.NewDecoder(r.Body).Decode(&m) != nil || len(m.RedirectURIs) != 1 || m.AuthMethod != "none" {
			js(w, 400, map[string]any{"error": "invalid_client_metadata"})
			return
		}
		u.mu.Lock()
		id := fmt.Sprintf("dcr-%d", len(u.registered)+1)
		u.registered = append(u.registered, id)
		u.mu.Unlock()
		js(w, 201, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs})
	})
	known := func(id string) bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return (u.cimd && strings.HasPrefix(id, "https://")) || strings.HasPrefix(id, "dcr-") && len(u.registered) > 0
	}
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		u.mu.Lock()
		u.authorized = append(u.authorized, q)
		u.mu.Unlock()
		if q.Get("response_type") != "code" || !known(q.Get("client_id")) || q.Get("code_challenge_method") != "S256" ||
			q.Get("code_challenge") == "" || q.Get("resource") != u.URL+"/mcp" || q.Get("state") == "" {
			js(w, 400, map[string]any{"error": "invalid_request"})
			return
		}
		u.mu.Lock()
		code := fmt.Sprintf("code-%d", len(u.codes)+1)
		u.codes[code] = grant{q.Get("code_challenge"), q.Get("client_id"), q.Get("redirect_uri"), q.Get("user")}
		u.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		bq.Set("iss", u.URL)
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	issue := func(w http.ResponseWriter, user string) {
		n := len(u.live) + 1
		at, rt := fmt.Sprintf("at-%d-%s", n, user), fmt.Sprintf("rt-%d-%s", n, user)
		u.live[at], u.refresh[rt] = user, user
		js(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": u.ttl, "refresh_token": rt})
	}
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_, _, basic := r.BasicAuth()
		if basic || !known(r.PostFormValue("client_id")) || r.PostFormValue("resource") != u.URL+"/mcp" {
			js(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		u.grants = append(u.grants, r.PostFormValue("grant_type"))
		switch r.PostFormValue("grant_type") {
		case "authorization_code":
			g, ok := u.codes[r.PostFormValue("code")]
			delete(u.codes, r.PostFormValue("code"))
			sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
			if !ok || g.client != r.PostFormValue("client_id") || g.redirect != r.PostFormValue("redirect_uri") ||
				base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				js(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			issue(w, g.user)
		case "refresh_token":
			user, ok := u.refresh[r.PostFormValue("refresh_token")]
			if !ok {
				js(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(u.refresh, r.PostFormValue("refresh_token"))
			issue(w, user)
		default:
			js(w, 400, map[string]any{"error": "unsupported_grant_type"})
		}
	})
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		tok := r.PostFormValue("token")
		u.revoked = append(u.revoked, tok)
		delete(u.live, tok)
		delete(u.refresh, tok)
		u.mu.Unlock()
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		user, ok := u.live[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if ok && r.Method == http.MethodPost {
			u.users = append(u.users, user)
		}
		u.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+u.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mcp.ServeHTTP(w, r)
	})
	u.Server = httptest.NewServer(mux)
	t.Cleanup(u.Close)
	return u
}

// member is a member's dashboard session in tenant.
func member(tenant identity.Tenant, role identity.Role) identity.Principal {
	return identity.Principal{TenantID: tenant.ID, Kind: identity.KindOperator, MemberID: uuid.New(), Role: role,
		CredentialID: "session-" + uuid.NewString(), Scopes: []string{identity.ScopeAdminWrite, identity.ScopeToolsAdmin}}
}

const redirectURI = "http://127.0.0.1:1/t/acme/dashboard/mcp-servers/callback"

// connect runs Connect for p as the member's browser would: Visor's
// authorization URL, the upstream's consent (as user), and the callback.
func connect(t *testing.T, h *harness, tenant identity.Tenant, p identity.Principal, server, user, metadataURL string) (upstreams.Server, upstreams.Callback) {
	t.Helper()
	ctx := context.Background()
	auth, err := h.svc.BeginConnect(ctx, upstreams.ConnectRequest{TenantID: tenant.ID, Server: server, Principal: p,
		Session: p.CredentialID, RedirectURI: redirectURI, MetadataURL: metadataURL})
	require.NoError(t, err)
	cb := consent(t, auth, user)
	srv, err := h.svc.FinishConnect(ctx, tenant.ID, p, p.CredentialID, cb)
	require.NoError(t, err)
	return srv, cb
}

// consent follows an authorization URL as user and returns the callback.
func consent(t *testing.T, auth, user string) upstreams.Callback {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(auth + "&user=" + user)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(back.String(), redirectURI))
	q := back.Query()
	return upstreams.Callback{State: q.Get("state"), Code: q.Get("code"), Issuer: q.Get("iss")}
}

func oauthInput(url string, perMember bool) upstreams.Input {
	return upstreams.Input{Name: "coded", Transport: upstreams.StreamableHTTP, URL: url,
		Auth: upstreams.Auth{Kind: upstreams.AuthOAuth, PerMember: perMember}}
}

// TestAuthorizationCode: a server that needs a person's consent is saved
// unconnected; an admin's Connect registers Visor dynamically, sends PKCE
// (S256) and the resource indicator, and keeps the tenant's token sealed;
// AI employees' calls carry it (never their own credential); the state
// is single use and bound to the session; removing the server revokes
// the access and refresh tokens.
func TestAuthorizationCode(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newCodeUpstream(t, f, true, false)
	ctx := context.Background()
	srv, err := h.svc.Create(ctx, h.a.ID, oauthInput(up.URL+"/mcp", false), "test")
	require.NoError(t, err)
	require.Contains(t, srv.LastError, "not connected")

	sub := h.employee(t, h.a, h.agentA, nil)
	_, err = h.svc.Call(ctx, sub, "coded:echo", map[string]any{"text": "x"})
	require.Error(t, err, "no tool is known before the first listing")

	viewer := member(h.a, identity.RoleViewer)
	_, err = h.svc.BeginConnect(ctx, upstreams.ConnectRequest{TenantID: h.a.ID, Server: "coded", Principal: viewer,
		Session: viewer.CredentialID, RedirectURI: redirectURI})
	require.True(t, fault.Is(err, fault.Forbidden), "a tenant's token is connected by a member who may manage settings: %v", err)

	admin := member(h.a, identity.RoleAdmin)
	auth, err := h.svc.BeginConnect(ctx, upstreams.ConnectRequest{TenantID: h.a.ID, Server: "coded", Principal: admin,
		Session: admin.CredentialID, RedirectURI: redirectURI, MetadataURL: "https://visor.example/t/acme/upstream-oauth/client"})
	require.NoError(t, err)
	q := mustQuery(t, auth)
	require.Equal(t, "S256", q.Get("code_challenge_method"))
	require.Equal(t, up.URL+"/mcp", q.Get("resource"))
	require.Equal(t, "dcr-1", q.Get("client_id"), "registered dynamically: this authorization server takes no metadata documents")
	require.Equal(t, redirectURI, q.Get("redirect_uri"))
	cb := consent(t, auth, "alice")

	// The callback in another session, or of another tenant, does not take
	// the state.
	other := admin
	other.CredentialID = "session-stolen"
	_, err = h.svc.FinishConnect(ctx, h.a.ID, other, other.CredentialID, cb)
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	_, err = h.svc.FinishConnect(ctx, h.b.ID, admin, admin.CredentialID, cb)
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)

	srv, err = h.svc.FinishConnect(ctx, h.a.ID, admin, admin.CredentialID, cb)
	require.NoError(t, err)
	require.Empty(t, srv.LastError)
	require.Equal(t, 7, srv.ToolCount)
	require.Equal(t, "dcr-1", srv.Auth.ClientID)
	require.Equal(t, upstreams.RegisteredDynamically, srv.Auth.Registration)

	_, err = h.svc.FinishConnect(ctx, h.a.ID, admin, admin.CredentialID, cb)
	require.True(t, fault.Is(err, fault.Invalid), "a state is used once: %v", err)

	out, err := h.svc.Call(ctx, sub, "coded:echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	require.Contains(t, string(out.Result.Content), "echo: hi")
	tok, err := h.store.Token(ctx, h.a.ID, srv.ID, uuid.Nil)
	require.NoError(t, err)
	require.NotContains(t, tok.SealedAccess, "at-", "sealed at rest")
	require.NotContains(t, tok.SealedRefresh, "rt-", "sealed at rest")
	_, err = h.store.Token(ctx, h.b.ID, srv.ID, uuid.Nil)
	require.True(t, fault.Is(err, fault.NotFound), "another tenant reads no token")
	require.True(t, h.svc.Connected(ctx, srv, admin))

	_, err = h.svc.Remove(ctx, h.a.ID, "coded")
	require.NoError(t, err)
	up.mu.Lock()
	require.ElementsMatch(t, []string{"at-1-alice", "rt-1-alice"}, up.revoked, "removing the server revokes its tokens")
	require.Equal(t, []string{"authorization_code"}, up.grants)
	up.mu.Unlock()
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Query()
}

// TestAuthorizationCodeMetadataDocument: an authorization server that takes
// Client ID Metadata Documents gets Visor's document URL as the client id,
// and no registration.
func TestAuthorizationCodeMetadataDocument(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newCodeUpstream(t, f, true, true)
	ctx := context.Background()
	_, err := h.svc.Create(ctx, h.a.ID, oauthInput(up.URL+"/mcp", false), "test")
	require.NoError(t, err)
	const doc = "https://visor.example/t/acme/upstream-oauth/client"
	srv, _ := connect(t, h, h.a, member(h.a, identity.RoleOwner), "coded", "alice", doc)
	require.Equal(t, doc, srv.Auth.ClientID)
	require.Equal(t, upstreams.RegisteredByDocument, srv.Auth.Registration)
	up.mu.Lock()
	defer up.mu.Unlock()
	require.Empty(t, up.registered, "no dynamic registration when a metadata document will do")
	require.Equal(t, doc, up.authorized[0].Get("client_id"))
}

// TestAuthorizationCodeNeedsS256: an authorization server that does not
// offer PKCE with S256 is refused before anything is registered.
func TestAuthorizationCodeNeedsS256(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newCodeUpstream(t, f, true, false)
	up.methods = []string{"plain"}
	ctx := context.Background()
	_, err := h.svc.Create(ctx, h.a.ID, oauthInput(up.URL+"/mcp", false), "test")
	require.NoError(t, err)
	p := member(h.a, identity.RoleOwner)
	_, err = h.svc.BeginConnect(ctx, upstreams.ConnectRequest{TenantID: h.a.ID, Server: "coded", Principal: p, Session: p.CredentialID,
		RedirectURI: redirectURI})
	require.True(t, fault.Is(err, fault.Unavailable), "%v", err)
	require.Contains(t, fault.Message(err), "S256")
	up.mu.Lock()
	defer up.mu.Unlock()
	require.Empty(t, up.registered)
}

// TestAuthorizationCodeNoRegistration: without a metadata document nor
// dynamic registration, Connect says what to do.
func TestAuthorizationCodeNoRegistration(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newCodeUpstream(t, f, false, false)
	ctx := context.Background()
	_, err := h.svc.Create(ctx, h.a.ID, oauthInput(up.URL+"/mcp", false), "test")
	require.NoError(t, err)
	p := member(h.a, identity.RoleOwner)
	_, err = h.svc.BeginConnect(ctx, upstreams.ConnectRequest{TenantID: h.a.ID, Server: "coded", Principal: p, Session: p.CredentialID,
		RedirectURI: redirectURI, MetadataURL: "https://visor.example/t/acme/upstream-oauth/client"})
	require.True(t, fault.Is(err, fault.Unavailable), "%v", err)
	require.Contains(t, fault.Message(err), "auth.client_id")
}

// TestAuthorizationCodePerMember: a server with a token per member carries
// the token of the member a call acts for; a member who has not connected
// is refused with what to do; Disconnect revokes only that member's token.
func TestAuthorizationCodePerMember(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newCodeUpstream(t, f, true, false)
	ctx := context.Background()
	_, err := h.svc.Create(ctx, h.a.ID, oauthInput(up.URL+"/mcp", true), "test")
	require.NoError(t, err)
	alice, bob := member(h.a, identity.RoleViewer), member(h.a, identity.RoleOperator)
	srv, _ := connect(t, h, h.a, alice, "coded", "alice", "")
	require.Equal(t, 7, srv.ToolCount, "the tools are listed with the connecting member's token")
	connect(t, h, h.a, bob, "coded", "bob", "")

	client := func(p identity.Principal) *tools.Subject { // an OAuth client a member authorized
		return &tools.Subject{Principal: identity.Principal{TenantID: h.a.ID, Kind: identity.KindExternal, MemberID: p.MemberID,
			ClientID: "cli", Scopes: []string{identity.ScopeToolsWrite}}, Tenant: h.a}
	}
	up.mu.Lock()
	up.users = nil
	up.mu.Unlock()
	_, err = h.svc.Call(ctx, client(alice), "coded:echo", map[string]any{"text": "a"})
	require.NoError(t, err)
	up.mu.Lock()
	require.NotEmpty(t, up.users)
	for _, u := range up.users {
		require.Equal(t, "alice", u, "alice's call carries alice's token")
	}
	up.users = nil
	up.mu.Unlock()
	_, err = h.svc.Call(ctx, client(bob), "coded:echo", map[string]any{"text": "b"})
	require.NoError(t, err)
	up.mu.Lock()
	require.Contains(t, up.users, "bob")
	require.NotContains(t, up.users, "alice")
	up.mu.Unlock()

	carol := member(h.a, identity.RoleViewer)
	_, err = h.svc.Call(ctx, client(carol), "coded:echo", map[string]any{"text": "c"})
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	require.Contains(t, fault.Message(err), "Connect it in the dashboard")
	_, err = h.svc.Call(ctx, h.employee(t, h.a, h.agentA, nil), "coded:echo", map[string]any{"text": "e"})
	require.True(t, fault.Is(err, fault.Forbidden), "an employee acting for no member has no token: %v", err)

	_, err = h.svc.Disconnect(ctx, h.a.ID, "coded", alice)
	require.NoError(t, err)
	up.mu.Lock()
	require.ElementsMatch(t, []string{"at-1-alice", "rt-1-alice"}, up.revoked)
	up.mu.Unlock()
	_, err = h.svc.Call(ctx, client(alice), "coded:echo", map[string]any{"text": "a"})
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	_, err = h.svc.Call(ctx, client(bob), "coded:echo", map[string]any{"text": "b"})
	require.NoError(t, err, "bob's token stays")
}

// TestAuthorizationCodeRefresh: a token about to expire is refreshed with
// its refresh token (rotated), and the new one is used.
func TestAuthorizationCodeRefresh(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newCodeUpstream(t, f, true, false)
	up.ttl = 5 // inside Visor's renewal margin: every use refreshes
	ctx := context.Background()
	_, err := h.svc.Create(ctx, h.a.ID, oauthInput(up.URL+"/mcp", false), "test")
	require.NoError(t, err)
	connect(t, h, h.a, member(h.a, identity.RoleOwner), "coded", "alice", "")
	sub := h.employee(t, h.a, h.agentA, nil)
	_, err = h.svc.Call(ctx, sub, "coded:echo", map[string]any{"text": "x"})
	require.NoError(t, err)
	// Calls at once each need a refresh; the refresh token rotates, so
	// they take turns rather than spend one token twice.
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := h.svc.Call(ctx, sub, "coded:echo", map[string]any{"text": "y"})
			errs <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	require.Equal(t, "authorization_code", up.grants[0])
	require.Contains(t, up.grants[1:], "refresh_token")
	_, firstLive := up.live["at-1-alice"]
	require.True(t, firstLive)
	require.NotContains(t, up.refresh, "rt-1-alice", "the first refresh token was used")
}
