package oauth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRevocationsReachTheCache shows that withdrawing consent and deleting
// a client announce the change: a token the resolver has cached is refused
// on the next request.
func TestRevocationsReachTheCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	redirect := "https://client.example/cb"
	for name, revoke := range map[string]func(clientID string) error{
		"consent": func(id string) error { return e.server.Provider().RevokeConsent(ctx, e.a.ID, e.alice.ID, id) },
		"client":  func(id string) error { return e.server.Provider().DeleteClient(ctx, e.a.ID, id) },
	} {
		clientID := e.dcrClient("acme", redirect)
		tr := e.grant(e.browser(), "acme", clientID, redirect, "tools:read", "alice@acme.test")
		for range 2 { // the second answer comes from the cache
			status, _, _ := e.call("acme", tr.AccessToken)
			require.Equal(t, http.StatusOK, status, name)
		}
		require.NoError(t, revoke(clientID), name)
		status, _, _ := e.call("acme", tr.AccessToken)
		require.Equal(t, http.StatusUnauthorized, status, name)
	}
}
