package docker

import (
	"context"
	"time"

	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/sandbox"
)

// Janitor removes what dead runs left behind, as a background service: at
// Start, every container of the runner's own worker id (a worker that
// restarts under a stable id, such as its host name, finds its previous
// life's containers), then every interval, every sandbox container and run
// directory older than sandbox.HardCap, whichever worker made it.
type Janitor struct {
	r     *Runner
	every time.Duration
	life  lifecycle.Base
}

var _ lifecycle.Service = (*Janitor)(nil)

// NewJanitor returns a janitor for r's engine and directory that sweeps
// every interval.
func NewJanitor(r *Runner, every time.Duration) *Janitor {
	return &Janitor{r: r, every: every}
}

// Start sweeps the worker's own leftovers, then sweeps periodically until
// Stop. It runs once (lifecycle.Base).
func (j *Janitor) Start(ctx context.Context) error {
	return j.life.Start(ctx, j.loop)
}

// Stop ends the sweeps and waits for a running one. It is safe to call twice.
func (j *Janitor) Stop() { j.life.Stop() }

func (j *Janitor) loop(ctx context.Context) {
	j.sweep(ctx, j.r.cfg.WorkerID, 0)
	t := time.NewTicker(j.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			j.sweep(ctx, "", sandbox.HardCap)
		}
	}
}

func (j *Janitor) sweep(ctx context.Context, worker string, olderThan time.Duration) {
	containers, dirs, err := j.r.Sweep(ctx, worker, olderThan)
	if containers+dirs > 0 {
		j.r.log.Info("sandbox janitor: removed leftovers", "containers", containers, "dirs", dirs)
	}
	if err != nil && ctx.Err() == nil {
		j.r.log.Warn("sandbox janitor: sweep", "err", err)
	}
}
