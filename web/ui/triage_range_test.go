package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/ui"
)

// TestAuditFacetsCountEveryMatchingRow: the facet counts and the total
// cover every row the filters match, not only the 50 the page shows.
func TestAuditFacetsCountEveryMatchingRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "x_a")
	base := time.Now()
	for i := range 130 {
		outcome := audit.OutcomeOK
		if i%2 == 0 {
			outcome = audit.OutcomeRefused
		}
		require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee",
			PrincipalID: "agent:" + ada.ID.String(), Tool: "x_a", Outcome: outcome, Event: "tool_call", At: base.Add(-time.Duration(i) * time.Second)}))
	}
	b := e.browser()
	e.signIn(b, identity.RoleOwner)
	page := b.get("/t/acme/dashboard/audit").body
	require.Equal(t, 50, strings.Count(page, `<td class="nowrap">`)/3, "a page of 50 rows")
	require.Contains(t, page, `130 rows match the filters`)
	require.Contains(t, page, `Refused <span class="badge">65</span>`, "every refusal counted, not the page's")
	require.Contains(t, page, `<code>x_a</code> <span class="badge">130</span>`)
	one := b.get("/t/acme/dashboard/audit?" + url.Values{"since": {base.Add(-500 * time.Millisecond).UTC().Format(time.RFC3339Nano)}}.Encode()).body
	require.Contains(t, one, `1 row matches the filters`, "one row, in the singular")
}

// TestTheLiveTailSendsTableRows: a row written after the tail starts
// arrives as the table's own row, names and filter links included.
func TestTheLiveTailSendsTableRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "x_a")
	b := e.browser()
	e.signIn(b, identity.RoleOwner)
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(tctx, http.MethodGet, e.base+"/t/acme/dashboard/audit/tail?tool=x_a", nil)
	res, err := b.c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	time.Sleep(200 * time.Millisecond) // the tail's first read marks where it starts
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee",
		PrincipalID: "agent:" + ada.ID.String(), Tool: "x_a", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now()}))
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "{}" {
			continue
		}
		var row struct{ ID, HTML string }
		require.NoError(t, json.Unmarshal([]byte(data), &row))
		require.True(t, strings.HasPrefix(row.HTML, "<tr><td class=\"nowrap\">"), row.HTML)
		require.Equal(t, 7, strings.Count(row.HTML, "<td"), "the table's seven columns")
		require.Contains(t, row.HTML, ">ada<", "the employee by name")
		require.Contains(t, row.HTML, `href="/t/acme/dashboard/audit?outcome=refused&amp;tool=x_a"`, "a click filters, keeping the tail's filters")
		return
	}
	t.Fatalf("the tail ended without a row: %v", sc.Err())
}

// TestAMemberReadsTimesInTheirOwnZone: a member's chosen zone wins over
// the tenant's on their pages only, the audit filters read typed times
// in it, and an unknown zone is refused with a reason.
func TestAMemberReadsTimesInTheirOwnZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.ids.UpdateTenant(ctx, e.a.ID, func(tn *identity.Tenant) error { tn.Settings.TimeZone = "Europe/Paris"; return nil })
	require.NoError(t, err)
	ada := e.scopedAgent("ada", "x_a")
	at := time.Date(2026, 3, 4, 23, 30, 15, 0, time.UTC)
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: "agent:" + ada.ID.String(),
		Tool: "x_a", Outcome: audit.OutcomeOK, Event: "tool_call", At: at}))
	owner, viewer := e.browser(), e.browser()
	e.signIn(owner, identity.RoleOwner)
	e.signIn(viewer, identity.RoleViewer)

	p := viewer.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/me/time_zone", url.Values{"time_zone": {"Mars/Olympus"}})
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "IANA time zone name")
	p = viewer.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/me/time_zone", url.Values{"time_zone": {"Asia/Tokyo"}})
	require.Equal(t, http.StatusSeeOther, p.status, p.body)
	require.Contains(t, viewer.get("/t/acme/dashboard/audit").body, "5 Mar 2026 08:30:15 JST", "the viewer's zone")
	require.Contains(t, owner.get("/t/acme/dashboard/audit").body, "5 Mar 2026 00:30:15 CET", "the owner keeps the tenant's")

	// 08:30 typed in Tokyo is 23:30 UTC the day before: the row is in.
	in := viewer.get("/t/acme/dashboard/audit?tool=x_a&since=2026-03-05+08:30&until=2026-03-05+08:31").body
	require.Contains(t, in, "1 row matches the filters", in)
	require.Contains(t, in, "since=2026-03-04T23%3A30%3A00Z", "the export link carries the time in UTC")
	require.Contains(t, in, "Times in Asia/Tokyo")
	out := owner.get("/t/acme/dashboard/audit?tool=x_a&since=2026-03-05+08:30").body
	require.Contains(t, out, "0 rows match the filters", "08:30 in Paris is after the row")

	p = viewer.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/me/time_zone", url.Values{"time_zone": {""}})
	require.Equal(t, http.StatusSeeOther, p.status)
	require.Contains(t, viewer.get("/t/acme/dashboard/audit").body, "5 Mar 2026 00:30:15 CET", "back to the tenant's zone")
}

