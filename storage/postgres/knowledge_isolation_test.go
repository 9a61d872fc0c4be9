package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
)

// TestKnowledgeTwoTenantIsolation: every store method, asked by tenant B
// about tenant A's rows, finds nothing.
func TestKnowledgeTwoTenantIsolation(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	r := round(f.a, f.agentA)
	m, err := f.svc.StoreMemory(ctx, r, uuid.New(), knowledge.NewMemory{Content: "Acme's launch is on March 3. 打ち上げは三月三日。"})
	require.NoError(t, err)
	_, err = f.svc.WriteWiki(ctx, r, uuid.New(), knowledge.ScopeShared, "launch", "x")
	require.NoError(t, err)
	_, err = f.svc.WriteWiki(ctx, r, uuid.New(), knowledge.ScopeOwn, "mine", "x")
	require.NoError(t, err)
	_, err = f.svc.Handoff(ctx, r, uuid.New(), knowledge.HandoffInput{Note: "n"})
	require.NoError(t, err)
	b, err := f.svc.RecordBelief(ctx, r, uuid.New(), "launch", "on time", 0.6)
	require.NoError(t, err)

	B := f.b.ID
	_, err = f.ks.Memory(ctx, B, m.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	hits, err := f.ks.Search(ctx, B, knowledge.Query{Text: "launch", Agents: []uuid.UUID{f.agentA.ID}, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, hits)
	hits, err = f.ks.Search(ctx, B, knowledge.Query{Text: "打ち上げ", Agents: []uuid.UUID{f.agentA.ID}, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, hits)
	ms, err := f.ks.ByLayer(ctx, B, f.agentA.ID, "", 10)
	require.NoError(t, err)
	require.Empty(t, ms)
	_, err = f.ks.Wiki(ctx, B, uuid.Nil, "launch")
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Wiki(ctx, B, f.agentA.ID, "mine")
	require.True(t, fault.Is(err, fault.NotFound))
	pages, err := f.ks.Wikis(ctx, B, uuid.Nil, 10)
	require.NoError(t, err)
	require.Empty(t, pages)
	require.True(t, fault.Is(f.ks.DeleteWiki(ctx, B, uuid.Nil, "launch"), fault.NotFound))
	_, err = f.ks.Handoff(ctx, B, f.agentA.ID, r.TaskID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Belief(ctx, B, b.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.ks.Settle(ctx, B, b.ID, true, knowledge.PlatformVerified, "op")
	require.True(t, fault.Is(err, fault.NotFound))
	bs, err := f.ks.Beliefs(ctx, B, f.agentA.ID, 10)
	require.NoError(t, err)
	require.Empty(t, bs)
	_, err = f.ks.Forget(ctx, B, sourceKey(r), "op")
	require.True(t, fault.Is(err, fault.NotFound))
	srcs, err := f.ks.Sources(ctx, B, uuid.Nil, 10)
	require.NoError(t, err)
	require.Empty(t, srcs)

	// The same source key in tenant B is B's own: a forget there does not
	// touch A, and A's writes from it go on.
	rb := round(f.b, f.agentB)
	rb.CredentialID = r.CredentialID
	_, err = f.svc.StoreMemory(ctx, rb, uuid.New(), knowledge.NewMemory{Content: "globex"})
	require.NoError(t, err)
	_, err = f.svc.Forget(ctx, operator(f.b), sourceKey(rb))
	require.NoError(t, err)
	_, err = f.ks.Memory(ctx, f.a.ID, m.ID)
	require.NoError(t, err)
	_, err = f.svc.StoreMemory(ctx, r, uuid.New(), knowledge.NewMemory{Content: "still mine"})
	require.NoError(t, err)

	// The service: an employee of B cannot name A's employee at all.
	_, err = f.svc.Search(ctx, rb, f.b, knowledge.SearchInput{Text: "launch", Agent: f.agentA.ID.String()})
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = f.svc.Search(ctx, operator(f.b), f.b, knowledge.SearchInput{Text: "launch", Agent: "ada"})
	require.True(t, fault.Is(err, fault.NotFound))
}

// TestKnowledgeEmployeeIsolation: within a tenant an employee reads
// another's memories only when the tenant shares memory and the
// delegation policy relates the two.
func TestKnowledgeEmployeeIsolation(t *testing.T) {
	t.Parallel()
	f := knowSetup(t)
	ctx := context.Background()
	no := false
	policy := identity.DelegationPolicy{SameDepartment: &no, ReportsTo: &no}
	cy, err := f.svc2agent(t, "cy", "sales")
	require.NoError(t, err)
	dee, err := f.svc2agent(t, "dee", "sales")
	require.NoError(t, err)
	_, err = f.svc.StoreMemory(ctx, round(f.a, cy), uuid.New(), knowledge.NewMemory{Content: "The Tanaka deal closes in May."})
	require.NoError(t, err)

	tenant := f.a
	tenant.Settings.Delegation = policy
	search := func(tn identity.Tenant) error {
		hits, err := f.svc.Search(ctx, round(f.a, dee), tn, knowledge.SearchInput{Text: "Tanaka deal", Agent: "cy"})
		if err == nil {
			require.Len(t, hits, 1)
		}
		return err
	}
	require.True(t, fault.Is(search(tenant), fault.NotFound), "memory not shared")
	tenant.Settings.SharedMemory = true
	require.True(t, fault.Is(search(tenant), fault.NotFound), "shared, but the policy does not relate them")
	tenant.Settings.Delegation = identity.DelegationPolicy{} // same department on by default
	require.NoError(t, search(tenant))
	tenant.Settings.SharedMemory = false
	require.True(t, fault.Is(search(tenant), fault.NotFound), "related, but the tenant does not share memory")

	own, err := f.svc.Search(ctx, round(f.a, dee), tenant, knowledge.SearchInput{Text: "Tanaka deal"})
	require.NoError(t, err)
	require.Empty(t, own, "dee's own memories hold nothing of cy's")
	ms, err := f.svc.ByLayer(ctx, round(f.a, dee), "", 10)
	require.NoError(t, err)
	require.Empty(t, ms)
}

func (f knowFixture) svc2agent(t testing.TB, name, dept string) (identity.Agent, error) {
	t.Helper()
	return f.twoTenants.svc.CreateAgent(context.Background(), f.a.ID, identity.NewAgent{Name: name, Department: dept})
}
