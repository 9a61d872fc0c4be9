package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

type agents struct{ a *API }

// NewAgent is the body of POST /tenants/{tenant}/agents.
type NewAgent struct {
	Name        string                 `json:"name"`
	Department  string                 `json:"department,omitempty"`
	ReportsTo   *AgentRef              `json:"reports_to,omitempty"`
	Role        string                 `json:"role,omitempty"`
	BudgetCents int64                  `json:"budget_cents,omitempty"`
	Settings    identity.AgentSettings `json:"settings"`
}

// AgentPatch is the body of PATCH /tenants/{tenant}/agents/{agent}; absent
// fields stay. reports_to null clears the manager. The name is permanent.
type AgentPatch struct {
	Department  *string          `json:"department,omitempty"`
	ReportsTo   OptionalAgentRef `json:"reports_to,omitzero"`
	Role        *string          `json:"role,omitempty"`
	BudgetCents *int64           `json:"budget_cents,omitempty"`
}

// OptionalAgentRef is a patch field holding an agent's id or name, or JSON
// null ("none"); Set tells a present field from an absent one.
type OptionalAgentRef struct {
	Ref AgentRef // "" for null
	Set bool
}

// UnmarshalJSON accepts an id or name string, or null.
func (o *OptionalAgentRef) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Ref = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[string]()}
	}
	if s == "" {
		return fault.New(fault.Invalid, "reports_to must name an agent (id or name), or be null")
	}
	o.Ref = AgentRef(s)
	return nil
}

// JSONSchema describes OptionalAgentRef: an agent reference or null.
func (OptionalAgentRef) JSONSchema() map[string]any {
	return map[string]any{"type": []string{"string", "null"}, "description": "An agent's id or name; null for none."}
}

// AgentSettingsUpdate is the body of PUT .../settings. With
// settings_version set, the update is refused (409) when the agent's
// settings changed since that version was read.
type AgentSettingsUpdate struct {
	Settings        identity.AgentSettings `json:"settings"`
	SettingsVersion int64                  `json:"settings_version,omitempty"`
}

