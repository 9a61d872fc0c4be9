package oauth_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestMemberRoleBoundsTheGrant shows a client never gets more than its
// member may do: a viewer cannot grant write or admin scopes, and demoting
// a member shrinks their clients' tokens at once.
func TestMemberRoleBoundsTheGrant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.svc.CreateMember(ctx, e.a.ID, "vera@acme.test", password, identity.RoleViewer)
	require.NoError(t, err)
	redirect := "https://client.example/cb"
	clientID := e.dcrClient("acme", redirect)

	vb := e.browser()
	_, challenge := pkce()
	p := vb.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:read tools:write",
		state: "role-state", challenge: challenge, method: "S256"}))
	p = e.login(vb, "acme", p, "vera@acme.test")
	require.Contains(t, p.body, "As a viewer you cannot grant <code>tools:write</code>")
	require.NotContains(t, p.body, "<code>tools:write</code>: ")
	tr := e.grant(vb, "acme", clientID, redirect, "tools:read tools:write", "vera@acme.test")
	require.Equal(t, "tools:read", tr.Scope)

	q := callback(t, vb.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: "tools:admin",
		state: "role-state", challenge: challenge, method: "S256"})), redirect)
	require.Equal(t, "access_denied", q.Get("error"))

	// The owner's token carries tools:write until the owner is demoted.
	otr := e.grant(e.browser(), "acme", clientID, redirect, "tools:read tools:write", "alice@acme.test")
	status, pr, _ := e.call("acme", otr.AccessToken)
	require.Equal(t, http.StatusOK, status)
	require.True(t, pr.HasScope(identity.ScopeToolsWrite))
	_, err = e.svc.CreateMember(ctx, e.a.ID, "olga@acme.test", password, identity.RoleOwner) // alice is not the last owner
	require.NoError(t, err)
	_, err = e.svc.SetMemberRole(ctx, e.a.ID, e.alice.ID, identity.RoleViewer)
	require.NoError(t, err)
	status, pr, _ = e.call("acme", otr.AccessToken)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"tools:read"}, pr.Scopes)
}
