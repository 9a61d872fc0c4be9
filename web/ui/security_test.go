package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// postRoutes lists every POST route of the browser pages (sign-in, consent
// and the dashboard), with its parameters filled in.
func postRoutes(e *env, agentID string) []string {
	var out []string
	for _, r := range e.echo.Routes() {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Path, "/t/:tenant/") {
			continue
		}
		switch r.Path {
		case "/t/:tenant/oauth/token", "/t/:tenant/oauth/revoke", "/t/:tenant/oauth/register":
			continue // OAuth protocol endpoints: no cookies, no forms
		case "/t/:tenant/oauth/authorize":
			continue // needs a whole authorization request; web/oauth's refusal tests post its decision without the token
		}
		p := strings.ReplaceAll(r.Path, ":tenant", "acme")
		p = strings.ReplaceAll(p, ":agent", agentID)
		p = strings.ReplaceAll(p, ":member", e.members[identity.RoleViewer].ID.String())
		p = strings.ReplaceAll(p, ":key", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":request", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":grant", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":responsibility", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":question", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":task", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":session", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":source", "00000000-0000-0000-0000-000000000000")
		p = strings.ReplaceAll(p, ":server", "00000000-0000-0000-0000-000000000000")
		require.NotContains(e.t, p, ":", "fill in the parameter of %s", r.Path)
		out = append(out, p)
	}
	return out
}

// TestEveryPostNeedsTheCSRFToken posts to every form route as a signed-in
// owner, without the token, with a token from another browser, and from
// another origin: each is refused with 403 and changes nothing.
func TestEveryPostNeedsTheCSRFToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.agent("worker")
	owner, stranger := e.browser(), e.browser()
	e.signIn(owner, identity.RoleOwner)
	strangerToken := field(t, csrfRE, stranger.get("/t/acme/login").body)
	routes := postRoutes(e, a.ID.String())
	require.GreaterOrEqual(t, len(routes), 8, "the dashboard's form routes are found")
	form := func() url.Values {
		return url.Values{"name": {"intruder"}, "lang": {"ja"}, "settings": {`{"capabilities":{"os_native":true}}`},
			"settings_version": {"1"}, "decision": {"allow"}, "email": {"owner@acme.test"}, "password": {password}}
	}
	for _, r := range routes {
		res := owner.post(r, form())
		require.Equal(t, http.StatusForbidden, res.status, "%s without a token", r)
		f := form()
		f.Set("csrf_token", strangerToken)
		res = owner.post(r, f)
		require.Equal(t, http.StatusForbidden, res.status, "%s with another browser's token", r)
		p := owner.get("/t/acme/dashboard/agents")
		f.Set("csrf_token", field(t, csrfRE, p.body))
		req, _ := http.NewRequest(http.MethodPost, e.base+r, strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		require.Equal(t, http.StatusForbidden, owner.do(req).status, "%s from another origin", r)
	}
	got, err := e.store.Agent(t.Context(), e.a.ID, a.ID)
	require.NoError(t, err)
	require.Equal(t, identity.AgentActive, got.Status)
	require.False(t, got.Settings.Capabilities.OSNative)
	as, err := e.store.ListAgents(t.Context(), e.a.ID)
	require.NoError(t, err)
	require.Len(t, as, 1, "no agent was created")
	require.Equal(t, http.StatusOK, owner.get("/t/acme/dashboard/agents").status, "still signed in")
	require.Contains(t, owner.get("/t/acme/dashboard/agents").body, `<html lang="en">`, "the language did not change")
}
