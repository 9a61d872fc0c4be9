package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/rounds"
)

// Set writes: COPY moves many rows in one statement, so a burst of runs
// or reminders costs a few statements per set rather than one per row.
// Defaults the single-row inserts take from the database (now(), the
// initial state) are filled here from the transaction's clock, so a row
// reads the same whichever path wrote it.

// txNow returns the transaction's now(), the time every default in it
// takes.
func txNow(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	var now time.Time
	err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, err
}

// copyTasks inserts new tasks in one COPY, filling their times (a task
// written done or cancelled is finished now).
func copyTasks(ctx context.Context, tx pgx.Tx, now time.Time, ts []*board.Task) error {
	if len(ts) == 0 {
		return nil
	}
	rows := make([][]any, len(ts))
	for i, t := range ts {
		t.CreatedAt, t.UpdatedAt = now, now
		tags := t.Tags
		if tags == nil {
			tags = []string{}
		}
		t.FinishedAt = nil
		if t.Status == board.Done || t.Status == board.Cancelled {
			t.FinishedAt = &now
		}
		rows[i] = []any{t.TenantID, t.ID, t.Kind, t.Title, t.Description, t.AcceptanceCriteria, t.Status, t.BlockedReason,
			nullable(t.ParentID), nullable(t.AssigneeID), nullable(t.ClaimerID), t.CreatorKind, nullable(t.CreatorAgentID),
			t.CreatedBy, t.Origin, nullable(t.OriginID), tags, now, now, t.FinishedAt}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"tasks"}, []string{"tenant_id", "id", "kind", "title", "description",
		"acceptance_criteria", "status", "blocked_reason", "parent_id", "assignee_id", "claimer_id", "creator_kind", "creator_agent_id",
		"created_by", "origin", "origin_id", "tags", "created_at", "updated_at", "finished_at"}, pgx.CopyFromRows(rows))
	return mapErr(err, "task")
}

// copyWakeups inserts queued wake-ups in one COPY, filling their state
// and times (due now unless set).
func copyWakeups(ctx context.Context, tx pgx.Tx, now time.Time, ws []rounds.Wakeup) error {
	rows := make([][]any, len(ws))
	for i := range ws {
		w := &ws[i]
		data, err := json.Marshal(nonNilData(w.Data))
		if err != nil {
			return err
		}
		if w.DueAt.IsZero() {
			w.DueAt = now
		}
		w.State, w.CreatedAt, w.UpdatedAt = rounds.Queued, now, now
		rows[i] = []any{w.TenantID, w.ID, w.AgentID, w.TaskID, w.Reason, data, w.State, w.DueAt, now, now}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"wakeups"}, []string{"tenant_id", "id", "agent_id", "task_id", "reason", "data",
		"state", "due_at", "created_at", "updated_at"}, pgx.CopyFromRows(rows))
	return mapErr(err, "wake-up")
}
