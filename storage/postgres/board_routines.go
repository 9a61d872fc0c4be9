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

const routineCols = `r.tenant_id, r.id, r.name, r.schedule, r.agent_id, r.description, r.tags, r.paused, r.next_run_at, r.last_run_at,
	r.creator_kind, r.creator_agent_id, r.created_by, r.created_at, r.updated_at`

// tenantZone is the tenant's time zone setting, selected with a routine.
const tenantZone = `coalesce((SELECT settings->>'time_zone' FROM tenants WHERE id = r.tenant_id), '')`

func scanRoutine(row pgx.Row, extra ...any) (board.Routine, error) {
	var r board.Routine
	var creator *uuid.UUID
	dest := append([]any{&r.TenantID, &r.ID, &r.Name, &r.Schedule, &r.AgentID, &r.Description, &r.Tags, &r.Paused, &r.NextRunAt,
		&r.LastRunAt, &r.CreatorKind, &creator, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt}, extra...)
	err := row.Scan(dest...)
	r.CreatorAgentID = deref(creator)
	return r, err
}

// CreateRoutine inserts r.
func (s *BoardStore) CreateRoutine(ctx context.Context, r *board.Routine) error {
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO routines (tenant_id, id, name, schedule, agent_id, description, tags, paused,
			next_run_at, creator_kind, creator_agent_id, created_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING created_at, updated_at`,
		r.TenantID, r.ID, r.Name, r.Schedule, r.AgentID, r.Description, r.Tags, r.Paused, r.NextRunAt, r.CreatorKind,
		nullable(r.CreatorAgentID), r.CreatedBy).Scan(&r.CreatedAt, &r.UpdatedAt)
	return mapErr(err, "routine")
}

// Routine returns one routine.
func (s *BoardStore) Routine(ctx context.Context, tenantID, id uuid.UUID) (board.Routine, error) {
	r, err := scanRoutine(s.db.Pool.QueryRow(ctx, `SELECT `+routineCols+` FROM routines r WHERE r.tenant_id = $1 AND r.id = $2`, tenantID, id))
	return r, mapErr(err, "routine")
}

// RoutinesNamed returns the routines called name (at most 20).
func (s *BoardStore) RoutinesNamed(ctx context.Context, tenantID uuid.UUID, name string) ([]board.Routine, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+routineCols+` FROM routines r WHERE r.tenant_id = $1 AND r.name = $2
		ORDER BY r.created_at, r.id LIMIT 20`, tenantID, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.Routine, error) { return scanRoutine(r) })
}

// ListRoutines returns routines newest first.
func (s *BoardStore) ListRoutines(ctx context.Context, tenantID uuid.UUID, after *board.Position, limit int) ([]board.Routine, error) {
	t, id := afterArgs(after)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+routineCols+` FROM routines r WHERE r.tenant_id = $1
		AND ($2::timestamptz IS NULL OR (r.created_at, r.id) < ($2, $3)) ORDER BY r.created_at DESC, r.id DESC LIMIT $4`,
		tenantID, t, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.Routine, error) { return scanRoutine(r) })
}

func afterArgs(p *board.Position) (*time.Time, uuid.UUID) {
	if p == nil {
		return nil, uuid.Nil
	}
	return &p.At, p.ID
}

// UpdateRoutine locks the routine and writes what fn changed.
func (s *BoardStore) UpdateRoutine(ctx context.Context, tenantID, id uuid.UUID, fn func(*board.Routine, string) error) (r board.Routine, err error) {
	defer fault.Wrap(&err, "update routine")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		var tz string
		r, err = scanRoutine(tx.QueryRow(ctx, `SELECT `+routineCols+`, `+tenantZone+` FROM routines r
			WHERE r.tenant_id = $1 AND r.id = $2 FOR UPDATE`, tenantID, id), &tz)
		if err != nil {
			return mapErr(err, "routine")
		}
		if err := fn(&r, tz); err != nil {
			return err
		}
		return saveRoutine(ctx, tx, &r)
	})
	return r, err
}

func saveRoutine(ctx context.Context, q Querier, r *board.Routine) error {
	return q.QueryRow(ctx, `UPDATE routines SET name = $3, schedule = $4, agent_id = $5, description = $6, tags = $7,
			paused = $8, next_run_at = $9, last_run_at = $10, updated_at = now()
		WHERE tenant_id = $1 AND id = $2 RETURNING updated_at`,
		r.TenantID, r.ID, r.Name, r.Schedule, r.AgentID, r.Description, r.Tags, r.Paused, r.NextRunAt, r.LastRunAt).Scan(&r.UpdatedAt)
}

// DeleteRoutine deletes a routine.
func (s *BoardStore) DeleteRoutine(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM routines WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.New(fault.NotFound, "routine not found")
	}
	return err
}

// RunRoutine writes one run of the routine now, leaving its schedule.
func (s *BoardStore) RunRoutine(ctx context.Context, tenantID, id uuid.UUID, plan func(board.Routine, string) (board.Run, error)) (run board.Run, err error) {
	defer fault.Wrap(&err, "run routine")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		var tz string
		r, err := scanRoutine(tx.QueryRow(ctx, `SELECT `+routineCols+`, `+tenantZone+` FROM routines r
			WHERE r.tenant_id = $1 AND r.id = $2 FOR UPDATE`, tenantID, id), &tz)
		if err != nil {
			return mapErr(err, "routine")
		}
		if run, err = plan(r, tz); err != nil {
			return err
		}
		return s.writeRun(ctx, tx, &run, &r, r.NextRunAt)
	})
	return run, err
}

// writeRun writes a run's task and wake-up and records it on the routine.
func (s *BoardStore) writeRun(ctx context.Context, tx pgx.Tx, run *board.Run, r *board.Routine, next *time.Time) error {
	if run.Task != nil {
		if err := insertTask(ctx, tx, run.Task); err != nil {
			return err
		}
	}
	if err := s.writeEffects(ctx, tx, board.Effects{Wakeups: []rounds.Wakeup{run.Wakeup}}); err != nil {
		return err
	}
	now := time.Now()
	r.LastRunAt, r.NextRunAt = &now, next
	return saveRoutine(ctx, tx, r)
}

// FireDueRoutines runs due routines of every tenant; see board.RoutineStore.
func (s *BoardStore) FireDueRoutines(ctx context.Context, now time.Time, limit int, plan func(board.Routine, string) (board.Run, *time.Time, error)) (runs []board.Run, err error) {
	defer fault.Wrap(&err, "fire due routines")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+routineCols+`, `+tenantZone+` FROM routines r
			WHERE NOT r.paused AND r.next_run_at <= $1
				AND EXISTS (SELECT 1 FROM agents a WHERE a.tenant_id = r.tenant_id AND a.id = r.agent_id AND a.status = 'active')
			ORDER BY r.next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED`, now, limit)
		if err != nil {
			return err
		}
		type due struct {
			r  board.Routine
			tz string
		}
		list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (due, error) {
			var d due
			var err error
			d.r, err = scanRoutine(row, &d.tz)
			return d, err
		})
		if err != nil {
			return err
		}
		for _, d := range list {
			run, next, err := plan(d.r, d.tz)
			if err != nil {
				return err
			}
			if err := s.writeRun(ctx, tx, &run, &d.r, next); err != nil {
				return err
			}
			runs = append(runs, run)
		}
		return nil
	})
	return runs, err
}
