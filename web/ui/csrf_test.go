package ui_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestACSRFTokenIsBoundToTheMembersSession: a token and cookie pair taken
// from one member's session (an attacker's own, say, with the cookie
// planted in the victim's browser by a sibling site) does not pass a post
// made with another session; the session's own token does.
func TestACSRFTokenIsBoundToTheMembersSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	attacker, victim := e.browser(), e.browser()
	e.signIn(attacker, identity.RoleViewer)
	e.signIn(victim, identity.RoleOwner)

	p := attacker.get("/t/acme/dashboard/agents")
	require.Equal(t, http.StatusOK, p.status)
	token := field(t, csrfRE, p.body)
	base, _ := url.Parse(e.base)
	var planted *http.Cookie
	for _, c := range attacker.c.Jar.Cookies(base) {
		if c.Name == "visor_csrf" {
			planted = c
		}
	}
	require.NotNil(t, planted)
	victim.c.Jar.SetCookies(base, []*http.Cookie{{Name: "visor_csrf", Value: planted.Value, Path: "/"}})

	form := url.Values{"csrf_token": {token}, "lang": {"ja"}, "return_to": {"/t/acme/dashboard/agents"}}
	res := victim.post("/t/acme/language", form)
	require.Equal(t, http.StatusForbidden, res.status, "another session's token")

	res = victim.submit("/t/acme/dashboard/agents", "/t/acme/language", url.Values{"lang": {"ja"}, "return_to": {"/t/acme/dashboard/agents"}})
	require.Equal(t, http.StatusSeeOther, res.status, "the session's own token")
}
