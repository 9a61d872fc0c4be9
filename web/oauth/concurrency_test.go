package oauth_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/credentials"
)

// TestConcurrentCodeRedemption races several redemptions of one code:
// exactly one gets tokens.
func TestConcurrentCodeRedemption(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)
	b := e.browser()
	e.grant(b, "acme", clientID, redirect, "tools:read", "alice@acme.test")
	verifier, challenge := pkce()
	q := callback(t, b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read",
		state: "race-state", challenge: challenge, method: "S256"})), redirect)
	var mu sync.Mutex
	wins := 0
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			status, _ := e.exchange("acme", clientID, q.Get("code"), redirect, verifier, "")
			if status == http.StatusOK {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, wins)
}

// TestCleanupJob runs the River worker's cleanup against expired rows.
func TestCleanupJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	old := credentials.Session{TenantID: e.a.ID, IDHash: []byte("an-old-session-hash-0000000000000"), MemberID: e.alice.ID,
		ExpiresAt: time.Now().Add(-2 * provider.CleanupGrace)}
	recent := credentials.Session{TenantID: e.a.ID, IDHash: []byte("a-recently-expired-hash-000000000"), MemberID: e.alice.ID,
		ExpiresAt: time.Now().Add(-time.Minute)}
	require.NoError(t, e.creds.CreateSession(ctx, &old))
	require.NoError(t, e.creds.CreateSession(ctx, &recent))
	require.NoError(t, (&provider.CleanupWorker{Store: e.creds}).Work(ctx, nil))
	var n int
	require.NoError(t, e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM member_sessions`).Scan(&n))
	require.Equal(t, 1, n, "the long-expired session is gone, the recent one kept for the grace period")
}
