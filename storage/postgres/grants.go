package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
)

// GrantStore implements grants.Store.
type GrantStore struct{ db *DB }

var _ grants.Store = (*GrantStore)(nil)

// NewGrantStore returns the grant store on db.
func NewGrantStore(db *DB) *GrantStore { return &GrantStore{db: db} }

const requestCols = `tenant_id, id, agent_id, tool, reason, task_id, status, created_at, decided_at, decided_by, decision_note, grant_id`

func scanRequest(row pgx.Row) (grants.Request, error) {
	var r grants.Request
	var task, grant *uuid.UUID
	err := row.Scan(&r.TenantID, &r.ID, &r.AgentID, &r.Tool, &r.Reason, &task, &r.Status, &r.CreatedAt,
		&r.DecidedAt, &r.DecidedBy, &r.DecisionNote, &grant)
	r.TaskID, r.GrantID = deref(task), deref(grant)
	return r, err
}

const grantCols = `tenant_id, id, agent_id, tool, request_id, task_id, granted_by, created_at, expires_at, ended_at, end_reason, ended_by`

func scanGrant(row pgx.Row) (grants.Grant, error) {
	var g grants.Grant
	var req, task *uuid.UUID
	err := row.Scan(&g.TenantID, &g.ID, &g.AgentID, &g.Tool, &req, &task, &g.GrantedBy, &g.CreatedAt,
		&g.ExpiresAt, &g.EndedAt, &g.EndReason, &g.EndedBy)
	g.RequestID, g.TaskID = deref(req), deref(task)
	return g, err
}

func deref(u *uuid.UUID) uuid.UUID {
	if u == nil {
		return uuid.Nil
	}
	return *u
}

func nullable(u uuid.UUID) *uuid.UUID {
	if u == uuid.Nil {
		return nil
	}
	return &u
}

// CreateRequest inserts a pending request within lim. The agent's row is
// locked for the transaction, so one agent's concurrent requests are
// counted one after another and never overrun a limit together.
func (s *GrantStore) CreateRequest(ctx context.Context, r *grants.Request, lim grants.RequestLimits) (err error) {
	defer fault.Wrap(&err, "create capability request")
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, r.TenantID, r.AgentID).Scan(&one)
		if err != nil {
			return mapErr(err, "agent")
		}
		var same bool
		var pending, recent int
		err = tx.QueryRow(ctx, `SELECT
				coalesce(bool_or(status = 'pending' AND tool = $3), false),
				count(*) FILTER (WHERE status = 'pending'),
				count(*) FILTER (WHERE created_at > now() - make_interval(secs => $4))
			FROM capability_requests
			WHERE tenant_id = $1 AND agent_id = $2 AND (status = 'pending' OR created_at > now() - make_interval(secs => $4))`,
			r.TenantID, r.AgentID, r.Tool, lim.Window.Seconds()).Scan(&same, &pending, &recent)
		if err != nil {
			return err
		}
		switch {
		case same:
			return fault.New(fault.Conflict, "a request for %s is already waiting for an operator", r.Tool)
		case lim.MaxPending > 0 && pending >= lim.MaxPending:
			return fault.New(fault.Conflict, "you already have %d capability requests waiting for an operator, the most one AI employee may; wait for a decision before asking for another", pending)
		case lim.PerWindow > 0 && recent >= lim.PerWindow:
			return fault.New(fault.RateLimited, "you made %d capability requests in the last %s, the most one AI employee may; wait before asking again", recent, window(lim.Window))
		}
		err = tx.QueryRow(ctx, `INSERT INTO capability_requests (tenant_id, id, agent_id, tool, reason, task_id)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING status, created_at`,
			r.TenantID, r.ID, r.AgentID, r.Tool, r.Reason, nullable(r.TaskID)).Scan(&r.Status, &r.CreatedAt)
		return mapErr(err, "capability request")
	})
}

// window says a limit's window in words: "hour", "10 minutes".
func window(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	default:
		return fmt.Sprintf("%d seconds", d/time.Second)
	}
}

