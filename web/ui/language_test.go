package ui_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestLanguageFollowsTheMembersChoice: before sign-in the page speaks the
// browser's language; a member's choice is stored with the member and
// wins over Accept-Language in every browser; dates follow the language.
func TestLanguageFollowsTheMembersChoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.agent("scout")
	b := e.browser()
	p := b.get("/t/acme/login", "Accept-Language", "ja-JP,ja;q=0.9,en;q=0.5")
	require.Contains(t, p.body, `<html lang="ja">`)
	require.Contains(t, p.body, "Acme にサインイン")
	require.Equal(t, "ja", p.header.Get("Content-Language"))
	require.Contains(t, b.get("/t/acme/login", "Accept-Language", "en-US").body, "Sign in to Acme")

	e.signIn(b, identity.RoleViewer)
	p = b.get("/t/acme/dashboard/agents", "Accept-Language", "ja")
	require.Contains(t, p.body, `<html lang="ja">`)
	require.Contains(t, p.body, "<h1>AI 社員</h1>")
	require.Regexp(t, `\d{4}年\d{1,2}月\d{1,2}日 \d{2}:\d{2} UTC`, p.body)

	res := b.post("/t/acme/language", url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "lang": {"en"}, "return_to": {"/t/acme/dashboard/agents"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/t/acme/dashboard/agents", res.header.Get("Location"))
	got, err := e.store.MemberLanguage(t.Context(), e.a.ID, e.members[identity.RoleViewer].ID)
	require.NoError(t, err)
	require.Equal(t, "en", got)
	p = b.get("/t/acme/dashboard/agents", "Accept-Language", "ja")
	require.Contains(t, p.body, `<html lang="en">`, "the member's choice wins over the browser's")
	require.Regexp(t, `\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2} UTC`, p.body)

	// Another browser of the same member, without the cookie.
	other := e.browser()
	e.signIn(other, identity.RoleViewer)
	require.Contains(t, other.get("/t/acme/dashboard/agents", "Accept-Language", "ja").body, `<html lang="en">`)
	// Another member keeps the browser's language.
	third := e.browser()
	e.signIn(third, identity.RoleOwner)
	require.Contains(t, third.get("/t/acme/dashboard/agents", "Accept-Language", "ja").body, `<html lang="ja">`)

	// An unknown language, or an outside return_to, is refused or dropped.
	p = b.get("/t/acme/dashboard/agents")
	res = b.post("/t/acme/language", url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "lang": {"xx"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	res = b.post("/t/acme/language", url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "lang": {"ja"}, "return_to": {"https://evil.example/"}})
	require.Equal(t, "/t/acme/dashboard", res.header.Get("Location"))
}
