package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/rounds"
)

// FireDueTicks claims a set of due ticks and writes what plan decides for
// them, in one transaction; see responsibilities.ScheduleStore. The set is
// read in four statements (the locked rows with their owner's state and
// time zone, their open runs, their windows' usage, their untold
// questions) and written in about eight, whatever its size.
func (s *ResponsibilityStore) FireDueTicks(ctx context.Context, now time.Time, limit int,
	plan func([]responsibilities.DueTick) ([]responsibilities.TickOutcome, error)) (claimed int, closed []responsibilities.Run, err error) {
	defer fault.Wrap(&err, "fire due ticks")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		closed = nil
		due, err := s.claimTicks(ctx, tx, now, limit)
		if err != nil || len(due) == 0 {
			return err
		}
		claimed = len(due)
		if err := readTickSet(ctx, tx, now, due); err != nil {
			return err
		}
		out, err := plan(due)
		if err != nil {
			return err
		}
		closed, err = s.writeTicks(ctx, tx, due, out)
		return err
	})
	return claimed, closed, err
}

// claimTicks locks up to limit due rows, earliest tick first, skipping
// rows another transaction holds (another worker's set, an operator's
// change): each tick is claimed by one worker.
func (s *ResponsibilityStore) claimTicks(ctx context.Context, tx pgx.Tx, now time.Time, limit int) ([]responsibilities.DueTick, error) {
	rows, err := tx.Query(ctx, `WITH due AS (
			SELECT `+respCols+`, next_tick_at FROM responsibilities
			WHERE next_tick_at <= $1 ORDER BY next_tick_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		SELECT due.*,
			coalesce((SELECT a.status = 'active' FROM agents a WHERE a.tenant_id = due.tenant_id AND a.id = due.agent_id), false),
			coalesce((SELECT t.settings->>'time_zone' FROM tenants t WHERE t.id = due.tenant_id), '')
		FROM due`, now, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (responsibilities.DueTick, error) {
		var d responsibilities.DueTick
		var err error
		d.Responsibility, err = scanResp(extraRow{row, []any{&d.At, &d.OwnerActive, &d.TimeZone}})
		return d, err
	})
}

// extraRow scans a row holding respCols followed by more columns.
type extraRow struct {
	pgx.Row
	extra []any
}

func (r extraRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// readTickSet fills each due tick's open run, window usage at now and
// untold questions (at most 20 each, as Unreported).
func readTickSet(ctx context.Context, tx pgx.Tx, now time.Time, due []responsibilities.DueTick) error {
	n := len(due)
	tenants, ids := make([]uuid.UUID, n), make([]uuid.UUID, n)
	froms, tos := make([]time.Time, n), make([]time.Time, n)
	at := make(map[[2]uuid.UUID]int, n)
	for i, d := range due {
		r := d.Responsibility
		tenants[i], ids[i] = r.TenantID, r.ID
		froms[i], tos[i] = r.Window(now)
		at[[2]uuid.UUID{r.TenantID, r.ID}] = i
	}
	rows, err := tx.Query(ctx, `SELECT `+runCols+` FROM responsibility_runs
		WHERE (tenant_id, responsibility_id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[])) AND closed_at IS NULL`, tenants, ids)
	if err != nil {
		return err
	}
	open, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Run, error) { return scanRun(r) })
	if err != nil {
		return err
	}
	for _, run := range open {
		due[at[[2]uuid.UUID{run.TenantID, run.ResponsibilityID}]].OpenRun = &run
	}
	rows, err = tx.Query(ctx, `SELECT u.i,
			(SELECT count(*) FROM responsibility_runs WHERE tenant_id = u.t AND responsibility_id = u.id AND opened_at >= u.f AND opened_at < u.e),
			(SELECT coalesce(sum(cost_cents), 0) FROM responsibility_runs WHERE tenant_id = u.t AND responsibility_id = u.id
				AND opened_at >= u.f AND opened_at < u.e),
			(SELECT count(*) FROM responsibility_runs WHERE tenant_id = u.t AND responsibility_id = u.id AND opened_at >= u.f AND opened_at < u.e
				AND closed_at IS NOT NULL AND cost_cents IS NULL),
			(SELECT count(*) FROM responsibility_wakeups WHERE tenant_id = u.t AND responsibility_id = u.id AND kind = 'followup'
				AND state <> 'cancelled' AND due_at >= u.f AND due_at < u.e),
			(SELECT count(*) FROM responsibility_wakeups WHERE tenant_id = u.t AND responsibility_id = u.id AND kind = 'followup'
				AND state = 'pending' AND due_at >= u.f AND due_at < u.e)
		FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::timestamptz[]) WITH ORDINALITY AS u(t, id, f, e, i)`,
		tenants, ids, froms, tos)
	if err != nil {
		return err
	}
	var i int
	var u responsibilities.Usage
	if _, err := pgx.ForEachRow(rows, []any{&i, &u.Runs, &u.SpendCents, &u.CostNotCounted, &u.Followups, &u.PendingFollowups}, func() error {
		u.From, u.To = froms[i-1], tos[i-1]
		due[i-1].Window = u
		return nil
	}); err != nil {
		return err
	}
	rows, err = tx.Query(ctx, `SELECT `+rwCols+` FROM (
			SELECT *, row_number() OVER (PARTITION BY tenant_id, responsibility_id ORDER BY settled_at, id) AS n
			FROM responsibility_wakeups
			WHERE (tenant_id, responsibility_id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[]))
				AND kind = 'question' AND state <> 'pending' AND reported_at IS NULL) q
		WHERE n <= 20 ORDER BY settled_at, id`, tenants, ids)
	if err != nil {
		return err
	}
	told, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (responsibilities.Wakeup, error) { return scanRW(r) })
	if err != nil {
		return err
	}
	for _, w := range told {
		j := at[[2]uuid.UUID{w.TenantID, w.ResponsibilityID}]
		due[j].Told = append(due[j].Told, w)
	}
	return nil
}

