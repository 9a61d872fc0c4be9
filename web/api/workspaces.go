package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/workspace"
)

// Workspaces is the admin API of AI employees' workspaces: usage, files
// (names and sizes, never contents), command sessions and artifacts;
// stopping sessions and resetting a workspace. Add it with API.Add.
type Workspaces struct{ svc *workspace.Service }

// NewWorkspaces returns the workspaces resource.
func NewWorkspaces(svc *workspace.Service) Workspaces { return Workspaces{svc: svc} }

// WorkspaceList is the body of GET /tenants/{tenant}/workspaces: one page
// of workspaces by id, and the cursor of the next when there may be more.
type WorkspaceList struct {
	Workspaces []workspace.Overview `json:"workspaces"`
	NextCursor string               `json:"next_cursor,omitempty"`
}

// SessionsStopped is the body of POST …/workspace/stop-sessions.
type SessionsStopped struct {
	Killed []string `json:"killed"`
}

// Operations lists the workspace routes.
func (r Workspaces) Operations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/workspaces", ID: "listWorkspaces", Tag: "workspaces", Needs: identity.ReadTenant,
			Summary: "List the AI employees' workspaces with their usage and whether a worker holds them", Response: WorkspaceList{}, Handler: r.list, Query: Paged()},
		{Method: http.MethodGet, Path: "/tenants/:tenant/agents/:agent/workspace", ID: "getWorkspace", Tag: "workspaces", Needs: identity.ReadTenant,
			Summary: "An AI employee's workspace: usage, revision and whether a worker holds it", Response: workspace.Overview{}, Handler: r.get},
		{Method: http.MethodPost, Path: "/tenants/:tenant/agents/:agent/workspace/stop-sessions", ID: "stopWorkspaceSessions", Tag: "workspaces",
			Needs: identity.ManageAgents, Summary: "Kill every command running in an AI employee's workspace", Response: SessionsStopped{}, Handler: r.stop},
		{Method: http.MethodPost, Path: "/tenants/:tenant/agents/:agent/workspace/reset", ID: "resetWorkspace", Tag: "workspaces", Needs: identity.ManageAgents,
			Summary:  "Empty an AI employee's workspace: its container stops unsaved and every saved revision goes (artifacts stay)",
			Response: workspace.Workspace{}, Handler: r.reset},
	}
}

// list pages through the tenant's workspaces by id (a tenant holds one
// per employee, so the page is cut from the whole list).
func (r Workspaces) list(c echo.Context) error {
	all, err := r.svc.Workspaces(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	spaces, next, err := pageBy(c, all, func(w workspace.Overview) string { return w.ID.String() })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, WorkspaceList{Workspaces: nonNil(spaces), NextCursor: next})
}

func (r Workspaces) get(c echo.Context) error {
	agent, err := resolveAgent(c, AgentRef(c.Param("agent")))
	if err != nil {
		return err
	}
	d, err := r.svc.Detail(c.Request().Context(), tenant(c).ID, agent)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, workspace.Overview{Workspace: d.Workspace, Live: d.Live})
}

func (r Workspaces) stop(c echo.Context) error {
	agent, err := resolveAgent(c, AgentRef(c.Param("agent")))
	if err != nil {
		return err
	}
	killed, err := r.svc.StopSessions(c.Request().Context(), tenant(c).ID, agent)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, SessionsStopped{Killed: killed})
}

func (r Workspaces) reset(c echo.Context) error {
	agent, err := resolveAgent(c, AgentRef(c.Param("agent")))
	if err != nil {
		return err
	}
	w, err := r.svc.Reset(c.Request().Context(), tenant(c).ID, agent)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}
