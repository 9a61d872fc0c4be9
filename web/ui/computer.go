package ui

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// sessionsShown bounds the computer-use sessions the page lists.
const sessionsShown = 50

func (d *Dashboard) computerRoutes(g *echo.Group) {
	g.GET("/computer", d.page(identity.ReadTenant, d.withComputer(d.computerSessions)))
	g.GET("/computer/:session", d.page(identity.ReadTenant, d.withComputer(d.computerSession)))
	g.GET("/computer/:session/screenshot", d.page(identity.ReadTenant, d.withComputer(d.screenshot)))
	g.POST("/computer/:session/stop", d.confirmFirst(identity.ManageAgents, "confirm.stop_session", "session.stop", d.action("stopComputerSession", identity.ManageAgents, d.withComputer(d.stopSession))))
}

// withComputer answers 503 on a server built without computer use.
func (d *Dashboard) withComputer(h Handler) Handler {
	return func(c echo.Context, v *View) error {
		if d.d.Computer == nil || d.d.ComputerSessions == nil {
			return fault.New(fault.Unavailable, "computer use is not served here")
		}
		return h(c, v)
	}
}

type sessionsData struct {
	Sessions []computer.Session
	Names    map[uuid.UUID]string
}

func (d *Dashboard) computerSessions(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	ss, err := d.d.ComputerSessions.TenantSessions(ctx, v.Tenant.ID, sessionsShown)
	if err != nil {
		return err
	}
	names, err := d.agentNames(ctx, v.Tenant.ID)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "computer.title", "computer", sessionsData{Sessions: ss, Names: names}
	return d.f.Render(c, http.StatusOK, "computer", v)
}

// sessionParam resolves the :session id inside the member's tenant.
func (d *Dashboard) sessionParam(c echo.Context, v *View) (computer.Session, error) {
	id, err := pathUUID(c, "session", "session")
	if err != nil {
		return computer.Session{}, err
	}
	v.Object = "computer_session:" + id.String()
	s, err := d.d.ComputerSessions.Session(c.Request().Context(), v.Tenant.ID, id)
	if fault.Is(err, fault.NotFound) {
		return s, fault.New(fault.NotFound, "no such session")
	}
	return s, err
}

type sessionData struct {
	Session computer.Session
	Agent   string
	// Shot is the latest masked screenshot, nil when there is none.
	Shot *computer.Screenshot
}

func (d *Dashboard) computerSession(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	s, err := d.sessionParam(c, v)
	if err != nil {
		return err
	}
	data := sessionData{Session: s}
	if a, err := d.d.Identity.Agent(ctx, v.Tenant.ID, s.AgentID); err == nil {
		data.Agent = a.Name
	}
	if s.Open() {
		shot, err := d.d.Computer.LatestScreenshot(ctx, v.Tenant.ID, s.ID)
		switch {
		case err == nil:
			shot.PNG = nil // served by its own route
			data.Shot = &shot
		case !fault.Is(err, fault.NotFound):
			return err
		}
	}
	v.Title, v.Nav, v.Data = "session.title", "computer", data
	return d.f.Render(c, http.StatusOK, "session", v)
}

// screenshot serves an open session's latest screenshot. Only masked
// pictures are kept (masking happens on the worker, before a picture
// leaves it), so nothing else can be served here. It is never cached.
func (d *Dashboard) screenshot(c echo.Context, v *View) error {
	s, err := d.sessionParam(c, v)
	if err != nil {
		return err
	}
	shot, err := d.d.Computer.LatestScreenshot(c.Request().Context(), v.Tenant.ID, s.ID)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("Content-Disposition", "inline")
	return c.Blob(http.StatusOK, "image/png", shot.PNG)
}

// stopSession stops an employee's open session as computer_session_stop
// does: its browser is removed and its workspace released.
func (d *Dashboard) stopSession(c echo.Context, v *View) error {
	s, err := d.sessionParam(c, v)
	if err != nil {
		return err
	}
	if !s.Open() {
		return fault.New(fault.Conflict, "the session has already ended")
	}
	if err := d.d.Computer.StopForOperator(c.Request().Context(), v.Tenant.ID, s.AgentID, s.ID); err != nil {
		return err
	}
	return back(c, v, "computer/"+s.ID.String(), "session_stopped")
}
