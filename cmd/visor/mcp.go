package main

import (
	"context"

	"github.com/google/uuid"
	"net/http"
	"time"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/mcp"
	"github.com/visorhq/visor/web/server"
)

// subjectCacheTTL bounds how long a replica answers tools/list and
// tools/call from a cached tenant or agent row; the live hub's fresh reads
// refresh it, so a notified client re-reads the new list.
const subjectCacheTTL = time.Second

// mcpDeps are what the MCP endpoint needs from other areas: extra tool
// families (grants' capability_request), the grant reader and the live hub.
type mcpDeps struct {
	families []catalog.Family
	grants   tools.Grants
	// streams starts the live hub on the policy's view; forget drops the
	// policy's cached rows for each change event the replica hears.
	streams func(visible live.VisibleFunc, forget func(tenantID, agentID uuid.UUID)) (live.Streams, error)
}

// mountMCP builds the tool registry, the policy, the audit trail and the
// endpoint, and mounts it at /t/:tenant/mcp behind auth's middleware.
func (a *app) mountMCP(s *server.Server, resolver *auth.Resolver, trail *postgres.AuditLog, d mcpDeps) error {
	store := postgres.NewIdentityStore(a.db)
	fams := append([]catalog.Family{agents.NewService(a.ids, store, postgres.NewReservationStore(a.db))}, d.families...)
	reg := catalog.New(fams...)
	if d.grants == nil {
		d.grants = tools.NoGrants{}
	}
	subjects := tools.NewSubjects(store, d.grants, subjectCacheTTL)
	// Every change this replica commits or hears drops the policy's
	// cached rows and the resolver's cached credentials of the tenant.
	forget := func(tenantID, agentID uuid.UUID) {
		resolver.Forget(tenantID, agentID)
		subjects.Forget(tenantID, agentID)
	}
	a.local.hear(forget)
	var streams live.Streams = live.NoStreams{}
	if d.streams != nil {
		var err error
		if streams, err = d.streams(tools.VisibleFunc(reg, subjects), forget); err != nil {
			return err
		}
	}
	ep := mcp.New(reg, subjects, trail, streams, mcp.Options{
		Logger:           a.log.With("area", "mcp"),
		ResourceMetadata: func(_ *http.Request, slug string) string { return resolver.URLs().ResourceMetadata(slug) },
	})
	ep.Register(s.Echo(), resolver.Middleware(""))
	s.Echo().Server.RegisterOnShutdown(ep.Close)
	return nil
}

// startAudit starts the audit trail's group-commit writers; app.Close
// stops them after the HTTP server has drained.
func (a *app) startAudit() (*postgres.AuditLog, error) {
	trail := postgres.NewAuditLog(a.db, 4, a.log.With("area", "audit"))
	if err := trail.Start(context.Background()); err != nil {
		return nil, err
	}
	a.stop = append(a.stop, trail.Stop)
	return trail, nil
}
