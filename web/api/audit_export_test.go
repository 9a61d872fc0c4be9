package api_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/web/api"
)

// TestAuditExportCSV exports more rows than one page as CSV and JSON
// Lines: every matching row once, newest first, a header, text that a
// spreadsheet would run as a formula defused, another tenant's rows never,
// and a bad format or an overlong filter refused with 400.
func TestAuditExportCSV(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStack(t)
	trail := startAuditLog(t, st.db)
	f := st.serve(api.Deps{}, api.AuditResource(trail)).withGlobex()
	a, b := f.tenant, f.globex

	const n = 1003 // more than one export page
	start := time.Now().Add(-time.Hour)
	for i := range n {
		require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: a.ID, PrincipalKind: "employee", PrincipalID: "agent:x",
			Tool: "agent_status", Outcome: audit.OutcomeOK, Event: "tool_call", At: start.Add(time.Duration(i) * time.Millisecond)}))
	}
	require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: a.ID, PrincipalKind: "employee", PrincipalID: "=HYPERLINK(\"x\")",
		Tool: "create_agent", Outcome: audit.OutcomeRefused, Event: "permission_denied", Message: "a, \"quoted\"\nmessage", At: time.Now()}))
	require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: b.ID, PrincipalKind: "operator", PrincipalID: "operator:globex",
		Tool: "agent_status", Outcome: audit.OutcomeOK, Event: "tool_call", At: time.Now()}))

	get := func(path string) (*http.Response, string) { return f.send(http.MethodGet, path, f.opKey, "") }

	resp, body := get("/api/v1/tenants/acme/audit/export?format=csv")
	require.Equal(t, 200, resp.StatusCode, body)
	require.Equal(t, "text/csv; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, resp.Header.Get("Content-Disposition"), "audit.csv")
	records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 1+n+1, "a header and every row of acme, none of globex")
	require.Equal(t, "id", records[0][0])
	require.Equal(t, "'=HYPERLINK(\"x\")", records[1][3], "newest first, the formula defused")
	require.Equal(t, "a, \"quoted\"\nmessage", records[1][8], "quotes, commas and newlines survive")
	seen := map[string]bool{}
	for _, r := range records[1:] {
		require.False(t, seen[r[0]], "row %s exported twice", r[0])
		seen[r[0]] = true
		require.NotEqual(t, "operator:globex", r[3])
	}

	resp, body = get("/api/v1/tenants/acme/audit/export?format=csv&outcome=refused")
	require.Equal(t, 200, resp.StatusCode, body)
	records, err = csv.NewReader(strings.NewReader(body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, records, 2, "the header and the one refusal")

	resp, body = get("/api/v1/tenants/acme/audit/export?format=jsonl")
	require.Equal(t, 200, resp.StatusCode, body)
	require.Equal(t, n+1, strings.Count(body, "\n"))

	resp, body = get("/api/v1/tenants/acme/audit/export?format=xlsx")
	require.Equal(t, 400, resp.StatusCode, body)
	require.Contains(t, body, "format must be jsonl or csv")
	resp, body = get("/api/v1/tenants/acme/audit/export?tool=" + strings.Repeat("x", 600))
	require.Equal(t, 400, resp.StatusCode, body)
}
