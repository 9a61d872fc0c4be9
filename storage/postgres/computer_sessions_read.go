package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/computer"
)

var _ computer.SessionReader = (*ComputerStore)(nil)

// Session returns one of the tenant's sessions, open or ended.
func (s *ComputerStore) Session(ctx context.Context, tenantID, id uuid.UUID) (computer.Session, error) {
	sess, err := scanSession(s.db.Pool.QueryRow(ctx, `SELECT `+sessCols+` FROM computer_sessions
		WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return sess, mapErr(err, "computer-use session")
}

// TenantSessions lists the tenant's open sessions, then its ended ones,
// each newest first, at most limit in all.
func (s *ComputerStore) TenantSessions(ctx context.Context, tenantID uuid.UUID, limit int) ([]computer.Session, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+sessCols+` FROM computer_sessions WHERE tenant_id = $1
		ORDER BY state IN ('starting', 'live', 'paused') DESC, started_at DESC, id DESC LIMIT $2`, tenantID, max(limit, 1))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (computer.Session, error) { return scanSession(r) })
}
