// Package oauth is the core of Visor's OAuth 2.1 authorization server, one
// issuer per tenant ({base}/t/{slug}): the ory/fosite provider and its
// Postgres storage, clients (registered or fetched as Client ID Metadata
// Documents), member sessions, and the resolution of access tokens and
// sessions to principals for auth.Resolver. It serves no HTTP: the
// endpoints, cookies and pages are web/oauth's.
package oauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
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
	// FetchLimit bounds metadata document fetches per tenant and source
	// address [20 per minute]; FetchCeiling bounds them per tenant, from
	// every address together [600 per minute].
	FetchLimit   Limit
	FetchCeiling Limit
	// Limiter shares rate limit counts between replicas (Redis); nil
	// counts in each replica's memory.
	Limiter SharedLimiter
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
	if c.FetchLimit.N == 0 {
		c.FetchLimit = Limit{N: 20, Per: time.Minute}
	}
	if c.FetchCeiling.N == 0 {
		c.FetchCeiling = Limit{N: 600, Per: time.Minute}
	}
}

// Server is the authorization server of every tenant.
type Server struct {
	cfg       Config
	urls      auth.URLs
	provider  fosite.OAuth2Provider
	store     credentials.Store
	identity  *identity.Service
	clients   *clientLoader
	log       *slog.Logger
	deviceKey []byte
	now       func() time.Time
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
	if len(secret) < 32 {
		return nil, fmt.Errorf("the OAuth HMAC secret must be at least 32 bytes")
	}
	urls := auth.NewURLs(cfg.BaseURL)
	s := &Server{cfg: cfg, urls: urls, store: store, identity: ids, log: log, now: time.Now}
	// Derive separate keys so the whole configured secret counts, whatever
	// its length, and the device key never equals the token key.
	hmacKey := sha256.Sum256(append([]byte("visor oauth hmac\x00"), secret...))
	device := sha256.Sum256(append([]byte("visor device\x00"), secret...))
	s.deviceKey = device[:]
	s.clients = &clientLoader{store: store, urls: urls, fetcher: NewFetcher(cfg.Fetcher), ttl: cfg.MetadataTTL, now: time.Now,
		fetches: NewLimiter("cimd-fetch-source", cfg.FetchLimit, cfg.Limiter), fetchCeiling: NewLimiter("cimd-fetch-tenant", cfg.FetchCeiling, cfg.Limiter)}
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

// Fosite is the fosite provider the HTTP endpoints drive (web/oauth): it
// reads and writes the authorization, token and revocation requests.
func (s *Server) Fosite() fosite.OAuth2Provider { return s.provider }

// URLs are the issuer and resource URLs of every tenant.
func (s *Server) URLs() auth.URLs { return s.urls }
