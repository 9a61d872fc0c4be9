package grants

import (
	"context"
	"log/slog"
	"time"

	"github.com/visorhq/visor/services/lifecycle"
)

// Expirer ends grants when their time is up, so the tool disappears from
// the employee's list with a list_changed just as it appeared. Any number of
// replicas may run one: each due grant is ended exactly once.
type Expirer struct {
	svc   *Service
	every time.Duration
	log   *slog.Logger
	life  lifecycle.Base
}

// NewExpirer returns an expirer that checks every period (default 1s).
func NewExpirer(svc *Service, every time.Duration, log *slog.Logger) *Expirer {
	if every <= 0 {
		every = time.Second
	}
	return &Expirer{svc: svc, every: every, log: log}
}

// Start runs the expirer until Stop. It runs once (lifecycle.Base).
func (x *Expirer) Start(ctx context.Context) error { return x.life.Start(ctx, x.run) }

// Stop ends the expirer and waits for it; it is safe to call twice.
func (x *Expirer) Stop() { x.life.Stop() }

func (x *Expirer) run(ctx context.Context) {
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
}
