package ui_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/visorhq/visor/services/identity"
)

// TestFormErrorsSpeakThePagesLanguage: a refused form shows the catalog's
// line for its fault code (with the field's name when the service names
// one), and the service's English message only after it, marked English;
// error pages do the same.
func TestFormErrorsSpeakThePagesLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.browser()
	e.signIn(o, identity.RoleOwner)
	p := o.get("/t/acme/dashboard/agents")
	res := o.post("/t/acme/language", url.Values{"csrf_token": {field(t, csrfRE, p.body)}, "lang": {"ja"}, "return_to": {"/t/acme/dashboard/agents"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)

	res = o.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/agents", url.Values{"name": {"orphan"}, "reports_to": {"nobody"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Contains(t, res.body, "「上長」の入力内容を確認してください。")
	require.Contains(t, res.body, `詳細（英語）： <span lang="en">reports_to must name an AI employee of this tenant; there is none named`)
	requireNoServiceEnglish(t, res.body, "there is none named", "reports_to must")

	res = o.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/tenant", url.Values{"name": {"Acme"}, "time_zone": {"Nowhere/Atlantis"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Contains(t, res.body, "「タイムゾーン」の入力内容を確認してください。")
	requireNoServiceEnglish(t, res.body, "time_zone must be an IANA time zone name")

	nf := o.get("/t/acme/dashboard/agents/" + uuid.NewString())
	require.Equal(t, http.StatusNotFound, nf.status)
	require.Contains(t, nf.body, "該当するページや項目がないか、閲覧する権限がありません。")
	require.Contains(t, nf.body, `<span lang="en">agent not found</span>`)
	requireNoServiceEnglish(t, nf.body, "agent not found")

	// The audit trail keeps the service's English message, marked as such.
	trail := o.get("/t/acme/dashboard/audit")
	require.Equal(t, http.StatusOK, trail.status)
	require.Contains(t, trail.body, `<span lang="en">reports_to must name an AI employee of this tenant; there is none named`)
	requireNoServiceEnglish(t, trail.body, "there is none named", "time_zone must be an IANA time zone name")

	// In English (another member, who chose no language) the line and the
	// detail both show.
	en := e.browser()
	e.signIn(en, identity.RoleAdmin)
	res = en.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/agents", url.Values{"name": {"orphan"}, "reports_to": {"nobody"}})
	require.Contains(t, res.body, "Check the field “Reports to”.")
	require.Contains(t, res.body, "there is none named")
}
