package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/api"
)

// grantsFixture is the admin API with the grants resource, two tenants
// (each with an operator key) and acme's employee ada, whose scoped_tools
// name secret_*.
type grantsFixture struct {
	*fixture
	svc *grants.Service
	ada identity.Agent
}

func newGrantsFixture(t *testing.T) *grantsFixture {
	t.Helper()
	s := newStack(t)
	svc := grants.NewService(postgres.NewGrantStore(s.db), s.store, changes.Discard{}, tools.Match, s.log)
	f := s.serve(api.Deps{}, api.NewGrants(svc)).withGlobex()
	ada := f.agent(f.tenant, identity.NewAgent{Name: "ada",
		Settings: identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"secret_*"}}}})
	return &grantsFixture{fixture: f, svc: svc, ada: ada}
}

func (f *grantsFixture) ask(tool string) grants.Request {
	f.t.Helper()
	r, err := f.svc.Ask(context.Background(), identity.Principal{TenantID: f.tenant.ID, Kind: identity.KindEmployee, AgentID: f.ada.ID}, tool, "for task 7")
	require.NoError(f.t, err)
	return r
}

func TestOperatorApprovesAndRevokesThroughTheAPI(t *testing.T) {
	t.Parallel()
	f := newGrantsFixture(t)
	r := f.ask("secret_read")

	code, doc := f.do("GET", "/api/v1/openapi.json", "", "", nil)
	require.Equal(t, 200, code)
	require.Contains(t, doc, "approveCapabilityRequest", "the grants routes are documented")

	var list api.RequestList
	code, body := f.do("GET", "/api/v1/tenants/acme/grants/requests?status=pending", f.opKey, "", &list)
	require.Equal(t, 200, code, body)
	require.Len(t, list.Requests, 1)
	require.Equal(t, "secret_read", list.Requests[0].Tool)
	require.Equal(t, "for task 7", list.Requests[0].Reason)

	var ok api.Approved
	code, body = f.do("POST", "/api/v1/tenants/acme/grants/requests/"+r.ID.String()+"/approve", f.opKey, `{"ttl_seconds":3600,"note":"fine"}`, &ok)
	require.Equal(t, 200, code, body)
	require.Equal(t, grants.Approved, ok.Request.Status)
	require.NotNil(t, ok.Grant.ExpiresAt)
	require.Equal(t, "secret_read", ok.Grant.Tool)

	code, body = f.do("POST", "/api/v1/tenants/acme/grants/requests/"+r.ID.String()+"/approve", f.opKey, "", nil)
	require.Equal(t, 409, code, body)

	var gl api.GrantList
	code, _ = f.do("GET", "/api/v1/tenants/acme/grants?live=true&agent="+f.ada.ID.String(), f.opKey, "", &gl)
	require.Equal(t, 200, code)
	require.Len(t, gl.Grants, 1)

	var revoked grants.Grant
	code, body = f.do("DELETE", "/api/v1/tenants/acme/grants/"+ok.Grant.ID.String(), f.opKey, "", &revoked)
	require.Equal(t, 200, code, body)
	require.Equal(t, grants.Revoked, revoked.EndReason)
	code, _ = f.do("DELETE", "/api/v1/tenants/acme/grants/"+ok.Grant.ID.String(), f.opKey, "", nil)
	require.Equal(t, 409, code)
	code, _ = f.do("GET", "/api/v1/tenants/acme/grants?live=true", f.opKey, "", &gl)
	require.Equal(t, 200, code)
	require.Empty(t, gl.Grants)
}

func TestOperatorDeniesAndGrantsDirectly(t *testing.T) {
	t.Parallel()
	f := newGrantsFixture(t)
	r := f.ask("secret_read")
	var denied grants.Request
	code, body := f.do("POST", "/api/v1/tenants/acme/grants/requests/"+r.ID.String()+"/deny", f.opKey, `{"note":"no"}`, &denied)
	require.Equal(t, 200, code, body)
	require.Equal(t, grants.Denied, denied.Status)

	var g grants.Grant
	code, body = f.do("POST", "/api/v1/tenants/acme/grants", f.opKey, `{"agent":"`+f.ada.ID.String()+`","tool":"secret_*","ttl_seconds":60}`, &g)
	require.Equal(t, 201, code, body)
	require.Equal(t, "secret_*", g.Tool)
}

