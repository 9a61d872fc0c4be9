package ui_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
)

// TestTheEmployeePageShowsSpendAgainstBudget: what its responsibilities'
// runs reported this month, against its budget.
func TestTheEmployeePageShowsSpendAgainstBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.agent("ada")
	_, err := e.ids.UpdateAgent(ctx, e.a.ID, ada.ID, func(a *identity.Agent) error { a.BudgetCents = 4250; return nil })
	require.NoError(t, err)
	r := e.responsibility(ada, "inbox")
	run, err := e.responsibilities.OpenRun(ctx, e.a.ID, r.ID, responsibilities.Wake{Reason: responsibilities.ByOperator})
	require.NoError(t, err)
	_, err = e.responsibilities.ReportSpend(ctx, e.a.ID, ada.ID, run.TaskID, 1234)
	require.NoError(t, err)
	bob := e.agent("bob")

	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	p := b.get("/t/acme/dashboard/agents/" + ada.ID.String()).body
	require.Contains(t, p, `<strong>$12.34</strong> of $42.50 (29%)`)
	require.Contains(t, p, `<meter id="spend-meter" min="0" max="4250" high="4250" optimum="0" value="1234"`)
	require.Contains(t, b.get("/t/acme/dashboard/agents/"+ada.ID.String(), "Accept-Language", "ja").body, `<strong>12.34 米ドル</strong> / 42.50 米ドル（29%）`)
	require.Contains(t, b.get("/t/acme/dashboard/agents/"+bob.ID.String()).body, `<strong>$0.00</strong> spent; no budget is set`, "bob spent nothing")
}

// TestCapabilitiesAsControls: the common capabilities are check boxes and
// selects drawn from the settings; previewing them shows the tool list's
// change without saving, as the JSON view's preview does, and saving
// changes only what the controls show.
func TestCapabilitiesAsControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.agent("ada")
	_, err := e.ids.UpdateAgent(ctx, e.a.ID, ada.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.Recording = true
		a.Settings.Capabilities.AllowedTools = []string{"*"}
		return nil
	})
	require.NoError(t, err)
	b := e.browser()
	e.signIn(b, identity.RoleOperator)
	path := "/t/acme/dashboard/agents/" + ada.ID.String()
	page := b.get(path).body
	require.Contains(t, page, `<input id="cap-recording" name="cap_recording" type="checkbox" checked> <label class="inline" for="cap-recording">Browser and desktop recording</label>`)
	require.Contains(t, page, `<input id="cap-os_native" name="cap_os_native" type="checkbox"> `)
	require.Contains(t, page, `<label for="perm-can_create_agents">Create AI employees</label>`)
	require.Contains(t, page, `<details id="advanced"><summary id="advanced-h">`, "the JSON view starts folded")
	settings := html.UnescapeString(regexp.MustCompile(`<input type="hidden" name="settings" value="([^"]*)">`).FindStringSubmatch(page)[1])
	version := regexp.MustCompile(`name="settings_version" value="(\d+)"`).FindStringSubmatch(page)[1]
	form := url.Values{"editor": {"controls"}, "settings": {settings}, "settings_version": {version},
		"cap_os_native": {"on"}, "perm_can_create_agents": {"refused"}, "denied_tools": {"plain_status, x_*"}}

	preview := b.submit(path, path+"/preview", form)
	require.Equal(t, http.StatusOK, preview.status, preview.body)
	require.Regexp(t, `<ul class="added"><li><code>os_click</code></li></ul>`, preview.body)
	require.Regexp(t, `<ul class="removed">.*<code>plain_status</code>.*</ul>`, preview.body)
	require.Contains(t, preview.body, `<input id="cap-os_native" name="cap_os_native" type="checkbox" checked>`, "the controls show the previewed settings")
	got, err := e.store.Agent(ctx, e.a.ID, ada.ID)
	require.NoError(t, err)
	require.False(t, got.Settings.Capabilities.OSNative, "a preview saves nothing")

	saved := b.submit(path, path+"/settings", form)
	require.Equal(t, http.StatusSeeOther, saved.status, saved.body)
	got, err = e.store.Agent(ctx, e.a.ID, ada.ID)
	require.NoError(t, err)
	c := got.Settings.Capabilities
	require.True(t, c.OSNative)
	require.False(t, c.Recording, "unchecked")
	require.Equal(t, []string{"*"}, c.AllowedTools, "what the controls do not show is kept")
	require.Equal(t, []string{"plain_status", "x_*"}, c.DeniedTools)
	require.NotNil(t, got.Settings.Permissions)
	require.False(t, *got.Settings.Permissions.CanCreateAgents)
	require.NotEmpty(t, e.rows("putAgentSettings"))

	form.Set("settings_version", version) // stale now
	stale := b.submit(path, path+"/settings", form)
	require.Equal(t, http.StatusConflict, stale.status)
	form.Set("perm_can_create_agents", "maybe")
	form.Set("settings_version", "999")
	require.Equal(t, http.StatusBadRequest, b.submit(path, path+"/preview", form).status)
}
