package main

import (
	"context"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/auth/oauth"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/web/api"
	weboauth "github.com/visorhq/visor/web/oauth"
	"github.com/visorhq/visor/worker"
)

// OAuthConfig is the authorization server's part of Config.
type OAuthConfig struct {
	HMACSecret      string        // VISOR_OAUTH_HMAC_SECRET
	AccessTokenTTL  time.Duration // VISOR_OAUTH_ACCESS_TOKEN_TTL
	RefreshTokenTTL time.Duration // VISOR_OAUTH_REFRESH_TOKEN_TTL
	CIMDDevHosts    []string      // VISOR_OAUTH_CIMD_DEV_HOSTS
}

func loadOAuthConfig(get func(string) string, bad func(name, format string, args ...any)) OAuthConfig {
	var c OAuthConfig
	var err error
	c.HMACSecret = get("VISOR_OAUTH_HMAC_SECRET")
	if c.HMACSecret != "" && len(c.HMACSecret) < 32 {
		bad("VISOR_OAUTH_HMAC_SECRET", "must be at least 32 characters (try: openssl rand -hex 32), or unset to keep one in Postgres")
	}
	if c.AccessTokenTTL, err = time.ParseDuration(get("VISOR_OAUTH_ACCESS_TOKEN_TTL")); err != nil || c.AccessTokenTTL < time.Minute || c.AccessTokenTTL > 24*time.Hour {
		bad("VISOR_OAUTH_ACCESS_TOKEN_TTL", "%q must be a duration between 1m and 24h, like 1h", get("VISOR_OAUTH_ACCESS_TOKEN_TTL"))
	}
	if c.RefreshTokenTTL, err = time.ParseDuration(get("VISOR_OAUTH_REFRESH_TOKEN_TTL")); err != nil || c.RefreshTokenTTL < time.Hour {
		bad("VISOR_OAUTH_REFRESH_TOKEN_TTL", "%q must be a duration of at least 1h, like 720h", get("VISOR_OAUTH_REFRESH_TOKEN_TTL"))
	}
	for _, h := range strings.Split(get("VISOR_OAUTH_CIMD_DEV_HOSTS"), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			c.CIMDDevHosts = append(c.CIMDDevHosts, h)
		}
	}
	return c
}

// mountOAuth builds the authorization server, whose consent page names the
// tools of reg and whose pages the web UI draws, makes resolver accept its access tokens, member sessions
// and round tokens, registers its routes on e, and returns its admin API
// resources.
func (a *app) mountOAuth(ctx context.Context, e *echo.Echo, resolver *auth.Resolver, baseURL string, reg *tools.Registry, pages weboauth.Pages) ([]api.Resource, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	srv, err := a.oauthServer(ctx, baseURL, reg, pages)
	if err != nil {
		return nil, err
	}
	as := srv.Provider()
	as.Attach(resolver)
	creds := a.stores.credentials
	rounds := auth.NewRounds(creds, a.stores.identity)
	rounds.Changes = a.publisher()
	resolver.Rounds = rounds
	srv.Register(e, resolver.LoadTenant())
	a.oauth = as
	return []api.Resource{api.NewOAuthClients(as, creds), api.NewRoundTokens(rounds, creds)}, nil
}

// oauthServer builds the authorization server for baseURL, whose consent
// page names the tools of reg. Its sign-in, registration and fetch limits
// count in Redis, so every replica draws on one budget.
func (a *app) oauthServer(ctx context.Context, baseURL string, reg *tools.Registry, pages weboauth.Pages) (*weboauth.Server, error) {
	cfg := weboauth.Config{Config: oauth.Config{
		BaseURL: baseURL, HMACSecret: []byte(a.cfg.OAuth.HMACSecret), AccessTokenTTL: a.cfg.OAuth.AccessTokenTTL,
		RefreshTokenTTL: a.cfg.OAuth.RefreshTokenTTL, Fetcher: oauth.FetcherConfig{AllowPrivateHosts: a.cfg.OAuth.CIMDDevHosts},
	}, Tools: reg, Pages: pages}
	if a.rdb != nil {
		cfg.Limiter = a.rateLimiter()
	}
	return weboauth.New(ctx, cfg, a.stores.credentials, a.ids, a.log.With("area", "oauth"))
}

// rateLimiter counts this replica's rate limits in Redis, shared by every
// replica; on the clock limitClock when a test pins it.
func (a *app) rateLimiter() *redisx.RateLimiter {
	l := redisx.NewRateLimiter(a.rdb.Client, rateLimitPrefix)
	if a.limitClock != nil {
		l = l.WithClock(a.limitClock)
	}
	return l
}

// rateLimitPrefix starts every rate limit key in Redis.
const rateLimitPrefix = "visor:rl:"

// registerOAuthJobs schedules the cleanup of expired codes, tokens and
// sessions.
func (a *app) registerOAuthJobs(reg *worker.Registry) {
	river.AddWorker(reg.Workers(), &oauth.CleanupWorker{Store: a.stores.credentials})
	reg.AddPeriodic(oauth.CleanupPeriodicJob(15 * time.Minute))
}
