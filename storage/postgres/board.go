package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// BoardStore implements board.Store.
type BoardStore struct {
	db *DB
}

var _ board.Store = (*BoardStore)(nil)

// NewBoardStore returns the board store on db. Wake-ups are written
// queued and due; the workers' claimers take them from their table.
func NewBoardStore(db *DB) *BoardStore { return &BoardStore{db: db} }

const taskCols = `tenant_id, id, kind, title, description, acceptance_criteria, status, blocked_reason, parent_id,
	assignee_id, claimer_id, creator_kind, creator_agent_id, created_by, origin, origin_id, tags, created_at, updated_at, finished_at`

func scanTask(row pgx.Row) (board.Task, error) {
	var t board.Task
	var parent, assignee, claimer, creator, origin *uuid.UUID
	err := row.Scan(&t.TenantID, &t.ID, &t.Kind, &t.Title, &t.Description, &t.AcceptanceCriteria, &t.Status, &t.BlockedReason,
		&parent, &assignee, &claimer, &t.CreatorKind, &creator, &t.CreatedBy, &t.Origin, &origin, &t.Tags,
		&t.CreatedAt, &t.UpdatedAt, &t.FinishedAt)
	t.ParentID, t.AssigneeID, t.ClaimerID, t.CreatorAgentID, t.OriginID = deref(parent), deref(assignee), deref(claimer), deref(creator), deref(origin)
	return t, err
}

func collectTasks(rows pgx.Rows) ([]board.Task, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.Task, error) { return scanTask(r) })
}

// CreateTask inserts t and fx; see board.Store for the sub-task cap.
func (s *BoardStore) CreateTask(ctx context.Context, t *board.Task, fx board.Effects, subtaskCap int) (err error) {
	defer fault.Wrap(&err, "create task")
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if t.ParentID != uuid.Nil {
			if err := lockParent(ctx, tx, t.TenantID, t.ParentID, subtaskCap); err != nil {
				return err
			}
		}
		if err := insertTask(ctx, tx, t); err != nil {
			return err
		}
		return s.writeEffects(ctx, tx, fx)
	})
}

// lockParent takes the parent's row lock, which serializes every creation
// under it, then counts its unfinished sub-tasks created by employees.
func lockParent(ctx context.Context, tx pgx.Tx, tenantID, parent uuid.UUID, limit int) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM tasks WHERE tenant_id = $1 AND id = $2 FOR NO KEY UPDATE`, tenantID, parent).Scan(&status)
	if err != nil {
		return mapErr(err, "parent task")
	}
	if limit <= 0 {
		return nil
	}
	var n int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE tenant_id = $1 AND parent_id = $2
		AND creator_kind = 'employee' AND origin = 'direct' AND status NOT IN ('done', 'cancelled')`, tenantID, parent).Scan(&n)
	if err != nil {
		return err
	}
	if n >= limit {
		return fault.New(fault.Conflict, "task %s already holds %d unfinished sub-tasks created by AI employees, the most it may; finish or cancel some first", parent, limit)
	}
	return nil
}

func insertTask(ctx context.Context, q Querier, t *board.Task) error {
	err := q.QueryRow(ctx, `INSERT INTO tasks (tenant_id, id, kind, title, description, acceptance_criteria, status, blocked_reason,
			parent_id, assignee_id, claimer_id, creator_kind, creator_agent_id, created_by, origin, origin_id, tags, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
			CASE WHEN $7 IN ('done', 'cancelled') THEN now() END)
		RETURNING created_at, updated_at, finished_at`,
		t.TenantID, t.ID, t.Kind, t.Title, t.Description, t.AcceptanceCriteria, t.Status, t.BlockedReason,
		nullable(t.ParentID), nullable(t.AssigneeID), nullable(t.ClaimerID), t.CreatorKind, nullable(t.CreatorAgentID),
		t.CreatedBy, t.Origin, nullable(t.OriginID), t.Tags).Scan(&t.CreatedAt, &t.UpdatedAt, &t.FinishedAt)
	return mapErr(err, "task")
}

// writeEffects writes activity entries and wake-ups.
func (s *BoardStore) writeEffects(ctx context.Context, tx pgx.Tx, fx board.Effects) error {
	for i := range fx.Activity {
		if err := insertActivity(ctx, tx, &fx.Activity[i]); err != nil {
			return err
		}
	}
	return insertWakeups(ctx, tx, fx.Wakeups)
}

// insertWakeups writes ws queued, in one COPY.
func insertWakeups(ctx context.Context, tx pgx.Tx, ws []rounds.Wakeup) error {
	if len(ws) == 0 {
		return nil
	}
	// One COPY for the set, however many: a reminder burst or a set of
	// scheduled runs writes its rounds in one statement.
	now, err := txNow(ctx, tx)
	if err != nil {
		return err
	}
	return copyWakeups(ctx, tx, now, ws)
}

func nonNilData(d []rounds.Data) []rounds.Data {
	if d == nil {
		return []rounds.Data{}
	}
	return d
}

