package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
)

// ResponsibilityStore is responsibilities.Store on Postgres.
type ResponsibilityStore struct {
	db   *DB
	jobs ResponsibilityJobs
}

var _ responsibilities.Store = (*ResponsibilityStore)(nil)

// NewResponsibilityStore returns the store.
func NewResponsibilityStore(db *DB) *ResponsibilityStore { return &ResponsibilityStore{db: db} }

const respCols = `tenant_id, id, agent_id, name, charter, schedule, period_secs, window_anchor, run_limit, followup_limit,
	spend_cap_cents, min_wake_interval_secs, stop_at, subscriptions, status, epoch, created_by, created_at, updated_at,
	notify_enabled, notify_url, notify_secret, notify_flagged, notify_quiet_start, notify_quiet_end, notify_max_per_window`

func scanResp(row pgx.Row) (responsibilities.Responsibility, error) {
	var r responsibilities.Responsibility
	var quietStart, quietEnd *int
	n := &r.Notify
	err := row.Scan(&r.TenantID, &r.ID, &r.AgentID, &r.Name, &r.Charter, &r.Schedule, &r.PeriodSecs, &r.WindowAnchor, &r.RunLimit,
		&r.FollowupLimit, &r.SpendCapCents, &r.MinWakeIntervalSecs, &r.StopAt, &r.Subscriptions, &r.Status, &r.Epoch, &r.CreatedBy,
		&r.CreatedAt, &r.UpdatedAt, &n.Enabled, &n.URL, &n.Secret, &n.Flagged, &quietStart, &quietEnd, &n.MaxPerWindow)
	if quietStart != nil && quietEnd != nil {
		n.QuietStart, n.QuietEnd = responsibilities.Clock(*quietStart), responsibilities.Clock(*quietEnd)
	}
	return r, err
}

// notifyArgs are the notify columns' values of n, in respCols' order.
func notifyArgs(n responsibilities.Notify) []any {
	var start, end *int
	if n.QuietStart != "" {
		a, err1 := responsibilities.ClockMinutes(n.QuietStart)
		b, err2 := responsibilities.ClockMinutes(n.QuietEnd)
		if err1 == nil && err2 == nil {
			start, end = &a, &b
		}
	}
	return []any{n.Enabled, n.URL, n.Secret, n.Flagged, start, end, n.MaxPerWindow}
}

const runCols = `tenant_id, id, responsibility_id, task_id, epoch, reason, opened_at, closed_at, cost_cents, reports, wakeup_id`

func scanRun(row pgx.Row) (responsibilities.Run, error) {
	var r responsibilities.Run
	var task, wake *uuid.UUID
	err := row.Scan(&r.TenantID, &r.ID, &r.ResponsibilityID, &task, &r.Epoch, &r.Reason, &r.OpenedAt, &r.ClosedAt, &r.CostCents,
		&r.Reports, &wake)
	r.TaskID, r.WakeupID, r.NotCounted = deref(task), deref(wake), r.CostNotCounted()
	return r, err
}

const rwCols = `tenant_id, id, responsibility_id, run_id, kind, epoch, due_at, question, options, state, created_by, created_at, settled_at,
	flags, answer, answer_flags, answered_by, reported_at`

func scanRW(row pgx.Row) (responsibilities.Wakeup, error) {
	var w responsibilities.Wakeup
	err := row.Scan(&w.TenantID, &w.ID, &w.ResponsibilityID, &w.RunID, &w.Kind, &w.Epoch, &w.DueAt, &w.Question, &w.Options,
		&w.State, &w.CreatedBy, &w.CreatedAt, &w.SettledAt, &w.Flags, &w.Answer, &w.AnswerFlags, &w.AnsweredBy, &w.ReportedAt)
	return w, err
}

