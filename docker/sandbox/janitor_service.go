package sandbox

import (
	"context"
	"time"

	"github.com/visorhq/visor/docker"
	domain "github.com/visorhq/visor/services/sandbox"
)

// NewJanitor returns the janitor of r's engine and directory, which removes
// what dead runs left behind: at Start, every container of the runner's
// own worker id (a worker that restarts under a stable id, such as its
// host name, finds its previous life's containers), then every interval,
// every sandbox container and run directory older than domain.HardCap,
// whichever worker made it.
func NewJanitor(r *Runner, every time.Duration) *docker.Janitor {
	return &docker.Janitor{Every: every,
		First: func(ctx context.Context) { r.sweep(ctx, r.cfg.WorkerID, 0) },
		Tick:  func(ctx context.Context) { r.sweep(ctx, "", domain.HardCap) },
	}
}

func (r *Runner) sweep(ctx context.Context, worker string, olderThan time.Duration) {
	containers, dirs, err := r.Sweep(ctx, worker, olderThan)
	if containers+dirs > 0 {
		r.log.Info("sandbox janitor: removed leftovers", "containers", containers, "dirs", dirs)
	}
	if err != nil && ctx.Err() == nil {
		r.log.Warn("sandbox janitor: sweep", "err", err)
	}
}
