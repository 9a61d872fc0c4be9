package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/storage/postgres"
)

// grantFixture is twoTenants plus the database and a grant store.
type grantFixture struct {
	twoTenants
	db *postgres.DB
	gs *postgres.GrantStore
}

func grantSetup(t *testing.T) grantFixture {
	t.Helper()
	s := setup(t)
	return grantFixture{twoTenants: s, db: s.db, gs: postgres.NewGrantStore(s.db)}
}

func newRequest(tenant, agent uuid.UUID, tool string) *grants.Request {
	return &grants.Request{ID: uuid.New(), TenantID: tenant, AgentID: agent, Tool: tool, Reason: "need it"}
}

func version(t *testing.T, s grantFixture, tenant uuid.UUID) int64 {
	t.Helper()
	v, err := s.store.PolicyVersion(context.Background(), tenant)
	require.NoError(t, err)
	return v
}

func TestGrantRequestLifecycle(t *testing.T) {
	t.Parallel()
	s := grantSetup(t)
	gs := s.gs
	ctx := context.Background()

	r := newRequest(s.a.ID, s.agentA.ID, "plain_write")
	require.NoError(t, gs.CreateRequest(ctx, r, grants.DefaultRequestLimits))
	require.Equal(t, grants.Pending, r.Status)
	err := gs.CreateRequest(ctx, newRequest(s.a.ID, s.agentA.ID, "plain_write"), grants.DefaultRequestLimits)
	require.True(t, fault.Is(err, fault.Conflict), "a second pending request for one tool: %v", err)

	before := version(t, s, s.a.ID)
	g := grants.Grant{ID: uuid.New(), GrantedBy: "op"}
	got, v, err := gs.Approve(ctx, s.a.ID, r.ID, &g, "ok")
	require.NoError(t, err)
	require.Equal(t, before+1, v, "approval bumps the policy version")
	require.Equal(t, grants.Approved, got.Status)
	require.Equal(t, g.ID, got.GrantID)
	require.Equal(t, s.agentA.ID, g.AgentID)
	require.Equal(t, "plain_write", g.Tool)

	_, _, err = gs.Approve(ctx, s.a.ID, r.ID, &grants.Grant{ID: uuid.New()}, "")
	require.True(t, fault.Is(err, fault.Conflict))
	_, err = gs.Deny(ctx, s.a.ID, r.ID, "op", "")
	require.True(t, fault.Is(err, fault.Conflict))

	tools, err := gs.LiveTools(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"plain_write"}, tools)

	revoked, v2, err := gs.Revoke(ctx, s.a.ID, g.ID, "op")
	require.NoError(t, err)
	require.Equal(t, v+1, v2)
	require.Equal(t, grants.Revoked, revoked.EndReason)
	_, _, err = gs.Revoke(ctx, s.a.ID, g.ID, "op")
	require.True(t, fault.Is(err, fault.Conflict))
	tools, err = gs.LiveTools(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Empty(t, tools)

	d := newRequest(s.a.ID, s.agentA.ID, "plain_write")
	require.NoError(t, gs.CreateRequest(ctx, d, grants.DefaultRequestLimits), "a decided request no longer blocks a new one")
	denied, err := gs.Deny(ctx, s.a.ID, d.ID, "op", "no")
	require.NoError(t, err)
	require.Equal(t, grants.Denied, denied.Status)
	require.Equal(t, v2, version(t, s, s.a.ID), "a denial changes nothing visible")

	list, err := gs.ListRequests(ctx, s.a.ID, grants.Denied, nil, 100)
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, err = gs.ListRequests(ctx, s.a.ID, "", nil, 100)
	require.NoError(t, err)
	require.Len(t, list, 2)
}

func TestGrantExpiryAndTaskEnd(t *testing.T) {
	t.Parallel()
	s := grantSetup(t)
	gs := s.gs
	ctx := context.Background()

	past := time.Now().Add(-time.Second)
	future := time.Now().Add(time.Hour)
	task := uuid.New()
	due := grants.Grant{ID: uuid.New(), TenantID: s.a.ID, AgentID: s.agentA.ID, Tool: "x", ExpiresAt: &past}
	later := grants.Grant{ID: uuid.New(), TenantID: s.a.ID, AgentID: s.agentA.ID, Tool: "y", ExpiresAt: &future, TaskID: task}
	other := grants.Grant{ID: uuid.New(), TenantID: s.b.ID, AgentID: s.agentB.ID, Tool: "z", TaskID: task}
	for _, g := range []*grants.Grant{&due, &later, &other} {
		_, err := gs.CreateGrant(ctx, g)
		require.NoError(t, err)
	}
	tools, err := gs.LiveTools(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"y"}, tools, "a grant past its expiry is not in force even before the expirer runs")

	ended, err := gs.ExpireDue(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, []grants.Ended{{TenantID: s.a.ID, AgentID: s.agentA.ID, Version: version(t, s, s.a.ID)}}, ended)
	ended, err = gs.ExpireDue(ctx, time.Now())
	require.NoError(t, err)
	require.Empty(t, ended, "a grant expires once")
	g, err := gs.Grant(ctx, s.a.ID, due.ID)
	require.NoError(t, err)
	require.Equal(t, grants.Expired, g.EndReason)

	// Ending tenant A's task leaves tenant B's grant with the same task id.
	ended, err = gs.EndTask(ctx, s.a.ID, task)
	require.NoError(t, err)
	require.Len(t, ended, 1)
	tools, err = gs.LiveTools(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Empty(t, tools)
	tools, err = gs.LiveTools(ctx, s.b.ID, s.agentB.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"z"}, tools)
}

