package rounds_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/rounds"
)

// brokenStore leases one wake-up with a push endpoint and then fails to
// store its round token (the database went down).
type brokenStore struct {
	rounds.Store
	tg rounds.Target
}

func (b *brokenStore) ClaimDue(context.Context, string, int, time.Duration) ([]rounds.Target, error) {
	return []rounds.Target{b.tg}, nil
}

func (b *brokenStore) AddRoundTokens(context.Context, []credentials.RoundToken) error {
	return errors.New("connection refused")
}

func (b *brokenStore) Record(context.Context, []rounds.Outcome) error { return nil }

// minter prepares round tokens without storing them.
type minter struct{ rounds.Minter }

func (minter) Prepare(tenantID, agentID, taskID uuid.UUID, _ []string, ttl time.Duration) (credentials.RoundToken, string) {
	return credentials.RoundToken{TenantID: tenantID, ID: uuid.New(), AgentID: agentID, TaskID: taskID,
		ExpiresAt: time.Now().Add(ttl)}, "token"
}

// TestFinalAttemptNeverLeavesAWakeupQueued: when an attempt fails before
// it could push (the round token could not be stored), it is a failed
// attempt like a failed push: retried while attempts are left, and on the
// last one the wake-up becomes a dead letter, listed and retryable,
// instead of staying queued.
func TestFinalAttemptNeverLeavesAWakeupQueued(t *testing.T) {
	t.Parallel()
	w := rounds.New(uuid.New(), uuid.New(), uuid.New(), rounds.Assigned)
	st := &brokenStore{tg: rounds.Target{Wakeup: w, TenantSlug: "acme", AgentActive: true,
		Endpoint: &rounds.Endpoint{ID: uuid.New(), TenantID: w.TenantID, URL: "https://runtime.example.com/hook"}}}
	svc := rounds.NewService(rounds.Config{Store: st, Minter: minter{}})
	ctx := context.Background()
	ls, err := svc.ClaimDue(ctx, "worker-a", 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ls, 1)

	out := svc.Attempt(ctx, ls[0], false)
	require.Equal(t, rounds.Outcome{TenantID: w.TenantID, ID: w.ID, Worker: "worker-a",
		Error: "mint the round token: connection refused"}, out, "an attempt that will be retried is a failed attempt")
	out = svc.Attempt(ctx, ls[0], true)
	require.True(t, out.Dead, "the final attempt makes it a dead letter")
	require.Empty(t, out.State)
}

// TestClaimWithoutLeaseStore: a store that cannot lease wake-ups delivers
// nothing, and says so.
func TestClaimWithoutLeaseStore(t *testing.T) {
	t.Parallel()
	svc := rounds.NewService(rounds.Config{})
	_, err := svc.ClaimDue(context.Background(), "worker-a", 10, time.Minute)
	require.ErrorIs(t, err, rounds.ErrNoLeases)
	require.ErrorIs(t, svc.Record(context.Background(), rounds.Outcome{}), rounds.ErrNoLeases)
}
