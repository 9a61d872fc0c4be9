package tools

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// countingDir serves one tenant and its agents, counting reads.
type countingDir struct{ tenantReads, agentReads int }

func (d *countingDir) Tenant(_ context.Context, id uuid.UUID) (identity.Tenant, error) {
	d.tenantReads++
	return identity.Tenant{ID: id}, nil
}

func (d *countingDir) Agent(_ context.Context, tenantID, id uuid.UUID) (identity.Agent, error) {
	d.agentReads++
	return identity.Agent{ID: id, TenantID: tenantID, Status: identity.AgentActive}, nil
}

func TestForgetDropsOnlyWhatAChangeMayHaveStaled(t *testing.T) {
	d := &countingDir{}
	s := NewSubjects(d, NoGrants{}, time.Hour)
	ctx := context.Background()
	t1, t2 := uuid.New(), uuid.New()
	a1, a2, b1 := uuid.New(), uuid.New(), uuid.New()
	load := func(tenant, agent uuid.UUID) {
		_, err := s.Load(ctx, identity.Principal{TenantID: tenant, Kind: identity.KindEmployee, AgentID: agent})
		require.NoError(t, err)
	}
	for _, p := range [][2]uuid.UUID{{t1, a1}, {t1, a2}, {t2, b1}} {
		load(p[0], p[1])
	}
	require.Equal(t, 3, d.agentReads)

	s.Forget(t1, a1)
	load(t1, a1)
	load(t1, a2)
	load(t2, b1)
	require.Equal(t, 4, d.agentReads, "only a1 is read again")

	s.Forget(t1, uuid.Nil)
	load(t1, a1)
	load(t1, a2)
	load(t2, b1)
	require.Equal(t, 6, d.agentReads, "a tenant-wide change drops that tenant's agents only")
	require.Equal(t, 4, d.tenantReads, "t1 read three times (first, after each forget), t2 once")
}
