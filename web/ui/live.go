package ui

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

func (d *Dashboard) liveRoutes(g *echo.Group) {
	g.GET("/live", d.page(identity.ReadTenant, d.liveStreams))
}

type liveData struct {
	Streams  []live.Connection
	Replicas int
	Agents   map[uuid.UUID]string
	Members  map[uuid.UUID]string
}

func (d *Dashboard) liveStreams(c echo.Context, v *View) error {
	data, err := d.liveData(c, v)
	if err != nil {
		return err
	}
	v.Title, v.Nav, v.Data = "live.title", "live", data
	return d.f.Render(c, http.StatusOK, "live", v)
}

// liveData lists the tenant's streams on every replica, with the names of
// the agents and members holding them.
func (d *Dashboard) liveData(c echo.Context, v *View) (liveData, error) {
	if d.d.Streams == nil {
		return liveData{}, fault.New(fault.Unavailable, "live streams are not tracked here")
	}
	ctx := c.Request().Context()
	cs, err := d.d.Streams.Connected(ctx, v.Tenant.ID)
	if err != nil {
		return liveData{}, fault.Newf(fault.Unavailable, err, "the list of live streams is unavailable; retry in a moment")
	}
	data := liveData{Streams: cs, Members: map[uuid.UUID]string{}}
	if data.Agents, err = d.agentNames(ctx, v.Tenant.ID); err != nil {
		return liveData{}, err
	}
	replicas := map[string]bool{}
	for _, s := range cs {
		replicas[s.Replica] = true
		if s.MemberID != uuid.Nil {
			if _, ok := data.Members[s.MemberID]; !ok {
				if m, err := d.d.Identity.Member(ctx, v.Tenant.ID, s.MemberID); err == nil {
					data.Members[s.MemberID] = m.Email
				}
			}
		}
	}
	data.Replicas = len(replicas)
	return data, nil
}

// Holder names who holds stream s: its agent, else its member; "" when
// neither is known (a key made by the CLI).
func (l liveData) Holder(s live.Connection) string {
	if s.AgentID != uuid.Nil {
		if n, ok := l.Agents[s.AgentID]; ok {
			return n
		}
		return s.AgentID.String()
	}
	return l.Members[s.MemberID]
}
