package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/rounds"
)

// RoundsQueue is the queue delivery jobs were worked on before wake-ups
// were claimed in sets; it remains for jobs an older replica inserts
// during a rolling upgrade (DeliverWorker).
const RoundsQueue = "rounds"

// DeliverArgs is the job that delivered one wake-up before wake-ups were
// claimed in sets. Visor no longer inserts it.
type DeliverArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	WakeupID uuid.UUID `json:"wakeup_id"`
}

// Kind names the job in River.
func (DeliverArgs) Kind() string { return "deliver_wakeup" }

// DeliveryAttempts is how many times a push is tried before the wake-up
// becomes a dead letter (about two and a half hours with Backoff).
const DeliveryAttempts = 12

// Backoff is the wait before retry n (1 after the first failure): 5 s
// doubling up to an hour, with a fifth of jitter either way.
func Backoff(n int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	d = min(d, time.Hour)
	return d + time.Duration((rand.Float64()-0.5)*0.4*float64(d))
}

// DeliverWorker completes the deliver_wakeup jobs an older replica may
// still insert while a deployment upgrades: their wake-ups are queued
// like any other and the claimers (Deliveries) deliver them, so the job
// itself pushes nothing. (The migration that introduced the claimers
// moved the jobs pending then onto their wake-ups.)
//
// It is kept although Visor inserts no such job: upgrades run the
// migration first and then roll serve and worker, so serve replicas of the
// previous release go on writing wake-ups, each with a deliver_wakeup
// job, after the migration has moved and deleted the pending ones.
// Stopping the older workers first does not stop those inserts. Without
// this worker and RoundsQueue those jobs would stay available forever on
// a queue no worker fetches. It can go, with RoundsQueue, once no release
// that inserts the job can run against the schema: in the release after
// the one that introduced the claimers.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
}

// Work completes the job; the wake-up is delivered by the claimers.
func (w *DeliverWorker) Work(context.Context, *river.Job[DeliverArgs]) error { return nil }

// RoundsOptions configure the delivery of wake-ups (Deliveries).
type RoundsOptions struct {
	// Concurrency bounds the delivery attempts one worker process has in
	// flight (DefaultRoundsConcurrency if zero).
	Concurrency int
	// Claimers, Batch and Every: how many claim loops, the most one claim
	// takes, and how often an idle loop looks (DefaultDeliveryClaimers,
	// DefaultDeliveryBatch, DefaultDeliveryEvery if zero).
	Claimers int
	Batch    int
	Every    time.Duration
	// Lease is how long a claimed wake-up stays with its worker before
	// another may take it (DefaultDeliveryLease if zero); it must outlast
	// Limit.
	Lease time.Duration
	// Limit bounds one attempt, from its claim to the push's answer (30 s
	// if zero).
	Limit time.Duration
	// Attempts is the attempts before a dead letter (DeliveryAttempts if
	// zero).
	Attempts int
	// Backoff is the wait before retry n (Backoff if nil).
	Backoff func(int) time.Duration
}

// DefaultRoundsConcurrency is how many delivery attempts one worker
// process has in flight. An attempt mostly waits (for a slot of its
// endpoint's limit, for the runtime's answer, for its outcome's shared
// statement) and holds no database connection while it does.
const DefaultRoundsConcurrency = 200

// RegisterRounds adds the delivery of wake-ups to reg: claimers that the
// runner starts under its worker id, and the completion of old delivery
// jobs.
func RegisterRounds(reg *Registry, svc *rounds.Service, o RoundsOptions) {
	river.AddWorker(reg.Workers(), &DeliverWorker{})
	reg.AddQueue(RoundsQueue, 2)
	reg.addPlane(func(id string, log *slog.Logger, drain time.Duration) plane {
		return &Deliveries{Rounds: svc, Worker: id, Options: o, Drain: drain, Log: log.With("area", "rounds")}
	})
}

// DueFirer writes the runs of due routines and reminders (board.Service).
type DueFirer interface {
	FireDue(ctx context.Context, limit int) ([]board.Run, error)
}

// Dispatcher fires due routines and reminders: each run writes its task
// and wake-up, which the claimers (Deliveries) then deliver. Any number of
// worker processes may run one, each with Claimers passes writing sets at
// once; rows are locked and skipped, so each run is written once.
type Dispatcher struct {
	Board DueFirer
	Every time.Duration
	// Claimers is how many sets of due runs one process writes at once
	// (DefaultDispatchClaimers if zero): a burst due at the same instant
	// is written that many sets at a time.
	Claimers int
	Log      *slog.Logger
	life     lifecycle.Base
}

// DefaultDispatchClaimers is the Dispatcher's passes writing at once.
const DefaultDispatchClaimers = 2

// dispatchBatch bounds the runs written in one transaction.
const dispatchBatch = 500

// Start runs the dispatcher until Stop.
func (d *Dispatcher) Start(ctx context.Context) error {
	n := d.Claimers
	if n <= 0 {
		n = DefaultDispatchClaimers
	}
	passes := make([]func(context.Context), n)
	for i := range passes {
		passes[i] = d.loop
	}
	return d.life.Start(ctx, passes...)
}

func (d *Dispatcher) loop(ctx context.Context) {
	every := d.Every
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			runs, err := d.Board.FireDue(ctx, dispatchBatch)
			if err != nil && ctx.Err() == nil {
				d.Log.ErrorContext(ctx, "fire due routines and reminders", "err", err)
			}
			if err != nil || len(runs) < dispatchBatch {
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

// Stop stops the dispatcher and waits for its pass to end.
func (d *Dispatcher) Stop() { d.life.Stop() }

// WakeupRetention is how long a settled wake-up (delivered, handed out,
// cancelled) is kept for operators to look up before the daily prune.
const WakeupRetention = 30 * 24 * time.Hour

// PruneWakeupsArgs is the daily job that deletes wake-ups settled more
// than WakeupRetention ago. Dead letters are kept.
type PruneWakeupsArgs struct{}

// Kind names the job in River.
func (PruneWakeupsArgs) Kind() string { return "prune_wakeups" }

// WakeupPruner is the storage the prune needs (storage/postgres.RoundsStore).
type WakeupPruner interface {
	PruneWakeups(ctx context.Context, cutoff time.Time) (int64, error)
}

// PruneWakeupsWorker works PruneWakeupsArgs.
type PruneWakeupsWorker struct {
	river.WorkerDefaults[PruneWakeupsArgs]
	Store WakeupPruner
	Now   func() time.Time
}

// Work deletes the old settled wake-ups.
func (w *PruneWakeupsWorker) Work(ctx context.Context, _ *river.Job[PruneWakeupsArgs]) error {
	_, err := w.Store.PruneWakeups(ctx, w.Now().Add(-WakeupRetention))
	return err
}

// RegisterWakeupPrune adds the daily prune of settled wake-ups to reg.
func RegisterWakeupPrune(reg *Registry, store WakeupPruner) {
	river.AddWorker(reg.Workers(), &PruneWakeupsWorker{Store: store, Now: time.Now})
	reg.AddPeriodic(river.NewPeriodicJob(river.PeriodicInterval(24*time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return PruneWakeupsArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "prune_wakeups"}))
}
