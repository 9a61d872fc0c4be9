package auth_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/identity"
)

// TestKeysStandOnTheirCreatorsAuthority: a key a member made resolves with
// that member's current role and the scopes the role holds, on every
// request and in the live hub's re-check; it dies with the member. A key
// made by the platform or the CLI has no member behind it.
func TestKeysStandOnTheirCreatorsAuthority(t *testing.T) {
	t.Parallel()
	env := newKeyEnv(t)
	ctx := context.Background()
	_, err := env.svc.CreateMember(ctx, env.a.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	alice, err := env.svc.CreateMember(ctx, env.a.ID, "alice@acme.test", "correct horse battery", identity.RoleAdmin)
	require.NoError(t, err)
	asAlice := identity.Principal{TenantID: env.a.ID, Kind: identity.KindOperator, MemberID: alice.ID, Role: alice.Role,
		Scopes: alice.Role.Scopes(), CredentialID: "session:0001020304050607"}
	k, token, err := env.svc.IssueKey(ctx, asAlice, env.a.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "alice's"})
	require.NoError(t, err)
	_, plain := env.key(t, env.a, identity.NewKey{Kind: identity.KeyOperator})

	res, p := env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, identity.RoleAdmin, p.Role)
	require.Equal(t, alice.ID, p.CreatorID)
	require.True(t, p.Allows(identity.ManageMembers))
	require.False(t, p.Allows(identity.ManageOwners))

	_, p = env.get(t, "/t/acme/probe", plain)
	require.Equal(t, identity.Role(""), p.Role, "no member stands behind a key the CLI made")
	require.True(t, p.Allows(identity.ManageOwners))

	// Demoting alice shrinks her key at once (the change event drops the
	// cached principal) and in the live hub's re-check.
	_, err = env.svc.SetMemberRole(ctx, env.a.ID, alice.ID, identity.RoleViewer)
	require.NoError(t, err)
	res, p = env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, identity.RoleViewer, p.Role)
	require.Equal(t, []string{identity.ScopeAdminRead, identity.ScopeToolsRead}, sorted(p.Scopes))
	require.False(t, p.Allows(identity.ManageAgents))
	stale := identity.Principal{TenantID: env.a.ID, Kind: identity.KindOperator, CredentialID: "key:" + k.ID.String(),
		Scopes: k.Scopes, Role: identity.RoleAdmin, CreatorID: alice.ID}
	fresh, err := auth.NewValidity(env.db).Refresh(ctx, env.a.ID, []identity.Principal{stale})
	require.NoError(t, err)
	require.Equal(t, identity.RoleViewer, fresh[0].Role)
	require.Equal(t, []string{identity.ScopeAdminRead, identity.ScopeToolsRead}, sorted(fresh[0].Scopes))

	// Removing her revokes it.
	require.NoError(t, env.svc.RemoveMember(ctx, env.a.ID, alice.ID))
	res, _ = env.get(t, "/t/acme/probe", token)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	ok, err := auth.NewValidity(env.db).StillValid(ctx, env.a.ID, []identity.Principal{stale})
	require.NoError(t, err)
	require.Equal(t, []bool{false}, ok)
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
