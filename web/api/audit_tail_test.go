package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/web/api"
)

// TestAuditTailServesEvents: a live tail sends a row recorded after it
// opened as an SSE event with the row's time as its id, sends nothing of
// another tenant, and refuses a tail past the tenant's limit.
func TestAuditTailServesEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tt := pgtest.TwoTenants(t, nil)
	a, b := tt.A, tt.B
	trail := startAuditLog(t, tt.DB)
	tailer := &api.AuditTailer{Tail: audit.Tail{Store: trail, Every: 20 * time.Millisecond}, MaxPerTenant: 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := tailer.Serve(r.Context(), w, a.ID, audit.Filter{}, api.SinceOf(r.Header.Get("Last-Event-ID"), time.Now()))
		if err != nil {
			http.Error(w, fault.Message(err), fault.HTTPStatus(fault.CodeOf(err)))
		}
	}))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	busy, err := http.Get(srv.URL)
	require.NoError(t, err)
	busy.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, busy.StatusCode, "one tail per tenant here")

	mine := audit.Entry{ID: uuid.New(), TenantID: a.ID, PrincipalKind: "employee", PrincipalID: "agent:x", Tool: "agent_status",
		Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now()}
	require.NoError(t, trail.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: b.ID, PrincipalKind: "operator", PrincipalID: "operator:g",
		Tool: "agent_status", Outcome: audit.OutcomeOK, Event: "tool_call", At: time.Now()}))
	require.NoError(t, trail.Record(ctx, mine))

	sc := bufio.NewScanner(resp.Body)
	var event, id, data string
	for sc.Scan() && data == "" {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	require.Equal(t, "audit", event)
	var ev api.AuditEvent
	require.NoError(t, json.Unmarshal([]byte(data), &ev))
	require.Equal(t, mine.ID, ev.ID, "acme's row, not globex's, which was recorded first")
	at, err := time.Parse(time.RFC3339Nano, id)
	require.NoError(t, err)
	require.True(t, at.Equal(ev.At))

	now := time.Now()
	require.Equal(t, at, api.SinceOf(id, now.Add(time.Second)))
	require.Equal(t, now, api.SinceOf("garbage", now))
	require.Equal(t, now, api.SinceOf(now.Add(-2*time.Hour).Format(time.RFC3339Nano), now), "no replay of more than an hour")
}