// Task returns one task.
func (s *BoardStore) Task(ctx context.Context, tenantID, id uuid.UUID) (board.Task, error) {
	t, err := scanTask(s.db.Pool.QueryRow(ctx, `SELECT `+taskCols+` FROM tasks WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return t, mapErr(err, "task")
}

// ListTasks returns a page of tasks, newest first. Only the filters in use
// appear in the query, so each shape gets a plan fit for it.
func (s *BoardStore) ListTasks(ctx context.Context, tenantID uuid.UUID, f board.TaskFilter) ([]board.Task, error) {
	where, args := []string{"tenant_id = $1"}, []any{tenantID}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", fmt.Sprintf("$%d", len(args))))
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if f.Kind != "" {
		add("kind = ?", f.Kind)
	}
	if f.Assignee != uuid.Nil {
		add("assignee_id = ?", f.Assignee)
	}
	if f.Parent != uuid.Nil {
		add("parent_id = ?", f.Parent)
	}
	if f.Tag != "" {
		add("tags @> ARRAY[?::text]", f.Tag)
	}
	if f.After != nil {
		args = append(args, f.After.At)
		add(fmt.Sprintf("(created_at, id) < ($%d, ?)", len(args)), f.After.ID)
	}
	args = append(args, f.Limit)
	q := fmt.Sprintf(`SELECT %s FROM tasks WHERE %s ORDER BY created_at DESC, id DESC LIMIT $%d`, taskCols, strings.Join(where, " AND "), len(args))
	rows, err := s.db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return collectTasks(rows)
}

// UpdateTask locks the task, applies fn and writes the task and fx.
func (s *BoardStore) UpdateTask(ctx context.Context, tenantID, id uuid.UUID, fn func(*board.Task) (board.Effects, error)) (t board.Task, err error) {
	defer fault.Wrap(&err, "update task")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		t, err = scanTask(tx.QueryRow(ctx, `SELECT `+taskCols+` FROM tasks WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "task")
		}
		fx, err := fn(&t)
		if err != nil {
			return err
		}
		t, err = scanTask(tx.QueryRow(ctx, `UPDATE tasks SET title = $3, description = $4, acceptance_criteria = $5, status = $6,
				blocked_reason = $7, assignee_id = $8, claimer_id = $9, tags = $10, updated_at = now(),
				finished_at = CASE WHEN $6 IN ('done', 'cancelled') THEN coalesce(finished_at, now()) END
			WHERE tenant_id = $1 AND id = $2 RETURNING `+taskCols,
			tenantID, id, t.Title, t.Description, t.AcceptanceCriteria, t.Status, t.BlockedReason,
			nullable(t.AssigneeID), nullable(t.ClaimerID), t.Tags))
		if err != nil {
			return mapErr(err, "task")
		}
		return s.writeEffects(ctx, tx, fx)
	})
	return t, err
}

// Within reports whether id is root or under it, walking up from id.
func (s *BoardStore) Within(ctx context.Context, tenantID, id, root uuid.UUID) (bool, error) {
	var ok bool
	err := s.db.Pool.QueryRow(ctx, `WITH RECURSIVE up (id, parent_id, depth) AS (
			SELECT id, parent_id, 0 FROM tasks WHERE tenant_id = $1 AND id = $2
			UNION ALL
			SELECT t.id, t.parent_id, up.depth + 1 FROM tasks t JOIN up ON t.tenant_id = $1 AND t.id = up.parent_id
			WHERE up.depth < 1000)
		SELECT EXISTS (SELECT 1 FROM up WHERE id = $3)`, tenantID, id, root).Scan(&ok)
	return ok, err
}

const activityCols = `tenant_id, id, task_id, kind, author, author_agent_id, text, packet, created_at`

func insertActivity(ctx context.Context, q Querier, a *board.Activity) error {
	var packet []byte
	if a.Packet != nil {
		var err error
		if packet, err = json.Marshal(a.Packet); err != nil {
			return err
		}
	}
	err := q.QueryRow(ctx, `INSERT INTO task_activity (tenant_id, id, task_id, kind, author, author_agent_id, text, packet)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at`,
		a.TenantID, a.ID, a.TaskID, a.Kind, a.Author, nullable(a.AuthorAgentID), a.Text, packet).Scan(&a.CreatedAt)
	return mapErr(err, "activity")
}

// AddActivity writes an entry to an existing task of the tenant.
func (s *BoardStore) AddActivity(ctx context.Context, a *board.Activity) error {
	return insertActivity(ctx, s.db.Pool, a)
}

// ListActivity returns a task's entries, newest first.
func (s *BoardStore) ListActivity(ctx context.Context, tenantID, taskID uuid.UUID, after *board.Position, limit int) ([]board.Activity, error) {
	t, id := afterArgs(after)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+activityCols+` FROM task_activity WHERE tenant_id = $1 AND task_id = $2
		AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4)) ORDER BY created_at DESC, id DESC LIMIT $5`,
		tenantID, taskID, t, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.Activity, error) {
		var a board.Activity
		var agent *uuid.UUID
		var packet []byte
		err := r.Scan(&a.TenantID, &a.ID, &a.TaskID, &a.Kind, &a.Author, &agent, &a.Text, &packet, &a.CreatedAt)
		a.AuthorAgentID = deref(agent)
		if err == nil && packet != nil {
			a.Packet = &board.TaskPacket{}
			err = json.Unmarshal(packet, a.Packet)
		}
		return a, err
	})
}
