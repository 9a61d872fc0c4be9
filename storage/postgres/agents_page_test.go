package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestAgentsPageIsolationAndOrder: a page of agents holds only the
// tenant's own, in name order after the cursor, filtered by the search
// (case folded, in name, department or role), with the count of every
// match; AgentNames names only the tenant's own agents.
func TestAgentsPageIsolationAndOrder(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	for _, n := range []string{"cy", "bea", "dan"} {
		_, err := s.svc.CreateAgent(ctx, s.a.ID, identity.NewAgent{Name: n, Role: "Writer of " + n})
		require.NoError(t, err)
	}
	names := func(as []identity.Agent) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.Name)
		}
		return out
	}
	page, total, err := s.store.ListAgentsPage(ctx, s.a.ID, identity.AgentPage{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"ada", "bea"}, names(page))
	require.Equal(t, 4, total)
	page, _, err = s.store.ListAgentsPage(ctx, s.a.ID, identity.AgentPage{After: "bea", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"cy", "dan"}, names(page))
	page, total, err = s.store.ListAgentsPage(ctx, s.a.ID, identity.AgentPage{Search: "WRITER", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"bea", "cy", "dan"}, names(page))
	require.Equal(t, 3, total)
	page, total, err = s.store.ListAgentsPage(ctx, s.a.ID, identity.AgentPage{Search: "%", Limit: 10})
	require.NoError(t, err)
	require.Empty(t, page, "the search is text, not a pattern")
	require.Zero(t, total)

	page, total, err = s.store.ListAgentsPage(ctx, s.b.ID, identity.AgentPage{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []string{"bob"}, names(page), "tenant B sees only its own")
	require.Equal(t, 1, total)
	page, _, err = s.store.ListAgentsPage(ctx, s.b.ID, identity.AgentPage{Search: "ada", Limit: 10})
	require.NoError(t, err)
	require.Empty(t, page)

	got, err := s.store.AgentNames(ctx, s.b.ID, []uuid.UUID{s.agentA.ID, s.agentB.ID})
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]string{s.agentB.ID: "bob"}, got, "tenant B never learns tenant A's agent's name")
}
