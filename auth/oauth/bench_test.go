package oauth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/identity"
)

// BenchmarkResolvePrincipal measures principal resolution per request on a
// real Postgres: the tenant lookup plus the credential check, for each
// kind of credential. "cold" is a replica that has not seen the API key
// yet (one argon2id verification); "cached" is every later request.
//
//	go test ./auth/oauth -run '^$' -bench ResolvePrincipal -benchtime 2s
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
	_, round, err := auth.NewRounds(e.creds, e.ids).Mint(ctx, e.a.ID, agent.ID, uuid.New(), nil, 0)
	require.NoError(b, err)
	redirect := "https://client.example/cb"
	tr := e.grant(e.browser(), "acme", e.dcrClient("acme", redirect), redirect, "tools:read", "alice@acme.test")

	resolve := func(b *testing.B, r *auth.Resolver, token string) {
		t, err := e.ids.TenantBySlug(ctx, "acme")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Resolve(ctx, t, token); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("operator-key/cold", func(b *testing.B) {
		for b.Loop() {
			resolve(b, auth.NewResolver(e.ids, e.ids, auth.NewURLs(e.base), log), opKey) // a fresh cache every time
		}
	})
	for name, token := range map[string]string{"operator-key/cached": opKey, "agent-key/cached": agentKey,
		"round-token": round, "oauth-access-token": tr.AccessToken} {
		b.Run(name, func(b *testing.B) {
			resolve(b, e.resolver, token) // warm
			for b.Loop() {
				resolve(b, e.resolver, token)
			}
		})
	}
	// The whole middleware over an in-process request, for scale.
	b.Run("http-middleware/oauth-access-token", func(b *testing.B) {
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, "/t/acme/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+tr.AccessToken)
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatal(w.Code)
			}
		}
	})
}