// writeTicks writes the set's outcomes: the open runs closed, the new
// runs' tasks, rounds (queued wake-ups) and runs, the skips, the told
// questions marked, and every claimed row's next tick.
func (s *ResponsibilityStore) writeTicks(ctx context.Context, tx pgx.Tx, due []responsibilities.DueTick, out []responsibilities.TickOutcome) ([]responsibilities.Run, error) {
	if len(out) != len(due) {
		return nil, fault.New(fault.Internal, "the tick planner answered %d outcomes for %d ticks", len(out), len(due))
	}
	now, err := txNow(ctx, tx)
	if err != nil {
		return nil, err
	}
	var closed []responsibilities.Run
	var tasks []*board.Task
	var ws []rounds.Wakeup
	var runs []responsibilities.Run
	var skips [][]any
	var toldT, toldID []uuid.UUID
	nextT, nextID, nextAt := make([]uuid.UUID, len(due)), make([]uuid.UUID, len(due)), make([]*time.Time, len(due))
	for i, o := range out {
		r := due[i].Responsibility
		nextT[i], nextID[i], nextAt[i] = r.TenantID, r.ID, o.Next
		if k := o.Skip; k != nil {
			// A skip is written to the claimed row's tenant, whatever the
			// planner named.
			skips = append(skips, []any{r.TenantID, k.ID, r.ID, k.Reason, k.Cause, k.Detail, k.Epoch, k.At})
			continue
		}
		if o.Plan == nil {
			continue
		}
		if !ownPlan(r, o.Plan) {
			return nil, fault.New(fault.Internal, "the run planned for responsibility %s names another tenant, responsibility or task", r.ID)
		}
		if due[i].OpenRun != nil {
			c := *due[i].OpenRun
			c.ClosedAt = new(later(o.Plan.Run.OpenedAt, c.OpenedAt))
			closed = append(closed, c)
		}
		tasks = append(tasks, &o.Plan.Task)
		ws = append(ws, o.Plan.Wakeup)
		runs = append(runs, o.Plan.Run)
		for _, id := range o.Told {
			toldT, toldID = append(toldT, r.TenantID), append(toldID, id)
		}
	}
	if len(closed) > 0 {
		ct, cid, cat := make([]uuid.UUID, len(closed)), make([]uuid.UUID, len(closed)), make([]time.Time, len(closed))
		for i, c := range closed {
			ct[i], cid[i], cat[i] = c.TenantID, c.ID, *c.ClosedAt
		}
		if _, err := tx.Exec(ctx, `UPDATE responsibility_runs rr SET closed_at = u.at
			FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS u(t, id, at) WHERE rr.tenant_id = u.t AND rr.id = u.id`,
			ct, cid, cat); err != nil {
			return nil, err
		}
	}
	if err := copyTasks(ctx, tx, now, tasks); err != nil {
		return nil, err
	}
	if len(ws) > 0 {
		if err := insertWakeups(ctx, tx, ws); err != nil {
			return nil, err
		}
		rows := make([][]any, len(runs))
		for i := range runs {
			r := &runs[i]
			r.WakeupID = ws[i].ID
			rows[i] = []any{r.TenantID, r.ID, r.ResponsibilityID, r.TaskID, r.Epoch, r.Reason, r.OpenedAt, r.WakeupID}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"responsibility_runs"}, []string{"tenant_id", "id", "responsibility_id", "task_id",
			"epoch", "reason", "opened_at", "wakeup_id"}, pgx.CopyFromRows(rows)); err != nil {
			return nil, mapErr(err, "run")
		}
	}
	if len(skips) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"responsibility_skips"}, []string{"tenant_id", "id", "responsibility_id", "reason",
			"cause", "detail", "epoch", "at"}, pgx.CopyFromRows(skips)); err != nil {
			return nil, mapErr(err, "skip")
		}
	}
	if len(toldID) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE responsibility_wakeups SET reported_at = now()
			WHERE (tenant_id, id) IN (SELECT * FROM unnest($1::uuid[], $2::uuid[])) AND reported_at IS NULL`, toldT, toldID); err != nil {
			return nil, err
		}
	}
	_, err = tx.Exec(ctx, `UPDATE responsibilities r SET next_tick_at = u.at
		FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS u(t, id, at) WHERE r.tenant_id = u.t AND r.id = u.id`,
		nextT, nextID, nextAt)
	return closed, err
}

// ownPlan reports whether every row of p belongs to r's tenant and r:
// one tenant's tick never writes into another's.
func ownPlan(r responsibilities.Responsibility, p *responsibilities.RunPlan) bool {
	return p.Run.TenantID == r.TenantID && p.Run.ResponsibilityID == r.ID && p.Task.TenantID == r.TenantID &&
		p.Wakeup.TenantID == r.TenantID && p.Run.TaskID == p.Task.ID && p.Wakeup.TaskID == p.Task.ID && p.Wakeup.AgentID == r.AgentID
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// setNextTick arms r's first tick after now in its current epoch, or
// clears it (not active, no schedule, nothing before stop_at), in tx.
func setNextTick(ctx context.Context, tx pgx.Tx, r responsibilities.Responsibility, tz string, now time.Time) error {
	var next *time.Time
	if r.Status == responsibilities.Active {
		if at, ok := r.NextScheduled(tz, now); ok {
			next = &at
		}
	}
	_, err := tx.Exec(ctx, `UPDATE responsibilities SET next_tick_at = $3 WHERE tenant_id = $1 AND id = $2`, r.TenantID, r.ID, next)
	return err
}
