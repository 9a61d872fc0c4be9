package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
)

// TestStillValid: every kind of credential a stream can be opened with is
// reported live until it is revoked, expires or loses its agent, and a
// credential of another tenant is never live here.
func TestStillValid(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	v := auth.NewValidity(env.db)
	cred := func(s string) identity.Principal { return identity.Principal{CredentialID: s} }
	check := func(tenant identity.Tenant, ps ...identity.Principal) []bool {
		t.Helper()
		ok, err := v.StillValid(ctx, tenant.ID, ps)
		require.NoError(t, err)
		return ok
	}

	op, _ := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator, Scopes: []string{identity.ScopeAdminRead}})
	ag, _ := env.key(t, env.a, identity.NewKey{Kind: identity.KeyAgent, AgentID: env.agentA.ID})
	ag2, _ := env.key(t, env.a, identity.NewKey{Kind: identity.KeyAgent, AgentID: env.agentA.ID})
	expiring, _ := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator})
	rt, _, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, env.task(t, env.a), nil, 0)
	require.NoError(t, err)
	rt2, _, err := env.rounds.Mint(ctx, env.a.ID, env.agentA.ID, env.task(t, env.a), nil, 0)
	require.NoError(t, err)
	m, err := env.svc.CreateMember(ctx, env.a.ID, "m@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	require.NoError(t, env.creds.CreateClient(ctx, &credentials.Client{TenantID: env.a.ID, ID: "c1", Kind: credentials.ClientPreregistered,
		Name: "c1", RedirectURIs: []string{"https://c.test/cb"}, GrantTypes: []string{"authorization_code"}, Scopes: []string{"tools:read"},
		AuthMethod: credentials.AuthNone}))
	for _, g := range []string{"grant-live", "grant-revoked", "grant-expired"} {
		exp := time.Now().Add(time.Hour)
		if g == "grant-expired" {
			exp = time.Now().Add(-time.Second)
		}
		require.NoError(t, env.creds.CreateToken(ctx, &credentials.Token{TenantID: env.a.ID, Kind: credentials.KindAccess, Signature: "sig-" + g,
			RequestID: g, ClientID: "c1", MemberID: m.ID, Request: []byte(`{}`), ExpiresAt: exp}))
		require.NoError(t, env.creds.CreateToken(ctx, &credentials.Token{TenantID: env.a.ID, Kind: credentials.KindRefresh, Signature: "rsig-" + g,
			RequestID: g, ClientID: "c1", MemberID: m.ID, Request: []byte(`{}`), ExpiresAt: time.Now().Add(24 * time.Hour)}))
	}
	require.NoError(t, env.creds.RevokeGrant(ctx, env.a.ID, credentials.KindAccess, "grant-revoked"))

	ps := []identity.Principal{cred("key:" + op.ID.String()), cred("key:" + ag.ID.String()), cred("key:" + ag2.ID.String()),
		cred("key:" + expiring.ID.String()), cred("round:" + rt.ID.String()), cred("round:" + rt2.ID.String()),
		cred("oauth:grant-live"), cred("oauth:grant-revoked"), cred("oauth:grant-expired"), cred("oauth:no-such-grant"),
		cred("key:" + uuid.NewString()), cred("key:not-a-uuid"), cred("session:abc"), cred("")}
	require.Equal(t, []bool{true, true, true, true, true, true, true, false, false, false, false, false, true, true}, check(env.a, ps...))
	// Another tenant's view: none of acme's credentials is live there.
	require.Equal(t, []bool{false, false, false, false, false, false, false, false, false, false, false, false, true, true}, check(env.b, ps...))

	_, err = env.svc.RevokeKey(ctx, env.a.ID, ag.ID)
	require.NoError(t, err)
	_, err = env.db.Pool.Exec(ctx, `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, expiring.ID)
	require.NoError(t, err)
	require.NoError(t, env.creds.RevokeRoundToken(ctx, env.a.ID, rt2.ID))
	require.Equal(t, []bool{true, false, true, false, true, false}, check(env.a, ps[:6]...))

	// Trashing the agent takes its remaining key and round token with it.
	_, err = env.svc.TrashAgent(ctx, env.a.ID, env.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, false, false, false, false}, check(env.a, ps[:6]...))
	// Revoking the member's consent ends the grant.
	require.NoError(t, env.creds.AddConsent(ctx, env.a.ID, m.ID, "c1", []string{"tools:read"}))
	require.NoError(t, env.creds.RevokeConsent(ctx, env.a.ID, m.ID, "c1"))
	require.Equal(t, []bool{false}, check(env.a, ps[6]))
}

// TestRefreshBoundsOAuthScopesByTheMembersCurrentRole: Refresh returns an
// OAuth principal with its grant's scopes bounded by its member's role as
// it is now, other live principals unchanged, and the zero Principal for a
// dead credential or another tenant's grant.
func TestRefreshBoundsOAuthScopesByTheMembersCurrentRole(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	v := auth.NewValidity(env.db)
	_, err := env.svc.CreateMember(ctx, env.a.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	m, err := env.svc.CreateMember(ctx, env.a.ID, "m@acme.test", "correct horse battery", identity.RoleAdmin)
	require.NoError(t, err)
	require.NoError(t, env.creds.CreateClient(ctx, &credentials.Client{TenantID: env.a.ID, ID: "c1", Kind: credentials.ClientPreregistered,
		Name: "c1", RedirectURIs: []string{"https://c.test/cb"}, GrantTypes: []string{"authorization_code"},
		Scopes: []string{"tools:read", "tools:write"}, AuthMethod: credentials.AuthNone}))
	require.NoError(t, env.creds.CreateToken(ctx, &credentials.Token{TenantID: env.a.ID, Kind: credentials.KindAccess, Signature: "sig-g",
		RequestID: "g", ClientID: "c1", MemberID: m.ID, Request: []byte(`{"granted_scopes":["tools:read","tools:write"]}`),
		ExpiresAt: time.Now().Add(time.Hour)}))
	op, _ := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator, Scopes: []string{identity.ScopeAdminRead}})
	ext := identity.Principal{TenantID: env.a.ID, Kind: identity.KindExternal, MemberID: m.ID, ClientID: "c1", CredentialID: "oauth:g",
		Scopes: []string{"tools:read", "tools:write"}}
	key := identity.Principal{TenantID: env.a.ID, Kind: identity.KindOperator, CredentialID: "key:" + op.ID.String(), Scopes: op.Scopes}
	gone := identity.Principal{TenantID: env.a.ID, Kind: identity.KindExternal, CredentialID: "oauth:nope", Scopes: []string{"tools:read"}}

	got, err := v.Refresh(ctx, env.a.ID, []identity.Principal{ext, key, gone})
	require.NoError(t, err)
	require.Equal(t, []identity.Principal{ext, key, {}}, got)

	_, err = env.svc.SetMemberRole(ctx, env.a.ID, m.ID, identity.RoleViewer)
	require.NoError(t, err)
	got, err = v.Refresh(ctx, env.a.ID, []identity.Principal{ext, key})
	require.NoError(t, err)
	viewer := ext
	viewer.Scopes = []string{"tools:read"}
	require.Equal(t, []identity.Principal{viewer, key}, got)

	// Another tenant's view: the grant is not live there.
	got, err = v.Refresh(ctx, env.b.ID, []identity.Principal{ext})
	require.NoError(t, err)
	require.Equal(t, []identity.Principal{{}}, got)
}
