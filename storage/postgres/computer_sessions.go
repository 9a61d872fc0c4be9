package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/fault"
)

const sessCols = `tenant_id, id, agent_id, worker, state, width, height, max_actions, actions_used, workspace_id,
	allowed_domains, started_at, last_used_at, end_reason`

func scanSession(row pgx.Row) (computer.Session, error) {
	var s computer.Session
	err := row.Scan(&s.TenantID, &s.ID, &s.AgentID, &s.Worker, &s.State, &s.Width, &s.Height, &s.MaxActions, &s.ActionsUsed,
		&s.WorkspaceID, &s.Allowed, &s.StartedAt, &s.LastUsedAt, &s.EndReason)
	s.EndReason = computer.EndReasonCode(s.EndReason) // rows from before codes held English
	return s, err
}

// CreateSession inserts s as starting; the one-open-session index makes a
// second one a conflict.
func (s *ComputerStore) CreateSession(ctx context.Context, sess *computer.Session) error {
	if sess.Allowed == nil {
		sess.Allowed = []string{}
	}
	got, err := scanSession(s.db.Pool.QueryRow(ctx, `INSERT INTO computer_sessions (tenant_id, id, agent_id, state, width, height,
			max_actions, allowed_domains, started_at, last_used_at)
		VALUES ($1, $2, $3, 'starting', $4, $5, $6, $7, $8, $8) RETURNING `+sessCols,
		sess.TenantID, sess.ID, sess.AgentID, sess.Width, sess.Height, sess.MaxActions, sess.Allowed, sess.StartedAt))
	if err != nil {
		return mapErr(err, "computer-use session")
	}
	*sess = got
	return nil
}

// OpenSession returns the employee's open session.
func (s *ComputerStore) OpenSession(ctx context.Context, tenantID, agentID uuid.UUID) (computer.Session, error) {
	sess, err := scanSession(s.db.Pool.QueryRow(ctx, `SELECT `+sessCols+` FROM computer_sessions
		WHERE tenant_id = $1 AND agent_id = $2 AND state IN ('starting', 'live', 'paused')`, tenantID, agentID))
	return sess, mapErr(err, "computer-use session")
}

// LastSession returns the employee's most recently started session.
func (s *ComputerStore) LastSession(ctx context.Context, tenantID, agentID uuid.UUID) (computer.Session, error) {
	sess, err := scanSession(s.db.Pool.QueryRow(ctx, `SELECT `+sessCols+` FROM computer_sessions
		WHERE tenant_id = $1 AND agent_id = $2 ORDER BY started_at DESC, id LIMIT 1`, tenantID, agentID))
	return sess, mapErr(err, "computer-use session")
}

// MarkLive records the worker of a starting session, and the workspace the
// session leased.
func (s *ComputerStore) MarkLive(ctx context.Context, tenantID, id uuid.UUID, worker string) error {
	tag, err := s.db.Pool.Exec(ctx, `UPDATE computer_sessions SET state = 'live', worker = $3, last_used_at = now(),
			workspace_id = (SELECT w.id FROM computer_workspaces w WHERE w.tenant_id = $1 AND w.lease_session = $2)
		WHERE tenant_id = $1 AND id = $2 AND state = 'starting'`, tenantID, id, worker)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.New(fault.Conflict, "the session ended while it was starting")
	}
	return err
}

// CountAction counts one action of a live session.
func (s *ComputerStore) CountAction(ctx context.Context, tenantID, id uuid.UUID) (computer.Session, error) {
	sess, err := scanSession(s.db.Pool.QueryRow(ctx, `UPDATE computer_sessions SET actions_used = actions_used + 1, last_used_at = now()
		WHERE tenant_id = $1 AND id = $2 AND state = 'live' AND actions_used < max_actions RETURNING `+sessCols, tenantID, id))
	if err == pgx.ErrNoRows {
		return computer.Session{}, fault.New(fault.Conflict, "max_actions used up, or the session is not live")
	}
	return sess, err
}

