package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/api"
)

func TestAuditListFiltersExportAndIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStack(t)
	trail := startAuditLog(t, st.db)
	res := postgres.NewReservationStore(st.db)
	f := st.serve(api.Deps{}, api.AuditResource(trail), api.ReservationsResource(res)).withGlobex()
	a, b := f.tenant, f.globex
	keyA, keyB := f.opKey, f.otherKey
	for i := range 5 {
		outcome, event := audit.OutcomeOK, "tool_call"
		if i%2 == 1 {
			outcome, event = audit.OutcomeRefused, "permission_denied"
		}
		require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: a.ID, PrincipalKind: "employee", PrincipalID: "agent:x",
			Tool: "create_agent", Outcome: outcome, Event: event, At: time.Now().Add(time.Duration(i) * time.Second), Latency: time.Millisecond}))
	}
	require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: b.ID, PrincipalKind: "operator", PrincipalID: "operator:k",
		Tool: "agent_status", Outcome: audit.OutcomeOK, Event: "tool_call", At: time.Now()}))
	require.NoError(t, res.Reserve(ctx, agents.Reservation{TenantID: a.ID, Name: "carl", AgentID: uuid.New(), ReservedBy: "operator:k"}))

	get := func(path, key string) (int, string) { return f.do(http.MethodGet, path, key, "", nil) }

	code, body := get("/api/v1/tenants/acme/audit?event_type=permission_denied", keyA)
	require.Equal(t, 200, code, body)
	var list api.AuditList
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Events, 2)
	require.Equal(t, "refused", list.Events[0].Outcome)
	require.EqualValues(t, 1000, list.Events[0].LatencyUS)

	code, body = get("/api/v1/tenants/acme/audit?limit=2", keyA)
	require.Equal(t, 200, code)
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.NotEmpty(t, list.NextCursor)
	code, body = get("/api/v1/tenants/acme/audit?limit=2&cursor="+list.NextCursor, keyA)
	require.Equal(t, 200, code)
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Events, 2)

	code, body = get("/api/v1/tenants/acme/audit/export", keyA)
	require.Equal(t, 200, code)
	lines := strings.Split(strings.TrimSpace(body), "\n")
	require.Len(t, lines, 5, "JSONL, one row per line")
	var ev api.AuditEvent
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &ev))
	require.Equal(t, "create_agent", ev.Tool)

	// Operator actions are filtered and shown with their source, action,
	// object and masked change; tool calls read as source mcp.
	require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: a.ID, PrincipalKind: "operator", PrincipalID: "member:m",
		Source: audit.SourceAdminAPI, Action: "updateMember", Object: "member:x", Change: `{"password":"(set)"}`, Outcome: audit.OutcomeOK,
		Code: 200, Event: "operator_action", At: time.Now()}))
	code, body = get("/api/v1/tenants/acme/audit?source=admin_api&action=updateMember&object=member:x", keyA)
	require.Equal(t, 200, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Events, 1)
	require.Equal(t, api.AuditEvent{ID: list.Events[0].ID, At: list.Events[0].At, PrincipalKind: "operator", PrincipalID: "member:m",
		Outcome: "ok", Code: 200, EventType: "operator_action", Source: "admin_api", Action: "updateMember", Object: "member:x",
		Change: `{"password":"(set)"}`}, list.Events[0])
	code, body = get("/api/v1/tenants/acme/audit?source=mcp", keyA)
	require.Equal(t, 200, code, body)
	require.NoError(t, json.Unmarshal([]byte(body), &list))
	require.Len(t, list.Events, 5)
	require.Equal(t, "mcp", list.Events[0].Source)

	code, _ = get("/api/v1/tenants/acme/audit?since=yesterday", keyA)
	require.Equal(t, 400, code, "a client mistake is a 4xx")

	// Tenant B reads only its own trail and never A's.
	code, body = get("/api/v1/tenants/globex/audit/export", keyB)
	require.Equal(t, 200, code)
	require.Equal(t, 1, strings.Count(body, "\n"))
	code, _ = get("/api/v1/tenants/acme/audit", keyB)
	require.GreaterOrEqual(t, code, 400)

	// Operators see and release reserved names.
	code, body = get("/api/v1/tenants/acme/agent-name-reservations", keyA)
	require.Equal(t, 200, code)
	require.Contains(t, body, `"name":"carl"`)
	code, body = f.do(http.MethodDelete, "/api/v1/tenants/acme/agent-name-reservations/carl", keyA, "", nil)
	require.Equal(t, http.StatusNoContent, code, body)
}

// startAuditLog is a running audit trail on db, stopped when the test ends.
func startAuditLog(t *testing.T, db *postgres.DB) *postgres.AuditLog {
	t.Helper()
	trail := postgres.NewAuditLog(db, 2, slog.New(slog.DiscardHandler))
	require.NoError(t, trail.Start(context.Background()))
	t.Cleanup(trail.Stop)
	return trail
}
