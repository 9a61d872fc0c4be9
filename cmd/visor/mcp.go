package main

import (
	"context"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/mcp"
	"github.com/visorhq/visor/web/server"
)

// mountMCP serves /t/:tenant/mcp: the whole tool catalog behind the one
// policy, a durable audit trail, and live tool lists (every stream the
// endpoint opens is tracked by this replica's hub).
func (a *app) mountMCP(s *server.Server, resolver *auth.Resolver) error {
	store := postgres.NewIdentityStore(a.db)
	trail := postgres.NewAuditLog(a.db, 4, a.log)
	if err := trail.Start(context.Background()); err != nil {
		return err
	}
	a.stop = append(a.stop, trail.Stop)
	reg := catalog.New(agents.NewService(a.ids, store, postgres.NewReservationStore(a.db)), a.grants)
	// No subject cache: a replica that holds no stream of a changed caller
	// hears of no recompute, and tools/list there must still be current.
	subjects := tools.NewSubjects(store, a.grants, 0)
	hub, err := a.startLive(s, tools.VisibleFunc(reg, subjects))
	if err != nil {
		return err
	}
	mcp.New(reg, subjects, trail, hub, mcp.Options{Logger: a.log}).Register(s.Echo(), resolver.Middleware(""))
	return nil
}
