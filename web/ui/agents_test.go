package ui_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
)

var versionRE = regexp.MustCompile(`name="settings_version" value="(\d+)"`)

// TestSettingsPreviewThenSave: the preview shows the tools the employee
// gains and loses by the one policy without saving anything; saving
// stores the settings, publishes the change the live hub turns into
// list_changed, and a stale editor is refused.
func TestSettingsPreviewThenSave(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.agent("scout")
	b := e.browser()
	e.signIn(b, identity.RoleOperator)
	path := "/t/acme/dashboard/agents/" + a.ID.String()
	p := b.get(path)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "Tools it sees now (1)")
	require.Contains(t, p.body, "<code>plain_status</code>")
	version := field(t, versionRE, p.body)
	before := len(e.published())

	edit := url.Values{"settings": {`{"capabilities":{"os_native":true}}`}, "settings_version": {version}}
	res := b.submit(path, path+"/preview", edit)
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Contains(t, res.body, "Saving adds 1 tool and removes 0; it will see 2.")
	require.Regexp(t, `(?s)<h3>Added</h3><ul class="added"><li><code>os_click</code></li></ul>`, res.body)
	got, err := e.store.Agent(t.Context(), e.a.ID, a.ID)
	require.NoError(t, err)
	require.False(t, got.Settings.Capabilities.OSNative, "a preview saves nothing")
	require.Len(t, e.published(), before, "a preview publishes nothing")

	res = b.submit(path, path+"/settings", edit)
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, path+"?done=settings_saved", res.header.Get("Location"))
	got, err = e.store.Agent(t.Context(), e.a.ID, a.ID)
	require.NoError(t, err)
	require.True(t, got.Settings.Capabilities.OSNative)
	evs := e.published()[before:]
	require.Len(t, evs, 1)
	require.Equal(t, changes.AgentChanged, evs[0].Kind)
	require.Equal(t, a.ID, evs[0].AgentID)
	p = b.get(res.header.Get("Location"))
	require.Contains(t, p.body, "Settings saved.")
	require.Contains(t, p.body, "Tools it sees now (2)")

	// Turning recording on and os_native off: one in, one out.
	next := url.Values{"settings": {`{"capabilities":{"recording":true}}`}, "settings_version": {field(t, versionRE, p.body)}}
	res = b.submit(path, path+"/preview", next)
	require.Regexp(t, `(?s)<h3>Added</h3><ul class="added"><li><code>recording_start</code></li></ul>`, res.body)
	require.Regexp(t, `(?s)<h3>Removed</h3><ul class="removed"><li><code>os_click</code></li></ul>`, res.body)

	// The editor read at the old version may not overwrite.
	res = b.submit(path, path+"/settings", edit)
	require.Equal(t, http.StatusConflict, res.status, res.body)
	require.Contains(t, res.body, "Someone changed these settings since you opened them.")
	require.Regexp(t, `<main id="main">\s*<p class="error" role="alert">Someone changed this since you opened it\.`, res.body,
		"the error leads the page, in words for a version conflict")
	require.NotContains(t, res.body, "already exists")
	require.Contains(t, res.body, "os_native&#34;:true", "the edit is kept")
	rows := e.rows("putAgentSettings")
	require.Len(t, rows, 2)
	require.Equal(t, audit.OutcomeOK, rows[0].Outcome)
	require.Equal(t, audit.OutcomeRejected, rows[1].Outcome)
	require.Equal(t, "agent:"+a.ID.String(), rows[1].Object)

	// Malformed and oversized edits are refused with the reason and change nothing.
	v, _ := strconv.Atoi(field(t, versionRE, b.get(path).body))
	for _, bad := range []string{`{"capabilities":`, `{"nonsense":1}`, `{"capabilities":{"allowed_tools":[""]}}`, string(make([]byte, 70<<10))} {
		res = b.submit(path, path+"/settings", url.Values{"settings": {bad}, "settings_version": {strconv.Itoa(v)}})
		require.Contains(t, []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge}, res.status, "%.40q: %s", bad, res.body)
	}
	got, err = e.store.Agent(t.Context(), e.a.ID, a.ID)
	require.NoError(t, err)
	require.True(t, got.Settings.Capabilities.OSNative)
}

// TestAgentLifecycle: create, trash and restore from the dashboard; the
// form keeps what was typed when the name is taken.
func TestAgentLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.browser()
	e.signIn(b, identity.RoleOperator)
	res := b.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/agents",
		url.Values{"name": {"analyst"}, "department": {"research"}, "budget": {"12.5"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	as, err := e.store.ListAgents(t.Context(), e.a.ID)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, int64(1250), as[0].BudgetCents)
	require.Equal(t, "/t/acme/dashboard/agents/"+as[0].ID.String()+"?done=agent_created", res.header.Get("Location"))
	list := b.get("/t/acme/dashboard/agents")
	require.Contains(t, list.body, "$12.50")

	res = b.submit("/t/acme/dashboard/agents", "/t/acme/dashboard/agents", url.Values{"name": {"analyst"}, "department": {"ops"}})
	require.Equal(t, http.StatusConflict, res.status)
	require.Contains(t, res.body, `value="ops"`, "the form keeps what was typed")

	path := "/t/acme/dashboard/agents/" + as[0].ID.String()
	require.Equal(t, http.StatusSeeOther, b.submit(path, path+"/trash", nil).status)
	got, _ := e.store.Agent(t.Context(), e.a.ID, as[0].ID)
	require.Equal(t, identity.AgentTrashed, got.Status)
	p := b.get(path)
	require.Contains(t, p.body, "Tools it sees now (0)", "a trashed employee sees nothing")
	require.Equal(t, http.StatusSeeOther, b.submit(path, path+"/restore", nil).status)
	got, _ = e.store.Agent(t.Context(), e.a.ID, as[0].ID)
	require.Equal(t, identity.AgentActive, got.Status)

	// Another tenant's agent is not found from here.
	other, err := e.ids.CreateAgent(t.Context(), e.b.ID, identity.NewAgent{Name: "spy"})
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, b.get("/t/acme/dashboard/agents/"+other.ID.String()).status)
	res = b.submit(path, "/t/acme/dashboard/agents/"+other.ID.String()+"/trash", nil)
	require.Equal(t, http.StatusNotFound, res.status)
	got, _ = e.store.Agent(t.Context(), e.b.ID, other.ID)
	require.Equal(t, identity.AgentActive, got.Status)
}
