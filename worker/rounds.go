package worker

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/rounds"
)

// RoundsQueue is the queue wake-ups are delivered on, apart from other
// jobs so a slow runtime never holds up housekeeping (and the reverse).
const RoundsQueue = "rounds"

// DeliverArgs is the job that delivers one wake-up. Every wake-up gets one
// in the transaction that writes it; a retried dead letter gets another.
type DeliverArgs struct {
	TenantID uuid.UUID `json:"tenant_id"`
	WakeupID uuid.UUID `json:"wakeup_id"`
}

// Kind names the job in River.
func (DeliverArgs) Kind() string { return "deliver_wakeup" }

// DeliveryAttempts is how many times a push is tried before the wake-up
// becomes a dead letter (about two and a half hours with Backoff).
const DeliveryAttempts = 12

// WakeupQueue enqueues delivery jobs inside the caller's transaction
// (storage/postgres.JobQueue).
type WakeupQueue struct {
	Client      *river.Client[pgx.Tx]
	MaxAttempts int // DeliveryAttempts if zero
}

// EnqueueTx inserts one delivery job per wake-up in tx.
func (q WakeupQueue) EnqueueTx(ctx context.Context, tx pgx.Tx, ws []rounds.Wakeup) error {
	if len(ws) == 0 {
		return nil
	}
	attempts := q.MaxAttempts
	if attempts <= 0 {
		attempts = DeliveryAttempts
	}
	params := make([]river.InsertManyParams, len(ws))
	for i, w := range ws {
		params[i] = river.InsertManyParams{Args: DeliverArgs{TenantID: w.TenantID, WakeupID: w.ID},
			InsertOpts: &river.InsertOpts{Queue: RoundsQueue, MaxAttempts: attempts}}
	}
	_, err := q.Client.InsertManyTx(ctx, tx, params)
	return err
}

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

// DeliverWorker works DeliverArgs through the rounds service.
type DeliverWorker struct {
	river.WorkerDefaults[DeliverArgs]
	Rounds *rounds.Service
	// Backoff is the wait before retry n (Backoff if nil).
	Backoff func(n int) time.Duration
	// Limit bounds one attempt (the push's own timeout plus margin).
	Limit time.Duration
}

// Work makes one delivery attempt. A permanent failure cancels the job
// (the wake-up is already a dead letter); others are retried until the
// last attempt.
func (w *DeliverWorker) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	final := job.Attempt >= job.MaxAttempts
	err := w.Rounds.Deliver(ctx, job.Args.TenantID, job.Args.WakeupID, final)
	if errors.Is(err, rounds.ErrPermanent) {
		return river.JobCancel(err)
	}
	return err
}

// NextRetry schedules the next attempt.
func (w *DeliverWorker) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	b := w.Backoff
	if b == nil {
		b = Backoff
	}
	return time.Now().Add(b(job.Attempt))
}

// Timeout bounds one attempt.
func (w *DeliverWorker) Timeout(*river.Job[DeliverArgs]) time.Duration {
	if w.Limit > 0 {
		return w.Limit
	}
	return 30 * time.Second
}

// RoundsOptions configure the round jobs.
type RoundsOptions struct {
	Concurrency int // deliveries at once per worker process (DefaultRoundsConcurrency if zero)
	Backoff     func(int) time.Duration
	Limit       time.Duration // one attempt's bound
	// Every is how often the dispatcher looks for due routines and
	// reminders (250 ms if zero).
	Every time.Duration
}

// DefaultRoundsConcurrency is how many deliveries one worker process
// runs at once. A delivery mostly waits (for its set's statements, for a
// slot of its endpoint's limit, for the runtime's answer) and holds no
// database connection while it does, so it is high: the more deliveries
// wait together, the larger the sets their statements are shared by.
const DefaultRoundsConcurrency = 200

// RegisterRounds adds the delivery job and its queue to reg.
func RegisterRounds(reg *Registry, svc *rounds.Service, o RoundsOptions) {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultRoundsConcurrency
	}
	river.AddWorker(reg.Workers(), &DeliverWorker{Rounds: svc, Backoff: o.Backoff, Limit: o.Limit})
	reg.AddQueue(RoundsQueue, o.Concurrency)
}

// DueFirer writes the runs of due routines and reminders (board.Service).
type DueFirer interface {
	FireDue(ctx context.Context, limit int) ([]board.Run, error)
}

// Dispatcher fires due routines and reminders: each run writes its task
// and wake-up, whose delivery job the queue then works. Any number of
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
