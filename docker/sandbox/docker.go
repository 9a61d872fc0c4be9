// Package docker runs sandbox programs in locked-down containers through the
// Docker Engine API. Each run gets a fresh container and a private temporary
// directory holding only the script; both are removed on every path out of
// Run (exit, timeout, cancel, error). Images are never pulled.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/sandbox"
)

// Config says which images may run and where runs keep their scripts.
type Config struct {
	// Allowed lists the images a program may name. An image not on it is
	// refused (image_not_allowed).
	Allowed []string
	// WorkerID labels this worker's containers, so a janitor can tell them
	// apart.
	WorkerID string
	// TempDir holds each run's private directory (default: the system
	// temporary directory).
	TempDir string
	// Memory overrides domain.Memory (bytes); zero keeps it. Tests use a
	// small value to reach the limit quickly.
	Memory int64
	// Gate, when set, caps concurrent runs; a run waits in its queue
	// before anything is created.
	Gate *domain.Gate
	// Runtime names the OCI runtime containers run under ("runsc" for
	// gVisor); empty means the engine's default. A runtime the engine does
	// not know is refused (runtime_missing); there is no fallback.
	Runtime string
}

// Runner runs programs in containers. It is safe for concurrent use.
type Runner struct {
	cfg Config
	cli *client.Client
	log *slog.Logger
}

var _ domain.Runner = (*Runner)(nil)

// New returns a runner that talks to the Docker Engine named by the
// environment (DOCKER_HOST, else the local socket), negotiating the API
// version with it. It does not contact the engine; Run reports an engine
// that cannot be reached as docker_unreachable.
func New(cfg Config, log *slog.Logger) (*Runner, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	if cfg.Memory == 0 {
		cfg.Memory = domain.Memory
	}
	return &Runner{cfg: cfg, cli: cli, log: log}, nil
}

// Close releases the engine connection.
func (r *Runner) Close() error { return r.cli.Close() }

// Client is the engine client, for a janitor or tests that inspect what
// Run created.
func (r *Runner) Client() *client.Client { return r.cli }

// check refuses a program that cannot run here; nothing is created.
func (r *Runner) check(ctx context.Context, p domain.Program) error {
	if _, ok := p.Language.Command(""); !ok {
		return fault.New(fault.Invalid, "unknown language %q (use %q or %q)", p.Language, domain.Python, domain.Shell)
	}
	if p.Timeout < 0 || p.Timeout > domain.MaxTimeout {
		return fault.New(fault.Invalid, "timeout must be at most %s", domain.MaxTimeout)
	}
	if err := r.checkRuntime(ctx, p.Image); err != nil {
		return err
	}
	if !slices.Contains(r.cfg.Allowed, p.Image) {
		return domain.Unavailable("image_not_allowed", p.Image, "the image is not on the platform's allow-list", nil)
	}
	return r.ImageReady(ctx, p.Image)
}

// ImageReady says whether the engine answers and holds image, with the
// same unavailable errors a run would get; nothing is created.
func (r *Runner) ImageReady(ctx context.Context, image string) error {
	_, err := r.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return domain.Unavailable("image_missing", image, "the image is not on the worker (images are never pulled automatically)", err)
	case ctx.Err() != nil:
		return ctx.Err()
	case client.IsErrConnectionFailed(err):
		return domain.Unavailable("docker_unreachable", image, "the Docker Engine cannot be reached", err)
	}
	return domain.Unavailable("docker_error", image, "the Docker Engine refused to describe the image", err)
}

// errRemove marks a failure to remove a container.
var errRemove = errors.New("remove sandbox container")

// checkRuntime refuses a run when the configured runtime is not registered
// with the engine, so a missing gVisor never silently becomes runc.
func (r *Runner) checkRuntime(ctx context.Context, image string) error {
	if r.cfg.Runtime == "" {
		return nil
	}
	info, err := r.cli.Info(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil && client.IsErrConnectionFailed(err):
		return domain.Unavailable("docker_unreachable", image, "the Docker Engine cannot be reached", err)
	case err != nil:
		return domain.Unavailable("docker_error", image, "the Docker Engine refused to describe itself", err)
	}
	if _, ok := info.Runtimes[r.cfg.Runtime]; !ok {
		return domain.Unavailable("runtime_missing", image,
			fmt.Sprintf("the container runtime %q is not registered with the Docker Engine (add it to /etc/docker/daemon.json)", r.cfg.Runtime), nil)
	}
	return nil
}
