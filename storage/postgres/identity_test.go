package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// twoTenants is the setup bundle of the isolation tests: a service on a fresh
// database and two tenants, each with one agent.
type twoTenants struct {
	tt     pgtest.Tenants
	db     *postgres.DB
	svc    *identity.Service
	store  *postgres.IdentityStore
	a, b   identity.Tenant
	agentA identity.Agent
	agentB identity.Agent
}

// setup is the package's two-tenant bundle on a fresh database
// (pgtest.TwoTenants), with the AI employee ada in acme and bob in globex.
func setup(t testing.TB) twoTenants {
	t.Helper()
	s := tenantsOnly(t)
	s.agentA = s.tt.Agent(t, s.a, "ada")
	s.agentB = s.tt.Agent(t, s.b, "bob")
	return s
}

// tenantsOnly is setup without employees.
func tenantsOnly(t testing.TB) twoTenants {
	t.Helper()
	tt := pgtest.TwoTenants(t, nil)
	return twoTenants{tt: tt, db: tt.DB, svc: tt.IDs, store: tt.Store, a: tt.A, b: tt.B}
}

func TestAgentIsolation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()

	_, err := s.store.Agent(ctx, s.b.ID, s.agentA.ID)
	require.True(t, fault.Is(err, fault.NotFound), "tenant B read tenant A's agent: %v", err)
	_, err = s.store.AgentByName(ctx, s.b.ID, "ada")
	require.True(t, fault.Is(err, fault.NotFound))
	_, _, err = s.store.UpdateAgent(ctx, s.b.ID, s.agentA.ID, func(a *identity.Agent) error { a.Role = "x"; return nil })
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = s.store.PurgeAgent(ctx, s.b.ID, s.agentA.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	list, err := s.store.ListAgents(ctx, s.b.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "bob", list[0].Name)

	// The same name is free in another tenant.
	_, err = s.svc.CreateAgent(ctx, s.b.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	// A manager from another tenant is refused.
	_, err = s.svc.CreateAgent(ctx, s.a.ID, identity.NewAgent{Name: "cy", ReportsTo: s.agentB.ID})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
}

func TestMemberIsolation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	m, err := s.svc.CreateMember(ctx, s.a.ID, "Owner@Acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	require.Equal(t, "owner@acme.test", m.Email)

	_, err = s.store.Member(ctx, s.b.ID, m.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = s.store.MemberByEmail(ctx, s.b.ID, m.Email)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = s.svc.Authenticate(ctx, s.b.ID, m.Email, "correct horse battery")
	require.True(t, fault.Is(err, fault.Unauthorized))
	_, err = s.store.DeleteMember(ctx, s.b.ID, m.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = s.store.UpdateMember(ctx, s.b.ID, m.ID, func(*identity.Member) error { return nil })
	require.True(t, fault.Is(err, fault.NotFound))
	list, err := s.store.ListMembers(ctx, s.b.ID)
	require.NoError(t, err)
	require.Empty(t, list)

	got, err := s.svc.Authenticate(ctx, s.a.ID, "OWNER@acme.test", "correct horse battery")
	require.NoError(t, err)
	require.Equal(t, m.ID, got.ID)
	_, err = s.svc.Authenticate(ctx, s.a.ID, m.Email, "wrong password!!")
	require.True(t, fault.Is(err, fault.Unauthorized))
}

func TestKeyIsolation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	k, token, err := s.svc.CreateKey(ctx, s.a.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: s.agentA.ID, Name: "ada key", Scopes: []string{identity.ScopeToolsWrite}})
	require.NoError(t, err)
	id, secret, ok := identity.ParseKeyToken(token)
	require.True(t, ok)
	require.Equal(t, k.ID, id)
	require.True(t, identity.VerifySecret(k.SecretHash, secret))
	require.NotContains(t, k.SecretHash, secret)

	_, err = s.store.Key(ctx, s.b.ID, k.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, _, err = s.store.RevokeKey(ctx, s.b.ID, k.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	keys, err := s.store.ListKeys(ctx, s.b.ID)
	require.NoError(t, err)
	require.Empty(t, keys)
	// A key of tenant B for tenant A's agent is refused.
	_, _, err = s.svc.CreateKey(ctx, s.b.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: s.agentA.ID, Name: "x"})
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)

	got, err := s.store.Key(ctx, s.a.ID, k.ID)
	require.NoError(t, err)
	require.True(t, got.Live(got.CreatedAt))
	_, err = s.svc.RevokeKey(ctx, s.a.ID, k.ID)
	require.NoError(t, err)
	got, err = s.store.Key(ctx, s.a.ID, k.ID)
	require.NoError(t, err)
	require.False(t, got.Live(got.CreatedAt))
}

func TestTenantSettingsAndPolicyVersion(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	before, err := s.store.PolicyVersion(ctx, s.a.ID)
	require.NoError(t, err)
	otherBefore, err := s.store.PolicyVersion(ctx, s.b.ID)
	require.NoError(t, err)
	tn, err := s.svc.UpdateTenant(ctx, s.a.ID, func(t *identity.Tenant) error {
		t.Settings.Integrations.GitHub = true
		return nil
	})
	require.NoError(t, err)
	require.True(t, tn.Settings.Integrations.GitHub)
	after, err := s.store.PolicyVersion(ctx, s.a.ID)
	require.NoError(t, err)
	require.Greater(t, after, before)
	otherAfter, err := s.store.PolicyVersion(ctx, s.b.ID)
	require.NoError(t, err)
	require.Equal(t, otherBefore, otherAfter, "a change in tenant A moved tenant B's version")
	got, err := s.store.TenantBySlug(ctx, "acme")
	require.NoError(t, err)
	require.True(t, got.Settings.Integrations.GitHub)
	b, err := s.store.Tenant(ctx, s.b.ID)
	require.NoError(t, err)
	require.False(t, b.Settings.Integrations.GitHub)
}

func TestAgentTrashReservesName(t *testing.T) {
	t.Parallel()
	s := setup(t)
	ctx := context.Background()
	_, err := s.svc.TrashAgent(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	_, err = s.svc.CreateAgent(ctx, s.a.ID, identity.NewAgent{Name: "ada"})
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	require.NoError(t, s.svc.PurgeAgent(ctx, s.a.ID, s.agentA.ID))
	_, err = s.svc.CreateAgent(ctx, s.a.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
}

func TestUnreadablePermissionsRefuse(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	svc := identity.NewService(store, changes.Discard{}, discardLogger())
	ctx := context.Background()
	tn, err := svc.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	a, err := svc.CreateAgent(ctx, tn.ID, identity.NewAgent{Name: "ada"})
	require.NoError(t, err)
	got, err := store.Agent(ctx, tn.ID, a.ID)
	require.NoError(t, err)
	require.Nil(t, got.Settings.Permissions, "absent permissions must read as nil (allow)")

	_, err = db.Pool.Exec(ctx, `UPDATE agents SET permissions = '{"can_create_agents": "yes"}' WHERE id = $1`, a.ID)
	require.NoError(t, err)
	got, err = store.Agent(ctx, tn.ID, a.ID)
	require.NoError(t, err)
	require.NotNil(t, got.Settings.Permissions)
	require.True(t, got.Settings.Permissions.Unreadable)
}
