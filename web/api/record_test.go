package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/web/api"
)

// TestOperatorRowsStayInTheCallersTenant: a refused request is recorded in
// the trail of the tenant its credential belongs to, with the password it
// carried masked, and a credential of another tenant never writes a row
// into the tenant its path names.
func TestOperatorRowsStayInTheCallersTenant(t *testing.T) {
	acme := identity.Tenant{ID: uuid.New(), Slug: "acme"}
	var as identity.Principal
	trail := &audit.Memory{}
	e := bareAPI(acme, &as, trail)
	patch := func() int {
		req := httptest.NewRequest(http.MethodPatch, "/api/v1/tenants/acme/members/"+uuid.NewString(), strings.NewReader(`{"password":"hunter2hunter2"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code
	}

	viewer := uuid.New()
	as = identity.Principal{Kind: identity.KindOperator, TenantID: acme.ID, MemberID: viewer, Role: identity.RoleViewer,
		CredentialID: "session:1", Scopes: identity.RoleViewer.Scopes()}
	require.Equal(t, 403, patch())
	rows := trail.Entries()
	require.Len(t, rows, 1)
	require.Equal(t, acme.ID, rows[0].TenantID)
	require.Equal(t, "member:"+viewer.String(), rows[0].PrincipalID)
	require.Equal(t, audit.OutcomeRefused, rows[0].Outcome)
	require.Equal(t, "updateMember", rows[0].Action)
	require.Equal(t, `{"password":"(set)"}`, rows[0].Change)
	require.NotContains(t, rows[0].Change+rows[0].Message, "hunter2")

	as.TenantID = uuid.New() // a credential of another tenant
	require.Equal(t, 403, patch())
	require.Len(t, trail.Entries(), 1, "another tenant's credential wrote into acme's trail")
}

// bareAPI is the admin API without storage: every request is made by *as
// in tenant acme (read when the request comes), and each operator action
// is recorded into trail.
func bareAPI(acme identity.Tenant, as *identity.Principal, trail audit.Recorder, resources ...api.Resource) *echo.Echo {
	authn := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := auth.WithTenant(c.Request().Context(), acme)
			c.SetRequest(c.Request().WithContext(identity.WithPrincipal(ctx, *as)))
			return next(c)
		}
	}
	log := slog.New(slog.DiscardHandler)
	e := echo.New()
	e.HTTPErrorHandler = api.ErrorHandler(log)
	adm := api.New(api.Deps{Authenticate: authn, Audit: trail, Logger: log})
	adm.Add(resources...)
	adm.Register(e)
	return e
}

// TestARefusedReadIsAuditedAsARefusedWriteIs: a read the authority matrix
// refuses leaves a refused row in the caller's trail, like a refused
// change; a read let through leaves none.
func TestARefusedReadIsAuditedAsARefusedWriteIs(t *testing.T) {
	acme := identity.Tenant{ID: uuid.New(), Slug: "acme"}
	var as identity.Principal
	trail := &audit.Memory{}
	e := bareAPI(acme, &as, trail, readable{})
	get := func() int {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/tenants/acme/gadgets", nil))
		return rec.Code
	}

	as = identity.Principal{Kind: identity.KindOperator, TenantID: acme.ID, CredentialID: "key:k1", Scopes: []string{identity.ScopeToolsRead}}
	require.Equal(t, 403, get())
	rows := trail.Entries()
	require.Len(t, rows, 1, "a refused read leaves a row")
	require.Equal(t, acme.ID, rows[0].TenantID)
	require.Equal(t, audit.OutcomeRefused, rows[0].Outcome)
	require.Equal(t, "listGadgets", rows[0].Action)
	require.Equal(t, int64(403), rows[0].Code)
	require.Equal(t, audit.SourceAdminAPI, rows[0].Source)

	as.Scopes = []string{identity.ScopeAdminRead}
	require.Equal(t, 200, get())
	require.Len(t, trail.Entries(), 1, "a read let through leaves no row")
}

// readable is a resource with one read.
type readable struct{}

func (readable) Operations() []api.Operation {
	return []api.Operation{{Method: http.MethodGet, Path: "/tenants/:tenant/gadgets", ID: "listGadgets", Tag: "test",
		Needs: identity.ReadTenant, Summary: "list gadgets",
		Handler: func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]any{"gadgets": []string{}}) }}}
}

// failingTrail is an audit trail that cannot write.
type failingTrail struct{}

func (failingTrail) Record(context.Context, audit.Entry) error { return errors.New("postgres is down") }

// widgets is a resource whose create succeeds without storage.
type widgets struct{}

func (widgets) Operations() []api.Operation {
	return []api.Operation{{Method: http.MethodPost, Path: "/tenants/:tenant/widgets", ID: "createWidget", Tag: "test",
		Needs: identity.ManageAgents, Status: http.StatusCreated, Summary: "make a widget",
		Handler: func(c echo.Context) error { return c.JSON(http.StatusCreated, map[string]string{"id": "w1"}) }}}
}

// TestAChangeWithoutItsRowIsNotASuccess: when the audit trail cannot take
// the row of a change that succeeded, the caller is not told it succeeded:
// 503, saying the change was applied and its result withheld. With the
// trail working, the same request answers 201 with the handler's body.
func TestAChangeWithoutItsRowIsNotASuccess(t *testing.T) {
	acme := identity.Tenant{ID: uuid.New(), Slug: "acme"}
	p := identity.Principal{Kind: identity.KindOperator, TenantID: acme.ID, CredentialID: "key:1", Scopes: identity.AllScopes}
	post := func(trail audit.Recorder) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		bareAPI(acme, &p, trail, widgets{}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/tenants/acme/widgets", nil))
		return rec
	}
	ok := &audit.Memory{}
	rec := post(ok)
	require.Equal(t, 201, rec.Code)
	require.JSONEq(t, `{"id":"w1"}`, rec.Body.String())
	require.Len(t, ok.Entries(), 1)
	require.Equal(t, "widget:w1", ok.Entries()[0].Object)

	rec = post(failingTrail{})
	require.Equal(t, 503, rec.Code, rec.Body.String())
	require.Contains(t, rec.Body.String(), "the change was applied, but the audit trail could not record it")
	require.NotContains(t, rec.Body.String(), "w1\"}")
}
