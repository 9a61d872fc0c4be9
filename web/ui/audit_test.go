package ui_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
)

var olderRE = regexp.MustCompile(`id="older" href="([^"]+)"`)

// TestAuditPage: a viewer filters the trail, pages back through it by
// keyset (each row once), exports the filtered rows as CSV and JSON Lines
// through the admin API's exporter, and never sees another tenant's rows;
// a malformed time is a 400 page that says what to fix.
func TestAuditPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Hour)
	for i := range 120 {
		outcome, event := audit.OutcomeOK, "tool_call"
		if i%3 == 0 {
			outcome, event = audit.OutcomeRefused, "permission_denied"
		}
		require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee",
			PrincipalID: fmt.Sprintf("agent:row-%03d", i), Tool: "os_click", Outcome: outcome, Event: event, At: start.Add(time.Duration(i) * time.Second)}))
	}
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.b.ID, PrincipalKind: "employee", PrincipalID: "agent:globex-row",
		Tool: "os_click", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now()}))

	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	seen := map[string]bool{}
	path := "/t/acme/dashboard/audit?tool=os_click"
	pages := 0
	for ; path != ""; pages++ {
		require.Less(t, pages, 5)
		p := b.get(path)
		require.Equal(t, http.StatusOK, p.status, p.body)
		require.NotContains(t, p.body, "globex-row")
		for _, m := range regexp.MustCompile(`agent:row-(\d+)`).FindAllStringSubmatch(p.body, -1) {
			require.False(t, seen[m[1]], "row %s shown twice", m[1])
			seen[m[1]] = true
		}
		path = ""
		if m := olderRE.FindStringSubmatch(p.body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
			require.Contains(t, path, "tool=os_click", "paging keeps the filters")
		}
	}
	require.Equal(t, 3, pages)
	require.Len(t, seen, 120, "every row once, across three pages of 50")

	p := b.get("/t/acme/dashboard/audit?outcome=refused")
	require.Contains(t, p.body, `id="export-csv" href="/t/acme/dashboard/audit/export?format=csv&amp;outcome=refused"`, "the export keeps the filters")
	require.Contains(t, p.body, `data-src="/t/acme/dashboard/audit/tail?outcome=refused"`, "the tail keeps the filters")

	p = b.get("/t/acme/dashboard/audit/export?format=csv&outcome=refused")
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, "text/csv; charset=utf-8", p.header.Get("Content-Type"))
	records, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 41, "a header and the 40 refusals")
	p = b.get("/t/acme/dashboard/audit/export?format=jsonl&since=" + start.Add(100*time.Second).UTC().Format("2006-01-02T15:04:05Z"))
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Equal(t, 20, strings.Count(p.body, "\n"), "rows 100-119")

	p = b.get("/t/acme/dashboard/audit?since=yesterday")
	require.Equal(t, http.StatusBadRequest, p.status)
	require.Contains(t, p.body, "since must be an RFC 3339 time")
	p = b.get("/t/acme/dashboard/audit/export?format=xlsx")
	require.Equal(t, http.StatusBadRequest, p.status)

	// The tail answers with an event stream; the page offers it.
	p = b.get("/t/acme/dashboard/audit")
	require.Contains(t, p.body, `data-src="/t/acme/dashboard/audit/tail?"`)
	tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(tctx, http.MethodGet, e.base+"/t/acme/dashboard/audit/tail", nil)
	res, err := b.c.Do(req)
	require.NoError(t, err)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	res.Body.Close()
}
