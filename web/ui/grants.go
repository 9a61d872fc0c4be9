package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
)

// requestsShown bounds the requests the page lists per state.
const requestsShown = 100

func (d *Dashboard) grantRoutes(g *echo.Group) {
	g.GET("/requests", d.page(identity.ReadTenant, d.requests))
	g.POST("/requests/:request/approve", d.action("approveCapabilityRequest", identity.ManageGrants, d.approveRequest))
	g.POST("/requests/:request/deny", d.action("denyCapabilityRequest", identity.ManageGrants, d.denyRequest))
	g.POST("/requests/decide", d.action("decideCapabilityRequests", identity.ManageGrants, d.decideRequests))
	g.POST("/grants/:grant/revoke", d.confirmFirst(identity.ManageGrants, "confirm.revoke_grant", "grants.revoke", d.action("revokeGrant", identity.ManageGrants, d.revokeGrant)))
}

type requestsData struct {
	Status   string // the requests shown: pending, approved, denied or "" (all)
	Statuses []string
	Requests []grants.Request
	Grants   []grants.Grant
	Ended    bool // ended and expired grants are listed too
	Names    map[uuid.UUID]string
}

func (d *Dashboard) requests(c echo.Context, v *View) error {
	if d.d.Grants == nil {
		return fault.New(fault.Unavailable, "capability requests are not served here")
	}
	ctx := c.Request().Context()
	data := requestsData{Status: c.QueryParam("status"), Statuses: []string{string(grants.Pending), string(grants.Approved), string(grants.Denied)},
		Ended: c.QueryParam("ended") == "1"}
	if data.Status == "" && !c.QueryParams().Has("status") {
		data.Status = string(grants.Pending)
	}
	if data.Status != "" && !grants.Status(data.Status).Valid() {
		return fault.New(fault.Invalid, "status must be pending, approved or denied")
	}
	var err error
	if data.Requests, err = d.d.Grants.ListRequests(ctx, v.Tenant.ID, grants.Status(data.Status), nil, requestsShown); err != nil {
		return err
	}
	if data.Grants, err = d.d.Grants.ListGrants(ctx, v.Tenant.ID, uuid.Nil, !data.Ended); err != nil {
		return err
	}
	if data.Names, err = d.agentNames(ctx, v.Tenant.ID); err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "requests.title", "requests", data
	return d.f.Render(c, http.StatusOK, "requests", v)
}

// agentNames maps the tenant's agent ids to names.
func (d *Dashboard) agentNames(ctx context.Context, tenantID uuid.UUID) (map[uuid.UUID]string, error) {
	as, err := d.d.Identity.ListAgents(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	names := make(map[uuid.UUID]string, len(as))
	for _, a := range as {
		names[a.ID] = a.Name
	}
	return names, nil
}

// pathUUID reads a path parameter naming a record; one that is no id names
// nothing.
func pathUUID(c echo.Context, name, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param(name))
	if err != nil {
		return uuid.Nil, fault.New(fault.NotFound, "no such %s", what)
	}
	return id, nil
}

// formLifetime reads the approval form's lifetime in hours (0: until
// revoked; empty: the default).
func formLifetime(c echo.Context) (time.Duration, error) {
	h := strings.TrimSpace(c.FormValue("hours"))
	if h == "" {
		return time.Duration(defaultLifetime) * time.Hour, nil
	}
	n, err := strconv.Atoi(h)
	if err != nil || n < 0 || time.Duration(n)*time.Hour > grants.MaxTTL {
		return 0, fault.New(fault.Invalid, "the lifetime must be a whole number of hours up to %d", int(grants.MaxTTL/time.Hour))
	}
	return time.Duration(n) * time.Hour, nil
}

// returnTo is the page a decision goes back to: the overview when it was
// taken there, else the requests page.
func returnTo(c echo.Context) string {
	if c.FormValue("return") == "overview" {
		return "overview"
	}
	return "requests"
}

// approveRequest approves a pending request with the lifetime chosen, in
// hours (0: until revoked).
func (d *Dashboard) approveRequest(c echo.Context, v *View) error {
	id, err := pathUUID(c, "request", "capability request")
	if err != nil {
		return err
	}
	v.Object = "capability_request:" + id.String()
	ttl, err := formLifetime(c)
	if err != nil {
		return err
	}
	_, _, err = d.d.Grants.Approve(c.Request().Context(), v.Tenant.ID, id, grants.Approval{By: v.Principal.ID(), TTL: ttl,
		Note: strings.TrimSpace(c.FormValue("note"))})
	if err != nil {
		return err
	}
	return back(c, v, returnTo(c), "request_approved")
}

func (d *Dashboard) denyRequest(c echo.Context, v *View) error {
	id, err := pathUUID(c, "request", "capability request")
	if err != nil {
		return err
	}
	v.Object = "capability_request:" + id.String()
	if _, err := d.d.Grants.Deny(c.Request().Context(), v.Tenant.ID, id, v.Principal.ID(), strings.TrimSpace(c.FormValue("note"))); err != nil {
		return err
	}
	return back(c, v, returnTo(c), "request_denied")
}

func (d *Dashboard) revokeGrant(c echo.Context, v *View) error {
	id, err := pathUUID(c, "grant", "grant")
	if err != nil {
		return err
	}
	v.Object = "grant:" + id.String()
	if _, err := d.d.Grants.Revoke(c.Request().Context(), v.Tenant.ID, id, v.Principal.ID()); err != nil {
		return err
	}
	return back(c, v, "requests", "grant_revoked")
}

// Live reports whether g is in force now.
func (r requestsData) Live(g grants.Grant) bool { return g.LiveAt(time.Now()) }
