package ui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
)

// TestSignInLeadsToTheDashboard: a browser without a session is sent to
// the sign-in page, which brings it back to the page it asked for.
func TestSignInLeadsToTheDashboard(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	p := b.get("/t/acme/dashboard/agents")
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Equal(t, "/t/acme/login?return_to=%2Ft%2Facme%2Fdashboard%2Fagents", p.header.Get("Location"))
	p = b.get(p.header.Get("Location"))
	require.Equal(t, "/t/acme/dashboard/agents", field(t, returnRE, p.body))
	res := b.post("/t/acme/login", url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "return_to": {"/t/acme/dashboard/agents"},
		"email": {"viewer@acme.test"}, "password": {password}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/t/acme/dashboard/agents", res.header.Get("Location"))
	p = b.get("/t/acme/dashboard/agents")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, `<html lang="en">`)
	require.Contains(t, p.body, "<h1>AI employees</h1>")
	require.Contains(t, p.body, "viewer@acme.test (viewer)")

	// Signing in without a destination lands on the dashboard, not on the
	// sign-in page again.
	b2 := e.browser()
	lp := b2.get("/t/acme/login")
	require.Equal(t, "/t/acme/dashboard", field(t, returnRE, lp.body))

	// Another tenant's session opens nothing here.
	g := e.browser()
	e.signInAs(g, "globex", "bob@globex.test")
	require.Equal(t, http.StatusSeeOther, g.get("/t/acme/dashboard/agents").status)
	require.Equal(t, http.StatusOK, g.get("/t/globex/dashboard/agents").status)
}

// TestSecurityHeaders: every page carries a strict CSP with a fresh nonce
// on its style element, refuses framing, and sets SameSite cookies.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	p1 := b.get("/t/acme/login")
	p2 := b.get("/t/acme/login")
	for _, p := range []page{p1, p2} {
		csp := p.header.Get("Content-Security-Policy")
		require.Regexp(t, `^default-src 'none'; script-src 'nonce-[A-Za-z0-9_-]{22}'; style-src 'nonce-[A-Za-z0-9_-]{22}'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$`, csp)
		nonce := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(csp)[3], "'nonce-"), "';")
		require.Contains(t, p.body, `<style nonce="`+nonce+`">`)
		require.Equal(t, "DENY", p.header.Get("X-Frame-Options"))
		require.Equal(t, "no-store", p.header.Get("Cache-Control"))
	}
	require.NotEqual(t, p1.header.Get("Content-Security-Policy"), p2.header.Get("Content-Security-Policy"), "a nonce per response")
	cookies := (&http.Response{Header: p1.header}).Cookies()
	require.NotEmpty(t, cookies)
	for _, c := range cookies {
		require.True(t, c.HttpOnly, c.Name)
		require.Equal(t, http.SameSiteStrictMode, c.SameSite, c.Name)
	}
	res := b.post("/t/acme/login", url.Values{"csrf_token": {field(t, csrfRE, p2.body)}, "email": {"owner@acme.test"}, "password": {password}})
	for _, c := range (&http.Response{Header: res.header}).Cookies() {
		require.True(t, c.HttpOnly, c.Name)
		require.NotEqual(t, http.SameSiteDefaultMode, c.SameSite, "%s names its SameSite mode", c.Name)
	}
}

// TestSessionRotatesAtSignIn: signing in replaces whatever session the
// browser held, which stops working.
func TestSessionRotatesAtSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	u, _ := url.Parse(e.base)
	before := sessionCookie(b, u)
	require.NotEmpty(t, before)
	e.signIn(b, identity.RoleOwner)
	after := sessionCookie(b, u)
	require.NotEqual(t, before, after)
	old := e.browser()
	old.c.Jar.SetCookies(u, []*http.Cookie{{Name: "visor_session", Value: before, Path: "/"}})
	require.Equal(t, http.StatusSeeOther, old.get("/t/acme/dashboard/agents").status, "the replaced session is over")
	require.Contains(t, b.get("/t/acme/dashboard/agents").body, "owner@acme.test")
}

func sessionCookie(b *browser, u *url.URL) string {
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "visor_session" {
			return c.Value
		}
	}
	return ""
}

// TestSignOutEverywhere ends every session of the member, in every
// browser, and no other member's.
func TestSignOutEverywhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	laptop, phone, other := e.browser(), e.browser(), e.browser()
	e.signIn(laptop, identity.RoleOperator)
	e.signIn(phone, identity.RoleOperator)
	e.signIn(other, identity.RoleAdmin)
	res := laptop.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/signout-everywhere", nil)
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/t/acme/login", res.header.Get("Location"))
	require.Equal(t, http.StatusSeeOther, laptop.get("/t/acme/dashboard/agents").status)
	require.Equal(t, http.StatusSeeOther, phone.get("/t/acme/dashboard/agents").status)
	require.Equal(t, http.StatusOK, other.get("/t/acme/dashboard/agents").status)
	rows := e.rows("signOutEverywhere")
	require.Len(t, rows, 1)
	require.Equal(t, audit.OutcomeOK, rows[0].Outcome)
	require.Equal(t, "member:"+e.members[identity.RoleOperator].ID.String(), rows[0].Object)
}