// Request returns one request.
func (s *GrantStore) Request(ctx context.Context, tenantID, id uuid.UUID) (grants.Request, error) {
	r, err := scanRequest(s.db.Pool.QueryRow(ctx, `SELECT `+requestCols+` FROM capability_requests
		WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return r, mapErr(err, "capability request")
}

// ListRequests returns a page of the tenant's requests, newest first.
func (s *GrantStore) ListRequests(ctx context.Context, tenantID uuid.UUID, status grants.Status, after *grants.Position, limit int) ([]grants.Request, error) {
	var at *time.Time
	var id uuid.UUID
	if after != nil {
		at, id = &after.At, after.ID
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+requestCols+` FROM capability_requests
		WHERE tenant_id = $1 AND ($2 = '' OR status = $2) AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
		ORDER BY created_at DESC, id DESC LIMIT $5`, tenantID, string(status), at, id, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (grants.Request, error) { return scanRequest(r) })
}

// Approve marks the request approved and inserts its grant, filling g's
// agent, request, task and tool from the request.
func (s *GrantStore) Approve(ctx context.Context, tenantID, requestID uuid.UUID, g *grants.Grant, note string) (r grants.Request, v int64, err error) {
	defer fault.Wrap(&err, "approve capability request")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		r, err = scanRequest(tx.QueryRow(ctx, `SELECT `+requestCols+` FROM capability_requests
			WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, requestID))
		if err != nil {
			return mapErr(err, "capability request")
		}
		if r.Status != grants.Pending {
			return fault.New(fault.Conflict, "this request was already %s", r.Status)
		}
		g.TenantID, g.AgentID, g.RequestID, g.TaskID = tenantID, r.AgentID, r.ID, r.TaskID
		if g.Tool == "" {
			g.Tool = r.Tool
		}
		if err := insertGrant(ctx, tx, g); err != nil {
			return err
		}
		err = scanRequestInto(&r, tx.QueryRow(ctx, `UPDATE capability_requests
			SET status = 'approved', decided_at = now(), decided_by = $3, decision_note = $4, grant_id = $5
			WHERE tenant_id = $1 AND id = $2 RETURNING `+requestCols, tenantID, requestID, g.GrantedBy, note, g.ID))
		if err != nil {
			return err
		}
		v, err = BumpPolicyVersion(ctx, tx, tenantID)
		return err
	})
	return r, v, err
}

func scanRequestInto(r *grants.Request, row pgx.Row) error {
	var err error
	*r, err = scanRequest(row)
	return err
}

// Deny marks the request denied.
func (s *GrantStore) Deny(ctx context.Context, tenantID, requestID uuid.UUID, by, note string) (grants.Request, error) {
	r, err := scanRequest(s.db.Pool.QueryRow(ctx, `UPDATE capability_requests
		SET status = 'denied', decided_at = now(), decided_by = $3, decision_note = $4
		WHERE tenant_id = $1 AND id = $2 AND status = 'pending' RETURNING `+requestCols, tenantID, requestID, by, note))
	if err == pgx.ErrNoRows {
		if _, err := s.Request(ctx, tenantID, requestID); err != nil {
			return grants.Request{}, err
		}
		return grants.Request{}, fault.New(fault.Conflict, "this request was already decided")
	}
	return r, mapErr(err, "capability request")
}

func insertGrant(ctx context.Context, q Querier, g *grants.Grant) error {
	err := q.QueryRow(ctx, `INSERT INTO grants (tenant_id, id, agent_id, tool, request_id, task_id, granted_by, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at`,
		g.TenantID, g.ID, g.AgentID, g.Tool, nullable(g.RequestID), nullable(g.TaskID), g.GrantedBy, g.ExpiresAt).Scan(&g.CreatedAt)
	return mapErr(err, "grant")
}

// CreateGrant inserts g and bumps the policy version.
func (s *GrantStore) CreateGrant(ctx context.Context, g *grants.Grant) (v int64, err error) {
	defer fault.Wrap(&err, "create grant")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := insertGrant(ctx, tx, g); err != nil {
			return err
		}
		v, err = BumpPolicyVersion(ctx, tx, g.TenantID)
		return err
	})
	return v, err
}

