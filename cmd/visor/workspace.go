package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	dockerws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/redisx"
)

// WorkspaceConfig is the workspace tools' part of Config.
type WorkspaceConfig struct {
	Worker    bool                  // VISOR_WORKSPACE_WORKER: this worker runs workspace containers
	Image     string                // VISOR_WORKSPACE_IMAGE
	Max       int                   // VISOR_WORKSPACE_MAX: workspaces one worker holds
	Idle      time.Duration         // VISOR_WORKSPACE_IDLE
	SaveEvery time.Duration         // VISOR_WORKSPACE_SAVE_EVERY
	Dir       string                // VISOR_WORKSPACE_DIR
	FS        string                // VISOR_WORKSPACE_FS: tmpfs or folder
	Quota     int64                 // VISOR_WORKSPACE_QUOTA
	DevHosts  map[string]netip.Addr // VISOR_WORKSPACE_DEV_HOSTS
}

var workspaceVars = []envVar{
	{"VISOR_WORKSPACE_WORKER", "false", "true: this `visor worker` holds the Docker socket and runs AI employees' workspace containers (needs VISOR_WORKSPACE_IMAGE); serve reaches it over the worker plane"},
	{"VISOR_WORKSPACE_IMAGE", "", "the workspace image (deploy/workspace), never pulled; read by workspace workers"},
	{"VISOR_WORKSPACE_MAX", "16", "workspaces one workspace worker holds at once (each a container of up to 2 GiB and one CPU)"},
	{"VISOR_WORKSPACE_IDLE", "10m", "a workspace with no call and no running command for this long is saved and its container stopped"},
	{"VISOR_WORKSPACE_SAVE_EVERY", "15s", "how often a workspace worker saves changed workspaces to Postgres (a worker's death loses at most this much)"},
	{"VISOR_WORKSPACE_DIR", "", "where a workspace worker unpacks the workspaces it holds; empty: the temporary directory"},
	{"VISOR_WORKSPACE_FS", "tmpfs", "tmpfs: each workspace's files are on a tmpfs of its quota's size, so commands cannot write past the quota (the workspace worker needs CAP_SYS_ADMIN); folder: a plain folder, the quota bounds file_edit only"},
	{"VISOR_WORKSPACE_QUOTA", "268435456", "bytes of files a new workspace may hold"},
	{"VISOR_WORKSPACE_DEV_HOSTS", "", "development only: comma-separated host=address pins the workspace egress proxy uses instead of DNS (git.test=127.0.0.2)"},
}

func init() { envVars = append(envVars, workspaceVars...) }

func loadWorkspaceConfig(get func(string) string, bad func(name, format string, args ...any)) WorkspaceConfig {
	c := WorkspaceConfig{Image: get("VISOR_WORKSPACE_IMAGE"), Dir: get("VISOR_WORKSPACE_DIR"), FS: get("VISOR_WORKSPACE_FS")}
	if c.FS != dockerws.FSTmpfs && c.FS != dockerws.FSFolder {
		bad("VISOR_WORKSPACE_FS", "%q must be tmpfs or folder", c.FS)
	}
	var err error
	if c.Worker, err = strconv.ParseBool(get("VISOR_WORKSPACE_WORKER")); err != nil {
		bad("VISOR_WORKSPACE_WORKER", "%q must be true or false", get("VISOR_WORKSPACE_WORKER"))
	}
	if c.Worker && c.Image == "" {
		bad("VISOR_WORKSPACE_IMAGE", "a workspace worker (VISOR_WORKSPACE_WORKER=true) needs the workspace image's tag")
	}
	if c.Max, err = strconv.Atoi(get("VISOR_WORKSPACE_MAX")); err != nil || c.Max < 1 || c.Max > 1000 {
		bad("VISOR_WORKSPACE_MAX", "%q must be a number 1-1000", get("VISOR_WORKSPACE_MAX"))
	}
	if c.Idle, err = time.ParseDuration(get("VISOR_WORKSPACE_IDLE")); err != nil || c.Idle < time.Second {
		bad("VISOR_WORKSPACE_IDLE", "%q must be a duration of at least 1s, like 10m", get("VISOR_WORKSPACE_IDLE"))
	}
	if c.SaveEvery, err = time.ParseDuration(get("VISOR_WORKSPACE_SAVE_EVERY")); err != nil || c.SaveEvery < time.Second || c.SaveEvery > time.Hour {
		bad("VISOR_WORKSPACE_SAVE_EVERY", "%q must be a duration from 1s to 1h", get("VISOR_WORKSPACE_SAVE_EVERY"))
	}
	if c.Quota, err = strconv.ParseInt(get("VISOR_WORKSPACE_QUOTA"), 10, 64); err != nil || c.Quota < 1<<20 || c.Quota > 64<<30 {
		bad("VISOR_WORKSPACE_QUOTA", "%q must be a number of bytes from 1 MiB to 64 GiB", get("VISOR_WORKSPACE_QUOTA"))
	}
	for _, pair := range strings.Split(get("VISOR_WORKSPACE_DEV_HOSTS"), ",") {
		if pair = strings.TrimSpace(pair); pair == "" {
			continue
		}
		host, ip, ok := strings.Cut(pair, "=")
		addr, err := netip.ParseAddr(ip)
		if !ok || err != nil || host == "" {
			bad("VISOR_WORKSPACE_DEV_HOSTS", "%q must be host=address, like git.test=127.0.0.2", pair)
			continue
		}
		if c.DevHosts == nil {
			c.DevHosts = map[string]netip.Addr{}
		}
		c.DevHosts[strings.ToLower(host)] = addr
	}
	return c
}

