// Package oauth serves Visor's OAuth 2.1 authorization server over HTTP,
// one issuer per tenant ({base}/t/{slug}): RFC 8414/9728 metadata, member
// sign-in and consent pages (drawn by the web UI through Pages), and the
// authorization, token, revocation and registration endpoints, with the
// rate limits, cookies and redirects that belong to them. The fosite
// provider, its storage and the resolution of tokens and sessions to
// principals are auth/oauth's.
package oauth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"

	"github.com/visorhq/visor/auth"
	provider "github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Limit allows N events per window Per.
type Limit = provider.Limit

// Config configures the authorization server: the provider's settings
// (auth/oauth) and those of its endpoints. Zero limits take the defaults in
// brackets.
type Config struct {
	provider.Config
	// LoginLimit bounds failed sign-ins per tenant and source address,
	// and per tenant and email, or per browser for one the member signed
	// in with before [10 per 5m]; a successful sign-in does not count.
	LoginLimit Limit
	// RegisterLimit bounds dynamic registration attempts per tenant and
	// source address (an IPv6 /64 counts as one address) [20 per hour].
	RegisterLimit Limit
	// RegisterCeiling bounds the clients dynamic registration creates per
	// tenant, from every address together [1000 per hour].
	RegisterCeiling Limit
	// Tools is the MCP endpoint's tool registry: the consent page names
	// the tools each scope lets the client call. Nil names none.
	Tools *tools.Registry
	// Pages renders the sign-in, consent and error pages (the web UI);
	// required.
	Pages Pages
}

func (c *Config) defaults() {
	if c.LoginLimit.N == 0 {
		c.LoginLimit = Limit{N: 10, Per: 5 * time.Minute}
	}
	if c.RegisterLimit.N == 0 {
		c.RegisterLimit = Limit{N: 20, Per: time.Hour}
	}
	if c.RegisterCeiling.N == 0 {
		c.RegisterCeiling = Limit{N: 1000, Per: time.Hour}
	}
}

// Server is the HTTP side of the authorization server of every tenant.
type Server struct {
	cfg      Config
	urls     auth.URLs
	core     *provider.Server
	fosite   fosite.OAuth2Provider
	identity *identity.Service
	log      *slog.Logger
	pages    Pages
	// The sign-in limits: per source address, and per member, or per
	// browser (loginDevice) in place of loginEmail for a browser the
	// member signed in with before.
	loginIP     *provider.Limiter
	loginEmail  *provider.Limiter
	loginDevice *provider.Limiter
	// register counts registration attempts per tenant and source;
	// registerCeiling counts the clients they created per tenant.
	register        *provider.Limiter
	registerCeiling *provider.Limiter
}

// New builds the authorization server: its provider (auth/oauth, which
// reads or creates the shared HMAC secret) and its endpoints.
func New(ctx context.Context, cfg Config, store credentials.Store, ids *identity.Service, log *slog.Logger) (*Server, error) {
	cfg.defaults()
	if cfg.Pages == nil {
		return nil, fmt.Errorf("the OAuth server needs the web UI's pages (Config.Pages)")
	}
	core, err := provider.New(ctx, cfg.Config, store, ids, log)
	if err != nil {
		return nil, err
	}
	lim := func(name string, l Limit) *provider.Limiter { return provider.NewLimiter(name, l, cfg.Limiter) }
	return &Server{cfg: cfg, urls: core.URLs(), core: core, fosite: core.Fosite(), identity: ids, log: log, pages: cfg.Pages,
		loginIP: lim("login-ip", cfg.LoginLimit), loginEmail: lim("login-email", cfg.LoginLimit), loginDevice: lim("login-device", cfg.LoginLimit),
		register: lim("register-source", cfg.RegisterLimit), registerCeiling: lim("register-tenant", cfg.RegisterCeiling)}, nil
}

// Provider is the server's core (auth/oauth): it resolves tokens and
// sessions for auth.Resolver (Attach) and manages clients for the admin API.
func (s *Server) Provider() *provider.Server { return s.core }

// Register adds the OAuth routes to e. tenant is the middleware that loads
// the tenant of /t/:tenant routes (auth.Resolver.LoadTenant).
func (s *Server) Register(e *echo.Echo, tenant echo.MiddlewareFunc) {
	for _, p := range []string{"/.well-known/oauth-authorization-server/t/:tenant", "/t/:tenant/.well-known/oauth-authorization-server"} {
		e.GET(p, s.serverMetadata, tenant, cors)
		e.OPTIONS(p, preflight, cors)
	}
	for _, p := range []string{"/.well-known/openid-configuration/t/:tenant", "/t/:tenant/.well-known/openid-configuration"} {
		e.GET(p, s.noOpenID, tenant, cors)
		e.OPTIONS(p, preflight, cors)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource/t/:tenant/mcp", "/.well-known/oauth-protected-resource/t/:tenant",
		"/t/:tenant/.well-known/oauth-protected-resource", "/t/:tenant/mcp/.well-known/oauth-protected-resource"} {
		e.GET(p, s.resourceMetadata, tenant, cors)
		e.OPTIONS(p, preflight, cors)
	}
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		e.GET(p, s.noRootMetadata, cors)
		e.OPTIONS(p, preflight, cors)
	}
	g := e.Group("/t/:tenant", tenant, withSource)
	g.GET("/oauth/authorize", s.authorize)
	g.POST("/oauth/authorize", s.authorize)
	g.POST("/oauth/token", s.token, cors)
	g.POST("/oauth/revoke", s.revoke, cors)
	g.POST("/oauth/register", s.registerClient, cors)
	g.GET("/login", s.loginPage)
	g.POST("/login", s.login)
	g.POST("/logout", s.logout)
	for _, p := range []string{"/oauth/token", "/oauth/revoke", "/oauth/register"} {
		g.OPTIONS(p, preflight, cors)
	}
}

func preflight(c echo.Context) error { return c.NoContent(http.StatusNoContent) }

// cors lets browser-based MCP clients read metadata and call the token,
// revocation and registration endpoints. None of them uses cookies.
func cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, MCP-Protocol-Version")
		return next(c)
	}
}

// withSource puts the request's source address (provider.SourceKey) in its
// context, for limits counted below the handlers (metadata document
// fetches).
func withSource(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		c.SetRequest(r.WithContext(provider.WithSource(r.Context(), provider.SourceKey(c.RealIP()))))
		return next(c)
	}
}
