package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/rounds"
)

// StartRun writes a run or a skip under the responsibility's row lock.
func (s *ResponsibilityStore) StartRun(ctx context.Context, tenantID, id uuid.UUID,
	plan func(responsibilities.Opening) (*responsibilities.RunPlan, *responsibilities.Skip, error)) (run responsibilities.Run, err error) {
	defer fault.Wrap(&err, "start run")
	var skipped *responsibilities.Skip
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		o, err := s.opening(ctx, tx, tenantID, id)
		if err != nil {
			return err
		}
		p, skip, err := plan(o)
		if err != nil {
			return err
		}
		if skip != nil {
			skipped = skip
			_, err := tx.Exec(ctx, `INSERT INTO responsibility_skips (tenant_id, id, responsibility_id, reason, cause, detail, epoch, at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, tenantID, skip.ID, id, skip.Reason, skip.Cause, skip.Detail, skip.Epoch, skip.At)
			return err
		}
		run, err = s.writeRun(ctx, tx, o, p)
		return err
	})
	if err == nil && skipped != nil {
		return run, &responsibilities.SkipError{Skip: *skipped}
	}
	return run, err
}

// opening reads what a run's planner needs, with the responsibility locked.
func (s *ResponsibilityStore) opening(ctx context.Context, tx pgx.Tx, tenantID, id uuid.UUID) (responsibilities.Opening, error) {
	var o responsibilities.Opening
	r, err := scanResp(tx.QueryRow(ctx, `SELECT `+respCols+` FROM responsibilities WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
	if err != nil {
		return o, mapErr(err, "responsibility")
	}
	o.Responsibility = r
	err = tx.QueryRow(ctx, `SELECT coalesce((SELECT status = 'active' FROM agents WHERE tenant_id = $1 AND id = $2), false),
			coalesce((SELECT settings->>'time_zone' FROM tenants WHERE id = $1), '')`, tenantID, r.AgentID).Scan(&o.OwnerActive, &o.TimeZone)
	if err != nil {
		return o, err
	}
	if open, err := scanRun(tx.QueryRow(ctx, `SELECT `+runCols+` FROM responsibility_runs
		WHERE tenant_id = $1 AND responsibility_id = $2 AND closed_at IS NULL`, tenantID, id)); err == nil {
		o.OpenRun = &open
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return o, err
	}
	o.Usage = func(from, to time.Time) (responsibilities.Usage, error) {
		return usage(ctx, tx, tenantID, id, from, to)
	}
	return o, nil
}

// writeRun closes the open run, then writes the new run's task, run row
// and round.
func (s *ResponsibilityStore) writeRun(ctx context.Context, tx pgx.Tx, o responsibilities.Opening, p *responsibilities.RunPlan) (responsibilities.Run, error) {
	if o.OpenRun != nil {
		if _, err := tx.Exec(ctx, `UPDATE responsibility_runs SET closed_at = greatest($3, opened_at)
			WHERE tenant_id = $1 AND id = $2`, o.OpenRun.TenantID, o.OpenRun.ID, p.Run.OpenedAt); err != nil {
			return p.Run, err
		}
	}
	if err := insertTask(ctx, tx, &p.Task); err != nil {
		return p.Run, err
	}
	ws := []rounds.Wakeup{p.Wakeup}
	if err := insertWakeups(ctx, tx, ws); err != nil {
		return p.Run, err
	}
	r := p.Run
	r.WakeupID = ws[0].ID
	r.NotCounted = false
	err := tx.QueryRow(ctx, `INSERT INTO responsibility_runs (tenant_id, id, responsibility_id, task_id, epoch, reason, opened_at, wakeup_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING opened_at`,
		r.TenantID, r.ID, r.ResponsibilityID, r.TaskID, r.Epoch, r.Reason, r.OpenedAt, r.WakeupID).Scan(&r.OpenedAt)
	return r, mapErr(err, "run")
}

// ReportSpend adds cents to an open run's reported cost; a closed run's
// is fault.Conflict.
func (s *ResponsibilityStore) ReportSpend(ctx context.Context, tenantID, runID uuid.UUID, cents int64) (responsibilities.Run, error) {
	r, err := scanRun(s.db.Pool.QueryRow(ctx, `UPDATE responsibility_runs
		SET cost_cents = coalesce(cost_cents, 0) + $3, reports = reports + 1
		WHERE tenant_id = $1 AND id = $2 AND closed_at IS NULL RETURNING `+runCols, tenantID, runID, cents))
	if errors.Is(err, pgx.ErrNoRows) {
		var closed time.Time
		if err := s.db.Pool.QueryRow(ctx, `SELECT closed_at FROM responsibility_runs WHERE tenant_id = $1 AND id = $2`, tenantID, runID).
			Scan(&closed); err != nil {
			return r, mapErr(err, "run")
		}
		return r, fault.New(fault.Conflict, "the run closed at %s; a report after its close is not counted", closed.UTC().Format(time.RFC3339))
	}
	return r, mapErr(err, "run")
}

// AgentSpend sums the reported cost of the runs of agentID's
// responsibilities opened in [from, to).
func (s *ResponsibilityStore) AgentSpend(ctx context.Context, tenantID, agentID uuid.UUID, from, to time.Time) (int64, error) {
	var cents int64
	err := s.db.Pool.QueryRow(ctx, `SELECT coalesce(sum(r.cost_cents), 0)::bigint FROM responsibility_runs r
		JOIN responsibilities p ON p.tenant_id = r.tenant_id AND p.id = r.responsibility_id
		WHERE r.tenant_id = $1 AND p.agent_id = $2 AND r.opened_at >= $3 AND r.opened_at < $4`, tenantID, agentID, from, to).Scan(&cents)
	return cents, mapErr(err, "spend")
}

// Runs lists a responsibility's runs newest first.
func (s *ResponsibilityStore) Runs(ctx context.Context, tenantID, id uuid.UUID, after *responsibilities.RunPosition, limit int) ([]responsibilities.Run, error) {
	t, aid := afterOf(after)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+runCols+` FROM responsibility_runs WHERE tenant_id = $1 AND responsibility_id = $2
		AND ($3::timestamptz IS NULL OR (opened_at, id) < ($3, $4)) ORDER BY opened_at DESC, id DESC LIMIT $5`, tenantID, id, t, aid, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Run, error) { return scanRun(r) })
}

