package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// auditRow is one row of the audit export.
type auditRow struct {
	PrincipalKind string `json:"principal_kind"`
	PrincipalID   string `json:"principal_id"`
	Outcome       string `json:"outcome"`
	Code          int    `json:"code"`
	EventType     string `json:"event_type"`
	Source        string `json:"source"`
	Action        string `json:"action"`
	Object        string `json:"object"`
	Change        string `json:"change"`
	ArgsDigest    string `json:"args_digest"`
}

// exportAudit reads acme's audit trail (JSON Lines) as c, filtered by q.
func exportAudit(t *testing.T, r *replica, c caller, q url.Values) ([]auditRow, string) {
	t.Helper()
	code, raw := adminCall(t, r, c, http.MethodGet, "/api/v1/tenants/acme/audit/export?"+q.Encode(), "")
	require.Equal(t, 200, code, raw)
	var rows []auditRow
	sc := bufio.NewScanner(strings.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row auditRow
		require.NoError(t, json.Unmarshal(sc.Bytes(), &row))
		rows = append(rows, row)
	}
	return rows, raw
}

// TestEveryAdminChangeIsAudited walks every admin API route that changes
// state, as read from the served OpenAPI document, and checks that a
// request to it leaves an operator-action row naming the operation, the
// caller and the object: a route added without a row fails here. A
// refused request is recorded as refused; an unauthenticated one is not
// recorded at all.
func TestEveryAdminChangeIsAudited(t *testing.T) {
	t.Parallel()
	w := newAuthorityWorld(t)
	r := w.r
	owner, viewer := w.session[identity.RoleOwner], w.session[identity.RoleViewer]
	ownerID := "member:" + w.members[identity.RoleOwner].ID.String()
	var missing []string
	n := 0
	for _, rt := range adminRoutes(t, r) {
		if rt.method == http.MethodGet || rt.method == http.MethodHead {
			continue
		}
		n++
		body := ""
		if rt.body {
			body = "{}"
		}
		code, _ := adminCall(t, r, owner, rt.method, rt.concrete(), body)
		rows, _ := exportAudit(t, r, owner, url.Values{"source": {"admin_api"}, "action": {rt.id}})
		if len(rows) == 0 {
			missing = append(missing, fmt.Sprintf("%s %s (%s): answered %d, recorded nothing", rt.method, rt.path, rt.id, code))
			continue
		}
		row := rows[0]
		if row.PrincipalID != ownerID || row.EventType != "operator_action" || row.Code != code || row.Object == "" || row.ArgsDigest == "" {
			missing = append(missing, fmt.Sprintf("%s %s (%s): row %+v does not name the caller, the status %d and the object", rt.method, rt.path, rt.id, row, code))
		}
	}
	require.Empty(t, missing, "\n"+strings.Join(missing, "\n"))
	require.Greater(t, n, 15, "the walk found the state-changing routes")

	// A viewer may change nothing: the attempt is recorded as refused.
	code, _ := adminCall(t, r, viewer, http.MethodPost, "/api/v1/tenants/acme/agents", `{"name":"viewer-made"}`)
	require.Equal(t, 403, code)
	rows, _ := exportAudit(t, r, owner, url.Values{"principal_id": {"member:" + w.members[identity.RoleViewer].ID.String()}, "action": {"createAgent"}})
	require.Len(t, rows, 1)
	require.Equal(t, "refused", rows[0].Outcome)
	require.Equal(t, `{"name":"viewer-made"}`, rows[0].Change)
	// Without a credential nothing is written into the tenant's trail.
	before, _ := exportAudit(t, r, owner, url.Values{"source": {"admin_api"}})
	code, _ = adminCall(t, r, caller{}, http.MethodPost, "/api/v1/tenants/acme/agents", `{"name":"anonymous"}`)
	require.Equal(t, 401, code)
	after, _ := exportAudit(t, r, owner, url.Values{"source": {"admin_api"}})
	require.Equal(t, len(before), len(after))
}

// TestOperatorAuditHoldsNoSecret makes real changes that carry or return
// secrets — a member's password set and reset, an API key, a confidential
// OAuth client, a round token — and checks each is recorded with its
// object, filterable by object, and that no secret appears in any row.
func TestOperatorAuditHoldsNoSecret(t *testing.T) {
	t.Parallel()
	w := newAuthorityWorld(t)
	r := w.r
	owner := w.session[identity.RoleOwner]
	base := "/api/v1/tenants/acme"
	var secrets []string
	call := func(method, path, body string, want int) map[string]any {
		t.Helper()
		code, raw := adminCall(t, r, owner, method, base+path, body)
		require.Equal(t, want, code, raw)
		out := map[string]any{}
		_ = json.Unmarshal([]byte(raw), &out)
		return out
	}

	pw1, pw2 := "first secret password 7f3a", "second secret password 9c1e"
	secrets = append(secrets, pw1, pw2)
	m := call(http.MethodPost, "/members", `{"email":"new@acme.test","password":"`+pw1+`","role":"viewer"}`, 201)
	memberID := m["id"].(string)
	call(http.MethodPatch, "/members/"+memberID, `{"password":"`+pw2+`","role":"operator"}`, 200)
	// A malformed body that carries a password is never copied.
	call(http.MethodPatch, "/members/"+memberID, `{"password":"`+pw2+`x",`, 400)
	secrets = append(secrets, pw2+"x")

	k := call(http.MethodPost, "/keys", `{"kind":"operator","name":"audited","scopes":["admin:read"]}`, 201)
	secrets = append(secrets, k["token"].(string))
	keyID := k["key"].(map[string]any)["id"].(string)
	call(http.MethodDelete, "/keys/"+keyID, "", 200)

	cl := call(http.MethodPost, "/oauth/clients", `{"client_name":"Audited","redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, 201)
	require.NotEmpty(t, cl["client_secret"])
	secrets = append(secrets, cl["client_secret"].(string))

	rt := call(http.MethodPost, "/agents/"+w.ada.ID.String()+"/round-tokens", `{"task_id":"`+pgtest.Task(t, w.db, w.acme.ID).String()+`"}`, 201)
	secrets = append(secrets, rt["token"].(string))

	rows, raw := exportAudit(t, r, owner, url.Values{"source": {"admin_api"}})
	for _, s := range secrets {
		require.NotContains(t, raw, s, "a secret reached the audit trail")
	}
	// Filterable by object: the member's three changes, newest first.
	byMember, _ := exportAudit(t, r, owner, url.Values{"object": {"member:" + memberID}})
	require.Len(t, byMember, 3)
	require.Equal(t, "updateMember", byMember[0].Action)
	require.Equal(t, "rejected", byMember[0].Outcome)
	require.NotContains(t, byMember[0].Change, "password")
	require.Equal(t, `{"password":"(set)","role":"operator"}`, byMember[1].Change)
	require.Equal(t, "ok", byMember[1].Outcome)
	require.Equal(t, "createMember", byMember[2].Action)
	require.Contains(t, byMember[2].Change, `"password":"(set)"`)
	keyRows, _ := exportAudit(t, r, owner, url.Values{"object": {"key:" + keyID}})
	require.Len(t, keyRows, 2)
	require.Equal(t, []string{"revokeKey", "createKey"}, []string{keyRows[0].Action, keyRows[1].Action})
	clientRows, _ := exportAudit(t, r, owner, url.Values{"object": {"oauth_client:" + cl["client_id"].(string)}})
	require.Len(t, clientRows, 1)
	require.NotEmpty(t, rows)
}
