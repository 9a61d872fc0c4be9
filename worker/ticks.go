package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/visorhq/visor/services/lifecycle"
)

// TickFirer opens the runs of due scheduled ticks in sets
// (responsibilities.Service.FireDueTicks).
type TickFirer interface {
	FireDueTicks(ctx context.Context, limit int) (int, error)
}

// Tick claiming defaults.
const (
	DefaultTickEvery    = 200 * time.Millisecond
	DefaultTickBatch    = 500
	DefaultTickClaimers = 2
)

// TickDispatcher opens the scheduled runs of responsibilities. Each of
// its Claimers claims a set of up to Batch due ticks in one transaction
// and writes the set's runs, and keeps claiming while sets come back
// full; then it looks again after Every. Claims skip rows another
// claimer holds, so claimers and worker processes share a burst and no
// tick fires twice.
type TickDispatcher struct {
	Responsibilities TickFirer
	Every            time.Duration // DefaultTickEvery if zero
	Batch            int           // DefaultTickBatch if zero
	Claimers         int           // DefaultTickClaimers if zero
	Log              *slog.Logger
	life             lifecycle.Base
}

// Start runs the claimers until Stop.
func (d *TickDispatcher) Start(ctx context.Context) error {
	n := d.Claimers
	if n <= 0 {
		n = DefaultTickClaimers
	}
	loops := make([]func(context.Context), n)
	for i := range loops {
		loops[i] = d.loop
	}
	return d.life.Start(ctx, loops...)
}

// Stop stops the claimers and waits for their sets to commit or roll back.
func (d *TickDispatcher) Stop() { d.life.Stop() }

func (d *TickDispatcher) loop(ctx context.Context) {
	every, batch := d.Every, d.Batch
	if every <= 0 {
		every = DefaultTickEvery
	}
	if batch <= 0 {
		batch = DefaultTickBatch
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			n, err := d.Responsibilities.FireDueTicks(ctx, batch)
			if err != nil && ctx.Err() == nil {
				d.Log.ErrorContext(ctx, "open the runs of due responsibility ticks", "err", err)
			}
			if err != nil || n < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
