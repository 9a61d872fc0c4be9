package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/ui"
)

// TestEveryPageAndActionByEveryRole walks role × page × action: every
// member reads every page; a page shows the forms of the actions the role
// may take and no others; an action the role may not take is refused with
// 403, changes nothing and leaves a refused audit row; one it may take is
// carried out.
func TestEveryPageAndActionByEveryRole(t *testing.T) {
	t.Parallel()
	for _, role := range identity.Roles {
		t.Run(string(role), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			a := e.agent("worker")
			k, _, err := e.ids.CreateKey(ctx, e.a.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ci"})
			require.NoError(t, err)
			target, err := e.ids.CreateMember(ctx, e.a.ID, "target@acme.test", password, identity.RoleViewer)
			require.NoError(t, err)
			leaving, err := e.ids.CreateMember(ctx, e.a.ID, "leaving@acme.test", password, identity.RoleViewer)
			require.NoError(t, err)
			b := e.browser()
			e.signIn(b, role)
			agentPath := "agents/" + a.ID.String()

			pages := map[string][]struct {
				form string
				need identity.Action
			}{
				"agents":  {{`method="post" action="/t/acme/dashboard/agents"`, identity.ManageAgents}},
				agentPath: {{"/trash", identity.ManageAgents}, {"/settings", identity.ManageAgents}, {"/preview", identity.ManageAgents}},
				"keys":    {{`action="/t/acme/dashboard/keys"`, identity.ManageKeys}, {"/revoke", identity.ManageKeys}},
				"members": {{`action="/t/acme/dashboard/members"`, identity.ManageMembers}, {"/role", identity.ManageMembers}, {"/remove", identity.ManageMembers}},
			}
			for sub, forms := range pages {
				p := b.get("/t/acme/dashboard/" + sub)
				require.Equal(t, http.StatusOK, p.status, "%s reads %s", role, sub)
				for _, f := range forms {
					require.Equal(t, role.Allows(f.need), strings.Contains(p.body, f.form), "%s on %s: form %s shown iff the role may %s", role, sub, f.form, f.need)
				}
			}

			actions := []struct {
				op, path string
				form     url.Values
				need     identity.Action
			}{
				{"createAgent", "agents", url.Values{"name": {"new-" + string(role)}}, identity.ManageAgents},
				{"putAgentSettings", agentPath + "/settings", url.Values{"settings": {`{"capabilities":{"recording":true}}`}, "settings_version": {"1"}}, identity.ManageAgents},
				{"trashAgent", agentPath + "/trash", nil, identity.ManageAgents},
				{"restoreAgent", agentPath + "/restore", nil, identity.ManageAgents},
				{"createKey", "keys", url.Values{"name": {"made by " + string(role)}, "kind": {"operator"}}, identity.ManageKeys},
				{"revokeKey", "keys/" + k.ID.String() + "/revoke", nil, identity.ManageKeys},
				{"createMember", "members", url.Values{"email": {"new@acme.test"}, "password": {password}, "role": {"viewer"}}, identity.ManageMembers},
				{"updateMember", "members/" + target.ID.String() + "/role", url.Values{"role": {"operator"}}, identity.ManageMembers},
				{"deleteMember", "members/" + leaving.ID.String() + "/remove", nil, identity.ManageMembers},
			}
			for _, ac := range actions {
				f := url.Values{}
				for k, v := range ac.form {
					f[k] = v
				}
				res := b.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/"+ac.path, f)
				rows := e.rows(ac.op)
				require.NotEmpty(t, rows, "%s %s is audited", role, ac.op)
				last := rows[len(rows)-1]
				if role.Allows(ac.need) {
					require.Contains(t, []int{http.StatusSeeOther, http.StatusCreated}, res.status, "%s may %s: %s", role, ac.op, res.body)
					require.Equal(t, audit.OutcomeOK, last.Outcome, "%s %s", role, ac.op)
				} else {
					require.Equal(t, http.StatusForbidden, res.status, "%s may not %s", role, ac.op)
					require.Equal(t, audit.OutcomeRefused, last.Outcome, "%s %s", role, ac.op)
					require.Equal(t, "member:"+e.members[role].ID.String(), last.PrincipalID)
				}
			}
			// What the refused actions would have changed is unchanged.
			if !role.Allows(identity.ManageAgents) {
				got, err := e.store.Agent(ctx, e.a.ID, a.ID)
				require.NoError(t, err)
				require.False(t, got.Settings.Capabilities.Recording)
				require.Equal(t, identity.AgentActive, got.Status)
			}
			if !role.Allows(identity.ManageKeys) {
				got, err := e.store.Key(ctx, e.a.ID, k.ID)
				require.NoError(t, err)
				require.Nil(t, got.RevokedAt)
			}
			if !role.Allows(identity.ManageMembers) {
				got, err := e.store.Member(ctx, e.a.ID, target.ID)
				require.NoError(t, err)
				require.Equal(t, identity.RoleViewer, got.Role)
			}
		})
	}
}