// AgentList is the body of GET /tenants/{tenant}/agents.
type AgentList struct {
	Agents     []Agent `json:"agents"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

func (r agents) Operations() []Operation {
	p := "/tenants/:tenant/agents"
	return []Operation{
		{Method: http.MethodGet, Path: p, ID: "listAgents", Tag: "agents", Needs: identity.ReadTenant,
			Summary: "List the tenant's agents, trashed ones included, by name", Query: Paged(), Response: AgentList{}, Handler: r.list},
		{Method: http.MethodPost, Path: p, ID: "createAgent", Errors: []int{http.StatusConflict}, Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Create an agent (AI employee)", Request: NewAgent{}, Response: Agent{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: p + "/:agent", ID: "getAgent", Tag: "agents", Needs: identity.ReadTenant,
			Summary: "Get an agent by id or name", Response: Agent{}, Handler: r.get},
		{Method: http.MethodPatch, Path: p + "/:agent", ID: "updateAgent", Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Change an agent's department, manager, role or budget", Request: AgentPatch{}, Response: Agent{}, Handler: r.update},
		{Method: http.MethodDelete, Path: p + "/:agent", ID: "purgeAgent", Errors: []int{http.StatusConflict}, Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Delete a trashed agent for good, freeing its name", Status: http.StatusNoContent, Handler: r.purge},
		{Method: http.MethodPost, Path: p + "/:agent/trash", ID: "trashAgent", Errors: []int{http.StatusConflict}, Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Move an agent to the trash; its keys stop working", Response: Agent{}, Handler: r.trash},
		{Method: http.MethodPost, Path: p + "/:agent/restore", ID: "restoreAgent", Errors: []int{http.StatusConflict}, Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Bring a trashed agent back", Response: Agent{}, Handler: r.restore},
		{Method: http.MethodGet, Path: p + "/:agent/settings", ID: "getAgentSettings", Tag: "agents", Needs: identity.ReadTenant,
			Summary: "Get an agent's capabilities, permissions and fork settings", Response: AgentSettings{}, Handler: r.getSettings},
		{Method: http.MethodPut, Path: p + "/:agent/settings", ID: "putAgentSettings", Errors: []int{http.StatusConflict}, Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Replace an agent's settings; takes effect live", Request: AgentSettingsUpdate{}, Response: AgentSettings{}, Handler: r.putSettings},
	}
}

// agentID resolves the :agent parameter, an id or a name, inside the
// request's tenant.
func (r agents) agentID(c echo.Context) (uuid.UUID, error) {
	return resolveAgent(c, AgentRef(c.Param("agent")))
}

func (r agents) list(c echo.Context) error {
	as, err := r.a.ids.ListAgents(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, as, func(a identity.Agent) string { return a.Name })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AgentList{Agents: mapSlice(page, agentOut), NextCursor: next})
}

func (r agents) create(c echo.Context) error {
	var in NewAgent
	if err := decode(c, &in); err != nil {
		return err
	}
	na := identity.NewAgent{Name: in.Name, Department: in.Department, Role: in.Role, BudgetCents: in.BudgetCents, Settings: in.Settings}
	if in.ReportsTo != nil {
		id, err := bodyAgent(c, "reports_to", *in.ReportsTo)
		if err != nil {
			return err
		}
		na.ReportsTo = id
	}
	a, err := r.a.ids.CreateAgent(c.Request().Context(), tenant(c).ID, na)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, agentOut(a))
}

func (r agents) get(c echo.Context) error {
	return r.withAgent(c, func(ctx context.Context, tid, id uuid.UUID) (identity.Agent, error) {
		return r.a.ids.Agent(ctx, tid, id)
	})
}

func (r agents) update(c echo.Context) error {
	var in AgentPatch
	if err := decode(c, &in); err != nil {
		return err
	}
	var manager uuid.UUID
	if in.ReportsTo.Set && in.ReportsTo.Ref != "" {
		var err error
		if manager, err = bodyAgent(c, "reports_to", in.ReportsTo.Ref); err != nil {
			return err
		}
	}
	return r.withAgent(c, func(ctx context.Context, tid, id uuid.UUID) (identity.Agent, error) {
		return r.a.ids.UpdateAgent(ctx, tid, id, func(a *identity.Agent) error {
			if in.Department != nil {
				a.Department = *in.Department
			}
			if in.ReportsTo.Set {
				a.ReportsTo = manager
			}
			if in.Role != nil {
				a.Role = *in.Role
			}
			if in.BudgetCents != nil {
				a.BudgetCents = *in.BudgetCents
			}
			return nil
		})
	})
}

func (r agents) trash(c echo.Context) error { return r.withAgent(c, r.a.ids.TrashAgent) }

func (r agents) restore(c echo.Context) error { return r.withAgent(c, r.a.ids.RestoreAgent) }

func (r agents) purge(c echo.Context) error {
	id, err := r.agentID(c)
	if err != nil {
		return err
	}
	if err := r.a.ids.PurgeAgent(c.Request().Context(), tenant(c).ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (r agents) getSettings(c echo.Context) error {
	id, err := r.agentID(c)
	if err != nil {
		return err
	}
	a, err := r.a.ids.Agent(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AgentSettings{Settings: a.Settings, SettingsVersion: a.SettingsVersion})
}

func (r agents) putSettings(c echo.Context) error {
	var in AgentSettingsUpdate
	if err := decode(c, &in); err != nil {
		return err
	}
	id, err := r.agentID(c)
	if err != nil {
		return err
	}
	a, err := r.a.ids.UpdateAgent(c.Request().Context(), tenant(c).ID, id, func(a *identity.Agent) error {
		if in.SettingsVersion != 0 && in.SettingsVersion != a.SettingsVersion {
			return fault.New(fault.Conflict, "the settings changed since version %d (now %d); read them again", in.SettingsVersion, a.SettingsVersion)
		}
		a.Settings = in.Settings
		return nil
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, AgentSettings{Settings: a.Settings, SettingsVersion: a.SettingsVersion})
}

func (r agents) withAgent(c echo.Context, fn func(ctx context.Context, tid, id uuid.UUID) (identity.Agent, error)) error {
	id, err := r.agentID(c)
	if err != nil {
		return err
	}
	a, err := fn(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, agentOut(a))
}
