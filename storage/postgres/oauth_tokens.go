package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/credentials"
)

// CreateToken stores a code or token by its signature.
func (s *CredentialStore) CreateToken(ctx context.Context, t *credentials.Token) error {
	_, err := s.q(ctx).Exec(ctx, `INSERT INTO oauth_tokens (tenant_id, kind, signature, request_id, client_id, member_id,
		active, request, expires_at) VALUES ($1, $2, $3, $4, $5, $6, true, $7, $8)`,
		t.TenantID, t.Kind, t.Signature, t.RequestID, t.ClientID, t.MemberID, t.Request, t.ExpiresAt)
	return mapErr(err, "token")
}

// Token returns the tenant's code or token with signature, active or not.
func (s *CredentialStore) Token(ctx context.Context, tenantID uuid.UUID, kind credentials.TokenKind, signature string) (credentials.Token, error) {
	var t credentials.Token
	err := s.q(ctx).QueryRow(ctx, `SELECT tenant_id, kind, signature, request_id, client_id, member_id, active, request, expires_at
		FROM oauth_tokens WHERE tenant_id = $1 AND kind = $2 AND signature = $3`, tenantID, kind, signature).
		Scan(&t.TenantID, &t.Kind, &t.Signature, &t.RequestID, &t.ClientID, &t.MemberID, &t.Active, &t.Request, &t.ExpiresAt)
	return t, mapErr(err, "token")
}

// DeactivateToken marks an active code or token used; fault.NotFound when
// none matched, so two concurrent redemptions cannot both succeed.
func (s *CredentialStore) DeactivateToken(ctx context.Context, tenantID uuid.UUID, kind credentials.TokenKind, signature string) error {
	tag, err := s.q(ctx).Exec(ctx, `UPDATE oauth_tokens SET active = false
		WHERE tenant_id = $1 AND kind = $2 AND signature = $3 AND active`, tenantID, kind, signature)
	if err != nil {
		return err
	}
	return notFoundIfNone(tag.RowsAffected(), "token")
}

// DeleteToken removes a code or token.
func (s *CredentialStore) DeleteToken(ctx context.Context, tenantID uuid.UUID, kind credentials.TokenKind, signature string) error {
	_, err := s.q(ctx).Exec(ctx, `DELETE FROM oauth_tokens WHERE tenant_id = $1 AND kind = $2 AND signature = $3`,
		tenantID, kind, signature)
	return err
}

// RevokeGrant deactivates every token of kind ("" for all) minted for
// requestID.
func (s *CredentialStore) RevokeGrant(ctx context.Context, tenantID uuid.UUID, kind credentials.TokenKind, requestID string) error {
	_, err := s.q(ctx).Exec(ctx, `UPDATE oauth_tokens SET active = false
		WHERE tenant_id = $1 AND request_id = $2 AND ($3 = '' OR kind = $3)`, tenantID, requestID, string(kind))
	return err
}

// Consent returns the scopes the member approved for the client.
func (s *CredentialStore) Consent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) ([]string, error) {
	var scopes []string
	err := s.q(ctx).QueryRow(ctx, `SELECT scopes FROM oauth_consents WHERE tenant_id = $1 AND member_id = $2 AND client_id = $3`,
		tenantID, memberID, clientID).Scan(&scopes)
	return scopes, mapErr(err, "consent")
}

// AddConsent records scopes as approved, keeping earlier approvals.
func (s *CredentialStore) AddConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string, scopes []string) error {
	_, err := s.q(ctx).Exec(ctx, `INSERT INTO oauth_consents (tenant_id, member_id, client_id, scopes) VALUES ($1, $2, $3, $4)
		ON CONFLICT (tenant_id, member_id, client_id) DO UPDATE SET granted_at = now(),
			scopes = ARRAY(SELECT DISTINCT unnest(oauth_consents.scopes || $4) ORDER BY 1)`,
		tenantID, memberID, clientID, scopes)
	return mapErr(err, "consent")
}

// ListConsents returns the member's consents by client id.
func (s *CredentialStore) ListConsents(ctx context.Context, tenantID, memberID uuid.UUID) (map[string][]string, error) {
	rows, err := s.q(ctx).Query(ctx, `SELECT client_id, scopes FROM oauth_consents WHERE tenant_id = $1 AND member_id = $2`, tenantID, memberID)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var id string
	var scopes []string
	_, err = pgx.ForEachRow(rows, []any{&id, &scopes}, func() error { out[id] = scopes; return nil })
	return out, err
}

// RevokeConsent forgets the consent and revokes the client's tokens for
// the member.
func (s *CredentialStore) RevokeConsent(ctx context.Context, tenantID, memberID uuid.UUID, clientID string) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM oauth_consents WHERE tenant_id = $1 AND member_id = $2 AND client_id = $3`,
			tenantID, memberID, clientID)
		if err != nil {
			return err
		}
		if err := notFoundIfNone(tag.RowsAffected(), "consent"); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE oauth_tokens SET active = false WHERE tenant_id = $1 AND member_id = $2 AND client_id = $3`,
			tenantID, memberID, clientID)
		return err
	})
}