// CreateResponsibility inserts r; its epoch starts at 1.
func (s *ResponsibilityStore) CreateResponsibility(ctx context.Context, r *responsibilities.Responsibility) error {
	if r.Subscriptions == nil {
		r.Subscriptions = []string{}
	}
	if r.Notify.Flagged == "" && r.Notify.MaxPerWindow == 0 {
		r.Notify.Flagged, r.Notify.MaxPerWindow = responsibilities.FlaggedNotice, responsibilities.DefaultNoticesPerWindow
	}
	anchor := &r.WindowAnchor
	if r.WindowAnchor.IsZero() {
		anchor = nil
	}
	// The first scheduled tick is armed in the same transaction.
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		args := append([]any{r.TenantID, r.ID, r.AgentID, r.Name, r.Charter, r.Schedule, r.PeriodSecs, anchor, r.RunLimit, r.FollowupLimit,
			r.SpendCapCents, r.MinWakeIntervalSecs, r.StopAt, r.Subscriptions, r.Status, r.CreatedBy}, notifyArgs(r.Notify)...)
		err := tx.QueryRow(ctx, `INSERT INTO responsibilities (tenant_id, id, agent_id, name, charter, schedule, period_secs,
				window_anchor, run_limit, followup_limit, spend_cap_cents, min_wake_interval_secs, stop_at, subscriptions, status, created_by,
				notify_enabled, notify_url, notify_secret, notify_flagged, notify_quiet_start, notify_quiet_end, notify_max_per_window)
			VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8, now()), $9, $10, $11, $12, $13, $14, $15, $16,
				$17, $18, $19, $20, $21, $22, $23)
			RETURNING window_anchor, epoch, created_at, updated_at`, args...).
			Scan(&r.WindowAnchor, &r.Epoch, &r.CreatedAt, &r.UpdatedAt)
		if err != nil {
			return err
		}
		return s.resetJobs(ctx, tx, *r)
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23503" {
		return fault.Newf(fault.Invalid, err, "agent %s is not an AI employee of this tenant", r.AgentID)
	}
	return mapErr(err, "responsibility")
}

// Responsibility returns one responsibility.
func (s *ResponsibilityStore) Responsibility(ctx context.Context, tenantID, id uuid.UUID) (responsibilities.Responsibility, error) {
	r, err := scanResp(s.db.Pool.QueryRow(ctx, `SELECT `+respCols+` FROM responsibilities WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return r, mapErr(err, "responsibility")
}

// ListResponsibilities returns responsibilities newest first.
func (s *ResponsibilityStore) ListResponsibilities(ctx context.Context, tenantID uuid.UUID, f responsibilities.Filter) ([]responsibilities.Responsibility, error) {
	var t *time.Time
	var id uuid.UUID
	if f.After != nil {
		t, id = &f.After.At, f.After.ID
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+respCols+` FROM responsibilities WHERE tenant_id = $1
		AND ($2::uuid IS NULL OR agent_id = $2)
		AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) ORDER BY created_at DESC, id DESC LIMIT $5`,
		tenantID, nullable(f.Agent), t, id, f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Responsibility, error) { return scanResp(r) })
}

// UpdateResponsibility applies fn under a row lock, bumps the epoch and
// cancels the pending wake-up.
func (s *ResponsibilityStore) UpdateResponsibility(ctx context.Context, tenantID, id uuid.UUID, fn func(*responsibilities.Responsibility) error) (r responsibilities.Responsibility, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		r, err = scanResp(tx.QueryRow(ctx, `SELECT `+respCols+` FROM responsibilities WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "responsibility")
		}
		if err := fn(&r); err != nil {
			return err
		}
		if r.Subscriptions == nil {
			r.Subscriptions = []string{}
		}
		args := append([]any{tenantID, id, r.AgentID, r.Name, r.Charter, r.Schedule, r.PeriodSecs, r.RunLimit, r.FollowupLimit,
			r.SpendCapCents, r.MinWakeIntervalSecs, r.StopAt, r.Subscriptions, r.Status}, notifyArgs(r.Notify)...)
		err = tx.QueryRow(ctx, `UPDATE responsibilities SET agent_id = $3, name = $4, charter = $5, schedule = $6, period_secs = $7,
				run_limit = $8, followup_limit = $9, spend_cap_cents = $10, min_wake_interval_secs = $11, stop_at = $12,
				subscriptions = $13, status = $14, notify_enabled = $15, notify_url = $16, notify_secret = $17, notify_flagged = $18,
				notify_quiet_start = $19, notify_quiet_end = $20, notify_max_per_window = $21, epoch = epoch + 1, updated_at = now()
			WHERE tenant_id = $1 AND id = $2 RETURNING epoch, updated_at`, args...).Scan(&r.Epoch, &r.UpdatedAt)
		if err != nil {
			return mapErr(err, "responsibility")
		}
		_, err = tx.Exec(ctx, `UPDATE responsibility_wakeups SET state = 'cancelled', settled_at = now()
			WHERE tenant_id = $1 AND responsibility_id = $2 AND state = 'pending'`, tenantID, id)
		if err != nil {
			return err
		}
		if err := withdrawNotices(ctx, tx, tenantID, id); err != nil {
			return err
		}
		r.TenantID, r.ID = tenantID, id
		return s.resetJobs(ctx, tx, r)
	})
	return r, err
}