// newWorkspace builds the workspace tools on Postgres. Workspaces run on
// workspace workers, reached over the worker plane; without Redis the
// file and command tools answer unavailable (tasks and Skills still work).
func (a *app) newWorkspace() *workspace.Service {
	st := a.stores.workspace
	cfg := workspace.Config{Store: st, Tasks: st, Skills: st, Artifacts: st, Keys: a.cfg.Secrets.Keys, Quota: a.cfg.Workspace.Quota,
		Image: a.cfg.Workspace.Image, Log: a.log.With("area", "workspace"),
		Images: egressImages{c: egress.New(egress.Config{Timeout: 10 * time.Second, MaxBytes: workspace.MaxImageBytes})}}
	if a.upstreams != nil {
		cfg.Upstreams = upstreamLister{a.upstreams}
	}
	if a.rdb != nil {
		cfg.Runner = &workspace.PlaneRunner{Plane: redisx.NewPlane(a.rdb, "", a.log.With("area", "plane")), Store: st}
	}
	return workspace.NewService(cfg)
}

// upstreamLister tells the context tool which upstream MCP servers a
// caller may use.
type upstreamLister struct{ s *upstreams.Service }

func (l upstreamLister) UpstreamsFor(ctx context.Context, sub *tools.Subject) ([]workspace.UpstreamServer, error) {
	servers, err := l.s.CallableServers(ctx, sub)
	if err != nil {
		return nil, err
	}
	out := make([]workspace.UpstreamServer, 0, len(servers))
	for _, c := range servers {
		out = append(out, workspace.UpstreamServer{Name: c.Name, Description: c.Description, Tools: c.Tools})
	}
	return out, nil
}

// egressImages fetches view_image URLs through the outbound guard.
type egressImages struct{ c *egress.Client }

func (e egressImages) FetchImage(ctx context.Context, raw string, max int64) ([]byte, error) {
	u, err := egress.CheckURL(raw, nil)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fault.New(fault.Invalid, "url is malformed")
	}
	res, err := e.c.Do(req)
	if err != nil {
		if fault.Is(err, fault.Forbidden) {
			return nil, err
		}
		return nil, fault.Newf(fault.Unavailable, err, "the image could not be fetched")
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fault.New(fault.Unavailable, "the image URL answered %d", res.StatusCode)
	}
	return e.c.ReadBody(res)
}

// workspaceWorkerID is the workspace worker's name on the plane.
func (a *app) workspaceWorkerID() string { return a.cfg.Sandbox.WorkerID + workspaceSuffix }

