package live_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// revokeFixture is a hub that re-checks credentials with auth.Validity on
// a real database, fed by an identity.Service publishing to it directly.
type revokeFixture struct {
	db     *postgres.DB
	hub    *live.Hub
	pol    *policy
	ids    *identity.Service
	ta, tb identity.Tenant
}

func newRevokeFixture(t *testing.T, reconcileEvery time.Duration, pub func(*live.Hub) changes.Publisher) *revokeFixture {
	t.Helper()
	ctx := context.Background()
	f := &revokeFixture{db: pgtest.New(t), pol: &policy{tools: map[uuid.UUID][]string{}}}
	f.hub = live.NewHub(live.Config{Visible: f.pol.visible, Versions: f.db, ReconcileEvery: reconcileEvery,
		CheckEvery: time.Hour, Valid: auth.NewValidity(f.db).Refresh, Log: slog.New(slog.DiscardHandler)})
	f.hub.ArmSignals()
	require.NoError(t, f.hub.Start(ctx))
	t.Cleanup(f.hub.Stop)
	f.ids = identity.NewService(postgres.NewIdentityStore(f.db), pub(f.hub), slog.New(slog.DiscardHandler))
	tt := pgtest.TwoTenants(t, f.db)
	f.ta, f.tb = tt.A, tt.B
	return f
}

// agentKey creates an agent key and opens a stream with it.
func (f *revokeFixture) agentKey(t *testing.T, tenant identity.Tenant, agent identity.Agent) (identity.Key, *fakeStream) {
	t.Helper()
	k, _, err := f.ids.CreateKey(context.Background(), tenant.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: agent.ID, Name: "k",
		Scopes: []string{identity.ScopeToolsWrite}})
	require.NoError(t, err)
	f.pol.set(agent.ID, "a", "b")
	s := newStream(identity.Principal{TenantID: tenant.ID, Kind: identity.KindEmployee, AgentID: agent.ID,
		CredentialID: "key:" + k.ID.String(), Scopes: k.Scopes})
	t.Cleanup(f.hub.Open(context.Background(), s))
	return k, s
}

func (f *revokeFixture) agent(t *testing.T, tenant identity.Tenant, name string) identity.Agent {
	t.Helper()
	a, err := f.ids.CreateAgent(context.Background(), tenant.ID, identity.NewAgent{Name: name})
	require.NoError(t, err)
	return a
}

func requireOpenAndQuiet(t *testing.T, what string, ss ...*fakeStream) {
	t.Helper()
	for _, s := range ss {
		require.False(t, s.closed.Load(), "%s: closed", what)
		require.Zero(t, s.n.Load(), "%s: notified", what)
	}
}

func TestHubClosesTheStreamsOfARevokedKeyAndATrashedAgent(t *testing.T) {
	t.Parallel()
	f := newRevokeFixture(t, time.Hour, func(h *live.Hub) changes.Publisher { return h })
	ctx := context.Background()
	ada, bob, gil := f.agent(t, f.ta, "ada"), f.agent(t, f.ta, "bob"), f.agent(t, f.tb, "gil")
	k1, s1 := f.agentKey(t, f.ta, ada)
	_, s2 := f.agentKey(t, f.ta, ada)
	_, sb := f.agentKey(t, f.ta, bob)
	_, sg := f.agentKey(t, f.tb, gil)
	require.NoError(t, f.hub.Reconcile(ctx))
	f.hub.Settle(t)

	_, err := f.ids.RevokeKey(ctx, f.ta.ID, k1.ID)
	require.NoError(t, err)
	f.hub.Settle(t)
	require.True(t, s1.closed.Load())
	require.Zero(t, s1.n.Load(), "the revoked stream heard nothing")
	requireOpenAndQuiet(t, "ada's other key, bob and another tenant", s2, sb, sg)
	require.EqualValues(t, 3, f.hub.Stats().Streams)

	// Trashing ada closes her other key's stream, and ada (whose set would
	// now be empty) is not told about it: she is gone.
	f.pol.set(ada.ID)
	_, err = f.ids.TrashAgent(ctx, f.ta.ID, ada.ID)
	require.NoError(t, err)
	f.hub.Settle(t)
	require.True(t, s2.closed.Load())
	require.Zero(t, s2.n.Load())
	requireOpenAndQuiet(t, "bob and another tenant", sb, sg)
	st := f.hub.Stats()
	require.EqualValues(t, 2, st.Revoked)
	require.EqualValues(t, 2, st.Streams)
}

