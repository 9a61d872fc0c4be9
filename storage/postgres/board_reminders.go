package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

const reminderCols = `tenant_id, id, agent_id, task_id, text, due_at, creator_kind, creator_agent_id, created_by, created_at, fired_at, cancelled_at`

func scanReminder(row pgx.Row) (board.Reminder, error) {
	var r board.Reminder
	var task, creator *uuid.UUID
	err := row.Scan(&r.TenantID, &r.ID, &r.AgentID, &task, &r.Text, &r.DueAt, &r.CreatorKind, &creator, &r.CreatedBy,
		&r.CreatedAt, &r.FiredAt, &r.CancelledAt)
	r.TaskID, r.CreatorAgentID = deref(task), deref(creator)
	return r, err
}

func collectReminders(rows pgx.Rows) ([]board.Reminder, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.Reminder, error) { return scanReminder(r) })
}

// CreateReminder inserts r.
func (s *BoardStore) CreateReminder(ctx context.Context, r *board.Reminder) error {
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO reminders (tenant_id, id, agent_id, task_id, text, due_at, creator_kind,
			creator_agent_id, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING created_at`,
		r.TenantID, r.ID, r.AgentID, nullable(r.TaskID), r.Text, r.DueAt, r.CreatorKind, nullable(r.CreatorAgentID), r.CreatedBy).Scan(&r.CreatedAt)
	return mapErr(err, "reminder")
}

// Reminder returns one reminder.
func (s *BoardStore) Reminder(ctx context.Context, tenantID, id uuid.UUID) (board.Reminder, error) {
	r, err := scanReminder(s.db.Pool.QueryRow(ctx, `SELECT `+reminderCols+` FROM reminders WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return r, mapErr(err, "reminder")
}

// ListReminders returns reminders newest first.
func (s *BoardStore) ListReminders(ctx context.Context, tenantID uuid.UUID, pending bool, after *board.Position, limit int) ([]board.Reminder, error) {
	t, id := afterArgs(after)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+reminderCols+` FROM reminders WHERE tenant_id = $1
		AND (NOT $2 OR (fired_at IS NULL AND cancelled_at IS NULL))
		AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) ORDER BY created_at DESC, id DESC LIMIT $5`,
		tenantID, pending, t, id, limit)
	if err != nil {
		return nil, err
	}
	return collectReminders(rows)
}

// CancelReminder cancels a pending reminder.
func (s *BoardStore) CancelReminder(ctx context.Context, tenantID, id uuid.UUID) (board.Reminder, error) {
	r, err := scanReminder(s.db.Pool.QueryRow(ctx, `UPDATE reminders SET cancelled_at = now()
		WHERE tenant_id = $1 AND id = $2 AND fired_at IS NULL AND cancelled_at IS NULL RETURNING `+reminderCols, tenantID, id))
	if err == pgx.ErrNoRows {
		if _, err := s.Reminder(ctx, tenantID, id); err != nil {
			return board.Reminder{}, err
		}
		return board.Reminder{}, fault.New(fault.Conflict, "this reminder has already fired or been cancelled")
	}
	return r, mapErr(err, "reminder")
}

// FireDueReminders fires due reminders of every tenant; see
// board.ReminderStore.
func (s *BoardStore) FireDueReminders(ctx context.Context, now time.Time, limit int, plan func(board.Reminder) (board.Run, error)) (runs []board.Run, err error) {
	defer fault.Wrap(&err, "fire due reminders")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+reminderCols+` FROM reminders WHERE fired_at IS NULL AND cancelled_at IS NULL
			AND due_at <= $1 ORDER BY due_at LIMIT $2 FOR UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return err
		}
		due, err := collectReminders(rows)
		if err != nil {
			return err
		}
		var ws []rounds.Wakeup
		var tasks []*board.Task
		for _, r := range due {
			run, err := plan(r)
			if err != nil {
				return err
			}
			if run.Task != nil {
				tasks = append(tasks, run.Task)
			}
			ws = append(ws, run.Wakeup)
			runs = append(runs, run)
		}
		// The set's tasks and wake-ups go in one COPY each.
		now, err := txNow(ctx, tx)
		if err != nil {
			return err
		}
		if err := copyTasks(ctx, tx, now, tasks); err != nil {
			return err
		}
		if err := insertWakeups(ctx, tx, ws); err != nil {
			return err
		}
		for i := range ws {
			runs[i].Wakeup = ws[i]
		}
		ids := make([]uuid.UUID, len(due))
		tenants := make([]uuid.UUID, len(due))
		for i, r := range due {
			ids[i], tenants[i] = r.ID, r.TenantID
		}
		_, err = tx.Exec(ctx, `UPDATE reminders SET fired_at = now() WHERE (tenant_id, id) IN
			(SELECT * FROM unnest($1::uuid[], $2::uuid[]))`, tenants, ids)
		return err
	})
	return runs, err
}

// RecordSpawn records an ephemeral employee spawned for a task.
func (s *BoardStore) RecordSpawn(ctx context.Context, tenantID, agentID, taskID uuid.UUID, by string) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO spawned_agents (tenant_id, agent_id, task_id, spawned_by) VALUES ($1, $2, $3, $4)`,
		tenantID, agentID, taskID, by)
	return mapErr(err, "spawned employee")
}

// SpawnedFor returns the unretired employees spawned for a task.
func (s *BoardStore) SpawnedFor(ctx context.Context, tenantID, taskID uuid.UUID) ([]uuid.UUID, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT agent_id FROM spawned_agents WHERE tenant_id = $1 AND task_id = $2 AND retired_at IS NULL`,
		tenantID, taskID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// Retire marks a spawned employee retired.
func (s *BoardStore) Retire(ctx context.Context, tenantID, agentID uuid.UUID) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE spawned_agents SET retired_at = now() WHERE tenant_id = $1 AND agent_id = $2 AND retired_at IS NULL`,
		tenantID, agentID)
	return err
}
