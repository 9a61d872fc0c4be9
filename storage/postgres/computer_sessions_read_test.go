package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/storage/postgres"
)

// TestComputerSessionsForOperators: a tenant's sessions list open ones
// first, then ended ones, each newest first, bounded; tenant B reads none
// of tenant A's, alone or listed.
func TestComputerSessionsForOperators(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	store := postgres.NewComputerStore(f.db)
	start := func(tenant, agent uuid.UUID, at time.Time) computer.Session {
		s := computer.Session{TenantID: tenant, ID: uuid.New(), AgentID: agent, Width: 800, Height: 600, MaxActions: 10, StartedAt: at}
		require.NoError(t, store.CreateSession(ctx, &s))
		return s
	}
	now := time.Now()
	older := start(f.a.ID, f.agentA.ID, now.Add(-2*time.Hour))
	_, err := store.EndSession(ctx, f.a.ID, older.ID, computer.SessionStopped, computer.EndByEmployee)
	require.NoError(t, err)
	newer := start(f.a.ID, f.agentA.ID, now.Add(-time.Hour))
	_, err = store.EndSession(ctx, f.a.ID, newer.ID, computer.SessionLost, "the worker holding it, or its container, is gone")
	require.NoError(t, err)
	open := start(f.a.ID, f.agentA.ID, now.Add(-3*time.Hour))
	theirs := start(f.b.ID, f.agentB.ID, now)

	all, err := store.TenantSessions(ctx, f.a.ID, 10)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{open.ID, newer.ID, older.ID}, []uuid.UUID{all[0].ID, all[1].ID, all[2].ID})
	require.True(t, all[0].Open())
	require.False(t, all[1].Open())
	two, err := store.TenantSessions(ctx, f.a.ID, 2)
	require.NoError(t, err)
	require.Len(t, two, 2)

	got, err := store.Session(ctx, f.a.ID, newer.ID)
	require.NoError(t, err)
	require.Equal(t, computer.SessionLost, got.State)
	require.Equal(t, computer.EndWorkerLost, got.EndReason, "a reason stored in English before codes reads as its code")
	_, err = store.Session(ctx, f.b.ID, open.ID)
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	bs, err := store.TenantSessions(ctx, f.b.ID, 10)
	require.NoError(t, err)
	require.Len(t, bs, 1)
	require.Equal(t, theirs.ID, bs[0].ID)
}