// TestOwnerOnlyMemberChanges: an admin manages members but not owners —
// the page offers no owner role and no control on an owner's row, and the
// routes refuse both anyway.
func TestOwnerOnlyMemberChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	owner := e.members[identity.RoleOwner]
	admin, boss := e.browser(), e.browser()
	e.signIn(admin, identity.RoleAdmin)
	e.signIn(boss, identity.RoleOwner)
	p := admin.get("/t/acme/dashboard/members")
	require.NotContains(t, p.body, `<option value="owner"`)
	require.NotContains(t, p.body, "members/"+owner.ID.String()+"/")
	require.Contains(t, boss.get("/t/acme/dashboard/members").body, `<option value="owner"`)

	res := admin.submit("/t/acme/dashboard/members", "/t/acme/dashboard/members",
		url.Values{"email": {"second-owner@acme.test"}, "password": {password}, "role": {"owner"}})
	require.Equal(t, http.StatusForbidden, res.status)
	res = admin.submit("/t/acme/dashboard/members", "/t/acme/dashboard/members/"+owner.ID.String()+"/role", url.Values{"role": {"viewer"}})
	require.Equal(t, http.StatusForbidden, res.status)
	res = admin.submit("/t/acme/dashboard/members", "/t/acme/dashboard/members/"+owner.ID.String()+"/remove", nil)
	require.Equal(t, http.StatusForbidden, res.status)
	got, err := e.store.Member(t.Context(), e.a.ID, owner.ID)
	require.NoError(t, err)
	require.Equal(t, identity.RoleOwner, got.Role)
	for _, op := range []string{"createMember", "updateMember", "deleteMember"} {
		rows := e.rows(op)
		require.Len(t, rows, 1, op)
		require.Equal(t, audit.OutcomeRefused, rows[0].Outcome, op)
	}
	// An owner may.
	res = boss.submit("/t/acme/dashboard/members", "/t/acme/dashboard/members",
		url.Values{"email": {"second-owner@acme.test"}, "password": {password}, "role": {"owner"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
}

var tokenRE = regexp.MustCompile(`<p class="secret" id="token">([^<]+)</p>`)

// TestKeyShownOnceThenRevoked: creating a key redirects (post, redirect,
// get); the keys page then shows the token once, and a reload shows it no
// more and creates no second key. Revoking asks first; the key works until
// it is revoked.
func TestKeyShownOnceThenRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	e.signIn(b, identity.RoleOperator)
	res := b.submit("/t/acme/dashboard/keys", "/t/acme/dashboard/keys", url.Values{"name": {"deploy bot"}, "kind": {"operator"}, "days": {"30"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/t/acme/dashboard/keys", res.header.Get("Location"))
	require.NotContains(t, res.header.Get("Location")+res.body, "vsk_", "the token is in neither the URL nor the redirect")
	shown := b.get("/t/acme/dashboard/keys")
	require.Equal(t, http.StatusOK, shown.status)
	require.Equal(t, "no-store", shown.header.Get("Cache-Control"))
	token := field(t, tokenRE, shown.body)
	require.True(t, strings.HasPrefix(token, "vsk_"), token)
	ks, err := e.store.ListKeys(t.Context(), e.a.ID)
	require.NoError(t, err)
	require.Len(t, ks, 1)
	require.ElementsMatch(t, identity.RoleOperator.Scopes(), ks[0].Scopes, "a key gets the scopes its maker holds, no more")
	require.NotNil(t, ks[0].ExpiresAt)
	list := b.get("/t/acme/dashboard/keys") // the reload
	require.NotContains(t, list.body, token, "the token is shown once")
	require.NotContains(t, list.body, ks[0].SecretHash)
	ks, err = e.store.ListKeys(t.Context(), e.a.ID)
	require.NoError(t, err)
	require.Len(t, ks, 1, "a reload creates no second key")
	other := e.browser()
	e.signIn(other, identity.RoleOwner)
	require.NotContains(t, other.get("/t/acme/dashboard/keys").body, token)

	// The revoke button asks first, in plain HTML; nothing is revoked
	// until the member says yes.
	revoke := "/t/acme/dashboard/keys/" + ks[0].ID.String() + "/revoke"
	ask := b.submit("/t/acme/dashboard/keys", revoke, url.Values{"what": {"deploy bot"}, ui.ConfirmField: {"0"}})
	require.Equal(t, http.StatusOK, ask.status, ask.body)
	require.Contains(t, ask.body, "Revoke the key deploy bot?")
	require.Contains(t, ask.body, `<input type="hidden" name="confirmed" value="1">`)
	require.NotContains(t, ask.body, "<script", "the confirmation needs no script")
	got, err := e.store.Key(t.Context(), e.a.ID, ks[0].ID)
	require.NoError(t, err)
	require.Nil(t, got.RevokedAt, "asking revokes nothing")
	require.Empty(t, e.rows("revokeKey"), "the question is not an action")

	res = b.post(revoke, url.Values{"csrf_token": {field(t, csrfRE, ask.body)}, ui.ConfirmField: {"1"}, "what": {"deploy bot"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	got, err = e.store.Key(t.Context(), e.a.ID, ks[0].ID)
	require.NoError(t, err)
	require.NotNil(t, got.RevokedAt)

	// A scope the maker does not hold is refused.
	res = b.submit("/t/acme/dashboard/keys", "/t/acme/dashboard/keys", url.Values{"name": {"too strong"}, "kind": {"operator"}, "scope": {"admin:write", "platform:root"}})
	require.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, res.status, res.body)
	// Another tenant's key cannot be revoked from here.
	theirs, _, err := e.ids.CreateKey(t.Context(), e.b.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "theirs"})
	require.NoError(t, err)
	res = b.submit("/t/acme/dashboard/keys", "/t/acme/dashboard/keys/"+theirs.ID.String()+"/revoke", nil)
	require.Equal(t, http.StatusNotFound, res.status)
	got, err = e.store.Key(t.Context(), e.b.ID, theirs.ID)
	require.NoError(t, err)
	require.Nil(t, got.RevokedAt)
}
