package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/web/api"
)

func TestOperatorSetsRuntimeEndpointsWithASecretShownOnce(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme"

	var def api.EndpointSecret
	code, body := f.do("PUT", base+"/runtime/endpoint", f.opKey, `{"url":"https://runtime.example.com/wake"}`, &def)
	require.Equal(t, 200, code, body)
	require.True(t, strings.HasPrefix(def.Secret, rounds.SecretPrefix), def.Secret)
	require.Equal(t, uuid.Nil, def.Endpoint.AgentID, "the tenant's default")

	var own, rotated api.EndpointSecret
	agentPath := base + "/agents/" + f.ada.ID.String() + "/runtime/endpoint"
	code, body = f.do("PUT", agentPath, f.opKey, `{"url":"https://ada.example.com/wake"}`, &own)
	require.Equal(t, 200, code, body)
	require.Equal(t, f.ada.ID, own.Endpoint.AgentID)
	code, body = f.do("PUT", agentPath, f.opKey, `{"url":"https://ada.example.com/v2"}`, &rotated)
	require.Equal(t, 200, code, body)
	require.NotEqual(t, own.Secret, rotated.Secret, "replacing an endpoint rotates its secret")

	var list api.EndpointList
	code, body = f.do("GET", base+"/runtime/endpoints", f.opKey, "", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Endpoints, 2, "one per scope: the tenant's and ada's")
	for _, secret := range []string{def.Secret, own.Secret, rotated.Secret, strings.TrimPrefix(rotated.Secret, rounds.SecretPrefix)} {
		require.NotContains(t, body, secret, "a secret is shown only when set")
	}

	for _, c := range []struct {
		body   string
		status int
	}{
		{`{"url":"http://runtime.example.com/wake"}`, 400},
		{`{"url":"https://127.0.0.1/wake"}`, 403},
		{`{"url":"https://10.0.0.7/wake"}`, 403},
		{`{"url":"https://localhost/wake"}`, 403},
		{`{"url":"https://user:pw@runtime.example.com/"}`, 400},
		{`{"url":""}`, 400},
		{`{}`, 400},
	} {
		code, body = f.do("PUT", base+"/runtime/endpoint", f.opKey, c.body, nil)
		require.Equal(t, c.status, code, "%s: %s", c.body, body)
	}
	code, body = f.do("PUT", base+"/agents/"+uuid.NewString()+"/runtime/endpoint", f.opKey, `{"url":"https://x.example.com/"}`, nil)
	require.Equal(t, 404, code, body)

	// Globex sees none of acme's endpoints and cannot delete them.
	code, body = f.do("GET", "/api/v1/tenants/globex/runtime/endpoints", f.otherKey, "", &list)
	require.Equal(t, 200, code, body)
	require.Empty(t, list.Endpoints)
	code, _ = f.do("DELETE", "/api/v1/tenants/globex/runtime/endpoints/"+def.Endpoint.ID.String(), f.otherKey, "", nil)
	require.Equal(t, 404, code)
	code, body = f.do("DELETE", base+"/runtime/endpoints/"+def.Endpoint.ID.String(), f.opKey, "", nil)
	require.Equal(t, 204, code, body)
	f.do("GET", base+"/runtime/endpoints", f.opKey, "", &list)
	require.Len(t, list.Endpoints, 1)
}

func TestOperatorListsAndRetriesDeadLetters(t *testing.T) {
	t.Parallel()
	f := newBoardFixture(t)
	base := "/api/v1/tenants/acme"
	// Three assignments wake ada three times; two of the pushes failed for good.
	var ids []uuid.UUID
	for i := range 3 {
		var tk board.Task
		code, body := f.do("POST", base+"/tasks", f.opKey, fmt.Sprintf(`{"title":"t%d","assignee":%q}`, i, f.ada.ID), &tk)
		require.Equal(t, 201, code, body)
		var id uuid.UUID
		require.NoError(t, f.db.Pool.QueryRow(context.Background(), `SELECT id FROM wakeups WHERE tenant_id = $1 AND task_id = $2`, f.tenant.ID, tk.ID).Scan(&id))
		ids = append(ids, id)
	}
	_, err := f.db.Pool.Exec(context.Background(), `UPDATE wakeups SET state = 'dead', attempts = 8, last_error = 'HTTP 503' WHERE tenant_id = $1 AND id = ANY($2)`,
		f.tenant.ID, ids[:2])
	require.NoError(t, err)

	var dead api.WakeupList
	code, body := f.do("GET", base+"/runtime/wakeups?state=dead&limit=1", f.opKey, "", &dead)
	require.Equal(t, 200, code, body)
	require.Len(t, dead.Wakeups, 1)
	require.Equal(t, ids[1], dead.Wakeups[0].ID, "newest first")
	require.Equal(t, "HTTP 503", dead.Wakeups[0].LastError)
	require.NotEmpty(t, dead.NextCursor)
	var rest api.WakeupList
	f.do("GET", base+"/runtime/wakeups?state=dead&limit=1&cursor="+dead.NextCursor, f.opKey, "", &rest)
	require.Len(t, rest.Wakeups, 1)
	require.Equal(t, ids[0], rest.Wakeups[0].ID)
	require.Empty(t, rest.NextCursor, "the last page")
	var all api.WakeupList
	f.do("GET", base+"/runtime/wakeups?agent="+f.ada.ID.String(), f.opKey, "", &all)
	require.Len(t, all.Wakeups, 3)

	var w rounds.Wakeup
	code, body = f.do("POST", base+"/runtime/wakeups/"+ids[0].String()+"/retry", f.opKey, "", &w)
	require.Equal(t, 200, code, body)
	require.Equal(t, rounds.Queued, w.State)
	require.Zero(t, w.Attempts, "attempts start over")
	code, body = f.do("POST", base+"/runtime/wakeups/"+ids[0].String()+"/retry", f.opKey, "", nil)
	require.Equal(t, 409, code, "no longer a dead letter: %s", body)
	code, body = f.do("GET", base+"/runtime/wakeups/"+ids[0].String(), f.opKey, "", &w)
	require.Equal(t, 200, code, body)
	require.Equal(t, rounds.Queued, w.State)

	for _, c := range []struct {
		path   string
		status int
	}{
		{base + "/runtime/wakeups?state=lost", 400},
		{base + "/runtime/wakeups?agent=nobody", 400},
		{base + "/runtime/wakeups?cursor=bm9wZQ", 400},
		{base + "/runtime/wakeups/" + uuid.NewString(), 404},
	} {
		code, body = f.do("GET", c.path, f.opKey, "", nil)
		require.Equal(t, c.status, code, "%s: %s", c.path, body)
	}
	// Globex can neither see nor retry acme's dead letter.
	code, _ = f.do("GET", "/api/v1/tenants/globex/runtime/wakeups/"+ids[1].String(), f.otherKey, "", nil)
	require.Equal(t, 404, code)
	code, _ = f.do("POST", "/api/v1/tenants/globex/runtime/wakeups/"+ids[1].String()+"/retry", f.otherKey, "", nil)
	require.Equal(t, 404, code)
	var none api.WakeupList
	f.do("GET", "/api/v1/tenants/globex/runtime/wakeups?state=dead", f.otherKey, "", &none)
	require.Empty(t, none.Wakeups)
}
