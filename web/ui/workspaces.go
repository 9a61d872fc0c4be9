package ui

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/workspace"
)

func (d *Dashboard) workspaceRoutes(g *echo.Group) {
	g.GET("/workspaces", d.page(identity.ReadTenant, d.withWorkspaces(d.workspaces)))
	g.GET("/workspaces/:agent", d.page(identity.ReadTenant, d.withWorkspaces(d.workspaceDetail)))
	g.POST("/workspaces/:agent/stop", d.confirmFirst(identity.ManageAgents, "confirm.stop_workspace_sessions", "workspace.stop",
		d.action("stopWorkspaceSessions", identity.ManageAgents, d.withWorkspaces(d.stopWorkspaceSessions))))
	g.POST("/workspaces/:agent/reset", d.confirmFirst(identity.ManageAgents, "confirm.reset_workspace", "workspace.reset",
		d.action("resetWorkspace", identity.ManageAgents, d.withWorkspaces(d.resetWorkspace))))
}

// withWorkspaces answers 503 on a server built without workspaces.
func (d *Dashboard) withWorkspaces(h Handler) Handler {
	return func(c echo.Context, v *View) error {
		if d.d.Workspaces == nil {
			return fault.New(fault.Unavailable, "workspaces are not served here")
		}
		return h(c, v)
	}
}

type workspacesData struct {
	Workspaces []workspace.Overview
}

func (d *Dashboard) workspaces(c echo.Context, v *View) error {
	list, err := d.d.Workspaces.Workspaces(c.Request().Context(), v.Tenant.ID)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "workspaces.title", "workspaces", workspacesData{Workspaces: list}
	return d.f.Render(c, http.StatusOK, "workspaces", v)
}

func agentParam(c echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("agent"))
	if err != nil {
		return uuid.Nil, fault.New(fault.NotFound, "workspace not found")
	}
	return id, nil
}

func (d *Dashboard) workspaceDetail(c echo.Context, v *View) error {
	agent, err := agentParam(c)
	if err != nil {
		return err
	}
	det, err := d.d.Workspaces.Detail(c.Request().Context(), v.Tenant.ID, agent)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "workspace.title", "workspaces", det
	return d.f.Render(c, http.StatusOK, "workspace", v)
}

func (d *Dashboard) stopWorkspaceSessions(c echo.Context, v *View) error {
	agent, err := agentParam(c)
	if err != nil {
		return err
	}
	if _, err := d.d.Workspaces.StopSessions(c.Request().Context(), v.Tenant.ID, agent); err != nil {
		return err
	}
	v.Object = "agent:" + agent.String()
	return back(c, v, "workspaces/"+agent.String(), "workspace_sessions_stopped")
}

func (d *Dashboard) resetWorkspace(c echo.Context, v *View) error {
	agent, err := agentParam(c)
	if err != nil {
		return err
	}
	if _, err := d.d.Workspaces.Reset(c.Request().Context(), v.Tenant.ID, agent); err != nil {
		return err
	}
	v.Object = "agent:" + agent.String()
	return back(c, v, "workspaces/"+agent.String(), "workspace_reset")
}
