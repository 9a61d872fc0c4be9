package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/api"
)

// responsibilityFixture is the admin API with the responsibilities
// resource on real Postgres: tenant acme (employee ada, an operator key and
// a viewer's admin:read key) and globex (an operator key).
type responsibilityFixture struct {
	*fixture
	ada     identity.Agent
	readKey string
}

func newResponsibilityFixture(t *testing.T) *responsibilityFixture {
	t.Helper()
	s := newStack(t)
	rs := postgres.NewResponsibilityStore(s.db)
	svc := responsibilities.NewService(rs, agents.NewDelegation(s.store))
	svc.SetNotices(rs)
	svc.SetNotifier(responsibilities.Notifier{CheckURL: func(raw string) (string, error) { return egress.CheckURL(raw, nil) }})
	f := s.serve(api.Deps{}, api.NewResponsibilities(svc)).withGlobex()
	return &responsibilityFixture{fixture: f, ada: f.agent(f.tenant, identity.NewAgent{Name: "ada"}),
		readKey: f.key(f.tenant, "ro", identity.ScopeAdminRead)}
}

func TestOperatorsSetUpAndChangeResponsibilitiesThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := newResponsibilityFixture(t)
	base := "/api/v1/tenants/acme/responsibilities"

	var r responsibilities.Responsibility
	code, body := f.do("POST", base, f.opKey, `{"agent":"ada","name":"inbox","charter":"answer the inbox","schedule":"0 9 * * 1-5",
		"run_limit":2,"spend_cap_cents":300,"subscriptions":["task_unblocked"]}`, &r)
	require.Equal(t, 201, code, body)
	require.Equal(t, f.ada.ID, r.AgentID)
	require.Equal(t, int64(1), r.Epoch)
	require.Equal(t, []string{"task_unblocked"}, r.Subscriptions)

	for name, bad := range map[string]string{
		"no agent":      `{"name":"x","spend_cap_cents":1}`,
		"unknown agent": `{"agent":"nobody","name":"x","spend_cap_cents":1}`,
		"bad cron":      `{"agent":"ada","name":"x","schedule":"soon","spend_cap_cents":1}`,
		"no cap":        `{"agent":"ada","name":"x"}`,
		"unknown field": `{"agent":"ada","name":"x","spend_cap_cents":1,"epoch":7}`,
		"past stop_at":  `{"agent":"ada","name":"x","spend_cap_cents":1,"stop_at":"2001-01-01T00:00:00Z"}`,
	} {
		code, body := f.do("POST", base, f.opKey, bad, nil)
		require.Equal(t, 400, code, "%s: %s", name, body)
	}
	code, _ = f.do("POST", base, f.readKey, `{"agent":"ada","name":"x","spend_cap_cents":1}`, nil)
	require.Equal(t, 403, code, "an admin:read key creates nothing")

	one := base + "/" + r.ID.String()
	var up responsibilities.Responsibility
	code, body = f.do("PATCH", one, f.opKey, `{"status":"paused","run_limit":3}`, &up)
	require.Equal(t, 200, code, body)
	require.Equal(t, responsibilities.Paused, up.Status)
	require.Equal(t, int64(2), up.Epoch, "an operator change bumps the epoch")
	code, body = f.do("PATCH", one, f.opKey, `{}`, nil)
	require.Equal(t, 400, code, body)
	code, body = f.do("PATCH", one, f.opKey, `{"status":"gone"}`, nil)
	require.Equal(t, 400, code, body)

	// Paused: running it now is refused and the skip is readable.
	code, body = f.do("POST", one+"/run", f.opKey, "", nil)
	require.Equal(t, 409, code, body)
	var skips api.SkipList
	code, body = f.do("GET", one+"/skips", f.readKey, "", &skips)
	require.Equal(t, 200, code, body)
	require.Len(t, skips.Skips, 1)
	require.Equal(t, responsibilities.NotActiveNow, skips.Skips[0].Cause)

	code, body = f.do("PATCH", one, f.opKey, `{"status":"active"}`, &up)
	require.Equal(t, 200, code, body)
	var run responsibilities.Run
	code, body = f.do("POST", one+"/run", f.opKey, "", &run)
	require.Equal(t, 201, code, body)
	require.Equal(t, responsibilities.ByOperator, run.Reason)
	require.Equal(t, up.Epoch, run.Epoch)

	var sum responsibilities.Summary
	code, body = f.do("GET", one, f.readKey, "", &sum)
	require.Equal(t, 200, code, body)
	require.Equal(t, 1, sum.Window.Runs)
	require.NotNil(t, sum.OpenRun)
	require.Equal(t, run.ID, sum.OpenRun.ID)

	var runs api.RunList
	code, body = f.do("GET", one+"/runs?limit=1", f.readKey, "", &runs)
	require.Equal(t, 200, code, body)
	require.Len(t, runs.Runs, 1)
	require.Empty(t, runs.NextCursor)

	var list api.ResponsibilityList
	code, body = f.do("GET", base+"?agent=ada", f.readKey, "", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Responsibilities, 1)

	code, body = f.do("DELETE", one, f.opKey, "", nil)
	require.Equal(t, 204, code, body)
	code, _ = f.do("GET", one, f.opKey, "", nil)
	require.Equal(t, 404, code)
}

