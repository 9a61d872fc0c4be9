package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// CreateSession stores a member session by the hash of its cookie value.
func (s *CredentialStore) CreateSession(ctx context.Context, ss *credentials.Session) error {
	_, err := s.q(ctx).Exec(ctx, `INSERT INTO member_sessions (tenant_id, id_hash, member_id, expires_at) VALUES ($1, $2, $3, $4)`,
		ss.TenantID, ss.IDHash, ss.MemberID, ss.ExpiresAt)
	return mapErr(err, "session")
}

// SessionByHash returns the live session whose cookie value hashes to
// idHash. The session names its own tenant; callers compare it with the
// tenant they serve.
func (s *CredentialStore) SessionByHash(ctx context.Context, idHash []byte, now time.Time) (credentials.Session, error) {
	var ss credentials.Session
	err := s.q(ctx).QueryRow(ctx, `SELECT tenant_id, id_hash, member_id, expires_at FROM member_sessions
		WHERE id_hash = $1 AND expires_at > $2`, idHash, now).Scan(&ss.TenantID, &ss.IDHash, &ss.MemberID, &ss.ExpiresAt)
	return ss, mapErr(err, "session")
}

// DeleteSession ends a session.
func (s *CredentialStore) DeleteSession(ctx context.Context, idHash []byte) error {
	_, err := s.q(ctx).Exec(ctx, `DELETE FROM member_sessions WHERE id_hash = $1`, idHash)
	return err
}

const roundCols = `tenant_id, id, agent_id, task_id, scopes, secret_hash, created_at, expires_at, revoked_at`

// CreateRoundToken stores a round token by the hash of its secret, only
// while its task is one of the tenant's and unfinished: fault.NotFound for
// an unknown task (another tenant's included), fault.Conflict for a done
// or cancelled one. The task row is share-locked for the insert, so a task
// finishing at the same moment either waits for the token (and its end
// revokes it) or is seen finished here.
func (s *CredentialStore) CreateRoundToken(ctx context.Context, r *credentials.RoundToken) error {
	if r.Scopes == nil {
		r.Scopes = []string{}
	}
	var status *string
	var created *time.Time
	err := s.q(ctx).QueryRow(ctx, `WITH t AS (SELECT status FROM tasks WHERE tenant_id = $1 AND id = $4 FOR SHARE),
		ins AS (INSERT INTO round_tokens (tenant_id, id, agent_id, task_id, scopes, secret_hash, expires_at)
			SELECT $1, $2, $3, $4, $5, $6, $7 FROM t WHERE t.status NOT IN ('done', 'cancelled') RETURNING created_at)
		SELECT (SELECT status FROM t), (SELECT created_at FROM ins)`,
		r.TenantID, r.ID, r.AgentID, r.TaskID, r.Scopes, r.SecretHash, r.ExpiresAt).Scan(&status, &created)
	switch {
	case err != nil:
		return mapErr(err, "round token")
	case status == nil:
		return fault.New(fault.NotFound, "no task of this tenant has id %s", r.TaskID)
	case created == nil:
		return fault.New(fault.Conflict, "task %s is %s; a round token is minted only for unfinished work", r.TaskID, *status)
	}
	r.CreatedAt = *created
	return nil
}

// RoundToken returns the tenant's round token with id.
func (s *CredentialStore) RoundToken(ctx context.Context, tenantID, id uuid.UUID) (credentials.RoundToken, error) {
	var r credentials.RoundToken
	err := s.q(ctx).QueryRow(ctx, `SELECT `+roundCols+` FROM round_tokens WHERE tenant_id = $1 AND id = $2`, tenantID, id).
		Scan(&r.TenantID, &r.ID, &r.AgentID, &r.TaskID, &r.Scopes, &r.SecretHash, &r.CreatedAt, &r.ExpiresAt, &r.RevokedAt)
	return r, mapErr(err, "round token")
}

// RevokeRoundToken revokes the tenant's round token.
func (s *CredentialStore) RevokeRoundToken(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := s.q(ctx).Exec(ctx, `UPDATE round_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1 AND id = $2`,
		tenantID, id)
	if err != nil {
		return err
	}
	return notFoundIfNone(tag.RowsAffected(), "round token")
}
