package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
)

// TestTheBoardHasColumns: without a status filter the board is columns by
// status with counts, blocked first; the assignee, department and goal
// filters narrow every column.
func TestTheBoardHasColumns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada, err := e.ids.CreateAgent(ctx, e.a.ID, identity.NewAgent{Name: "ada", Department: "Sales"})
	require.NoError(t, err)
	bob, err := e.ids.CreateAgent(ctx, e.a.ID, identity.NewAgent{Name: "bob", Department: "Support"})
	require.NoError(t, err)
	goal := e.task(board.NewTask{Kind: board.KindGoal, Title: "Spring launch"})
	e.task(board.NewTask{Title: "ada-open-1", Assignee: ada.ID, Parent: goal.ID, ParentGiven: true})
	e.task(board.NewTask{Title: "ada-open-2", Assignee: ada.ID})
	stuck := e.task(board.NewTask{Title: "bob-stuck", Assignee: bob.ID})
	op := identity.Principal{TenantID: e.a.ID, TenantSlug: e.a.Slug, Kind: identity.KindOperator, CredentialID: "key:test", Scopes: identity.RoleOwner.Scopes()}
	_, err = e.board.Block(ctx, board.Operator(op, e.a), stuck.ID, "waiting on the customer")
	require.NoError(t, err)

	b := e.browser()
	e.signIn(b, identity.RoleViewer)
	all := b.get("/t/acme/dashboard/board?kind=task").body
	require.Less(t, strings.Index(all, `id="col-blocked"`), strings.Index(all, `id="col-open"`), "blocked comes first")
	require.Regexp(t, `id="col-blocked">.*?</a> <span class="badge">1</span>`, all)
	require.Regexp(t, `id="col-open">.*?</a> <span class="badge">2</span>`, all)
	require.Contains(t, all, "waiting on the customer", "a blocked card says why")

	sales := b.get("/t/acme/dashboard/board?kind=task&department=Sales").body
	require.Contains(t, sales, "ada-open-2")
	require.NotContains(t, sales, "bob-stuck")
	require.Regexp(t, `id="col-blocked">.*?</a> <span class="badge">0</span>`, sales)

	underGoal := b.get("/t/acme/dashboard/board?goal=" + goal.ID.String()).body
	require.Contains(t, underGoal, "ada-open-1")
	require.NotContains(t, underGoal, "ada-open-2")
	byBob := b.get("/t/acme/dashboard/board?assignee=" + bob.ID.String()).body
	require.Contains(t, byBob, "bob-stuck")
	require.NotContains(t, byBob, "ada-open")
	require.Equal(t, http.StatusBadRequest, b.get("/t/acme/dashboard/board?goal=nope").status)
	require.Contains(t, b.get("/t/acme/dashboard/board", "Accept-Language", "ja").body, `id="col-blocked"><a href="/t/acme/dashboard/board?status=blocked">停滞中</a>`)
}
