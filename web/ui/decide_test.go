package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
)

// TestRequestsAreDecidedInOneRow: a pending request is one row whose
// lifetime defaults to a finite one ("until revoked" is a choice, offered
// last), decided from the overview or the requests page, alone or with
// others in bulk; a request decided meanwhile is reported, not hidden.
func TestRequestsAreDecidedInOneRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	ada := e.scopedAgent("ada", "x_a", "x_b", "x_c", "x_d", "x_e")
	one, two, three, four := e.request(ada, "x_a"), e.request(ada, "x_b"), e.request(ada, "x_c"), e.request(ada, "x_d")
	b := e.browser()
	e.signIn(b, identity.RoleOperator)

	ov := b.get("/t/acme/dashboard/overview")
	require.Equal(t, http.StatusOK, ov.status)
	require.Contains(t, ov.body, `<option value="8" selected>8 hours</option>`, "a finite lifetime is the default")
	require.Contains(t, ov.body, `<option value="1">1 hour</option>`, "singular")
	require.Less(t, strings.Index(ov.body, `value="168"`), strings.Index(ov.body, `<option value="0">`), "until revoked comes last")
	require.Contains(t, ov.body, `formaction="/t/acme/dashboard/requests/`+one.ID.String()+`/deny"`, "deny in the same row")

	// Approve from the overview, with the default lifetime: back to the overview.
	res := b.submit("/t/acme/dashboard/overview", "/t/acme/dashboard/requests/"+one.ID.String()+"/approve", url.Values{"return": {"overview"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	require.Equal(t, "/t/acme/dashboard/overview?done=request_approved", res.header.Get("Location"))
	gs, err := e.grants.ListGrants(ctx, e.a.ID, ada.ID, true)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	require.NotNil(t, gs[0].ExpiresAt, "a grant approved with the defaults ends")
	require.WithinDuration(t, time.Now().Add(8*time.Hour), *gs[0].ExpiresAt, time.Minute)

	// Bulk: approve two for a day, then deny the last with one stale.
	res = b.submit("/t/acme/dashboard/requests", "/t/acme/dashboard/requests/decide",
		url.Values{"request": {two.ID.String(), three.ID.String()}, "decision": {"approve"}, "hours": {"24"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	for _, r := range []grants.Request{two, three} {
		got, err := e.grants.Request(ctx, e.a.ID, r.ID)
		require.NoError(t, err)
		require.Equal(t, grants.Approved, got.Status)
	}
	res = b.submit("/t/acme/dashboard/requests", "/t/acme/dashboard/requests/decide",
		url.Values{"request": {four.ID.String(), two.ID.String()}, "decision": {"deny"}})
	require.Equal(t, http.StatusConflict, res.status, res.body)
	require.Contains(t, res.body, "1 of the 2 selected requests could not be decided")
	got, err := e.grants.Request(ctx, e.a.ID, four.ID)
	require.NoError(t, err)
	require.Equal(t, grants.Denied, got.Status, "the others are decided")
	require.NotEmpty(t, e.rows("decideCapabilityRequests"), "a bulk decision is audited")

	e.request(ada, "x_e")
	viewer := e.browser()
	e.signIn(viewer, identity.RoleViewer)
	page := viewer.get("/t/acme/dashboard/overview").body
	require.Contains(t, page, "<code>x_e</code>", "a viewer sees the request")
	require.NotContains(t, page, `id="bulk-decide"`, "a viewer is offered no decision")
}
