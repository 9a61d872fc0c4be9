package grants

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Expirer ends grants when their time is up, so the tool disappears from
// the employee's list with a list_changed just as it appeared. Any number of
// replicas may run one: each due grant is ended exactly once.
type Expirer struct {
	svc   *Service
	every time.Duration
	log   *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewExpirer returns an expirer that checks every period (default 1s).
func NewExpirer(svc *Service, every time.Duration, log *slog.Logger) *Expirer {
	if every <= 0 {
		every = time.Second
	}
	return &Expirer{svc: svc, every: every, log: log}
}

// Start runs the expirer until Stop.
func (x *Expirer) Start(ctx context.Context) error {
	ctx, x.cancel = context.WithCancel(context.WithoutCancel(ctx))
	x.wg.Go(func() {
		tick := time.NewTicker(x.every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if n, err := x.svc.ExpireDue(ctx); err != nil && ctx.Err() == nil {
				x.log.WarnContext(ctx, "expire grants", "err", err)
			} else if n > 0 {
				x.log.InfoContext(ctx, "expired grants", "agents", n)
			}
		}
	})
	return nil
}

// Stop ends the expirer and waits for it.
func (x *Expirer) Stop() {
	if x.cancel != nil {
		x.cancel()
	}
	x.wg.Wait()
}