func TestResponsibilitiesListPagesNewestFirst(t *testing.T) {
	t.Parallel()
	f := newResponsibilityFixture(t)
	base := "/api/v1/tenants/acme/responsibilities"
	for i := range 3 {
		code, body := f.do("POST", base, f.opKey, fmt.Sprintf(`{"agent":"ada","name":"responsibility %d","spend_cap_cents":1}`, i), nil)
		require.Equal(t, 201, code, body) // each in its own transaction: a creation time of its own
	}
	var names []string
	cursor := ""
	for range 3 {
		var page api.ResponsibilityList
		code, body := f.do("GET", base+"?limit=2&cursor="+cursor, f.opKey, "", &page)
		require.Equal(t, 200, code, body)
		for _, r := range page.Responsibilities {
			names = append(names, r.Name)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, []string{"responsibility 2", "responsibility 1", "responsibility 0"}, names)
	code, _ := f.do("GET", base+"?cursor=garbage", f.opKey, "", nil)
	require.Equal(t, 400, code)
}

// TestSkipsPagePastOnePage: a responsibility's history is read in pages,
// newest first, each row once, and a bad cursor is a 400.
func TestSkipsPagePastOnePage(t *testing.T) {
	t.Parallel()
	f := newResponsibilityFixture(t)
	base := "/api/v1/tenants/acme/responsibilities"
	var r responsibilities.Responsibility
	code, body := f.do("POST", base, f.opKey, `{"agent":"ada","name":"paged","spend_cap_cents":1}`, &r)
	require.Equal(t, 201, code, body)
	one := base + "/" + r.ID.String()
	code, body = f.do("PATCH", one, f.opKey, `{"status":"paused"}`, nil)
	require.Equal(t, 200, code, body)
	for range 3 { // each refused run now is a skip
		code, body = f.do("POST", one+"/run", f.opKey, "", nil)
		require.Equal(t, 409, code, body) // each skip in its own transaction: a time of its own
	}
	var seen []responsibilities.Skip
	cursor, pages := "", 0
	for {
		var page api.SkipList
		code, body = f.do("GET", one+"/skips?limit=2&cursor="+cursor, f.readKey, "", &page)
		require.Equal(t, 200, code, body)
		pages++
		seen = append(seen, page.Skips...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
		require.Less(t, pages, 3, "the pages end")
	}
	require.Equal(t, 2, pages)
	require.Len(t, seen, 3)
	for i := 1; i < len(seen); i++ {
		require.NotEqual(t, seen[i-1].ID, seen[i].ID)
		require.False(t, seen[i].At.After(seen[i-1].At), "newest first")
	}
	code, _ = f.do("GET", one+"/skips?cursor=garbage", f.readKey, "", nil)
	require.Equal(t, 400, code)
}

// TestAnotherTenantNeverReachesAResponsibility: globex's operator gets 404
// for acme's responsibility on every route, and changes nothing.
func TestAnotherTenantNeverReachesAResponsibility(t *testing.T) {
	t.Parallel()
	f := newResponsibilityFixture(t)
	var r responsibilities.Responsibility
	code, body := f.do("POST", "/api/v1/tenants/acme/responsibilities", f.opKey, `{"agent":"ada","name":"inbox","spend_cap_cents":5}`, &r)
	require.Equal(t, 201, code, body)
	theirs := "/api/v1/tenants/globex/responsibilities/" + r.ID.String()
	for _, c := range []struct{ method, path, body string }{
		{"GET", theirs, ""}, {"PATCH", theirs, `{"name":"taken"}`}, {"DELETE", theirs, ""}, {"POST", theirs + "/run", ""},
		{"GET", theirs + "/runs", ""}, {"GET", theirs + "/skips", ""}, {"GET", theirs + "/notices", ""},
	} {
		code, body := f.do(c.method, c.path, f.otherKey, c.body, nil)
		require.Equal(t, 404, code, "%s %s: %s", c.method, c.path, body)
	}
	var list api.ResponsibilityList
	code, body = f.do("GET", "/api/v1/tenants/globex/responsibilities", f.otherKey, "", &list)
	require.Equal(t, 200, code, body)
	require.Empty(t, list.Responsibilities)
	code, body = f.do("POST", "/api/v1/tenants/globex/responsibilities", f.otherKey,
		fmt.Sprintf(`{"agent":%q,"name":"steal","spend_cap_cents":5}`, f.ada.ID), nil)
	require.Equal(t, 400, code, "another tenant's employee cannot own globex's responsibility: %s", body)

	var got responsibilities.Summary
	code, body = f.do("GET", "/api/v1/tenants/acme/responsibilities/"+r.ID.String(), f.opKey, "", &got)
	require.Equal(t, 200, code, body)
	require.Equal(t, "inbox", got.Name)
	require.Equal(t, int64(1), got.Epoch, "nothing changed it")
}

// TestNotifySettingsAreCheckedAndTheSecretShownOnce: an operator turns
// pushes on with an https webhook; the signing secret is answered once,
// never read back; a bad or private URL, an unknown flagged policy, half
// of the quiet hours or a cap out of range is a 400 that says what is
// wrong.
func TestNotifySettingsAreCheckedAndTheSecretShownOnce(t *testing.T) {
	t.Parallel()
	f := newResponsibilityFixture(t)
	base := "/api/v1/tenants/acme/responsibilities"
	var r responsibilities.Responsibility
	code, body := f.do("POST", base, f.opKey, `{"agent":"ada","name":"inbox","spend_cap_cents":5,
		"notify":{"enabled":true,"url":"https://hooks.example.com/visor","quiet_start":"22:00","quiet_end":"07:00","max_notifications_per_window":3}}`, &r)
	require.Equal(t, 201, code, body)
	require.True(t, r.Notify.Enabled)
	require.Equal(t, "https://hooks.example.com/visor", r.Notify.URL)
	require.Equal(t, "22:00", r.Notify.QuietStart)
	require.Equal(t, 3, r.Notify.MaxPerWindow)
	require.Equal(t, responsibilities.FlaggedNotice, r.Notify.Flagged)
	require.True(t, strings.HasPrefix(r.NotifySecret, "whsec_"), body)

	one := base + "/" + r.ID.String()
	code, body = f.do("GET", one, f.readKey, "", nil)
	require.Equal(t, 200, code, body)
	require.NotContains(t, body, "whsec_", "the secret is never read back")
	require.NotContains(t, body, strings.TrimPrefix(r.NotifySecret, "whsec_"))

	var up responsibilities.Responsibility
	code, body = f.do("PATCH", one, f.opKey, `{"notify":{"flagged":"skip","clear_quiet_hours":true}}`, &up)
	require.Equal(t, 200, code, body)
	require.Equal(t, responsibilities.FlaggedSkip, up.Notify.Flagged)
	require.Empty(t, up.Notify.QuietStart)
	require.Empty(t, up.NotifySecret, "the URL stayed: no new secret")
	code, body = f.do("PATCH", one, f.opKey, `{"notify":{"url":"https://hooks.example.com/other"}}`, &up)
	require.Equal(t, 200, code, body)
	require.NotEmpty(t, up.NotifySecret, "a new URL gets a new secret")
	require.NotEqual(t, r.NotifySecret, up.NotifySecret)

	for name, c := range map[string]struct{ notify, says string }{
		"not a url":       {`{"enabled":true,"url":"hooks"}`, "https URL"},
		"plain http":      {`{"enabled":true,"url":"http://hooks.example.com/x"}`, "https"},
		"private address": {`{"enabled":true,"url":"https://10.0.0.7/hook"}`, "private"},
		"loopback":        {`{"enabled":true,"url":"https://127.0.0.1:8443/hook"}`, "private"},
		"metadata":        {`{"enabled":true,"url":"https://169.254.169.254/latest"}`, "private"},
		"localhost":       {`{"enabled":true,"url":"https://localhost/hook"}`, "localhost"},
		"credentials":     {`{"enabled":true,"url":"https://u:p@hooks.example.com/x"}`, "credentials"},
		"enabled, no url": {`{"enabled":true}`, "notify.url"},
		"flagged":         {`{"flagged":"show"}`, "notify.flagged"},
		"half quiet":      {`{"quiet_start":"22:00"}`, "together"},
		"bad clock":       {`{"quiet_start":"25:00","quiet_end":"07:00"}`, "24-hour"},
		"cap":             {`{"max_notifications_per_window":0}`, "max_notifications_per_window"},
		"cap too high":    {`{"max_notifications_per_window":100000}`, "max_notifications_per_window"},
	} {
		code, body := f.do("POST", base, f.opKey, `{"agent":"ada","name":"x","spend_cap_cents":1,"notify":`+c.notify+`}`, nil)
		require.Equal(t, 400, code, "%s: %s", name, body)
		require.Contains(t, body, c.says, name)
		if name == "enabled, no url" {
			continue // the responsibility being patched has its URL
		}
		code, body = f.do("PATCH", one, f.opKey, `{"notify":`+c.notify+`}`, nil)
		require.Equal(t, 400, code, "patch %s: %s", name, body)
		require.Contains(t, body, c.says, name)
	}

	var notices api.NoticeList
	code, body = f.do("GET", one+"/notices", f.readKey, "", &notices)
	require.Equal(t, 200, code, body)
	require.Empty(t, notices.Notices)
}
