package main

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/mcp"
	"github.com/visorhq/visor/web/server"
)

// subjectCacheTTL bounds how long a replica answers tools/list and
// tools/call from a cached tenant or agent row; the live hub's fresh reads
// refresh it, so a notified client re-reads the new list.
const subjectCacheTTL = time.Second

// families are the tool families the MCP endpoint serves. Add yours here.
// It must not use a's connections: `visor docs` calls it on a zero app to
// list the declarations.
func (a *app) families() []catalog.Family {
	return []catalog.Family{
		agents.NewService(a.ids, a.stores.identity, a.stores.reservations),
		a.grants,
		a.board,
		a.responsibilities,
		a.computer,
		a.sandboxTools(),
		a.dbSources,
		a.knowledge,
		a.upstreams,
		a.workspace,
	}
}

// mountMCP builds the policy's view of callers of the tools in reg, starts
// the live hub on that view, and mounts the endpoint at /t/:tenant/mcp
// behind auth's middleware.
func (a *app) mountMCP(ctx context.Context, s *server.Server, resolver *auth.Resolver, reg *tools.Registry) error {
	subjects := tools.NewSubjects(a.stores.identity, a.grants, subjectCacheTTL)
	// Every change this replica commits or hears drops the policy's
	// cached rows and the resolver's cached credentials of the tenant.
	forget := func(tenantID, agentID uuid.UUID) {
		resolver.Forget(tenantID, agentID)
		subjects.Forget(tenantID, agentID)
	}
	a.local.hear(forget)
	hub, err := a.startLive(ctx, s, tools.VisibleFunc(reg, subjects), forget)
	if err != nil {
		return err
	}
	// The upstream servers' kept sessions close with the endpoint.
	if err := a.start(ctx, a.upstreams); err != nil {
		return err
	}
	ep := mcp.New(reg, subjects, a.stores.audit, hub, mcp.Options{
		Logger:           a.log.With("area", "mcp"),
		Version:          version,
		AllowedOrigins:   a.cfg.MCPOrigins,
		Metrics:          mcp.NewMetrics(s.Registry()),
		ResourceMetadata: func(_ *http.Request, slug string) string { return resolver.URLs().ResourceMetadata(slug) },
		Streams:          mcp.StreamLimits{Max: a.cfg.Scale.MaxStreams, PerCredential: a.cfg.Scale.StreamsPerCred},
	})
	s.AddCheck(server.Check{Name: "streams", Fn: ep.Ready})
	ep.Register(s.Echo(), resolver.Middleware(""))
	s.ChecksOwnBody(mcp.Route)
	s.ParkWhen(mcp.MayPark)
	s.OnShutdown(ep.Close)
	return nil
}
