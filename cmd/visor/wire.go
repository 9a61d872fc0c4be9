package main

import (
	"context"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/web/api"
	"github.com/visorhq/visor/web/server"
	"github.com/visorhq/visor/worker"
)

// This file is where each area is wired in, in one straight line: openApp
// built the connections, stores and domain services; edges starts the
// background services the HTTP areas need and mounts the areas. Add your
// Register call to edges, your admin API resources to adminAPI, your tool
// family to families (mcp.go) and your workers to registerJobs; keep each
// addition one line or a small block so parallel changes merge cleanly.
//
// A background service implements lifecycle.Service (Start(ctx) error,
// Stop()); start it with a.start(ctx, svc) where it is built, and app.Close
// stops it after the HTTP server has drained, in the reverse order.

// edges starts what the HTTP areas need and registers every area's routes
// on the server.
func (a *app) edges(ctx context.Context, s *server.Server, baseURL string) error {
	resolver := auth.NewResolver(a.stores.identity, a.stores.identity, auth.NewURLs(baseURL), a.log)
	if err := a.start(ctx, a.stores.audit); err != nil {
		return err
	}
	// One registry: the consent page names the tools the endpoint serves.
	reg := catalog.New(a.families()...)
	frame, err := a.uiFrame(ctx, baseURL)
	if err != nil {
		return err
	}
	oauthAPI, err := a.mountOAuth(ctx, s.Echo(), resolver, baseURL, reg, frame)
	if err != nil {
		return err
	}
	a.adminAPI(resolver, baseURL, append(oauthAPI, api.AuditResource(a.stores.audit), api.ReservationsResource(a.stores.reservations))...).Register(s.Echo())
	if err := a.mountRuntime(ctx, s, resolver); err != nil {
		return err
	}
	if err := a.mountMCP(ctx, s, resolver, reg); err != nil {
		return err
	}
	a.mountArtifacts(s.Echo(), baseURL)
	// After the MCP endpoint: the dashboard lists the streams its hub holds.
	a.mountDashboard(s.Echo(), resolver, frame, reg)
	return nil
}

// adminAPI builds the admin JSON API with every area's resources.
func (a *app) adminAPI(resolver *auth.Resolver, baseURL string, extra ...api.Resource) *api.API {
	adm := api.New(api.Deps{
		Identity: a.ids, Authenticate: resolver.AdminMiddleware(), PlatformToken: a.cfg.AdminToken, BaseURL: baseURL,
		Audit: a.stores.audit, Logger: a.log,
	})
	// Other areas: adm.Add(yourResource)
	adm.Add(api.NewGrants(a.grants))
	adm.Add(api.NewBoard(a.board), api.NewRuntime(a.rounds))
	adm.Add(api.NewResponsibilities(a.responsibilities), api.NewQuestions(a.responsibilities))
	adm.Add(api.NewDBSources(a.dbSources))
	adm.Add(api.NewUpstreams(a.upstreams))
	adm.Add(api.NewKnowledge(a.knowledge))
	adm.Add(api.NewWorkspaces(a.workspace))
	adm.Add(extra...)
	return adm
}

// errorHandler renders errors returned by handlers: fault codes map to
// HTTP statuses in web/api, the one place that mapping lives.
func (a *app) errorHandler() echo.HTTPErrorHandler { return api.ErrorHandler(a.log) }

// registerJobs adds every area's job workers and periodic jobs.
func (a *app) registerJobs(reg *worker.Registry) {
	worker.RegisterMaintenance(reg, a.stores.identity)
	a.registerOAuthJobs(reg)
	a.registerRoundJobs(reg)
	worker.RegisterResponsibilities(reg, a.responsibilities, a.cfg.Scale.ResponsibilitiesConcurrency)
}
