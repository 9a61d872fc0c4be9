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

// MemberTimeZone returns the time zone the member chose for the
// dashboard's times, "" when none (the tenant's applies).
func (s *IdentityStore) MemberTimeZone(ctx context.Context, tenantID, memberID uuid.UUID) (string, error) {
	var tz string
	err := s.db.Pool.QueryRow(ctx, `SELECT time_zone FROM member_time_zones WHERE tenant_id = $1 AND member_id = $2`,
		tenantID, memberID).Scan(&tz)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return tz, mapErr(err, "time zone")
}

// SetMemberTimeZone stores the member's time zone, an IANA name the
// caller has checked; "" forgets it. A member the tenant does not have is
// fault.Invalid.
func (s *IdentityStore) SetMemberTimeZone(ctx context.Context, tenantID, memberID uuid.UUID, tz string) error {
	if tz == "" {
		_, err := s.db.Pool.Exec(ctx, `DELETE FROM member_time_zones WHERE tenant_id = $1 AND member_id = $2`, tenantID, memberID)
		return mapErr(err, "member")
	}
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO member_time_zones (tenant_id, member_id, time_zone) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, member_id) DO UPDATE SET time_zone = EXCLUDED.time_zone, updated_at = now()`, tenantID, memberID, tz)
	return mapErr(err, "member")
}