// TestPluralsInBothLanguages: English counts take the singular for one;
// Japanese ones never change.
func TestPluralsInBothLanguages(t *testing.T) {
	t.Parallel()
	cat, err := ui.LoadCatalog()
	require.NoError(t, err)
	for _, c := range []struct {
		lang ui.Lang
		key  string
		args []any
		want string
	}{
		{ui.English, "audit.matches", []any{"1"}, "1 row matches the filters"},
		{ui.English, "audit.matches", []any{"1,000"}, "1,000 rows match the filters"},
		{ui.English, "live.count", []any{"1", "2"}, "1 stream on 2 servers"},
		{ui.English, "live.count", []any{"3", "1"}, "3 streams on 1 server"},
		{ui.English, "agents.count", []any{"1"}, "1 AI employee, trashed ones included."},
		{ui.English, "agent.preview_summary", []any{"1", "0", "1"}, "Saving adds 1 tool and removes 0; it will see 1."},
		{ui.English, "span.days", []any{"1"}, "1 day"},
		{ui.Japanese, "audit.matches", []any{"1"}, "条件に一致する行: 1 件"},
	} {
		require.Equal(t, c.want, cat.T(c.lang, c.key, c.args...), "%s %s %v", c.lang, c.key, c.args)
	}
	for _, l := range ui.Langs {
		for _, k := range cat.Keys(l) {
			m, _ := cat.Message(l, k)
			require.NotRegexp(t, `\w\(s\)`, m, "%s %s: choose the plural with {n:one|other}", l, k)
		}
	}
}

// TestTheOverviewCountsFailingComputerSessions: sessions that could not
// start or lost their worker count on the overview, today's against the
// day before's; one stopped by choice does not.
func TestTheOverviewCountsFailingComputerSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, name := range []string{"ada", "bob", "cy"} {
		s := e.liveSession(e.a.ID, e.agent(name))
		state, reason := computer.SessionLost, computer.EndWorkerLost
		if name == "cy" {
			state, reason = computer.SessionStopped, computer.EndByEmployee
		}
		_, err := e.cu.EndSession(ctx, e.a.ID, s.ID, state, reason)
		require.NoError(t, err)
	}
	gil, err := e.ids.CreateAgent(ctx, e.b.ID, identity.NewAgent{Name: "gil"})
	require.NoError(t, err)
	theirs := e.liveSession(e.b.ID, gil)
	_, err = e.cu.EndSession(ctx, e.b.ID, theirs.ID, computer.SessionLost, computer.EndWorkerLost)
	require.NoError(t, err)
	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	p := b.get("/t/acme/dashboard/overview").body
	require.Contains(t, p, `<strong>2</strong> <span class="label">computer sessions that failed (24 h)`, "ada's and bob's, not cy's nor another tenant's")
	require.Contains(t, p, `the day before: 0`)
	require.Contains(t, b.get("/t/acme/dashboard/overview", "Accept-Language", "ja").body, `<strong>2</strong> <span class="label">失敗したコンピューター操作セッション`)
}
