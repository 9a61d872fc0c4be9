package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
)

// TestTheEmployeePageIsTheEmployee: an employee's page shows its keys,
// grants, open requests, tasks and recent calls, and an operator edits its
// department, role, manager and budget there (audited as updateAgent).
func TestTheEmployeePageIsTheEmployee(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "x_a", "x_b")
	boss := e.agent("grace")
	_, _, err := e.ids.CreateKey(ctx, e.a.ID, identity.NewKey{Name: "ada-runtime", Kind: identity.KeyAgent, AgentID: ada.ID, Scopes: []string{"tools:read"}})
	require.NoError(t, err)
	_, err = e.grants.Grant(ctx, e.a.ID, ada.ID, "x_a", uuid.Nil, time.Hour, "test")
	require.NoError(t, err)
	e.request(ada, "x_b")
	e.task(board.NewTask{Title: "Quarterly report", Assignee: ada.ID})
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: "agent:" + ada.ID.String(),
		Tool: "plain_status", Outcome: audit.OutcomeOK, Event: "tool_call", At: time.Now()}))

	b := e.browser()
	e.signIn(b, identity.RoleOperator)
	path := "/t/acme/dashboard/agents/" + ada.ID.String()
	p := b.get(path)
	require.Equal(t, http.StatusOK, p.status)
	for _, want := range []string{">ada-runtime</a>", "<code>x_a</code>", "<code>x_b</code></a>", ">Quarterly report</a>", "<code>plain_status</code>"} {
		require.Contains(t, p.body, want)
	}
	res := b.submit(path, path+"/profile", url.Values{"department": {"Finance"}, "role": {"Analyst"}, "reports_to": {"grace"}, "budget": {"125.50"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	got, err := e.store.Agent(ctx, e.a.ID, ada.ID)
	require.NoError(t, err)
	require.Equal(t, "Finance", got.Department)
	require.Equal(t, "Analyst", got.Role)
	require.Equal(t, boss.ID, got.ReportsTo)
	require.EqualValues(t, 12550, got.BudgetCents)
	require.Contains(t, b.get(path).body, `value="125.50"`)
	require.NotEmpty(t, e.rows("updateAgent"))

	require.Equal(t, http.StatusBadRequest, b.submit(path, path+"/profile", url.Values{"budget": {"-3"}}).status)
	require.Equal(t, http.StatusBadRequest, b.submit(path, path+"/profile", url.Values{"reports_to": {"nobody"}}).status)
	viewer := e.browser()
	e.signIn(viewer, identity.RoleViewer)
	require.Equal(t, http.StatusForbidden, viewer.submit(path, path+"/profile", url.Values{"budget": {"1"}}).status)
}
