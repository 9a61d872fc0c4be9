package ui

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// overviewShown bounds each list of the overview.
const overviewShown = 10

func (d *Dashboard) overviewRoutes(g *echo.Group) {
	g.GET("/overview", d.page(identity.ReadTenant, d.overview))
}

type overviewData struct {
	Active, Trashed int
	// Streams is nil when the live streams could not be read.
	Streams  []live.Connection
	NoLive   bool
	Refusals []audit.Entry
	Pending  []grants.Request
	Names    liveData
	// CanAudit: the member may read the audit trail (the refusals).
	CanAudit bool
	// Triage counts what needs a person now.
	Triage triage
}

func (d *Dashboard) overview(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	as, err := d.d.Identity.ListAgents(ctx, v.Tenant.ID)
	if err != nil {
		return err
	}
	data := overviewData{CanAudit: v.Can(string(identity.ReadAudit))}
	for _, a := range as {
		if a.Status == identity.AgentActive {
			data.Active++
		} else {
			data.Trashed++
		}
	}
	if ld, err := d.liveData(c, v); err == nil {
		data.Names, data.Streams = ld, ld.Streams
	} else {
		data.NoLive = true
		if data.Names.Agents, err = d.agentNames(ctx, v.Tenant.ID); err != nil {
			return err
		}
	}
	if data.CanAudit && d.d.AuditLog != nil {
		if data.Refusals, err = d.d.AuditLog.List(ctx, v.Tenant.ID, audit.Filter{Outcome: audit.OutcomeRefused, Limit: overviewShown}); err != nil {
			return err
		}
	}
	if d.d.Grants != nil {
		if data.Pending, err = d.d.Grants.ListRequests(ctx, v.Tenant.ID, grants.Pending, nil, overviewShown); err != nil {
			return err
		}
	}
	if data.Triage, err = d.triage(ctx, v, data.CanAudit); err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "overview.title", "overview", data
	return d.f.Render(c, http.StatusOK, "overview", v)
}
