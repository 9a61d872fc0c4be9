package api

import (
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/rounds"
)

// Runtime is the admin API of how rounds reach AI employees' runtimes:
// push endpoints (per employee, or the tenant's default) whose signing
// secret is shown once, and the wake-ups themselves, where operators read
// the dead letters and send them again. Add it with API.Add.
type Runtime struct{ svc *rounds.Service }

// NewRuntime returns the runtime resource.
func NewRuntime(svc *rounds.Service) Runtime { return Runtime{svc: svc} }

// NewEndpoint is the body of PUT /tenants/{tenant}/runtime/endpoint and
// PUT /tenants/{tenant}/agents/{agent}/runtime/endpoint.
type NewEndpoint struct {
	// URL is an https URL on a public address (a development allowlist
	// may admit others); redirects are not followed.
	URL string `json:"url"`
}

// EndpointSecret is a push endpoint as set, with its signing secret
// (Standard Webhooks, "whsec_…"), shown only in this answer.
type EndpointSecret struct {
	Endpoint rounds.Endpoint `json:"endpoint"`
	Secret   string          `json:"secret"`
}

// EndpointList is the tenant's push endpoints.
type EndpointList struct {
	Endpoints  []rounds.Endpoint `json:"endpoints"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

// WakeupList is a page of wake-ups, newest first.
type WakeupList struct {
	Wakeups    []rounds.Wakeup `json:"wakeups"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// Operations lists the runtime routes.
func (r Runtime) Operations() []Operation {
	states := []string{string(rounds.Queued), string(rounds.Ready), string(rounds.HandedOut), string(rounds.Delivered),
		string(rounds.Dead), string(rounds.Cancelled)}
	return []Operation{
		{Method: http.MethodPut, Path: "/tenants/:tenant/runtime/endpoint", ID: "setTenantRuntimeEndpoint", Tag: "runtime", Needs: identity.ManageAgents,
			Summary: "Set the tenant's default push endpoint for wake-ups; answers its signing secret, shown once (replacing rotates it)",
			Request: NewEndpoint{}, Response: EndpointSecret{}, Handler: r.setTenant},
		{Method: http.MethodPut, Path: "/tenants/:tenant/agents/:agent/runtime/endpoint", ID: "setAgentRuntimeEndpoint", Tag: "runtime", Needs: identity.ManageAgents,
			Summary: "Set an AI employee's own push endpoint; answers its signing secret, shown once (replacing rotates it)",
			Request: NewEndpoint{}, Response: EndpointSecret{}, Handler: r.setAgent},
		{Method: http.MethodGet, Path: "/tenants/:tenant/runtime/endpoints", ID: "listRuntimeEndpoints", Tag: "runtime", Needs: identity.ReadTenant,
			Summary: "List push endpoints (never their secrets), oldest first", Query: Paged(), Response: EndpointList{}, Handler: r.list},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/runtime/endpoints/:endpoint", ID: "deleteRuntimeEndpoint", Tag: "runtime", Needs: identity.ManageAgents,
			Summary: "Delete a push endpoint; its wake-ups then wait for a long-poll or the tenant's default", Status: http.StatusNoContent, Handler: r.delete},
		{Method: http.MethodGet, Path: "/tenants/:tenant/runtime/wakeups", ID: "listWakeups", Tag: "runtime", Needs: identity.ReadTenant,
			Summary: "List wake-ups newest first; state=dead lists the dead letters",
			Query: append([]QueryParam{{Name: "state", Type: "string", Description: "Only wake-ups in this delivery state.", Enum: states},
				{Name: "agent", Type: "string", Description: "Only this AI employee's wake-ups: its id or name."}}, PageParams...),
			Response: WakeupList{}, Handler: r.wakeups},
		{Method: http.MethodGet, Path: "/tenants/:tenant/runtime/wakeups/:wakeup", ID: "getWakeup", Tag: "runtime", Needs: identity.ReadTenant,
			Summary: "Read a wake-up and its delivery state", Response: rounds.Wakeup{}, Handler: r.wakeup},
		{Method: http.MethodPost, Path: "/tenants/:tenant/runtime/wakeups/:wakeup/retry", ID: "retryWakeup", Errors: []int{http.StatusConflict}, Tag: "runtime", Needs: identity.ManageAgents,
			Summary: "Send a dead letter again (409 when it is not dead)", Response: rounds.Wakeup{}, Handler: r.retry},
	}
}

func (r Runtime) setTenant(c echo.Context) error { return r.set(c, uuid.Nil) }

func (r Runtime) setAgent(c echo.Context) error {
	id, err := resolveAgent(c, AgentRef(c.Param("agent")))
	if err != nil {
		return err
	}
	return r.set(c, id)
}

func (r Runtime) set(c echo.Context, agent uuid.UUID) error {
	var in NewEndpoint
	if err := decode(c, &in); err != nil {
		return err
	}
	if strings.TrimSpace(in.URL) == "" {
		return fault.New(fault.Invalid, "url is required")
	}
	e, secret, err := r.svc.SetEndpoint(c.Request().Context(), tenant(c).ID, agent, in.URL)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, EndpointSecret{Endpoint: e, Secret: secret})
}

func (r Runtime) list(c echo.Context) error {
	es, err := r.svc.Endpoints(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, es, func(e rounds.Endpoint) string { return oldestFirst(e.CreatedAt, e.ID) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, EndpointList{Endpoints: nonNil(page), NextCursor: next})
}

func (r Runtime) delete(c echo.Context) error {
	id, err := pathID(c, "endpoint")
	if err != nil {
		return err
	}
	if err := r.svc.DeleteEndpoint(c.Request().Context(), tenant(c).ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (r Runtime) wakeups(c echo.Context) error {
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	f := rounds.Filter{State: rounds.State(c.QueryParam("state")), Limit: min(page.Limit, rounds.MaxList-1) + 1}
	if f.State != "" && !f.State.Valid() {
		return fault.New(fault.Invalid, "state must be one of queued, ready, handed_out, delivered, dead, cancelled")
	}
	if v := c.QueryParam("agent"); v != "" {
		if f.Agent, err = bodyAgent(c, "agent", AgentRef(v)); err != nil {
			return err
		}
	}
	if f.After, err = page.After(); err != nil {
		return err
	}
	ws, err := r.svc.Wakeups(c.Request().Context(), tenant(c).ID, f)
	if err != nil {
		return err
	}
	out := WakeupList{}
	out.Wakeups, out.NextCursor = cut(ws, f.Limit-1, rounds.PositionOf)
	return c.JSON(http.StatusOK, out)
}

func (r Runtime) wakeup(c echo.Context) error {
	id, err := pathID(c, "wakeup")
	if err != nil {
		return err
	}
	w, err := r.svc.Wakeup(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

func (r Runtime) retry(c echo.Context) error {
	id, err := pathID(c, "wakeup")
	if err != nil {
		return err
	}
	w, err := r.svc.Retry(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}
