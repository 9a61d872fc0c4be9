package ui_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
)

// TestTheOverviewIsTriage: the overview counts what needs a person now
// (pending requests, blocked tasks, refusals this hour against the hour
// before), and the grouped menu shows the pending requests as a badge.
func TestTheOverviewIsTriage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "x_a", "x_b")
	e.request(ada, "x_a")
	e.request(ada, "x_b")
	stuck := e.task(board.NewTask{Title: "stuck", Assignee: ada.ID})
	op := identity.Principal{TenantID: e.a.ID, TenantSlug: e.a.Slug, Kind: identity.KindOperator, CredentialID: "key:test", Scopes: identity.RoleOwner.Scopes()}
	_, err := e.board.Block(ctx, board.Operator(op, e.a), stuck.ID, "waiting")
	require.NoError(t, err)
	for _, ago := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 90 * time.Minute} {
		require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: "agent:" + ada.ID.String(),
			Tool: "os_click", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: time.Now().Add(-ago)}))
	}
	b := e.browser()
	e.signIn(b, identity.RoleOwner)
	p := b.get("/t/acme/dashboard/overview").body
	require.Contains(t, p, `<strong>2</strong> <span class="label">requests waiting for a decision`)
	require.Contains(t, p, `<strong>1</strong> <span class="label">blocked task<`, "one, in the singular")
	require.Contains(t, p, `<strong>3</strong> <span class="label">refusals in the last hour`)
	require.Contains(t, p, `the hour before: 1`)
	require.Contains(t, p, `<span class="group">Needs attention</span>`)
	require.Contains(t, p, `Requests and grants <span class="badge"><span aria-hidden="true">2</span>`)
	require.Contains(t, b.get("/t/acme/dashboard/overview", "Accept-Language", "ja").body, `<strong>2</strong> <span class="label">判断待ちのリクエスト`)
}