// Skips lists a responsibility's skips newest first.
func (s *ResponsibilityStore) Skips(ctx context.Context, tenantID, id uuid.UUID, after *responsibilities.RunPosition, limit int) ([]responsibilities.Skip, error) {
	t, aid := afterOf(after)
	rows, err := s.db.Pool.Query(ctx, `SELECT tenant_id, id, responsibility_id, reason, cause, detail, epoch, at
		FROM responsibility_skips WHERE tenant_id = $1 AND responsibility_id = $2
		AND ($3::timestamptz IS NULL OR (at, id) < ($3, $4)) ORDER BY at DESC, id DESC LIMIT $5`, tenantID, id, t, aid, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (responsibilities.Skip, error) {
		var k responsibilities.Skip
		err := row.Scan(&k.TenantID, &k.ID, &k.ResponsibilityID, &k.Reason, &k.Cause, &k.Detail, &k.Epoch, &k.At)
		return k, err
	})
}

func afterOf(p *responsibilities.RunPosition) (*time.Time, uuid.UUID) {
	if p == nil {
		return nil, uuid.Nil
	}
	return &p.At, p.ID
}

// RunTaskOf walks up from task to the first task that is the task of a
// run of one of agentID's responsibilities (any employee's for uuid.Nil).
func (s *ResponsibilityStore) RunTaskOf(ctx context.Context, tenantID, agentID, task uuid.UUID) (uuid.UUID, bool, error) {
	var found uuid.UUID
	err := s.db.Pool.QueryRow(ctx, `WITH RECURSIVE up (id, parent_id, depth) AS (
			SELECT id, parent_id, 0 FROM tasks WHERE tenant_id = $1 AND id = $3
			UNION ALL
			SELECT t.id, t.parent_id, up.depth + 1 FROM tasks t JOIN up ON t.tenant_id = $1 AND t.id = up.parent_id
			WHERE up.depth < 1000)
		SELECT up.id FROM up
		JOIN responsibility_runs rr ON rr.tenant_id = $1 AND rr.task_id = up.id
		JOIN responsibilities r ON r.tenant_id = $1 AND r.id = rr.responsibility_id AND ($2::uuid IS NULL OR r.agent_id = $2)
		ORDER BY up.depth LIMIT 1`, tenantID, nullable(agentID), task).Scan(&found)
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return found, err == nil, err
}