// TestGrantIsolation: tenant B must get not-found (or nothing) for every
// one of tenant A's requests and grants, through every method.
func TestGrantIsolation(t *testing.T) {
	t.Parallel()
	s := grantSetup(t)
	gs := s.gs
	ctx := context.Background()

	r := newRequest(s.a.ID, s.agentA.ID, "plain_write")
	require.NoError(t, gs.CreateRequest(ctx, r, grants.DefaultRequestLimits))
	r2 := newRequest(s.a.ID, s.agentA.ID, "other_tool")
	require.NoError(t, gs.CreateRequest(ctx, r2, grants.DefaultRequestLimits))
	g := grants.Grant{ID: uuid.New(), TenantID: s.a.ID, AgentID: s.agentA.ID, Tool: "t", TaskID: uuid.New()}
	_, err := gs.CreateGrant(ctx, &g)
	require.NoError(t, err)
	vb := version(t, s, s.b.ID)

	_, err = gs.Request(ctx, s.b.ID, r.ID)
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, _, err = gs.Approve(ctx, s.b.ID, r.ID, &grants.Grant{ID: uuid.New()}, "")
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, err = gs.Deny(ctx, s.b.ID, r2.ID, "op", "")
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, err = gs.Grant(ctx, s.b.ID, g.ID)
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, _, err = gs.Revoke(ctx, s.b.ID, g.ID, "op")
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	ended, err := gs.EndTask(ctx, s.b.ID, g.TaskID)
	require.NoError(t, err)
	require.Empty(t, ended)

	reqs, err := gs.ListRequests(ctx, s.b.ID, "", nil, 100)
	require.NoError(t, err)
	require.Empty(t, reqs)
	gl, err := gs.ListGrants(ctx, s.b.ID, uuid.Nil, false)
	require.NoError(t, err)
	require.Empty(t, gl)
	gl, err = gs.ListGrants(ctx, s.b.ID, s.agentA.ID, false)
	require.NoError(t, err)
	require.Empty(t, gl)
	tools, err := gs.LiveTools(ctx, s.b.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Empty(t, tools)

	// A request of tenant B for tenant A's agent names no agent of B; a
	// grant is refused by the composite foreign key.
	err = gs.CreateRequest(ctx, newRequest(s.b.ID, s.agentA.ID, "x"), grants.DefaultRequestLimits)
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, err = gs.CreateGrant(ctx, &grants.Grant{ID: uuid.New(), TenantID: s.b.ID, AgentID: s.agentA.ID, Tool: "x"})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)

	require.Equal(t, vb, version(t, s, s.b.ID), "nothing tenant B did touched its policy version")
	// Tenant A's rows are intact.
	got, err := gs.Request(ctx, s.a.ID, r2.ID)
	require.NoError(t, err)
	require.Equal(t, grants.Pending, got.Status)
	gl, err = gs.ListGrants(ctx, s.a.ID, s.agentA.ID, true)
	require.NoError(t, err)
	require.Len(t, gl, 1)
}

func TestPolicyVersionsReadsSeveralTenantsAtOnce(t *testing.T) {
	t.Parallel()
	s := grantSetup(t)
	got, err := s.db.PolicyVersions(context.Background(), []uuid.UUID{s.a.ID, s.b.ID, uuid.New()})
	require.NoError(t, err)
	require.Equal(t, map[uuid.UUID]int64{s.a.ID: version(t, s, s.a.ID), s.b.ID: version(t, s, s.b.ID)}, got)
}

// TestCapabilityRequestLimits: an agent's pending requests and its requests
// per window are capped, each agent separately, and concurrent requests
// cannot overrun a cap together.
func TestCapabilityRequestLimits(t *testing.T) {
	t.Parallel()
	s := grantSetup(t)
	gs := s.gs
	ctx := context.Background()
	lim := grants.RequestLimits{MaxPending: 3, PerWindow: 5, Window: time.Hour}

	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- gs.CreateRequest(ctx, newRequest(s.a.ID, s.agentA.ID, fmt.Sprintf("tool_%d", i)), lim)
		}()
	}
	wg.Wait()
	close(errs)
	created := 0
	for err := range errs {
		if err == nil {
			created++
			continue
		}
		require.True(t, fault.Is(err, fault.Conflict), "%v", err)
		require.Contains(t, fault.Message(err), "you already have 3 capability requests waiting for an operator")
	}
	require.Equal(t, 3, created, "ten at once, three pending at most")

	pending, err := gs.ListRequests(ctx, s.a.ID, grants.Pending, nil, 100)
	require.NoError(t, err)
	for _, r := range pending {
		_, err := gs.Deny(ctx, s.a.ID, r.ID, "op", "")
		require.NoError(t, err)
	}
	for i := range 2 {
		require.NoError(t, gs.CreateRequest(ctx, newRequest(s.a.ID, s.agentA.ID, fmt.Sprintf("again_%d", i)), lim))
	}
	err = gs.CreateRequest(ctx, newRequest(s.a.ID, s.agentA.ID, "one_more"), lim)
	require.True(t, fault.Is(err, fault.RateLimited), "%v", err)
	require.Equal(t, "you made 5 capability requests in the last hour, the most one AI employee may; wait before asking again", fault.Message(err))
	require.NoError(t, gs.CreateRequest(ctx, newRequest(s.b.ID, s.agentB.ID, "one_more"), lim), "another agent has its own budget")
}
