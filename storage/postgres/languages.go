package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// MemberLanguage returns the language the member chose for the dashboard,
// "" when none.
func (s *IdentityStore) MemberLanguage(ctx context.Context, tenantID, memberID uuid.UUID) (string, error) {
	var l string
	err := s.db.Pool.QueryRow(ctx, `SELECT language FROM member_languages WHERE tenant_id = $1 AND member_id = $2`,
		tenantID, memberID).Scan(&l)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return l, mapErr(err, "language")
}

// SetMemberLanguage stores the member's language choice. A member the
// tenant does not have, or a language other than en and ja, is
// fault.Invalid.
func (s *IdentityStore) SetMemberLanguage(ctx context.Context, tenantID, memberID uuid.UUID, lang string) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO member_languages (tenant_id, member_id, language) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, member_id) DO UPDATE SET language = EXCLUDED.language, updated_at = now()`, tenantID, memberID, lang)
	return mapErr(err, "member")
}
