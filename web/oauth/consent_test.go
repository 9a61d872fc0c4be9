package oauth_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/oauth"
)

// TestConsentNamesTheToolsEachScopeAdds asks, as a standard client does,
// for what the 401 challenge advertises. The owner's consent page lists
// every tool scope with the tools it adds and the token holds them all; a
// viewer's page lists tools:read with its two tools, names the rest as
// withheld, and the token holds tools:read. A request naming no scope gets
// the same as one naming the challenge's.
func TestConsentNamesTheToolsEachScopeAdds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *oauth.Config) {
		c.Tools = catalog.New((*agents.Service)(nil), (*grants.Service)(nil), (*board.Service)(nil))
	})
	_, err := e.svc.CreateMember(context.Background(), e.a.ID, "vera@acme.test", password, identity.RoleViewer)
	require.NoError(t, err)
	redirect := "http://127.0.0.1:9999/callback"
	clientID := e.dcrClient("acme", redirect)
	consent := func(email string) string {
		b := e.browser()
		_, challenge := pkce()
		p := b.get(e.authorizeURL(authz{tenant: "acme", clientID: clientID, redirect: redirect, scope: auth.DefaultChallengeScope,
			state: "s", challenge: challenge, method: "S256"}))
		return e.login(b, "acme", p, email).body
	}
	tools := func(scope, list string) *regexp.Regexp {
		return regexp.MustCompile(`<li><code>` + scope + `</code>: [^<]+<br><span class="muted">Tools:</span> ` + list + `</li>`)
	}

	owner := consent("alice@acme.test")
	require.Regexp(t, tools("tools:read", "<code>agent_status</code>, <code>tasks_list</code>"), owner)
	require.Regexp(t, tools("tools:write", "<code>activity_post</code>, <code>create_reminder</code>, .*<code>update_cron_task</code>"), owner)
	require.Regexp(t, tools("tools:admin", "<code>agent_remove</code>, <code>agent_update</code>, <code>create_agent</code>, <code>spawn_agent</code>"), owner)
	require.NotContains(t, owner, "capability_request", "a tool only AI employees see is not offered")
	require.NotContains(t, owner, "cannot grant")
	tr := e.grant(e.browser(), "acme", clientID, redirect, auth.DefaultChallengeScope, "alice@acme.test")
	require.ElementsMatch(t, identity.ToolScopes, splitScope(tr.Scope))
	tr = e.grant(e.browser(), "acme", clientID, redirect, "", "alice@acme.test")
	require.ElementsMatch(t, identity.ToolScopes, splitScope(tr.Scope), "no scope asked: the challenge's")

	viewer := consent("vera@acme.test")
	require.Regexp(t, tools("tools:read", "<code>agent_status</code>, <code>tasks_list</code>"), viewer)
	require.NotContains(t, viewer, "<code>tasks_create</code>")
	require.NotContains(t, viewer, "<code>create_agent</code>")
	require.Contains(t, viewer, "As a viewer you cannot grant <code>tools:write</code>, <code>tools:admin</code>")
	tr = e.grant(e.browser(), "acme", clientID, redirect, auth.DefaultChallengeScope, "vera@acme.test")
	require.Equal(t, "tools:read", tr.Scope)
}

func splitScope(s string) []string { return regexp.MustCompile(`\s+`).Split(s, -1) }
