package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/storage/postgres"
)

func TestReservationsIsolation(t *testing.T) {
	t.Parallel()
	_, env := newAuditLog(t)
	s := postgres.NewReservationStore(env.db)
	ctx := context.Background()
	require.NoError(t, s.Reserve(ctx, agents.Reservation{TenantID: env.a.ID, Name: "ann", AgentID: uuid.New(), ReservedBy: "agent:x"}))
	require.NoError(t, s.Reserve(ctx, agents.Reservation{TenantID: env.a.ID, Name: "ann", AgentID: uuid.New(), ReservedBy: "agent:y"}), "re-reserving replaces")

	got, err := s.List(ctx, env.a.ID)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "agent:y", got[0].ReservedBy)

	// Tenant B sees none of A's reservations and cannot release them.
	other, err := s.List(ctx, env.b.ID)
	require.NoError(t, err)
	require.Empty(t, other)
	require.True(t, fault.Is(s.Release(ctx, env.b.ID, "ann"), fault.NotFound))

	require.NoError(t, s.Release(ctx, env.a.ID, "ann"))
	require.True(t, fault.Is(s.Release(ctx, env.a.ID, "ann"), fault.NotFound))
}
