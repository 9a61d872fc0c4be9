package main

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/upstream"
)

// UpstreamsConfig configures the upstream MCP servers' connections.
type UpstreamsConfig struct {
	// DevHosts may be plain http and on private or loopback addresses:
	// development only (VISOR_MCP_DEV_HOSTS).
	DevHosts []string
	// IdleTimeout closes a kept upstream session unused this long
	// (VISOR_MCP_UPSTREAM_IDLE).
	IdleTimeout time.Duration
}

func loadUpstreamsConfig(get func(string) string, bad func(name, format string, args ...any)) UpstreamsConfig {
	var c UpstreamsConfig
	for _, h := range strings.Split(get("VISOR_MCP_DEV_HOSTS"), ",") {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			c.DevHosts = append(c.DevHosts, h)
		}
	}
	var err error
	if c.IdleTimeout, err = time.ParseDuration(get("VISOR_MCP_UPSTREAM_IDLE")); err != nil || c.IdleTimeout < 10*time.Second || c.IdleTimeout > 24*time.Hour {
		bad("VISOR_MCP_UPSTREAM_IDLE", "%q must be a duration between 10s and 24h, like 5m", get("VISOR_MCP_UPSTREAM_IDLE"))
	}
	return c
}

// upstreamResponseHeaderTimeout bounds the wait for an upstream's response
// headers; each call's own timeout (at most 300 s) bounds the rest.
const upstreamResponseHeaderTimeout = 5 * time.Minute

// newUpstreams builds the upstream MCP servers' registry and entry points,
// every connection through the outbound guard.
func (a *app) newUpstreams() *upstreams.Service {
	uc := a.cfg.Upstreams
	a.stores.upstreams = postgres.NewUpstreamStore(a.db)
	guard := egress.New(egress.Config{AllowPrivateHosts: uc.DevHosts, Timeout: upstreamResponseHeaderTimeout})
	remote := upstream.NewRemote(guard, version, a.log.With("area", "upstreams"))
	checkURL := func(raw string) (string, error) { return egress.CheckURL(raw, uc.DevHosts) }
	svc := upstreams.NewService(upstreams.Config{
		Store: a.stores.upstreams, Keys: a.cfg.Secrets.Keys, Publisher: a.publisher(), Log: a.log.With("area", "upstreams"),
		Connectors: map[upstreams.Transport]upstreams.Connector{upstreams.StreamableHTTP: remote, upstreams.SSE: remote},
		CheckURL:   checkURL,
		ServerName: func(ctx context.Context, tenantID uuid.UUID) (string, error) {
			t, err := a.stores.identity.Tenant(ctx, tenantID)
			return t.Settings.ServerName, err
		},
		IdleTimeout: uc.IdleTimeout,
	})
	svc.SetOAuth(upstream.NewOAuth(egress.New(egress.Config{AllowPrivateHosts: uc.DevHosts}), checkURL))
	// Commands that never start it (the CLI's saves and refreshes) still
	// close the sessions they opened.
	a.life.Defer(svc.Stop)
	return svc
}