func TestHubClosesAStreamWhoseRevocationEventWasLost(t *testing.T) {
	t.Parallel()
	f := newRevokeFixture(t, time.Hour, func(*live.Hub) changes.Publisher { return changes.Discard{} })
	ctx := context.Background()
	ada, bob := f.agent(t, f.ta, "ada"), f.agent(t, f.ta, "bob")
	k, s := f.agentKey(t, f.ta, ada)
	_, sb := f.agentKey(t, f.ta, bob)
	require.NoError(t, f.hub.Reconcile(ctx))
	f.hub.Settle(t)

	_, err := f.ids.RevokeKey(ctx, f.ta.ID, k.ID) // committed, never published
	require.NoError(t, err)
	f.hub.Settle(t)
	require.False(t, s.closed.Load(), "nothing told the hub yet")
	require.NoError(t, f.hub.Reconcile(ctx))
	f.hub.Settle(t)
	require.True(t, s.closed.Load())
	requireOpenAndQuiet(t, "bob", sb)

	// A revocation that moves no policy version (an OAuth grant deactivated
	// behind the hub's back, say) is caught by the periodic sweep.
	_, err = f.db.Pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1`, f.ta.ID)
	require.NoError(t, err)
	require.NoError(t, f.hub.Reconcile(ctx))
	f.hub.Settle(t)
	require.False(t, sb.closed.Load())
	f.hub.CheckCredentials()
	f.hub.Settle(t)
	require.True(t, sb.closed.Load())
}

// recorder is a fake ValidFunc recording what it is asked.
type recorder struct {
	mu      sync.Mutex
	calls   [][]string // credential ids asked, per call
	revoked map[string]bool
	fail    atomic.Bool
}

func (r *recorder) valid(_ context.Context, _ uuid.UUID, ps []identity.Principal) ([]identity.Principal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	out := make([]identity.Principal, len(ps))
	for i, p := range ps {
		ids = append(ids, p.CredentialID)
		if !r.revoked[p.CredentialID] {
			out[i] = p
		}
	}
	r.calls = append(r.calls, ids)
	if r.fail.Load() {
		return nil, errors.New("database unavailable")
	}
	return out, nil
}

func (r *recorder) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func TestHubChecksOnlyTheAffectedStreamsInOneCallAndFailsOpen(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	ctx := context.Background()
	tn := identity.Tenant{ID: uuid.New(), Slug: "acme", Name: "acme"}
	require.NoError(t, store.CreateTenant(ctx, &tn))
	rec := &recorder{revoked: map[string]bool{}}
	pol := &policy{tools: map[uuid.UUID][]string{}}
	hub := live.NewHub(live.Config{Visible: pol.visible, Versions: db, ReconcileEvery: time.Hour, CheckEvery: time.Hour,
		Valid: rec.valid, Log: slog.New(slog.DiscardHandler)})
	hub.ArmSignals()
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(hub.Stop)
	ada, bob := uuid.New(), uuid.New()
	open := func(agent uuid.UUID, cred string) *fakeStream {
		s := &fakeStream{p: identity.Principal{TenantID: tn.ID, Kind: identity.KindEmployee, AgentID: agent, CredentialID: cred}}
		t.Cleanup(hub.Open(ctx, s))
		return s
	}
	a1, a1b, a2, b1 := open(ada, "key:a1"), open(ada, "key:a1"), open(ada, "key:a2"), open(bob, "key:b1")
	op := &fakeStream{p: identity.Principal{TenantID: tn.ID, Kind: identity.KindOperator, CredentialID: "key:op"}}
	t.Cleanup(hub.Open(ctx, op))
	require.NoError(t, hub.Reconcile(ctx))
	hub.Settle(t)
	rec.take()
	version := func() int64 {
		v, err := postgres.BumpPolicyVersion(ctx, db.Pool, tn.ID)
		require.NoError(t, err)
		return v
	}

	// An agent event asks about that agent's credentials only, each once.
	hub.Handle(changes.Event{TenantID: tn.ID, Kind: changes.AgentChanged, AgentID: ada, Version: version()})
	hub.Settle(t)
	calls := rec.take()
	require.Len(t, calls, 1)
	require.ElementsMatch(t, []string{"key:a1", "key:a2"}, calls[0])
	// So does an agent key's event.
	hub.Handle(changes.Event{TenantID: tn.ID, Kind: changes.KeyChanged, AgentID: bob, Version: version()})
	hub.Settle(t)
	require.Equal(t, [][]string{{"key:b1"}}, rec.take())
	// A settings change revokes nothing: no credential is checked.
	hub.Handle(changes.Event{TenantID: tn.ID, Kind: changes.GrantChanged, AgentID: ada, Version: version()})
	hub.Settle(t)
	require.Empty(t, rec.take())

	// An operator key's event checks the whole tenant in one call; while the check
	// fails nothing is closed, and the reconciler retries.
	rec.mu.Lock()
	rec.revoked["key:a1"] = true
	rec.mu.Unlock()
	rec.fail.Store(true)
	hub.Handle(changes.Event{TenantID: tn.ID, Kind: changes.KeyChanged, Version: version()})
	hub.Settle(t)
	calls = rec.take()
	require.Len(t, calls, 1)
	require.ElementsMatch(t, []string{"key:a1", "key:a2", "key:b1", "key:op"}, calls[0])
	require.False(t, a1.closed.Load(), "a failed check closes nothing")
	rec.fail.Store(false)
	require.NoError(t, hub.Reconcile(ctx))
	hub.Settle(t)
	require.True(t, a1.closed.Load() && a1b.closed.Load())
	require.False(t, a2.closed.Load())
	require.False(t, b1.closed.Load())
	require.False(t, op.closed.Load())
	require.EqualValues(t, 2, hub.Stats().Revoked)
	require.EqualValues(t, 3, hub.Stats().Streams)
}