// Touch records a call on a live session.
func (s *ComputerStore) Touch(ctx context.Context, tenantID, id uuid.UUID) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE computer_sessions SET last_used_at = now() WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	return err
}

// EndSession ends an open session and releases its workspace lease.
func (s *ComputerStore) EndSession(ctx context.Context, tenantID, id uuid.UUID, state, reason string) (bool, error) {
	ended := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE computer_sessions SET state = $3, end_reason = $4, ended_at = now()
			WHERE tenant_id = $1 AND id = $2 AND state IN ('starting', 'live', 'paused')`, tenantID, id, state, reason)
		if err != nil {
			return err
		}
		ended = tag.RowsAffected() > 0
		if _, err := tx.Exec(ctx, `DELETE FROM computer_session_screenshots WHERE tenant_id = $1 AND session_id = $2`, tenantID, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE computer_workspaces SET lease_session = NULL WHERE tenant_id = $1 AND lease_session = $2`, tenantID, id)
		return err
	})
	return ended, err
}

// OpenSessionsOn returns the open sessions a worker holds, of every tenant:
// what to report lost when that worker is gone.
func (s *ComputerStore) OpenSessionsOn(ctx context.Context, worker string) ([]computer.Session, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+sessCols+` FROM computer_sessions
		WHERE worker = $1 AND state IN ('starting', 'live', 'paused')`, worker)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (computer.Session, error) { return scanSession(r) })
}

// SaveScreenshot replaces an open session's latest screenshot; a session
// that is not open (or not the tenant's) keeps none.
func (s *ComputerStore) SaveScreenshot(ctx context.Context, tenantID, id uuid.UUID, shot computer.Screenshot) error {
	if len(shot.PNG) == 0 || len(shot.PNG) > computer.MaxStoredScreenshot {
		return fault.New(fault.Invalid, "a kept screenshot is 1-%d bytes", computer.MaxStoredScreenshot)
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO computer_session_screenshots (tenant_id, session_id, png, width, height, masked, fully_masked, taken_at)
		SELECT tenant_id, id, $3, $4, $5, $6, $7, $8 FROM computer_sessions
		WHERE tenant_id = $1 AND id = $2 AND state IN ('starting', 'live', 'paused')
		ON CONFLICT (tenant_id, session_id) DO UPDATE SET png = EXCLUDED.png, width = EXCLUDED.width, height = EXCLUDED.height,
			masked = EXCLUDED.masked, fully_masked = EXCLUDED.fully_masked, taken_at = EXCLUDED.taken_at`,
		tenantID, id, shot.PNG, shot.Width, shot.Height, shot.Masked, shot.FullyMasked, shot.TakenAt)
	return err
}

// LatestScreenshot returns an open session's latest screenshot.
func (s *ComputerStore) LatestScreenshot(ctx context.Context, tenantID, id uuid.UUID) (computer.Screenshot, error) {
	var shot computer.Screenshot
	err := s.db.Pool.QueryRow(ctx, `SELECT p.png, p.width, p.height, p.masked, p.fully_masked, p.taken_at
		FROM computer_session_screenshots p JOIN computer_sessions s ON s.tenant_id = p.tenant_id AND s.id = p.session_id
		WHERE p.tenant_id = $1 AND p.session_id = $2 AND s.state IN ('starting', 'live', 'paused')`, tenantID, id).
		Scan(&shot.PNG, &shot.Width, &shot.Height, &shot.Masked, &shot.FullyMasked, &shot.TakenAt)
	return shot, mapErr(err, "screenshot")
}

// HasWorker reports whether a worker ever held a session here, in any
// tenant: a janitor judges only workers of its own deployment.
func (s *ComputerStore) HasWorker(ctx context.Context, worker string) (bool, error) {
	var ok bool
	err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM computer_sessions WHERE worker = $1)`, worker).Scan(&ok)
	return ok, err
}
