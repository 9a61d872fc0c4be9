package main

import (
	"context"
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/ui"
)

// uiFrame builds the web UI's frame (layout, catalog, CSRF). Its CSRF key
// derives from the OAuth signing secret, so every replica accepts every
// other's forms.
func (a *app) uiFrame(ctx context.Context, baseURL string) (*ui.Frame, error) {
	secret := []byte(a.cfg.OAuth.HMACSecret)
	if len(secret) == 0 {
		var err error
		if secret, err = a.stores.credentials.ServerSecret(ctx); err != nil {
			return nil, fmt.Errorf("load the web UI's signing secret: %w", err)
		}
	}
	return ui.NewFrame(ui.FrameConfig{BaseURL: baseURL, Secret: secret, SessionCookie: oauth.SessionCookieName, Preferences: a.stores.identity, Logger: a.log.With("area", "ui")})
}

// mountDashboard registers the operator dashboard. It signs members in
// with the authorization server's sessions (resolver.Sessions), previews
// tool lists with the MCP endpoint's registry and policy inputs, and
// counts form posts in Redis.
func (a *app) mountDashboard(e *echo.Echo, resolver *auth.Resolver, frame *ui.Frame, reg *tools.Registry) {
	deps := ui.Deps{Identity: a.ids, Sessions: resolver.Sessions, Audit: a.stores.audit, Tools: reg,
		Subjects: tools.NewSubjects(a.stores.identity, a.grants, 0), Logger: a.log.With("area", "dashboard"),
		AuditLog: a.stores.audit, Tail: audit.Tail{Store: a.stores.audit}, Grants: a.grants, Streams: a.streams,
		Clients: a.stores.credentials, OAuth: a.oauth, Responsibilities: a.responsibilities, Board: a.board,
		SandboxRuns: a.stores.sandboxRuns, Computer: a.computer, ComputerSessions: a.stores.computer, DBSources: a.dbSources,
		Knowledge: a.knowledge, Workspaces: a.workspace, Upstreams: a.upstreams}
	if a.rdb != nil {
		deps.Limiter = a.rateLimiter()
	}
	ui.NewDashboard(frame, deps).Register(e, resolver.LoadTenant())
}
