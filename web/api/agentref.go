package api

import (
	"context"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// AgentRef names an agent the way a path does: by id or by name. Request
// bodies and query parameters that name an agent take one, so a caller
// never needs a name in one place and an id in another.
type AgentRef string

// JSONSchema describes AgentRef.
func (AgentRef) JSONSchema() map[string]any {
	return map[string]any{"type": "string", "description": "An agent (AI employee): its id or its name.", "examples": []string{"assistant"}}
}

// agentsKey holds, in an admin request's echo context, the identity service agents
// are looked up in (set by Register for every operation).
const agentsKey = "visor.api.agents"

// agentLookup is what resolving an agent reference needs.
type agentLookup interface {
	AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error)
}

// resolveAgent returns the id of the tenant's agent ref names. An id is
// taken as it is (the store checks it when it is used); a name is looked
// up. A ref that names no agent is fault.NotFound, which callers turn into
// a 400 when the ref came in a body.
func resolveAgent(c echo.Context, ref AgentRef) (uuid.UUID, error) {
	s := string(ref)
	if id, err := uuid.Parse(s); err == nil {
		return id, nil
	}
	if !identity.ValidAgentName(s) {
		return uuid.Nil, fault.New(fault.NotFound, "no agent is named %q", s)
	}
	store, ok := c.Get(agentsKey).(agentLookup)
	if !ok {
		return uuid.Nil, fault.New(fault.Internal, "agent lookup is not wired")
	}
	a, err := store.AgentByName(c.Request().Context(), tenant(c).ID, s)
	if fault.Is(err, fault.NotFound) {
		return uuid.Nil, fault.New(fault.NotFound, "no agent is named %q", s)
	}
	return a.ID, err
}

// bodyAgent resolves a reference that came in a request body or query:
// naming no agent is the caller's mistake there (400), not a missing page.
func bodyAgent(c echo.Context, field string, ref AgentRef) (uuid.UUID, error) {
	id, err := resolveAgent(c, ref)
	if fault.Is(err, fault.NotFound) {
		return uuid.Nil, fault.New(fault.Invalid, "%s names no agent of this tenant (give its id or name)", field)
	}
	return id, err
}