// DeleteResponsibility deletes a responsibility with its runs and
// wake-ups; the runs' tasks stay on the board.
func (s *ResponsibilityStore) DeleteResponsibility(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM responsibilities WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "responsibility not found")
	}
	return nil
}

// OpenRun inserts an open run.
func (s *ResponsibilityStore) OpenRun(ctx context.Context, r *responsibilities.Run) error {
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO responsibility_runs (tenant_id, id, responsibility_id, task_id, epoch, reason)
		SELECT $1, $2, $3, $4, epoch, $5 FROM responsibilities WHERE tenant_id = $1 AND id = $3
		RETURNING epoch, opened_at`, r.TenantID, r.ID, r.ResponsibilityID, nullable(r.TaskID), r.Reason).Scan(&r.Epoch, &r.OpenedAt)
	if isUnique(err) {
		return fault.New(fault.Conflict, "this responsibility already has an open run")
	}
	return mapErr(err, "responsibility")
}

// CloseRun closes an open run; a nil costCents keeps what was reported.
func (s *ResponsibilityStore) CloseRun(ctx context.Context, tenantID, runID uuid.UUID, costCents *int64) (responsibilities.Run, error) {
	r, err := scanRun(s.db.Pool.QueryRow(ctx, `UPDATE responsibility_runs SET closed_at = greatest(now(), opened_at), cost_cents = coalesce($3, cost_cents)
		WHERE tenant_id = $1 AND id = $2 AND closed_at IS NULL RETURNING `+runCols, tenantID, runID, costCents))
	if errors.Is(err, pgx.ErrNoRows) {
		if err := s.db.Pool.QueryRow(ctx, `SELECT 1 FROM responsibility_runs WHERE tenant_id = $1 AND id = $2`, tenantID, runID).Scan(new(int)); err != nil {
			return r, mapErr(err, "run")
		}
		return r, fault.New(fault.Conflict, "this run is already closed")
	}
	return r, mapErr(err, "run")
}

// OpenRunOf returns the responsibility's open run.
func (s *ResponsibilityStore) OpenRunOf(ctx context.Context, tenantID, responsibilityID uuid.UUID) (responsibilities.Run, error) {
	r, err := scanRun(s.db.Pool.QueryRow(ctx, `SELECT `+runCols+` FROM responsibility_runs
		WHERE tenant_id = $1 AND responsibility_id = $2 AND closed_at IS NULL`, tenantID, responsibilityID))
	return r, mapErr(err, "open run")
}

// RunByTask returns the run whose task is taskID.
func (s *ResponsibilityStore) RunByTask(ctx context.Context, tenantID, taskID uuid.UUID) (responsibilities.Run, error) {
	r, err := scanRun(s.db.Pool.QueryRow(ctx, `SELECT `+runCols+` FROM responsibility_runs
		WHERE tenant_id = $1 AND task_id = $2 ORDER BY opened_at DESC LIMIT 1`, tenantID, taskID))
	return r, mapErr(err, "run")
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func usage(ctx context.Context, q querier, tenantID, responsibilityID uuid.UUID, from, to time.Time) (responsibilities.Usage, error) {
	u := responsibilities.Usage{From: from, To: to}
	err := q.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1 AND responsibility_id = $2 AND opened_at >= $3 AND opened_at < $4),
			(SELECT coalesce(sum(cost_cents), 0) FROM responsibility_runs WHERE tenant_id = $1 AND responsibility_id = $2
				AND opened_at >= $3 AND opened_at < $4),
			(SELECT count(*) FROM responsibility_runs WHERE tenant_id = $1 AND responsibility_id = $2 AND opened_at >= $3 AND opened_at < $4
				AND closed_at IS NOT NULL AND cost_cents IS NULL),
			(SELECT count(*) FROM responsibility_wakeups WHERE tenant_id = $1 AND responsibility_id = $2 AND kind = 'followup'
				AND state <> 'cancelled' AND due_at >= $3 AND due_at < $4),
			(SELECT count(*) FROM responsibility_wakeups WHERE tenant_id = $1 AND responsibility_id = $2 AND kind = 'followup'
				AND state = 'pending' AND due_at >= $3 AND due_at < $4)`,
		tenantID, responsibilityID, from, to).Scan(&u.Runs, &u.SpendCents, &u.CostNotCounted, &u.Followups, &u.PendingFollowups)
	return u, err
}

