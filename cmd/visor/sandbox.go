package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	dockersandbox "github.com/visorhq/visor/docker/sandbox"
	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/storage/redisx"
)

// SandboxConfig is the script sandbox's and the worker plane's part of
// Config.
type SandboxConfig struct {
	WorkerID string        // VISOR_WORKER_ID
	Worker   bool          // VISOR_SANDBOX_WORKER: this worker holds the Docker socket and runs scripts
	Images   []string      // VISOR_SANDBOX_IMAGES: the allow-list; the first is the default
	Runtime  string        // VISOR_SANDBOX_RUNTIME
	Caps     sandbox.Caps  // VISOR_SANDBOX_MAX_RUNS, _PER_TENANT, _PER_EMPLOYEE
	HostRuns bool          // VISOR_SANDBOX_ALLOW_HOST_RUNS
	Sweep    time.Duration // how often the janitor sweeps
}

// sandboxVars are the sandbox's rows of the configuration table.
var sandboxVars = []envVar{
	{"VISOR_WORKER_ID", "", "this worker's stable name on the worker plane (labels its sandbox containers); empty: the host name"},
	{"VISOR_SANDBOX_WORKER", "false", "true: this `visor worker` holds the Docker socket and runs execute_program scripts (only such workers need the socket)"},
	{"VISOR_SANDBOX_IMAGES", "visor-sandbox", "comma-separated allow-list of script sandbox images, never pulled; the first is the default of a tenant that names none"},
	{"VISOR_SANDBOX_RUNTIME", "", "OCI runtime of sandbox containers, e.g. runsc (gVisor); it must be registered with the Docker Engine, else runs are refused; empty: the engine's default"},
	{"VISOR_SANDBOX_MAX_RUNS", "4", "scripts one sandbox worker runs at once"},
	{"VISOR_SANDBOX_MAX_RUNS_PER_TENANT", "2", "scripts of one tenant one sandbox worker runs at once"},
	{"VISOR_SANDBOX_MAX_RUNS_PER_EMPLOYEE", "1", "scripts of one AI employee one sandbox worker runs at once"},
	{"VISOR_SANDBOX_ALLOW_HOST_RUNS", "false", "true lets a tenant's script_when_unavailable = run_unsandboxed run scripts on a sandbox worker's host when the sandbox is unavailable (tenants share workers: leave off)"},
}

func init() { envVars = append(envVars, sandboxVars...) }

func loadSandboxConfig(get func(string) string, bad func(name, format string, args ...any)) SandboxConfig {
	c := SandboxConfig{WorkerID: get("VISOR_WORKER_ID"), Runtime: get("VISOR_SANDBOX_RUNTIME"), Sweep: time.Minute}
	if c.WorkerID == "" {
		c.WorkerID, _ = os.Hostname()
	}
	if len(c.WorkerID) > 128 || strings.ContainsAny(c.WorkerID, " :\t\n") {
		bad("VISOR_WORKER_ID", "must be at most 128 characters without spaces or colons")
	}
	flag := func(name string) bool {
		v, err := strconv.ParseBool(get(name))
		if err != nil {
			bad(name, "%q must be true or false", get(name))
		}
		return v
	}
	c.Worker, c.HostRuns = flag("VISOR_SANDBOX_WORKER"), flag("VISOR_SANDBOX_ALLOW_HOST_RUNS")
	for _, img := range strings.Split(get("VISOR_SANDBOX_IMAGES"), ",") {
		if img = strings.TrimSpace(img); img != "" {
			c.Images = append(c.Images, img)
		}
	}
	if len(c.Images) == 0 {
		bad("VISOR_SANDBOX_IMAGES", "must name at least one image")
	}
	if c.Runtime != "" && strings.ContainsAny(c.Runtime, " /:") {
		bad("VISOR_SANDBOX_RUNTIME", "%q is not a runtime name; want runsc, runc or empty", c.Runtime)
	}
	caps := []*int{&c.Caps.Worker, &c.Caps.Tenant, &c.Caps.Employee}
	for i, name := range []string{"VISOR_SANDBOX_MAX_RUNS", "VISOR_SANDBOX_MAX_RUNS_PER_TENANT", "VISOR_SANDBOX_MAX_RUNS_PER_EMPLOYEE"} {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < 1 || n > 1000 {
			bad(name, "%q must be a number 1-1000", get(name))
		}
		*caps[i] = n
	}
	return c
}

// sandboxTools declares execute_program; in serve it calls the sandbox
// workers through the plane. It must work on a zero app (`visor docs`).
func (a *app) sandboxTools() *sandbox.Tools {
	t := &sandbox.Tools{Images: a.cfg.Sandbox.Images, HostRuns: a.cfg.Sandbox.HostRuns}
	if a.stores.sandboxRuns != nil {
		t.Log, t.Logger = a.stores.sandboxRuns, a.log.With("area", "sandbox")
	}
	if a.rdb != nil {
		t.Plane = redisx.NewPlane(a.rdb, "", a.log.With("area", "plane"))
	}
	return t
}

// startSandboxWorker makes this worker a sandbox worker when configured:
// the runner on the Docker Engine with its caps, its janitor (which first
// removes what this worker id's previous life left), and the plane worker
// that takes script runs.
func (a *app) startSandboxWorker(ctx context.Context) error {
	sc := a.cfg.Sandbox
	if !sc.Worker {
		return nil
	}
	log := a.log.With("area", "sandbox")
	r, err := dockersandbox.New(dockersandbox.Config{Allowed: sc.Images, WorkerID: sc.WorkerID, Gate: sandbox.NewGate(sc.Caps), Runtime: sc.Runtime}, log)
	if err != nil {
		return fmt.Errorf("sandbox worker: %w", err)
	}
	a.life.Defer(func() { _ = r.Close() })
	if err := a.start(ctx, dockersandbox.NewJanitor(r, sc.Sweep)); err != nil {
		return err
	}
	var host sandbox.Runner
	if sc.HostRuns {
		host = sandbox.HostRunner{}
	}
	w := redisx.NewPlaneWorker(a.rdb, redisx.PlaneWorkerOptions{ID: sc.WorkerID, Pools: []string{sandbox.Pool}, Capacity: sc.Caps.Worker * 2}, log)
	w.Handle(sandbox.JobKind, sandbox.Handler(r, host))
	return a.start(ctx, w)
}
