package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestPruneKeysIsolation: pruning tenant A never deletes tenant B's dead
// keys, and never a live key.
func TestPruneKeysIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := postgres.NewIdentityStore(pgtest.New(t))
	ids := identity.NewService(store, changes.Discard{}, discardLogger())
	a, err := ids.CreateTenant(ctx, "tenant-a", "A")
	require.NoError(t, err)
	b, err := ids.CreateTenant(ctx, "tenant-b", "B")
	require.NoError(t, err)
	deadKey := func(tn identity.Tenant) identity.Key {
		k, _, err := ids.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "k"})
		require.NoError(t, err)
		_, err = ids.RevokeKey(ctx, tn.ID, k.ID)
		require.NoError(t, err)
		return k
	}
	ka, kb := deadKey(a), deadKey(b)
	liveA, _, err := ids.CreateKey(ctx, a.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "live"})
	require.NoError(t, err)

	future := time.Now().Add(time.Hour)
	n, err := store.PruneKeys(ctx, a.ID, future)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	_, err = store.Key(ctx, a.ID, ka.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = store.Key(ctx, a.ID, liveA.ID)
	require.NoError(t, err)
	_, err = store.Key(ctx, b.ID, kb.ID)
	require.NoError(t, err, "tenant B's dead key survives pruning tenant A")

	// A cutoff before the revocation keeps it.
	n, err = store.PruneKeys(ctx, b.ID, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Zero(t, n)
}
