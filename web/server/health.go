package server

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (s *Server) routes() {
	s.e.GET("/healthz", s.healthz)
	s.e.GET("/readyz", s.readyz)
	s.e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})))
}

// healthz says the process is alive; it checks nothing else, so an
// orchestrator does not restart a healthy process because Postgres blinked.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz runs every check with a short timeout. It fails while draining, so
// load balancers stop sending new work before the listener closes.
func (s *Server) readyz(c echo.Context) error {
	out := map[string]string{}
	ok := !s.draining.Load()
	if !ok {
		out["server"] = "shutting down"
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	for _, ch := range s.opts.Checks {
		if err := ch.Fn(ctx); err != nil {
			ok = false
			out[ch.Name] = "unavailable"
			s.opts.Logger.WarnContext(ctx, "readiness check failed", "check", ch.Name, "err", err)
			continue
		}
		out[ch.Name] = "ok"
	}
	status, code := "ok", http.StatusOK
	if !ok {
		status, code = "unavailable", http.StatusServiceUnavailable
	}
	return c.JSON(code, map[string]any{"status": status, "checks": out})
}
