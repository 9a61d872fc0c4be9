package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/upstream"
)

// oauthUpstream is an MCP server behind its own authorization server: it
// serves RFC 9728 and RFC 8414 metadata, issues tokens by the client
// credentials grant to one client for its own resource only, revokes
// them, and answers MCP only with a live token.
type oauthUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	issued  []string
	live    map[string]bool
	revoked []string
	seen    []string // Authorization headers of MCP requests
}

func newOAuthUpstream(t *testing.T, f *fixture) *oauthUpstream {
	u := &oauthUpstream{live: map[string]bool{}}
	mcp := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return f.srv }, nil)
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		js(w, map[string]any{"resource": u.URL + "/mcp", "authorization_servers": []string{u.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		js(w, map[string]any{"issuer": u.URL, "token_endpoint": u.URL + "/token", "revocation_endpoint": u.URL + "/revoke"})
	})
	client := func(r *http.Request) bool {
		id, secret, ok := r.BasicAuth()
		return ok && id == "visor-client" && secret == "client-secret-1"
	}
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		if !client(r) || r.PostFormValue("grant_type") != "client_credentials" || r.PostFormValue("resource") != u.URL+"/mcp" ||
			r.PostFormValue("scope") != "mcp:tools" {
			w.WriteHeader(http.StatusBadRequest)
			js(w, map[string]any{"error": "invalid_request"})
			return
		}
		u.mu.Lock()
		tok := fmt.Sprintf("tok-%d", len(u.issued)+1)
		u.issued, u.live[tok] = append(u.issued, tok), true
		u.mu.Unlock()
		js(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/revoke", func(w http.ResponseWriter, r *http.Request) {
		if !client(r) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		u.mu.Lock()
		u.revoked = append(u.revoked, r.PostFormValue("token"))
		delete(u.live, r.PostFormValue("token"))
		u.mu.Unlock()
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		u.mu.Lock()
		u.seen = append(u.seen, auth)
		ok := u.live[strings.TrimPrefix(auth, "Bearer ")]
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

// TestClientCredentials: a server that needs OAuth is reached with a token
// Visor obtains in its own name by the client credentials grant (the
// endpoints discovered from the server's metadata, the resource indicator
// sent), kept sealed and reused; the caller's credential never goes
// upstream; removing the server revokes the token.
func TestClientCredentials(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	up := newOAuthUpstream(t, f)
	ctx := context.Background()
	in := upstreams.Input{Name: "guarded", Transport: upstreams.StreamableHTTP, URL: up.URL + "/mcp",
		Auth: upstreams.Auth{Kind: upstreams.AuthClientCredentials, ClientID: "visor-client", Scopes: []string{"mcp:tools"}}}
	srv, err := h.svc.Create(ctx, h.a.ID, in, "test")
	require.NoError(t, err)
	require.Contains(t, srv.LastError, "token request failed", "no client secret yet")
	_, err = h.svc.SetSecret(ctx, h.a.ID, "guarded", upstreams.SecretClientSecret, "client_secret", "client-secret-1")
	require.NoError(t, err)
	srv, err = h.svc.Refresh(ctx, h.a.ID, "guarded")
	require.NoError(t, err)
	require.Equal(t, 7, srv.ToolCount)

	sub := h.employee(t, h.a, h.agentA, nil)
	for range 3 {
		_, err = h.svc.Call(ctx, sub, "guarded:echo", map[string]any{"text": "x"})
		require.NoError(t, err)
	}
	tok, err := h.store.Token(ctx, h.a.ID, srv.ID, [16]byte{})
	require.NoError(t, err)
	require.NotContains(t, tok.SealedAccess, "tok-", "sealed at rest")
	up.mu.Lock()
	require.Equal(t, []string{"tok-1"}, up.issued, "one token, reused while it lives")
	for _, a := range up.seen[1:] {
		require.Contains(t, []string{"Bearer tok-1"}, a, "only Visor's own token goes upstream")
	}
	up.mu.Unlock()

	_, err = h.svc.Remove(ctx, h.a.ID, "guarded")
	require.NoError(t, err)
	up.mu.Lock()
	require.Equal(t, []string{"tok-1"}, up.revoked, "removing the server revokes its token")
	up.mu.Unlock()
	_, err = h.store.Token(ctx, h.a.ID, srv.ID, [16]byte{})
	require.True(t, fault.Is(err, fault.NotFound))
}

// TestDiscoverRefusesAForeignResource: a server's protected-resource
// metadata must name the server itself (or a parent of its URL on the
// same origin) as its resource (RFC 9728 §3.3). A server that names
// another one's resource would have Visor ask for, and then send it, a
// token meant for that other resource; its metadata is refused and no
// token is asked for.
func TestDiscoverRefusesAForeignResource(t *testing.T) {
	t.Parallel()
	var asked atomic.Bool
	var resource atomic.Value
	resource.Store("")
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/t/evil/mcp", func(w http.ResponseWriter, _ *http.Request) {
		js(w, map[string]any{"resource": resource.Load(), "authorization_servers": []string{srv.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		js(w, map[string]any{"issuer": srv.URL, "token_endpoint": srv.URL + "/token"})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, _ *http.Request) {
		asked.Store(true)
		js(w, map[string]any{"access_token": "tok", "token_type": "Bearer"})
	})
	dev := []string{"127.0.0.1"}
	check := func(raw string) (string, error) { return egress.CheckURL(raw, dev) }
	o := upstream.NewOAuth(egress.New(egress.Config{AllowPrivateHosts: dev}), check)
	ctx := context.Background()
	server := srv.URL + "/t/evil/mcp"

	for _, foreign := range []string{srv.URL + "/t/globex/mcp", "https://mcp.example.com/mcp", srv.URL + "/t/evil/mcp2", srv.URL + "/t/evil/mcp/more"} {
		resource.Store(foreign)
		_, err := o.Discover(ctx, server, upstreams.Auth{Kind: upstreams.AuthClientCredentials})
		require.True(t, fault.Is(err, fault.Unavailable), "%s: %v", foreign, err)
		require.Contains(t, fault.Message(err), "names resource", foreign)
	}
	for _, own := range []string{server, server + "/", srv.URL + "/t/evil", srv.URL, ""} {
		resource.Store(own)
		a, err := o.Discover(ctx, server, upstreams.Auth{Kind: upstreams.AuthClientCredentials})
		require.NoError(t, err, own)
		want := own
		if own == "" {
			want = server
		}
		require.Equal(t, want, a.Resource)
	}

	// Saved with client credentials, the server with a foreign resource
	// gets no token asked for on its behalf.
	h := newHarness(t)
	resource.Store(srv.URL + "/t/globex/mcp")
	saved, err := h.svc.Create(ctx, h.a.ID, upstreams.Input{Name: "evil", Transport: upstreams.StreamableHTTP, URL: server,
		Auth: upstreams.Auth{Kind: upstreams.AuthClientCredentials, ClientID: "visor"}}, "test")
	require.NoError(t, err)
	require.Contains(t, saved.LastError, "names resource")
	require.False(t, asked.Load(), "no token is asked for another resource")
}
