package ui

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/web/api"
)

// runsShownPerPage is how many script runs the page lists at a time.
const runsShownPerPage = 25

// inFlightFor is how long after its start a run still logged as running
// is listed as in flight: past the longest timeout and a long queue, a
// run the log never heard end from (its server stopped) is not.
const inFlightFor = sandbox.MaxTimeout + 30*time.Minute

func (d *Dashboard) sandboxRoutes(g *echo.Group) {
	g.GET("/sandbox", d.page(identity.ReadTenant, d.sandboxRuns))
}

type sandboxData struct {
	InFlight []sandbox.Run
	Runs     []sandbox.Run
	Names    map[uuid.UUID]string
	Next     string
	Paged    bool
	// Since is when the oldest run listed as in flight may have started.
	Since time.Time
}

func (d *Dashboard) sandboxRuns(c echo.Context, v *View) error {
	if d.d.SandboxRuns == nil {
		return fault.New(fault.Unavailable, "script runs are not logged here")
	}
	ctx := c.Request().Context()
	if len(c.QueryParam("cursor")) > 512 {
		return fault.New(fault.Invalid, "the page cursor is not valid; start from the first page")
	}
	data := sandboxData{Since: time.Now().Add(-inFlightFor)}
	f := sandbox.RunFilter{Limit: runsShownPerPage + 1}
	var p sandbox.RunPosition
	ok, err := cursorOf(c, &p)
	if err != nil {
		return err
	}
	if ok {
		f.After, data.Paged = &p, true
	}
	if data.Runs, err = d.d.SandboxRuns.Runs(ctx, v.Tenant.ID, f); err != nil {
		return err
	}
	if len(data.Runs) > runsShownPerPage {
		data.Runs = data.Runs[:runsShownPerPage]
		last := data.Runs[len(data.Runs)-1]
		data.Next = api.EncodeCursor(sandbox.RunPosition{At: last.StartedAt, ID: last.ID})
	}
	if !data.Paged {
		if data.InFlight, err = d.d.SandboxRuns.Runs(ctx, v.Tenant.ID, sandbox.RunFilter{InFlight: true, StartedAfter: data.Since, Limit: 100}); err != nil {
			return err
		}
	}
	if data.Names, err = d.agentNames(ctx, v.Tenant.ID); err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "sandbox.title", "sandbox", data
	return d.f.Render(c, http.StatusOK, "sandbox", v)
}

// Stale reports whether r is logged as running but started too long ago
// to be in flight.
func (s sandboxData) Stale(r sandbox.Run) bool {
	return r.State == sandbox.RunRunning && r.StartedAt.Before(s.Since)
}
