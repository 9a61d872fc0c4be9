package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/rounds"
)

// Delivery claiming defaults.
const (
	DefaultDeliveryClaimers = 2
	DefaultDeliveryBatch    = 500
	DefaultDeliveryEvery    = 100 * time.Millisecond
	DefaultDeliveryLease    = 2 * time.Minute
	defaultDeliveryLimit    = 30 * time.Second
)

// Deliveries delivers queued wake-ups without a job each. Each of its
// claim loops leases a set of wake-ups whose next attempt is due, in one
// statement that also reads what their pushes need (rounds.Service.
// ClaimDue), and starts an attempt for each at once: pushes go out
// concurrently under the endpoint's limit, and their outcomes are
// recorded in shared batches. A loop keeps claiming while sets come back
// full and attempts may start, then looks again after Every. Claims skip
// wake-ups another claim holds, so loops and worker processes share a
// burst and each attempt is made once.
//
// A lease names the worker and ends at its expiry: a worker declared
// lost (heartbeat) has its leases released at once; one whose lease ran
// out (the worker was stalled) sees its outcome refused, as the wake-up
// may have gone to another worker. Stop stops claiming, lets the attempts
// in flight finish within Drain, and releases those still running then,
// so nothing is lost; an attempt cut off in its push may have reached the
// runtime, which sees the same webhook-id again.
type Deliveries struct {
	Rounds *rounds.Service
	// Worker names this worker in the leases (its heartbeat id).
	Worker  string
	Options RoundsOptions
	// Drain bounds how long Stop waits for attempts in flight (30 s if
	// zero).
	Drain time.Duration
	Log   *slog.Logger

	claiming lifecycle.Base
	slots    *slots
	// work is the attempts' context: it ends when the drain runs out.
	work     context.Context
	abort    context.CancelFunc
	inflight sync.WaitGroup
	stop     sync.Once
}

func (d *Deliveries) options() RoundsOptions {
	o := d.Options
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultRoundsConcurrency
	}
	if o.Claimers <= 0 {
		o.Claimers = DefaultDeliveryClaimers
	}
	if o.Batch <= 0 {
		o.Batch = DefaultDeliveryBatch
	}
	if o.Every <= 0 {
		o.Every = DefaultDeliveryEvery
	}
	if o.Limit <= 0 {
		o.Limit = defaultDeliveryLimit
	}
	if o.Lease <= 0 {
		o.Lease = max(DefaultDeliveryLease, 2*o.Limit)
	}
	if o.Attempts <= 0 {
		o.Attempts = DeliveryAttempts
	}
	if o.Backoff == nil {
		o.Backoff = Backoff
	}
	return o
}

// Start runs the claim loops until Stop.
func (d *Deliveries) Start(ctx context.Context) error {
	o := d.options()
	d.Options = o
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	d.slots = newSlots(o.Concurrency)
	d.work, d.abort = context.WithCancel(context.WithoutCancel(ctx))
	loops := make([]func(context.Context), o.Claimers)
	for i := range loops {
		loops[i] = d.loop
	}
	return d.claiming.Start(ctx, loops...)
}

// Freeze stops claiming and leaves the attempts in flight running, as a
// worker that stalls would (tests).
func (d *Deliveries) Freeze() { d.claiming.Stop() }

// Stop stops claiming, waits up to Drain for the attempts in flight, then
// ends those still running (each is released) and waits for their
// outcomes to be recorded.
func (d *Deliveries) Stop() {
	d.stop.Do(func() {
		d.claiming.Stop()
		if d.abort == nil {
			return // never started
		}
		done := make(chan struct{})
		go func() { d.inflight.Wait(); close(done) }()
		drain := d.Drain
		if drain <= 0 {
			drain = 30 * time.Second
		}
		t := time.NewTimer(drain)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			d.Log.Warn("deliveries still in flight after the drain; releasing them", "worker", d.Worker)
			d.abort()
			<-done
		}
		d.abort()
	})
}

func (d *Deliveries) loop(ctx context.Context) {
	t := time.NewTicker(d.Options.Every)
	defer t.Stop()
	for {
		for d.claim(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// claim leases one set of due wake-ups, as many as attempts may start (at
// most Batch), and starts their attempts. It waits until a quarter of the
// attempts in flight (or a Batch) may start, so that under a burst the
// sets stay large instead of one claim per finished push. It reports
// whether the set came back full, so more may be due.
func (d *Deliveries) claim(ctx context.Context) bool {
	o := d.Options
	n := d.slots.acquire(ctx, max(1, min(o.Batch, o.Concurrency/4)), o.Batch)
	if n == 0 {
		return false
	}
	// The claim runs to its end even when Stop comes meanwhile: a lease
	// taken is always attempted (or released), never left to expire.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	ls, err := d.Rounds.ClaimDue(cctx, d.Worker, n, o.Lease)
	cancel()
	if err != nil {
		d.Log.ErrorContext(ctx, "claim due wake-ups", "err", err)
	}
	d.slots.release(n - len(ls))
	for _, l := range ls {
		d.inflight.Add(1)
		go d.attempt(l)
	}
	return err == nil && len(ls) == n
}

// slots counts the attempts that may still start.
type slots struct {
	mu   sync.Mutex
	free int
	// freed is closed (and replaced) when slots are released.
	freed chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n, freed: make(chan struct{})} }

// acquire waits until at least least slots are free (or ctx ends: 0) and
// takes up to most of them.
func (s *slots) acquire(ctx context.Context, least, most int) int {
	for {
		s.mu.Lock()
		if s.free >= least {
			n := min(s.free, most)
			s.free -= n
			s.mu.Unlock()
			return n
		}
		freed := s.freed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return 0
		}
	}
}

func (s *slots) release(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
}

// attempt makes one leased wake-up's attempt and records its outcome.
func (d *Deliveries) attempt(l rounds.Lease) {
	defer d.inflight.Done()
	o := d.Options
	ctx, cancel := context.WithTimeout(d.work, o.Limit)
	n := l.Wakeup.Attempts + 1
	out := d.Rounds.Attempt(ctx, l, n >= o.Attempts)
	cancel()
	d.slots.release(1) // the push is done; its outcome joins the next recorded set
	switch {
	case out.State == "" && d.work.Err() != nil:
		// Stopped in the middle of it: another worker attempts it again.
		out = rounds.Outcome{TenantID: out.TenantID, ID: out.ID, Worker: out.Worker, Release: true}
	case out.State == "" && !out.Dead:
		out.Retry = time.Now().Add(o.Backoff(n))
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	if err := d.Rounds.Record(rctx, out); err != nil {
		d.Log.Error("record a delivery's outcome; the wake-up is attempted again when its lease ends",
			"tenant", out.TenantID, "wakeup", out.ID, "err", err)
	}
}
