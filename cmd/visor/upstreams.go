package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/docker/mcpstdio"
	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/redisx"
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
	// StdioWorker makes this worker run stdio servers' containers
	// (VISOR_MCP_STDIO_WORKER), from StdioImages (VISOR_MCP_STDIO_IMAGES),
	// at most StdioMax at once (VISOR_MCP_STDIO_MAX), each removed after
	// StdioIdle without a call (VISOR_MCP_STDIO_IDLE).
	StdioWorker bool
	StdioImages []string
	StdioMax    int
	StdioIdle   time.Duration
}

var upstreamStdioVars = []envVar{
	{"VISOR_MCP_STDIO_WORKER", "false", "true: this `visor worker` holds the Docker socket and runs tenants' stdio MCP servers in containers (needs VISOR_MCP_STDIO_IMAGES); serve reaches them over the worker plane"},
	{"VISOR_MCP_STDIO_IMAGES", "", "comma-separated allow list of images stdio MCP servers may run, never pulled; read by stdio workers"},
	{"VISOR_MCP_STDIO_MAX", "32", "stdio MCP servers one stdio worker runs at once (each a container of up to 512 MiB and one CPU)"},
	{"VISOR_MCP_STDIO_IDLE", "10m", "a stdio MCP server with no call for this long has its container removed; the next call starts it again"},
}

func init() { envVars = append(envVars, upstreamStdioVars...) }

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
	if c.StdioWorker, err = strconv.ParseBool(get("VISOR_MCP_STDIO_WORKER")); err != nil {
		bad("VISOR_MCP_STDIO_WORKER", "%q must be true or false", get("VISOR_MCP_STDIO_WORKER"))
	}
	for _, img := range strings.Split(get("VISOR_MCP_STDIO_IMAGES"), ",") {
		if img = strings.TrimSpace(img); img != "" {
			c.StdioImages = append(c.StdioImages, img)
		}
	}
	if c.StdioWorker && len(c.StdioImages) == 0 {
		bad("VISOR_MCP_STDIO_IMAGES", "a stdio worker (VISOR_MCP_STDIO_WORKER=true) needs the images its servers may run")
	}
	if c.StdioMax, err = strconv.Atoi(get("VISOR_MCP_STDIO_MAX")); err != nil || c.StdioMax < 1 || c.StdioMax > 1000 {
		bad("VISOR_MCP_STDIO_MAX", "%q must be a number 1-1000", get("VISOR_MCP_STDIO_MAX"))
	}
	if c.StdioIdle, err = time.ParseDuration(get("VISOR_MCP_STDIO_IDLE")); err != nil || c.StdioIdle < time.Second || c.StdioIdle > 24*time.Hour {
		bad("VISOR_MCP_STDIO_IDLE", "%q must be a duration between 1s and 24h, like 10m", get("VISOR_MCP_STDIO_IDLE"))
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
	connectors := map[upstreams.Transport]upstreams.Connector{upstreams.StreamableHTTP: remote, upstreams.SSE: remote}
	if a.rdb != nil { // stdio servers run on stdio workers, over the worker plane
		connectors[upstreams.Stdio] = upstream.NewStdio(redisx.NewPlane(a.rdb, "", a.log.With("area", "plane")), a.cfg.Secrets.Keys)
	}
	svc := upstreams.NewService(upstreams.Config{
		Store: a.stores.upstreams, Keys: a.cfg.Secrets.Keys, Publisher: a.publisher(), Log: a.log.With("area", "upstreams"),
		Connectors: connectors,
		CheckURL:   checkURL,
		ServerName: func(ctx context.Context, tenantID uuid.UUID) (string, error) {
			t, err := a.stores.identity.Tenant(ctx, tenantID)
			return t.Settings.ServerName, err
		},
		StdioImages: func(ctx context.Context, tenantID uuid.UUID) ([]string, error) {
			t, err := a.stores.identity.Tenant(ctx, tenantID)
			return t.Settings.MCPStdioImages, err
		},
		IdleTimeout: uc.IdleTimeout,
	})
	svc.SetOAuth(upstream.NewOAuth(egress.New(egress.Config{AllowPrivateHosts: uc.DevHosts}), checkURL))
	// Commands that never start it (the CLI's saves and refreshes) still
	// close the sessions they opened.
	a.life.Defer(svc.Stop)
	return svc
}

// stdioWorkerID is the stdio worker's name on the plane.
func (a *app) stdioWorkerID() string { return a.cfg.Sandbox.WorkerID + "-mcpstdio" }

// startStdioWorker makes this worker a stdio worker when configured: the
// manager on the Docker Engine, its janitor (which first removes what
// this worker id's earlier life left, then removes idle servers) and the
// plane worker. Environment values arrive sealed and are opened here with
// VISOR_SECRET_KEYS.
func (a *app) startStdioWorker(ctx context.Context) error {
	c := a.cfg.Upstreams
	if !c.StdioWorker {
		return nil
	}
	log := a.log.With("area", "mcpstdio")
	cfg := mcpstdio.Config{WorkerID: a.stdioWorkerID(), Images: c.StdioImages, MaxServers: c.StdioMax, IdleAfter: c.StdioIdle,
		Runtime: a.cfg.Sandbox.Runtime, Version: version}
	if dev := a.cfg.Workspace.DevHosts; len(dev) > 0 {
		cfg.Resolver = devResolver(dev)
		cfg.DevHosts = slices.Collect(maps.Keys(dev))
	}
	m, err := mcpstdio.New(cfg, log)
	if err != nil {
		return fmt.Errorf("stdio worker: %w", err)
	}
	if err := a.start(ctx, mcpstdio.NewJanitor(m, 5*time.Second)); err != nil {
		return err
	}
	// Each session holds a watch job on the worker besides its calls.
	w := redisx.NewPlaneWorker(a.rdb, redisx.PlaneWorkerOptions{ID: cfg.WorkerID, Pools: []string{upstream.StdioPool}, Capacity: 8 * c.StdioMax,
		PoolRoom: func(int) bool { return m.Running() < c.StdioMax }}, log)
	for kind, h := range upstream.StdioHandlers(m, a.cfg.Secrets.Keys) {
		w.Handle(kind, h)
	}
	return a.start(ctx, w)
}