func TestGrantsAPIRefusesMistakesWithoutA500(t *testing.T) {
	t.Parallel()
	f := newGrantsFixture(t)
	r := f.ask("secret_read")
	approve := "/api/v1/tenants/acme/grants/requests/" + r.ID.String() + "/approve"
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", approve, `{"ttl_seconds":-5}`, 400},
		{"POST", approve, `{"ttl_seconds":99999999999}`, 400},
		{"POST", approve, `{"tool":"has space"}`, 400},
		{"POST", approve, `{"bogus":1}`, 400},
		{"POST", approve, `not json`, 400},
		{"POST", "/api/v1/tenants/acme/grants/requests/not-a-uuid/approve", "", 404},
		{"POST", "/api/v1/tenants/acme/grants/requests/" + f.ada.ID.String() + "/deny", "", 404},
		{"GET", "/api/v1/tenants/acme/grants/requests?status=maybe", "", 400},
		{"GET", "/api/v1/tenants/acme/grants?agent=nope", "", 400},
		{"POST", "/api/v1/tenants/acme/grants", `{"tool":"secret_read"}`, 400},
		{"POST", "/api/v1/tenants/acme/grants", `{"agent":"` + f.tenant.ID.String() + `","tool":"secret_read"}`, 400},
		{"DELETE", "/api/v1/tenants/acme/grants/" + f.ada.ID.String(), "", 404},
	} {
		code, body := f.do(tc.method, tc.path, f.opKey, tc.body, nil)
		require.Equal(t, tc.want, code, "%s %s %s: %s", tc.method, tc.path, tc.body, body)
	}
}

func TestGrantsAPITenantIsolation(t *testing.T) {
	t.Parallel()
	f := newGrantsFixture(t)
	r := f.ask("secret_read")

	// globex's operator, on its own tenant's routes, sees and reaches nothing of acme's.
	var list api.RequestList
	code, _ := f.do("GET", "/api/v1/tenants/globex/grants/requests", f.otherKey, "", &list)
	require.Equal(t, 200, code)
	require.Empty(t, list.Requests)
	code, _ = f.do("POST", "/api/v1/tenants/globex/grants/requests/"+r.ID.String()+"/approve", f.otherKey, "", nil)
	require.Equal(t, 404, code)
	code, _ = f.do("POST", "/api/v1/tenants/globex/grants", f.otherKey, `{"agent":"`+f.ada.ID.String()+`","tool":"secret_read"}`, nil)
	require.Equal(t, 400, code, "acme's agent is no agent of globex")
	// And acme's routes refuse globex's key.
	code, _ = f.do("GET", "/api/v1/tenants/acme/grants/requests", f.otherKey, "", nil)
	require.Contains(t, []int{401, 403, 404}, code)

	got, err := f.svc.Request(context.Background(), f.tenant.ID, r.ID)
	require.NoError(t, err)
	require.Equal(t, grants.Pending, got.Status)
}

// TestCapabilityRequestListPages: the list pages newest first with limit
// and an opaque cursor, next_cursor is absent on the last page, and a
// status filter pages the same way.
func TestCapabilityRequestListPages(t *testing.T) {
	t.Parallel()
	f := newGrantsFixture(t)
	f.svc.Limits = grants.RequestLimits{} // no per-employee limits: this test asks often
	var asked []uuid.UUID
	for i := range 7 {
		asked = append(asked, f.ask(fmt.Sprintf("secret_%d", i)).ID)
	}
	_, err := f.svc.Deny(context.Background(), f.tenant.ID, asked[0], "op", "")
	require.NoError(t, err)
	slices.Reverse(asked)

	pages := func(query string) (ids []uuid.UUID, sizes []int) {
		cursor := ""
		for range 10 {
			var list api.RequestList
			code, body := f.do("GET", "/api/v1/tenants/acme/grants/requests?limit=3"+query+cursor, f.opKey, "", &list)
			require.Equal(t, 200, code, body)
			sizes = append(sizes, len(list.Requests))
			for _, r := range list.Requests {
				ids = append(ids, r.ID)
			}
			if list.NextCursor == "" {
				return ids, sizes
			}
			cursor = "&cursor=" + list.NextCursor
		}
		t.Fatal("the pages never end")
		return nil, nil
	}
	ids, sizes := pages("")
	require.Equal(t, asked, ids, "every request once, newest first")
	require.Equal(t, []int{3, 3, 1}, sizes)
	ids, sizes = pages("&status=pending")
	require.Equal(t, asked[:6], ids)
	require.Equal(t, []int{3, 3}, sizes, "a full last page names no next page")

	for _, bad := range []string{"limit=0", "limit=501", "cursor=not-ours", "cursor=" + strings.Repeat("x", 2000)} {
		code, body := f.do("GET", "/api/v1/tenants/acme/grants/requests?"+bad, f.opKey, "", nil)
		require.Equal(t, 400, code, "%s: %s", bad, body)
	}
}
