// Package oauth is Visor's OAuth 2.1 authorization server, one issuer per
// tenant ({base}/t/{slug}), built on ory/fosite with storage in Postgres.
// It serves RFC 8414/9728 metadata, member sign-in and consent pages, the
// authorization, token, revocation and registration endpoints, and
// resolves its access tokens to external principals for auth.Resolver.
package oauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Config configures the authorization server. Zero durations take the
// defaults in brackets.
type Config struct {
	BaseURL         string        // external base URL, e.g. https://visor.example
	AccessTokenTTL  time.Duration // [1h]
	RefreshTokenTTL time.Duration // [30 days]
	CodeTTL         time.Duration // [5m]
	SessionTTL      time.Duration // member sign-in sessions [12h]
	// HMACSecret signs codes and tokens; at least 32 bytes. When empty a
	// secret is created once in Postgres and shared by every replica.
	HMACSecret []byte
	// Fetcher configures Client ID Metadata Document fetching.
	Fetcher     FetcherConfig
	MetadataTTL time.Duration // how long a fetched document is trusted [1h]
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
	// FetchLimit bounds metadata document fetches per tenant and source
	// address [20 per minute]; FetchCeiling bounds them per tenant, from
	// every address together [600 per minute].
	FetchLimit   Limit
	FetchCeiling Limit
	// Limiter shares rate limit counts between replicas (Redis); nil
	// counts in each replica's memory.
	Limiter SharedLimiter
	// Tools is the MCP endpoint's tool registry: the consent page names
	// the tools each scope lets the client call. Nil names none.
	Tools *tools.Registry
	// Pages renders the sign-in, consent and error pages (the web UI);
	// required.
	Pages Pages
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.AccessTokenTTL, time.Hour)
	def(&c.RefreshTokenTTL, 30*24*time.Hour)
	def(&c.CodeTTL, 5*time.Minute)
	def(&c.SessionTTL, 12*time.Hour)
	def(&c.MetadataTTL, time.Hour)
	if c.LoginLimit.N == 0 {
		c.LoginLimit = Limit{N: 10, Per: 5 * time.Minute}
	}
	if c.FetchLimit.N == 0 {
		c.FetchLimit = Limit{N: 20, Per: time.Minute}
	}
	if c.FetchCeiling.N == 0 {
		c.FetchCeiling = Limit{N: 600, Per: time.Minute}
	}
	if c.RegisterLimit.N == 0 {
		c.RegisterLimit = Limit{N: 20, Per: time.Hour}
	}
	if c.RegisterCeiling.N == 0 {
		c.RegisterCeiling = Limit{N: 1000, Per: time.Hour}
	}
}

// Server is the authorization server of every tenant.
type Server struct {
	cfg        Config
	urls       auth.URLs
	provider   fosite.OAuth2Provider
	store      credentials.Store
	identity   *identity.Service
	clients    *clientLoader
	log        *slog.Logger
	pages      Pages
	loginIP    *limiter
	loginEmail *limiter
	// loginDevice counts failures from a browser the member signed in
	// with before, in place of loginEmail.
	loginDevice *limiter
	deviceKey   []byte
	// register counts registration attempts per tenant and source;
	// registerCeiling counts the clients they created per tenant.
	register        *limiter
	registerCeiling *limiter
	now             func() time.Time
}

// New builds the server. It reads (or creates) the shared HMAC secret.
func New(ctx context.Context, cfg Config, store credentials.Store, ids *identity.Service, log *slog.Logger) (*Server, error) {
	cfg.defaults()
	secret := cfg.HMACSecret
	if len(secret) == 0 {
		var err error
		if secret, err = store.ServerSecret(ctx); err != nil {
			return nil, fmt.Errorf("load the OAuth signing secret: %w", err)
		}
	}
	if cfg.Pages == nil {
		return nil, fmt.Errorf("the OAuth server needs the web UI's pages (Config.Pages)")
	}
	if len(secret) < 32 {
		return nil, fmt.Errorf("the OAuth HMAC secret must be at least 32 bytes")
	}
	urls := auth.NewURLs(cfg.BaseURL)
	s := &Server{cfg: cfg, urls: urls, store: store, identity: ids, log: log, now: time.Now, pages: cfg.Pages,
		loginIP: newLimiter("login-ip", cfg.LoginLimit, cfg.Limiter), loginEmail: newLimiter("login-email", cfg.LoginLimit, cfg.Limiter),
		loginDevice: newLimiter("login-device", cfg.LoginLimit, cfg.Limiter),
		register:    newLimiter("register-source", cfg.RegisterLimit, cfg.Limiter), registerCeiling: newLimiter("register-tenant", cfg.RegisterCeiling, cfg.Limiter)}
	// Derive separate keys so the whole configured secret counts, whatever
	// its length, and the device key never equals the token key.
	hmacKey := sha256.Sum256(append([]byte("visor oauth hmac\x00"), secret...))
	device := sha256.Sum256(append([]byte("visor device\x00"), secret...))
	s.deviceKey = device[:]
	s.clients = &clientLoader{store: store, urls: urls, fetcher: NewFetcher(cfg.Fetcher), ttl: cfg.MetadataTTL, now: time.Now,
		fetches: newLimiter("cimd-fetch-source", cfg.FetchLimit, cfg.Limiter), fetchCeiling: newLimiter("cimd-fetch-tenant", cfg.FetchCeiling, cfg.Limiter)}
	fc := &fosite.Config{
		AccessTokenLifespan:            cfg.AccessTokenTTL,
		RefreshTokenLifespan:           cfg.RefreshTokenTTL,
		AuthorizeCodeLifespan:          cfg.CodeTTL,
		GlobalSecret:                   hmacKey[:],
		EnforcePKCE:                    true,
		EnablePKCEPlainChallengeMethod: false,
		ScopeStrategy:                  fosite.ExactScopeStrategy,
		AudienceMatchingStrategy:       fosite.ExactAudienceMatchingStrategy,
		RefreshTokenScopes:             []string{}, // every grant gets a refresh token; no "offline" scope needed
		ClientSecretsHasher:            argonHasher{},
		// Registration already allowed only https, loopback http and
		// private-use schemes (ValidRedirectURI); this refuses plain http
		// elsewhere once more and lets the private-use schemes through.
		RedirectSecureChecker:  fosite.IsRedirectURISecure,
		OmitRedirectScopeParam: true,
		MinParameterEntropy:    1, // state is optional (see noState)
	}
	st := &fositeStore{store: store, clients: s.clients}
	s.provider = compose.Compose(fc, st, &compose.CommonStrategy{CoreStrategy: compose.NewOAuth2HMACStrategy(fc)},
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2TokenIntrospectionFactory,
		compose.OAuth2TokenRevocationFactory,
		compose.OAuth2PKCEFactory,
	)
	return s, nil
}

// Attach makes r accept this server's access tokens and member sessions.
func (s *Server) Attach(r *auth.Resolver) {
	r.OAuth = s
	r.Sessions = s
}

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
