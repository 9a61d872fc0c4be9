package postgres

import (
	"context"
	"errors"

	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
)

// ResponsibilityJobs arms and cancels the worker jobs of responsibility wake-ups in
// the transaction of the change that causes them (worker.ResponsibilityJobs).
type ResponsibilityJobs interface {
	// ArmWakeupTx enqueues the job of a follow-up or question at its due
	// time.
	ArmWakeupTx(ctx context.Context, tx pgx.Tx, w responsibilities.Wakeup) error
	// CancelTx cancels the responsibility's pending jobs (its wake-ups
	// and question pushes).
	CancelTx(ctx context.Context, tx pgx.Tx, r responsibilities.Responsibility) error
	// ArmNoticeTx enqueues the job that pushes a question, at its send
	// time.
	ArmNoticeTx(ctx context.Context, tx pgx.Tx, n responsibilities.Notice) error
}

// SetJobs sets where wake-up jobs are armed and cancelled. Without it no
// job is armed (a store used only to read).
func (s *ResponsibilityStore) SetJobs(j ResponsibilityJobs) { s.jobs = j }

var _ responsibilities.QuestionStore = (*ResponsibilityStore)(nil)
var _ responsibilities.ScheduleStore = (*ResponsibilityStore)(nil)

func tenantTZ(ctx context.Context, q querier, tenantID uuid.UUID) (string, error) {
	var tz string
	err := q.QueryRow(ctx, `SELECT coalesce(settings->>'time_zone', '') FROM tenants WHERE id = $1`, tenantID).Scan(&tz)
	return tz, mapErr(err, "tenant")
}

// resetJobs cancels r's pending jobs and arms its next tick in its
// current epoch (or clears it), in tx.
func (s *ResponsibilityStore) resetJobs(ctx context.Context, tx pgx.Tx, r responsibilities.Responsibility) error {
	tz, err := tenantTZ(ctx, tx, r.TenantID)
	if err != nil {
		return err
	}
	if err := setNextTick(ctx, tx, r, tz, time.Now()); err != nil {
		return err
	}
	if s.jobs == nil {
		return nil
	}
	return s.jobs.CancelTx(ctx, tx, r)
}

// OpenQuestions lists pending questions, oldest first.
func (s *ResponsibilityStore) OpenQuestions(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *responsibilities.QuestionPosition, limit int) ([]responsibilities.Wakeup, error) {
	var at *time.Time
	var id uuid.UUID
	if after != nil {
		at, id = &after.At, after.ID
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+rwCols+` FROM responsibility_wakeups
		WHERE tenant_id = $1 AND kind = 'question' AND state = 'pending'
			AND ($2::uuid IS NULL OR responsibility_id = $2)
			AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4))
		ORDER BY created_at, id LIMIT $5`, tenantID, nullable(responsibilityID), at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Wakeup, error) { return scanRW(r) })
}

// Wakeup returns one wake-up.
func (s *ResponsibilityStore) Wakeup(ctx context.Context, tenantID, id uuid.UUID) (responsibilities.Wakeup, error) {
	w, err := scanRW(s.db.Pool.QueryRow(ctx, `SELECT `+rwCols+` FROM responsibility_wakeups WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return w, mapErr(err, "wake-up")
}

// AnswerQuestion settles a pending, unexpired question as answered.
func (s *ResponsibilityStore) AnswerQuestion(ctx context.Context, tenantID, id uuid.UUID, answer string, flags []string, by string, now time.Time) (responsibilities.Wakeup, error) {
	w, err := scanRW(s.db.Pool.QueryRow(ctx, `UPDATE responsibility_wakeups
		SET state = 'answered', settled_at = $6, answer = $3, answer_flags = $4, answered_by = $5
		WHERE tenant_id = $1 AND id = $2 AND kind = 'question' AND state = 'pending' AND due_at > $6
		RETURNING `+rwCols, tenantID, id, answer, flags, by, now))
	if !errors.Is(err, pgx.ErrNoRows) {
		return w, mapErr(err, "question")
	}
	if w, err = s.Wakeup(ctx, tenantID, id); err != nil {
		return w, err
	}
	if w.State == responsibilities.Pending {
		// Past its expiry; its job settles it shortly.
		w.State = responsibilities.Expired
	}
	return w, responsibilities.SettledConflict(w)
}

// Settle moves a pending wake-up to state.
func (s *ResponsibilityStore) Settle(ctx context.Context, tenantID, id uuid.UUID, to responsibilities.WakeupState) (bool, error) {
	tag, err := s.db.Pool.Exec(ctx, `UPDATE responsibility_wakeups SET state = $3, settled_at = now()
		WHERE tenant_id = $1 AND id = $2 AND state = 'pending'`, tenantID, id, to)
	return err == nil && tag.RowsAffected() == 1, err
}

// Unsettle returns a wake-up in state from to pending, unless another
// wake-up of its responsibility went live meanwhile.
func (s *ResponsibilityStore) Unsettle(ctx context.Context, tenantID, id uuid.UUID, from responsibilities.WakeupState) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE responsibility_wakeups w SET state = 'pending', settled_at = NULL
		WHERE tenant_id = $1 AND id = $2 AND state = $3 AND NOT EXISTS (SELECT 1 FROM responsibility_wakeups o
			WHERE o.tenant_id = w.tenant_id AND o.responsibility_id = w.responsibility_id AND o.state = 'pending')`, tenantID, id, from)
	return err
}

// Unreported lists settled questions no run has been told of.
func (s *ResponsibilityStore) Unreported(ctx context.Context, tenantID, responsibilityID uuid.UUID) ([]responsibilities.Wakeup, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+rwCols+` FROM responsibility_wakeups
		WHERE tenant_id = $1 AND responsibility_id = $2 AND kind = 'question' AND state <> 'pending' AND reported_at IS NULL
		ORDER BY settled_at, id LIMIT 20`, tenantID, responsibilityID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Wakeup, error) { return scanRW(r) })
}

// MarkReported records that a run was told of these questions.
func (s *ResponsibilityStore) MarkReported(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) error {
	if len(ids) == 0 {
		return fault.New(fault.Invalid, "no questions to mark")
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE responsibility_wakeups SET reported_at = now()
		WHERE tenant_id = $1 AND id = ANY($2) AND reported_at IS NULL`, tenantID, ids)
	return err
}
