package main

import (
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/api"
	"github.com/visorhq/visor/web/server"
	"github.com/visorhq/visor/worker"
)

// This file is where each area is wired in. Add your Register call to
// routes, your admin API resources to adminAPI, and your workers to
// registerJobs; keep each addition one line or a small block so parallel
// changes merge cleanly.

// routes registers every area's HTTP routes on the server.
func (a *app) routes(s *server.Server, baseURL string) error {
	store := postgres.NewIdentityStore(a.db)
	resolver := auth.NewResolver(store, store, auth.NewURLs(baseURL), a.log)
	trail, err := a.startAudit()
	if err != nil {
		return err
	}
	oauthAPI, err := a.mountOAuth(s.Echo(), resolver, baseURL)
	if err != nil {
		return err
	}
	a.adminAPI(resolver, append(oauthAPI, api.AuditResource(trail), api.ReservationsResource(postgres.NewReservationStore(a.db)))...).Register(s.Echo())
	mcpDeps := mcpDeps{
		families: []catalog.Family{a.grants},
		grants:   a.grants,
		streams: func(visible live.VisibleFunc, forget func(tenantID, agentID uuid.UUID)) (live.Streams, error) {
			return a.startLive(s, visible, forget)
		},
	}
	if err := a.mountMCP(s, resolver, trail, mcpDeps); err != nil {
		return err
	}
	return nil
}

// adminAPI builds the admin JSON API with every area's resources.
func (a *app) adminAPI(resolver *auth.Resolver, extra ...api.Resource) *api.API {
	adm := api.New(api.Deps{
		Identity: a.ids, Authenticate: resolver.AdminMiddleware(), PlatformToken: a.cfg.AdminToken, Logger: a.log,
	})
	// Other areas: adm.Add(yourResource)
	adm.Add(api.NewGrants(a.grants))
	adm.Add(extra...)
	return adm
}

// errorHandler renders errors returned by handlers: fault codes map to
// HTTP statuses in web/api, the one place that mapping lives.
func (a *app) errorHandler() echo.HTTPErrorHandler { return api.ErrorHandler(a.log) }

// registerJobs adds every area's job workers and periodic jobs.
func (a *app) registerJobs(reg *worker.Registry) {
	worker.RegisterMaintenance(reg, postgres.NewIdentityStore(a.db))
	a.registerOAuthJobs(reg)
}
