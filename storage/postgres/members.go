package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

const memberCols = `tenant_id, id, email, role, password_hash, created_at`

func scanMember(row pgx.Row) (identity.Member, error) {
	var m identity.Member
	err := row.Scan(&m.TenantID, &m.ID, &m.Email, &m.Role, &m.PasswordHash, &m.CreatedAt)
	return m, err
}

// CreateMember inserts m.
func (s *IdentityStore) CreateMember(ctx context.Context, m *identity.Member) error {
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO members (tenant_id, id, email, role, password_hash)
		VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
		m.TenantID, m.ID, m.Email, m.Role, m.PasswordHash).Scan(&m.CreatedAt)
	return mapErr(err, "member "+m.Email)
}

// Member returns the tenant's member with id.
func (s *IdentityStore) Member(ctx context.Context, tenantID, id uuid.UUID) (identity.Member, error) {
	m, err := scanMember(s.db.Pool.QueryRow(ctx, `SELECT `+memberCols+` FROM members WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return m, mapErr(err, "member")
}

// MemberByEmail returns the tenant's member with the (lower-case) email.
func (s *IdentityStore) MemberByEmail(ctx context.Context, tenantID uuid.UUID, email string) (identity.Member, error) {
	m, err := scanMember(s.db.Pool.QueryRow(ctx, `SELECT `+memberCols+` FROM members WHERE tenant_id = $1 AND email = $2`, tenantID, email))
	return m, mapErr(err, "member")
}

// ListMembers returns the tenant's members by email.
func (s *IdentityStore) ListMembers(ctx context.Context, tenantID uuid.UUID) ([]identity.Member, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+memberCols+` FROM members WHERE tenant_id = $1 ORDER BY email`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.Member, error) { return scanMember(r) })
}

// UpdateMember applies fn under a row lock and saves role and password hash.
func (s *IdentityStore) UpdateMember(ctx context.Context, tenantID, id uuid.UUID, fn func(*identity.Member) error) (m identity.Member, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		m, err = scanMember(tx.QueryRow(ctx, `SELECT `+memberCols+` FROM members WHERE tenant_id = $1 AND id = $2 FOR UPDATE`, tenantID, id))
		if err != nil {
			return mapErr(err, "member")
		}
		if err := fn(&m); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE members SET role = $3, password_hash = $4 WHERE tenant_id = $1 AND id = $2`,
			tenantID, id, m.Role, m.PasswordHash)
		return mapErr(err, "member")
	})
	return m, err
}

// DeleteMember removes the tenant's member with id (its sessions go with
// it) and revokes the keys it stands behind, bumping the policy version.
func (s *IdentityStore) DeleteMember(ctx context.Context, tenantID, id uuid.UUID) (v int64, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM members WHERE tenant_id = $1 AND id = $2`, tenantID, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.New(fault.NotFound, "member not found")
		}
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
			WHERE tenant_id = $1 AND creator_member = $2`, tenantID, id); err != nil {
			return err
		}
		v, err = BumpPolicyVersion(ctx, tx, tenantID)
		return err
	})
	return v, err
}

// EndSessions deletes the member's dashboard sessions except the one whose
// hash starts with the bytes keep names in hex ("" keeps none).
func (s *IdentityStore) EndSessions(ctx context.Context, tenantID, memberID uuid.UUID, keep string) error {
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM member_sessions WHERE tenant_id = $1 AND member_id = $2
		AND ($3 = '' OR encode(substring(id_hash from 1 for 8), 'hex') <> $3)`, tenantID, memberID, keep)
	return err
}
