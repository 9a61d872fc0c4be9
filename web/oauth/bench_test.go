package oauth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// BenchmarkResolvePrincipal measures principal resolution per request on a
// real Postgres, for each kind of credential. "cold" is a replica that has
// not seen the API key yet (one argon2id verification); "uncached" is a
// replica with the credential cache off (auth.Resolver.SetCacheTTL(0)):
// the tenant lookup plus the credential's rows on every request; "cached"
// is every request within auth.CredentialCacheTTL of the previous read and
// of the tenant's last change event.
//
//	go test ./web/oauth -run '^$' -bench ResolvePrincipal -benchtime 1s -count 3
func BenchmarkResolvePrincipal(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	agent, err := e.svc.CreateAgent(ctx, e.a.ID, identity.NewAgent{Name: "ada"})
	require.NoError(b, err)
	_, opKey, err := e.svc.CreateKey(ctx, e.a.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ops"})
	require.NoError(b, err)
	_, agentKey, err := e.svc.CreateKey(ctx, e.a.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: agent.ID, Name: "ada"})
	require.NoError(b, err)
	_, round, err := auth.NewRounds(e.creds, e.ids).Mint(ctx, e.a.ID, agent.ID, pgtest.Task(b, e.db, e.a.ID), nil, 0)
	require.NoError(b, err)
	redirect := "https://client.example/cb"
	tr := e.grant(e.browser(), "acme", e.dcrClient("acme", redirect), redirect, "tools:read", "alice@acme.test")

	newResolver := func() *auth.Resolver {
		r := auth.NewResolver(e.ids, e.ids, auth.NewURLs(e.base), log)
		e.server.Provider().Attach(r)
		r.Rounds = auth.NewRounds(e.creds, e.ids)
		return r
	}
	uncached := newResolver()
	uncached.SetCacheTTL(0)
	resolve := func(b *testing.B, r *auth.Resolver, token string) {
		t, err := e.ids.TenantBySlug(ctx, "acme") // what the middleware reads without its cache
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Resolve(ctx, t, token); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("operator-key/cold", func(b *testing.B) {
		for b.Loop() {
			resolve(b, newResolver(), opKey) // a fresh replica every time
		}
	})
	creds := []struct{ name, token string }{{"operator-key", opKey}, {"agent-key", agentKey},
		{"round-token", round}, {"oauth-access-token", tr.AccessToken}}
	for _, c := range creds {
		b.Run(c.name+"/uncached", func(b *testing.B) {
			resolve(b, uncached, c.token) // warm the argon2id verification
			for b.Loop() {
				resolve(b, uncached, c.token)
			}
		})
	}
	// Cached: through the whole echo middleware (tenant by slug and the
	// principal both from the replica's cache) over an in-process request.
	for _, c := range creds {
		b.Run(c.name+"/cached-http", func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/t/acme/mcp", nil)
				req.Header.Set("Authorization", "Bearer "+c.token)
				w := httptest.NewRecorder()
				e.handler.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