// Grant returns one grant.
func (s *GrantStore) Grant(ctx context.Context, tenantID, id uuid.UUID) (grants.Grant, error) {
	g, err := scanGrant(s.db.Pool.QueryRow(ctx, `SELECT `+grantCols+` FROM grants WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return g, mapErr(err, "grant")
}

// ListGrants returns grants, newest first.
func (s *GrantStore) ListGrants(ctx context.Context, tenantID, agentID uuid.UUID, live bool) ([]grants.Grant, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+grantCols+` FROM grants
		WHERE tenant_id = $1 AND ($2::uuid IS NULL OR agent_id = $2)
		AND (NOT $3 OR (ended_at IS NULL AND (expires_at IS NULL OR expires_at > now())))
		ORDER BY created_at DESC, id LIMIT 1000`, tenantID, nullable(agentID), live)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (grants.Grant, error) { return scanGrant(r) })
}

// LiveTools returns the entries of the agent's grants in force now.
func (s *GrantStore) LiveTools(ctx context.Context, tenantID, agentID uuid.UUID) ([]string, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT tool FROM grants
		WHERE tenant_id = $1 AND agent_id = $2 AND ended_at IS NULL AND (expires_at IS NULL OR expires_at > now())
		ORDER BY tool`, tenantID, agentID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Revoke ends a grant in force.
func (s *GrantStore) Revoke(ctx context.Context, tenantID, id uuid.UUID, by string) (g grants.Grant, v int64, err error) {
	defer fault.Wrap(&err, "revoke grant")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		g, err = scanGrant(tx.QueryRow(ctx, `UPDATE grants SET ended_at = now(), end_reason = 'revoked', ended_by = $3
			WHERE tenant_id = $1 AND id = $2 AND ended_at IS NULL RETURNING `+grantCols, tenantID, id, by))
		if err == pgx.ErrNoRows {
			if _, err := scanGrant(tx.QueryRow(ctx, `SELECT `+grantCols+` FROM grants WHERE tenant_id = $1 AND id = $2`, tenantID, id)); err != nil {
				return mapErr(err, "grant")
			}
			return fault.New(fault.Conflict, "this grant has already ended")
		}
		if err != nil {
			return err
		}
		v, err = BumpPolicyVersion(ctx, tx, tenantID)
		return err
	})
	return g, v, err
}

// EndTask ends every grant of the task.
func (s *GrantStore) EndTask(ctx context.Context, tenantID, taskID uuid.UUID) (out []grants.Ended, err error) {
	defer fault.Wrap(&err, "end task grants")
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE grants SET ended_at = now(), end_reason = 'task_ended'
			WHERE tenant_id = $1 AND task_id = $2 AND ended_at IS NULL RETURNING agent_id`, tenantID, taskID)
		if err != nil {
			return err
		}
		agents, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(agents) == 0 {
			return err
		}
		v, err := BumpPolicyVersion(ctx, tx, tenantID)
		out = endedPerAgent(tenantID, agents, v)
		return err
	})
	return out, err
}

// ExpireDue ends every due grant. Each tenant's grants end in their own
// transaction with their own version bump; SKIP LOCKED lets replicas run
// this concurrently without ending a grant twice.
func (s *GrantStore) ExpireDue(ctx context.Context, now time.Time) (out []grants.Ended, err error) {
	defer fault.Wrap(&err, "expire grants")
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT tenant_id FROM grants
		WHERE ended_at IS NULL AND expires_at IS NOT NULL AND expires_at <= $1`, now)
	if err != nil {
		return nil, err
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, err
	}
	for _, tenantID := range tenants {
		err := s.db.InTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `UPDATE grants SET ended_at = now(), end_reason = 'expired'
				WHERE (tenant_id, id) IN (SELECT tenant_id, id FROM grants WHERE tenant_id = $1 AND ended_at IS NULL
					AND expires_at IS NOT NULL AND expires_at <= $2 FOR UPDATE SKIP LOCKED)
				RETURNING agent_id`, tenantID, now)
			if err != nil {
				return err
			}
			agents, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
			if err != nil || len(agents) == 0 {
				return err
			}
			v, err := BumpPolicyVersion(ctx, tx, tenantID)
			out = append(out, endedPerAgent(tenantID, agents, v)...)
			return err
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func endedPerAgent(tenantID uuid.UUID, agents []uuid.UUID, v int64) []grants.Ended {
	seen := map[uuid.UUID]bool{}
	var out []grants.Ended
	for _, a := range agents {
		if !seen[a] {
			seen[a] = true
			out = append(out, grants.Ended{TenantID: tenantID, AgentID: a, Version: v})
		}
	}
	return out
}
