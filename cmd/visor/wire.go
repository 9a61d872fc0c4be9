package main

import (
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/server"
	"github.com/visorhq/visor/worker"
)

// This file is where each area is wired in. Add your Register call to
// routes and your workers to registerJobs; keep each addition one line or a
// small block so parallel changes merge cleanly.

// routes registers every area's HTTP routes on the server.
func (a *app) routes(s *server.Server, baseURL string) error {
	_ = baseURL
	return nil
}

// errorHandler renders errors returned by handlers.
func (a *app) errorHandler() echo.HTTPErrorHandler { return nil }

// registerJobs adds every area's job workers and periodic jobs.
func (a *app) registerJobs(reg *worker.Registry) {
	worker.RegisterMaintenance(reg, postgres.NewIdentityStore(a.db))
}
