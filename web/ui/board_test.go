package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
)

// task creates a task in acme as an operator would.
func (e *env) task(in board.NewTask) board.Task {
	e.t.Helper()
	op := identity.Principal{TenantID: e.a.ID, TenantSlug: e.a.Slug, Kind: identity.KindOperator, CredentialID: "key:test",
		Scopes: identity.RoleOwner.Scopes()}
	t, err := e.board.CreateTask(context.Background(), board.Operator(op, e.a), in)
	require.NoError(e.t, err)
	return t
}

// TestTheBoardByRole: every member reads the board, a task with its
// sub-tasks and a goal; only operators and up are offered, and allowed,
// to reassign or cancel, through the admin API's updateTask (audited
// under that name); another tenant finds nothing.
func TestTheBoardByRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada, bob := e.agent("ada"), e.agent("bob")
	goal := e.task(board.NewTask{Kind: board.KindGoal, Title: "Ship the quarterly report"})
	parent := e.task(board.NewTask{Title: "Draft the report", Parent: goal.ID, ParentGiven: true, Assignee: ada.ID})
	sub := e.task(board.NewTask{Title: "Collect the figures", Parent: parent.ID, ParentGiven: true, Assignee: ada.ID})
	path := "/t/acme/dashboard/board/" + parent.ID.String()

	for _, role := range identity.Roles {
		b := e.browser()
		e.signIn(b, role)
		list := b.get("/t/acme/dashboard/board")
		require.Equal(t, http.StatusOK, list.status, list.body)
		for _, title := range []string{goal.Title, parent.Title, sub.Title} {
			require.Contains(t, list.body, title, role)
		}
		goals := b.get("/t/acme/dashboard/board?kind=goal")
		require.Contains(t, goals.body, goal.Title)
		require.NotContains(t, goals.body, parent.Title)
		page := b.get(path)
		require.Equal(t, http.StatusOK, page.status, page.body)
		require.Contains(t, page.body, sub.Title, "the task's page lists its sub-tasks")
		require.Contains(t, page.body, "Part of: "+goal.Title)
		may := role.Allows(identity.ManageAgents)
		require.Equal(t, may, strings.Contains(page.body, `action="`+path+`/cancel"`), role)
		require.Equal(t, may, strings.Contains(page.body, `action="`+path+`/assignee"`), role)
		if !may {
			res := b.submit(path, path+"/assignee", url.Values{"assignee": {bob.ID.String()}})
			require.Equal(t, http.StatusForbidden, res.status)
			res = b.submit(path, path+"/cancel", nil)
			require.Equal(t, http.StatusForbidden, res.status)
		}
	}
	got, err := e.board.Task(ctx, e.a.ID, parent.ID)
	require.NoError(t, err)
	require.Equal(t, ada.ID, got.AssigneeID, "refused changes change nothing")
	require.Equal(t, board.Open, got.Status)

	op := e.browser()
	e.signIn(op, identity.RoleOperator)
	res := op.submit(path, path+"/assignee", url.Values{"assignee": {bob.ID.String()}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	got, err = e.board.Task(ctx, e.a.ID, parent.ID)
	require.NoError(t, err)
	require.Equal(t, bob.ID, got.AssigneeID)
	require.Contains(t, op.get(path).body, `<option value="`+bob.ID.String()+`" selected>`)
	res = op.submit(path, path+"/assignee", url.Values{"assignee": {"nobody"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	res = op.submit(path, path+"/assignee", url.Values{"assignee": {uuid.NewString()}})
	require.Equal(t, http.StatusNotFound, res.status, res.body)
	res = op.submit(path, path+"/cancel", nil)
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	got, err = e.board.Task(ctx, e.a.ID, parent.ID)
	require.NoError(t, err)
	require.Equal(t, board.Cancelled, got.Status)
	page := op.get(path)
	require.Contains(t, page.body, "Cancelled")
	require.NotContains(t, page.body, `action="`+path+`/cancel"`, "a finished task offers no change")
	res = op.submit(path, path+"/cancel", nil)
	require.Equal(t, http.StatusConflict, res.status, res.body)

	var outcomes []string
	for _, r := range e.rows("updateTask") {
		if r.Outcome == audit.OutcomeOK {
			require.Equal(t, "task:"+parent.ID.String(), r.Object)
		}
		outcomes = append(outcomes, r.Outcome)
	}
	require.Equal(t, []string{audit.OutcomeRefused, audit.OutcomeRefused, audit.OutcomeOK, audit.OutcomeRejected, audit.OutcomeRejected,
		audit.OutcomeOK, audit.OutcomeRejected}, outcomes, "the viewer's two refusals, then the operator's changes")

	other := e.browser()
	e.signInAs(other, "globex", "bob@globex.test")
	require.Equal(t, http.StatusNotFound, other.get("/t/globex/dashboard/board/"+sub.ID.String()).status)
	require.NotContains(t, other.get("/t/globex/dashboard/board").body, sub.Title)
	res = other.submit("/t/globex/dashboard/board", "/t/globex/dashboard/board/"+sub.ID.String()+"/cancel", nil)
	require.Equal(t, http.StatusNotFound, res.status)
	got, err = e.board.Task(ctx, e.a.ID, sub.ID)
	require.NoError(t, err)
	require.Equal(t, board.Open, got.Status)
}

// TestTheBoardIsFilteredAndPaged: 25 tasks a page by keyset, filters by
// status and assignee kept in the paging links; bad filters are the
// member's mistake.
func TestTheBoardIsFilteredAndPaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ada, bob := e.agent("ada"), e.agent("bob")
	for i := range 30 {
		e.task(board.NewTask{Title: fmt.Sprintf("chore-%02d", i), Assignee: ada.ID})
	}
	e.task(board.NewTask{Title: "bobs-chore", Assignee: bob.ID})
	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	row := `<tr><td><a href="/t/acme/dashboard/board/`
	first := b.get("/t/acme/dashboard/board?status=open&assignee=" + ada.ID.String())
	require.Equal(t, http.StatusOK, first.status, first.body)
	require.Equal(t, 25, strings.Count(first.body, row))
	require.NotContains(t, first.body, "bobs-chore")
	next := field(t, nextRE, first.body)
	require.Contains(t, next, "assignee="+ada.ID.String())
	require.Contains(t, next, "status=open")
	second := b.get(next)
	require.Equal(t, http.StatusOK, second.status, second.body)
	require.Equal(t, 5, strings.Count(second.body, row))
	for i := range 30 {
		name := fmt.Sprintf(">chore-%02d<", i)
		require.True(t, strings.Contains(first.body, name) != strings.Contains(second.body, name), "%s is on exactly one page", name)
	}
	require.Equal(t, 0, strings.Count(b.get("/t/acme/dashboard/board?status=done").body, row))
	for _, q := range []string{"status=finished", "kind=epic", "assignee=someone", "cursor=nonsense"} {
		require.Equal(t, http.StatusBadRequest, b.get("/t/acme/dashboard/board?"+q).status, q)
	}
	require.Contains(t, b.get("/t/acme/dashboard/board", "Accept-Language", "ja").body, "タスクボード")
}
