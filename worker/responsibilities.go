package worker

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/visorhq/visor/services/responsibilities"
)

// ResponsibilityQueue is the queue of responsibility wake-ups and scheduled runs,
// apart from deliveries and housekeeping.
const ResponsibilityQueue = "responsibilities"

// ResponsibilityWakeupArgs is the job of one follow-up or question, scheduled at its
// due time (a question's is its expiry). It is unique by its arguments,
// so however many workers run, one job exists and fires per wake-up.
type ResponsibilityWakeupArgs struct {
	TenantID         uuid.UUID `json:"tenant_id"`
	ResponsibilityID uuid.UUID `json:"responsibility_id"`
	WakeupID         uuid.UUID `json:"wakeup_id"`
}

// Kind names the job in River.
func (ResponsibilityWakeupArgs) Kind() string { return "responsibility_wakeup" }

func responsibilityOpts(at time.Time) *river.InsertOpts {
	return &river.InsertOpts{Queue: ResponsibilityQueue, ScheduledAt: at, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// ResponsibilityJobs arms and cancels the jobs of responsibility wake-ups inside the
// transaction of the change that causes them
// (storage/postgres.ResponsibilityJobs).
type ResponsibilityJobs struct {
	Client *river.Client[pgx.Tx]
}

// ArmWakeupTx enqueues the job of a follow-up or question at its due time.
func (j ResponsibilityJobs) ArmWakeupTx(ctx context.Context, tx pgx.Tx, w responsibilities.Wakeup) error {
	_, err := j.Client.InsertTx(ctx, tx, ResponsibilityWakeupArgs{TenantID: w.TenantID, ResponsibilityID: w.ResponsibilityID, WakeupID: w.ID},
		responsibilityOpts(w.DueAt))
	return err
}

// CancelTx cancels the wake-up jobs of r not yet finished: a change bumps
// the epoch and settles its wake-ups, so none of them would act. (Question
// pushes see their notice withdrawn.)
func (j ResponsibilityJobs) CancelTx(ctx context.Context, tx pgx.Tx, r responsibilities.Responsibility) error {
	// The args index (GIN) finds a responsibility's jobs among all others.
	rows, err := tx.Query(ctx, `SELECT id FROM river_job
		WHERE kind = 'responsibility_wakeup' AND state IN ('available', 'scheduled', 'retryable')
			AND args @> jsonb_build_object('tenant_id', $1::text, 'responsibility_id', $2::text)`, r.TenantID, r.ID)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := j.Client.JobCancelTx(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// ResponsibilityWakeupWorker works ResponsibilityWakeupArgs.
type ResponsibilityWakeupWorker struct {
	river.WorkerDefaults[ResponsibilityWakeupArgs]
	Responsibility *responsibilities.Service
}

// Work fires the wake-up (responsibilities.Service.FireWakeup).
func (w *ResponsibilityWakeupWorker) Work(ctx context.Context, job *river.Job[ResponsibilityWakeupArgs]) error {
	_, err := w.Responsibility.FireWakeup(ctx, job.Args.TenantID, job.Args.WakeupID)
	return err
}

// RegisterResponsibilities adds the wake-up and question push jobs and their
// queue to reg. concurrency is how many run at once per worker process
// (20 if zero).
func RegisterResponsibilities(reg *Registry, svc *responsibilities.Service, concurrency int) {
	RegisterResponsibilitiesWith(reg, svc, ResponsibilityOptions{Concurrency: concurrency})
}

// ResponsibilityOptions configure the responsibility jobs.
type ResponsibilityOptions struct {
	Concurrency int                     // jobs at once per worker process (20 if zero)
	Backoff     func(int) time.Duration // before retry n of a question's push (Backoff if nil)
}

// RegisterResponsibilitiesWith is RegisterResponsibilities with options.
func RegisterResponsibilitiesWith(reg *Registry, svc *responsibilities.Service, o ResponsibilityOptions) {
	if o.Concurrency <= 0 {
		o.Concurrency = 20
	}
	river.AddWorker(reg.Workers(), &ResponsibilityWakeupWorker{Responsibility: svc})
	river.AddWorker(reg.Workers(), &ResponsibilityNoticeWorker{Responsibility: svc, Backoff: o.Backoff})
	reg.AddQueue(ResponsibilityQueue, o.Concurrency)
}

// ResponsibilityNoticeArgs is the job that pushes one question to its
// responsibility's webhook, inserted in the question's transaction at its
// send time (later when quiet hours hold it). Retries back off like round
// deliveries; webhook-id is the notice's id on every try.
type ResponsibilityNoticeArgs struct {
	TenantID         uuid.UUID `json:"tenant_id"`
	ResponsibilityID uuid.UUID `json:"responsibility_id"`
	NoticeID         uuid.UUID `json:"notice_id"`
}

// Kind names the job in River.
func (ResponsibilityNoticeArgs) Kind() string { return "responsibility_question_push" }

// NoticeAttempts is how many times a question's push is tried before it
// fails.
const NoticeAttempts = 8

// ArmNoticeTx enqueues the push of a question at its send time.
func (j ResponsibilityJobs) ArmNoticeTx(ctx context.Context, tx pgx.Tx, n responsibilities.Notice) error {
	_, err := j.Client.InsertTx(ctx, tx, ResponsibilityNoticeArgs{TenantID: n.TenantID, ResponsibilityID: n.ResponsibilityID, NoticeID: n.ID},
		&river.InsertOpts{Queue: ResponsibilityQueue, ScheduledAt: n.SendAt, MaxAttempts: NoticeAttempts, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// ResponsibilityNoticeWorker works ResponsibilityNoticeArgs.
type ResponsibilityNoticeWorker struct {
	river.WorkerDefaults[ResponsibilityNoticeArgs]
	Responsibility *responsibilities.Service
	// Backoff is the wait before retry n (Backoff if nil).
	Backoff func(n int) time.Duration
}

// Work pushes the question (responsibilities.Service.DeliverNotice): a
// notice held for quiet hours runs again when they end, one that cannot
// be delivered stops retrying.
func (w *ResponsibilityNoticeWorker) Work(ctx context.Context, job *river.Job[ResponsibilityNoticeArgs]) error {
	err := w.Responsibility.DeliverNotice(ctx, job.Args.TenantID, job.Args.NoticeID, job.Attempt >= job.MaxAttempts)
	var held *responsibilities.HeldError
	switch {
	case errors.As(err, &held):
		return river.JobSnooze(max(time.Until(held.Until), time.Second))
	case errors.Is(err, responsibilities.ErrPushPermanent):
		return river.JobCancel(err)
	}
	return err
}

// NextRetry schedules the next attempt.
func (w *ResponsibilityNoticeWorker) NextRetry(job *river.Job[ResponsibilityNoticeArgs]) time.Time {
	b := w.Backoff
	if b == nil {
		b = Backoff
	}
	return time.Now().Add(b(job.Attempt))
}

// Timeout bounds one attempt.
func (w *ResponsibilityNoticeWorker) Timeout(*river.Job[ResponsibilityNoticeArgs]) time.Duration {
	return 30 * time.Second
}
