package live_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// scopePolicy is a fake VisibleFunc that depends on scopes only: "read"
// for everyone, "write" for holders of tools:write. It remembers the last
// set it computed for each member.
type scopePolicy struct {
	mu   sync.Mutex
	last map[uuid.UUID][]string
}

func (p *scopePolicy) visible(_ context.Context, pr identity.Principal) ([]string, error) {
	out := []string{"read"}
	if pr.HasScope(identity.ScopeToolsWrite) {
		out = append(out, "write")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[pr.MemberID] = out
	return out, nil
}

func (p *scopePolicy) lastOf(member uuid.UUID) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last[member]
}

// TestHubFollowsAMembersRoleOnItsOAuthStreams: a member's role bounds its
// OAuth clients' scopes, so demoting the member shrinks the visible set of
// its open streams and tells exactly those streams, once; a role change
// that leaves the grantable scopes alone tells no one; promotion works the
// same way back.
func TestHubFollowsAMembersRoleOnItsOAuthStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	pol := &scopePolicy{last: map[uuid.UUID][]string{}}
	hub := live.NewHub(live.Config{Visible: pol.visible, Versions: db, ReconcileEvery: time.Hour, CheckEvery: time.Hour,
		Valid: auth.NewValidity(db).Refresh, Log: slog.New(slog.DiscardHandler)})
	hub.ArmSignals()
	require.NoError(t, hub.Start(ctx))
	t.Cleanup(hub.Stop)
	ids := identity.NewService(postgres.NewIdentityStore(db), hub, slog.New(slog.DiscardHandler))
	creds := postgres.NewCredentialStore(db)
	tt := pgtest.TwoTenants(t, db)
	ta, tb := tt.A, tt.B

	rw := []string{identity.ScopeToolsRead, identity.ScopeToolsWrite}
	// open makes a member of tenant with an OAuth grant of tools:read and
	// tools:write and opens a stream with the principal the token resolves to.
	open := func(tenant identity.Tenant, email string, role identity.Role) (identity.Member, *fakeStream, func()) {
		t.Helper()
		m, err := ids.CreateMember(ctx, tenant.ID, email, "correct horse battery", role)
		require.NoError(t, err)
		client := "c-" + email
		require.NoError(t, creds.CreateClient(ctx, &credentials.Client{TenantID: tenant.ID, ID: client, Kind: credentials.ClientPreregistered,
			Name: client, RedirectURIs: []string{"https://c.test/cb"}, GrantTypes: []string{"authorization_code"}, Scopes: rw,
			AuthMethod: credentials.AuthNone}))
		grant := "grant-" + email
		require.NoError(t, creds.CreateToken(ctx, &credentials.Token{TenantID: tenant.ID, Kind: credentials.KindAccess, Signature: "sig-" + grant,
			RequestID: grant, ClientID: client, MemberID: m.ID, Request: []byte(`{"granted_scopes":["tools:read","tools:write"]}`),
			ExpiresAt: time.Now().Add(time.Hour)}))
		s := &fakeStream{p: identity.Principal{TenantID: tenant.ID, TenantSlug: tenant.Slug, Kind: identity.KindExternal, MemberID: m.ID,
			ClientID: client, CredentialID: "oauth:" + grant, Scopes: rw}}
		unregister := hub.Open(ctx, s)
		t.Cleanup(unregister)
		return m, s, unregister
	}
	_, owner, _ := open(ta, "owner@acme.test", identity.RoleOwner)
	m, ms, closeMS := open(ta, "m@acme.test", identity.RoleOwner)
	_, other, _ := open(tb, "owner@globex.test", identity.RoleOwner)
	require.NoError(t, hub.Reconcile(ctx))
	hub.Settle(t)
	require.Equal(t, []string{"read", "write"}, pol.lastOf(m.ID))
	requireOpenAndQuiet(t, "after opening", owner, ms, other)

	// Owner to admin: both may grant every scope, so nothing changes.
	_, err := ids.SetMemberRole(ctx, ta.ID, m.ID, identity.RoleAdmin)
	require.NoError(t, err)
	hub.Settle(t)
	requireOpenAndQuiet(t, "owner to admin", owner, ms, other)

	// Admin to viewer: m's stream now holds tools:read only, its set shrinks
	// and it hears exactly one list_changed; no one else hears anything.
	_, err = ids.SetMemberRole(ctx, ta.ID, m.ID, identity.RoleViewer)
	require.NoError(t, err)
	hub.Settle(t)
	require.EqualValues(t, 1, ms.n.Load())
	require.False(t, ms.closed.Load())
	require.Equal(t, []string{"read"}, pol.lastOf(m.ID))
	requireOpenAndQuiet(t, "another member and another tenant", owner, other)

	// The moved stream is grouped with the principal a new viewer stream
	// of m resolves to: opening one computes nothing and adds no principal.
	principals := hub.Stats().Principals
	ms2 := &fakeStream{p: ms.p}
	ms2.p.Scopes = []string{identity.ScopeToolsRead}
	closeMS2 := hub.Open(ctx, ms2)
	t.Cleanup(closeMS2)
	require.Equal(t, principals, hub.Stats().Principals)

	// A sweep with nothing changed sends nothing.
	hub.CheckCredentials()
	hub.Settle(t)
	require.EqualValues(t, 1, ms.n.Load())
	require.Zero(t, ms2.n.Load())

	// Viewer back to operator: write returns, both of m's streams hear it once.
	_, err = ids.SetMemberRole(ctx, ta.ID, m.ID, identity.RoleOperator)
	require.NoError(t, err)
	hub.Settle(t)
	require.EqualValues(t, 2, ms.n.Load())
	require.EqualValues(t, 1, ms2.n.Load())
	require.Equal(t, []string{"read", "write"}, pol.lastOf(m.ID))
	requireOpenAndQuiet(t, "promotion", owner, other)
	require.EqualValues(t, 0, hub.Stats().Revoked)

	// Ending the moved streams forgets them and their principal.
	closeMS()
	closeMS2()
	st := hub.Stats()
	require.Equal(t, 2, st.Streams)
	require.Equal(t, 2, st.Principals)
}