// Usage returns what the window [from, to) has used.
func (s *ResponsibilityStore) Usage(ctx context.Context, tenantID, responsibilityID uuid.UUID, from, to time.Time) (responsibilities.Usage, error) {
	return usage(ctx, s.db.Pool, tenantID, responsibilityID, from, to)
}

// Arm writes the wake-up plan returns, with the responsibility locked.
func (s *ResponsibilityStore) Arm(ctx context.Context, tenantID, responsibilityID uuid.UUID, plan func(responsibilities.Armer) (*responsibilities.Wakeup, error)) (w responsibilities.Wakeup, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		r, err := scanResp(tx.QueryRow(ctx, `SELECT `+respCols+` FROM responsibilities WHERE tenant_id = $1 AND id = $2 FOR UPDATE`,
			tenantID, responsibilityID))
		if err != nil {
			return mapErr(err, "responsibility")
		}
		a := responsibilities.Armer{Responsibility: r, Usage: func(from, to time.Time) (responsibilities.Usage, error) {
			return usage(ctx, tx, tenantID, responsibilityID, from, to)
		}, Notices: func(from, to time.Time) (int, error) {
			return pushedNotices(ctx, tx, tenantID, responsibilityID, from, to)
		}}
		if run, err := scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM responsibility_runs
			WHERE tenant_id = $1 AND responsibility_id = $2 AND closed_at IS NULL`, tenantID, responsibilityID)); err == nil {
			a.OpenRun = &run
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if live, err := scanRW(tx.QueryRow(ctx, `SELECT `+rwCols+` FROM responsibility_wakeups
			WHERE tenant_id = $1 AND responsibility_id = $2 AND state = 'pending'`, tenantID, responsibilityID)); err == nil {
			a.Live = &live
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		nw, err := plan(a)
		if err != nil {
			return err
		}
		if nw.Options == nil {
			nw.Options = []string{}
		}
		if nw.Flags == nil {
			nw.Flags = []string{}
		}
		err = tx.QueryRow(ctx, `INSERT INTO responsibility_wakeups (tenant_id, id, responsibility_id, run_id, kind, epoch, due_at,
				question, options, created_by, flags)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING state, created_at`,
			tenantID, nw.ID, responsibilityID, nw.RunID, nw.Kind, nw.Epoch, nw.DueAt, nw.Question, nw.Options, nw.CreatedBy, nw.Flags).
			Scan(&nw.State, &nw.CreatedAt)
		if isUnique(err) {
			return fault.New(fault.Conflict, "this responsibility already holds a live wake-up")
		}
		if err != nil {
			return mapErr(err, "wake-up")
		}
		nw.TenantID, nw.ResponsibilityID = tenantID, responsibilityID
		w = *nw
		if s.jobs != nil {
			if err := s.jobs.ArmWakeupTx(ctx, tx, w); err != nil {
				return err
			}
		}
		return s.insertNotice(ctx, tx, w)
	})
	return w, err
}

// LiveWakeup returns the responsibility's pending wake-up.
func (s *ResponsibilityStore) LiveWakeup(ctx context.Context, tenantID, responsibilityID uuid.UUID) (responsibilities.Wakeup, error) {
	w, err := scanRW(s.db.Pool.QueryRow(ctx, `SELECT `+rwCols+` FROM responsibility_wakeups
		WHERE tenant_id = $1 AND responsibility_id = $2 AND state = 'pending'`, tenantID, responsibilityID))
	return w, mapErr(err, "live wake-up")
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
