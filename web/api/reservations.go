package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	agentsvc "github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// ReservationsResource serves the names agent_remove reserved: operators
// list them and release one so MCP callers may use the name again.
func ReservationsResource(store agentsvc.Reservations) Resource { return reservationsAPI{store: store} }

type reservationsAPI struct{ store agentsvc.Reservations }

// NameReservation is one reserved agent name.
type NameReservation struct {
	Name       string    `json:"name"`
	AgentID    uuid.UUID `json:"agent_id"`
	ReservedBy string    `json:"reserved_by"`
	ReservedAt time.Time `json:"reserved_at"`
}

// NameReservationList is the body of GET .../agent-name-reservations.
type NameReservationList struct {
	Reservations []NameReservation `json:"reservations"`
	NextCursor   string            `json:"next_cursor,omitempty"`
}

func (r reservationsAPI) Operations() []Operation {
	p := "/tenants/:tenant/agent-name-reservations"
	return []Operation{
		{Method: http.MethodGet, Path: p, ID: "listAgentNameReservations", Tag: "agents", Needs: identity.ReadTenant,
			Summary: "List agent names reserved by agent_remove, by name", Query: Paged(), Response: NameReservationList{}, Handler: r.list},
		{Method: http.MethodDelete, Path: p + "/:name", ID: "releaseAgentNameReservation", Tag: "agents", Needs: identity.ManageAgents,
			Summary: "Release a reserved agent name so create_agent accepts it again", Status: http.StatusNoContent, Handler: r.release},
	}
}

func (r reservationsAPI) list(c echo.Context) error {
	rs, err := r.store.List(c.Request().Context(), tenant(c).ID)
	if err != nil {
		return err
	}
	page, next, err := pageBy(c, rs, func(v agentsvc.Reservation) string { return v.Name })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, NameReservationList{Reservations: mapSlice(page, func(v agentsvc.Reservation) NameReservation {
		return NameReservation{Name: v.Name, AgentID: v.AgentID, ReservedBy: v.ReservedBy, ReservedAt: v.ReservedAt}
	}), NextCursor: next})
}

func (r reservationsAPI) release(c echo.Context) error {
	name := c.Param("name")
	if !identity.ValidAgentName(name) {
		return fault.New(fault.NotFound, "the name %q is not reserved", name)
	}
	if err := r.store.Release(c.Request().Context(), tenant(c).ID, name); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