// The suffixes of a worker process's names on the plane for its
// workspaces and its browser sessions.
const (
	workspaceSuffix = "-workspace"
	browserSuffix   = "-browser"
)

// browserWorkerOf names the computer worker in the process of a
// workspace worker: where a browser session must start to mount a
// workspace that worker holds.
func browserWorkerOf(workspaceWorker string) string {
	return strings.TrimSuffix(workspaceWorker, workspaceSuffix) + browserSuffix
}

// sessionTrees opens an employee's workspace for a browser session and
// places the session on the computer worker of the same process.
type sessionTrees struct{ ws *workspace.Service }

func (t sessionTrees) OpenTree(ctx context.Context, tenant, agent uuid.UUID, allowedHosts []string) (computer.TreeMount, error) {
	id, worker, err := t.ws.Open(ctx, tenant, agent, allowedHosts)
	if err != nil {
		return computer.TreeMount{}, err
	}
	return computer.TreeMount{ID: id, Worker: browserWorkerOf(worker)}, nil
}

// startWorkspaceWorker makes this worker a workspace worker when
// configured: the manager on the Docker Engine, its janitor (which first
// removes what this worker id's earlier life left, then renews leases,
// saves changed trees and lets idle workspaces go) and the plane worker.
func (a *app) startWorkspaceWorker(ctx context.Context) error {
	c := a.cfg.Workspace
	if !c.Worker {
		return nil
	}
	log := a.log.With("area", "workspace")
	st := a.stores.workspace
	cfg := dockerws.Config{Image: c.Image, WorkerID: a.workspaceWorkerID(), BaseDir: c.Dir, MaxWorkspaces: c.Max, IdleAfter: c.Idle,
		SaveEvery: c.SaveEvery, Runtime: a.cfg.Sandbox.Runtime, FS: c.FS, Keys: a.cfg.Secrets.Keys}
	if len(c.DevHosts) > 0 {
		cfg.Resolver = devResolver(c.DevHosts)
		cfg.DevHosts = slices.Collect(maps.Keys(c.DevHosts))
	}
	m, err := dockerws.New(cfg, dockerws.Stores{Workspaces: st, Artifacts: st, Skills: st}, log)
	if err != nil {
		return fmt.Errorf("workspace worker: %w", err)
	}
	if err := a.start(ctx, dockerws.NewJanitor(m, time.Second)); err != nil {
		return err
	}
	a.wsHost = m
	w := redisx.NewPlaneWorker(a.rdb, redisx.PlaneWorkerOptions{ID: cfg.WorkerID, Pools: []string{workspace.Pool}, Capacity: 4 * c.Max,
		PoolRoom: func(opening int) bool { return m.Held()+opening < c.Max }}, log)
	for kind, h := range workspace.Handlers(m) {
		w.Handle(kind, h)
	}
	return a.start(ctx, w)
}

// mountArtifacts serves published artifacts at their signed URLs,
// /t/{tenant}/artifacts/{token}: no credential, the token is the
// capability; another tenant's, an unknown and an expired token are 404.
func (a *app) mountArtifacts(e *echo.Echo, baseURL string) {
	a.workspace.SetArtifactURL(func(slug, token string) string { return baseURL + "/t/" + slug + "/artifacts/" + token })
	e.GET("/t/:tenant/artifacts/:token", func(c echo.Context) error {
		ctx := c.Request().Context()
		t, err := a.stores.identity.TenantBySlug(ctx, c.Param("tenant"))
		if err != nil {
			return echo.NewHTTPError(http.StatusNotFound, "artifact link not found or expired")
		}
		art, body, err := a.workspace.Download(ctx, t.ID, c.Param("token"))
		if err != nil {
			if fault.Is(err, fault.NotFound) {
				return echo.NewHTTPError(http.StatusNotFound, "artifact link not found or expired")
			}
			return err
		}
		h := c.Response().Header()
		h.Set("Content-Disposition", `attachment; filename="`+strings.NewReplacer(`"`, "_", "\\", "_").Replace(art.Name)+`"`)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "private, no-store")
		h.Set("Digest", "sha-256="+art.SHA256)
		return c.Blob(http.StatusOK, "application/octet-stream", body)
	})
}
