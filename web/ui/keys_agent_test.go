package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/visorhq/visor/services/identity"
)

// TestAgentKeyNamesItsEmployee: the keys page names the AI employee an
// agent key acts as in a text field (the page loads no list of the team);
// an unknown or trashed name is refused with the form kept.
func TestAgentKeyNamesItsEmployee(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.agent("ada")
	e.agent("bob")
	gone := e.agent("gone")
	_, err := e.ids.TrashAgent(ctx, e.a.ID, gone.ID)
	require.NoError(t, err)
	b := e.browser()
	e.signIn(b, identity.RoleOwner)

	p := b.get("/t/acme/dashboard/keys")
	require.Equal(t, http.StatusOK, p.status)
	require.Contains(t, p.body, `<input id="key-agent" name="agent" type="text"`)
	require.NotContains(t, p.body, "bob", "the page loads no list of the team")

	for _, bad := range []string{"nobody", "gone", "Not A Name"} {
		res := b.submit("/t/acme/dashboard/keys", "/t/acme/dashboard/keys", url.Values{"name": {"k"}, "kind": {"agent"}, "agent": {bad}, "scope": {"tools:read"}})
		require.Equal(t, http.StatusBadRequest, res.status, bad)
		require.Contains(t, res.body, "Check the field", bad)
		require.Contains(t, res.body, `value="`+bad+`"`, "the form is kept")
	}
	res := b.submit("/t/acme/dashboard/keys", "/t/acme/dashboard/keys", url.Values{"name": {"ada's key"}, "kind": {"agent"}, "agent": {"ada"}, "scope": {"tools:read"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	ks, err := e.store.ListKeys(ctx, e.a.ID)
	require.NoError(t, err)
	require.Len(t, ks, 1)
	require.Equal(t, ada.ID, ks[0].AgentID)
	p = b.get("/t/acme/dashboard/keys")
	require.Contains(t, p.body, "ada")
	require.NotContains(t, p.body, "bob")
}
