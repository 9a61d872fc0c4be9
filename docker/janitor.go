package docker

import (
	"context"
	"sync"
	"time"

	"github.com/visorhq/visor/services/lifecycle"
)

// Janitor runs one kind's housekeeping as a background service on the
// shared lifecycle: First before Start returns (a worker restarting under
// its id removes what its earlier life left before it takes work), then
// Tick every Every until Stop, then Last (a kind that holds live
// containers ends them at shutdown).
type Janitor struct {
	Every time.Duration
	First func(ctx context.Context)
	Tick  func(ctx context.Context)
	Last  func() // optional

	life lifecycle.Base
	last sync.Once
}

var _ lifecycle.Service = (*Janitor)(nil)

// Start runs First, then Tick periodically on the janitor's goroutine. It
// runs once (lifecycle.ErrStarted after).
func (j *Janitor) Start(ctx context.Context) error {
	rctx, err := j.life.Begin(ctx)
	if err != nil {
		return err
	}
	j.First(rctx)
	j.life.Go(func() { j.loop(rctx) })
	return nil
}

// Stop ends the sweeps, waits for a running one, and runs Last when the
// janitor had started. It is safe to call twice.
func (j *Janitor) Stop() {
	started := j.life.Stopping() != nil
	j.life.Stop()
	if started && j.Last != nil {
		j.last.Do(j.Last)
	}
}

func (j *Janitor) loop(ctx context.Context) {
	t := time.NewTicker(j.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			j.Tick(ctx)
		}
	}
}
