package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/identity"
)

const keyCols = `tenant_id, id, kind, agent_id, name, secret_hash, scopes, created_at, expires_at, revoked_at, created_by, creator_member`

func scanKey(row pgx.Row) (identity.Key, error) {
	var k identity.Key
	var agentID, creator *uuid.UUID
	err := row.Scan(&k.TenantID, &k.ID, &k.Kind, &agentID, &k.Name, &k.SecretHash, &k.Scopes, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt,
		&k.CreatedBy, &creator)
	if agentID != nil {
		k.AgentID = *agentID
	}
	if creator != nil {
		k.CreatorMember = *creator
	}
	return k, err
}

// nullID is id, or NULL for uuid.Nil.
func nullID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}

// CreateKey inserts k and bumps the tenant's policy version.
func (s *IdentityStore) CreateKey(ctx context.Context, k *identity.Key) (v int64, err error) {
	if k.Scopes == nil {
		k.Scopes = []string{}
	}
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO api_keys (tenant_id, id, kind, agent_id, name, secret_hash, scopes, expires_at,
				created_by, creator_member)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING created_at`,
			k.TenantID, k.ID, k.Kind, nullID(k.AgentID), k.Name, k.SecretHash, k.Scopes, k.ExpiresAt, k.CreatedBy,
			nullID(k.CreatorMember)).Scan(&k.CreatedAt)
		if err != nil {
			return mapErr(err, "key")
		}
		v, err = BumpPolicyVersion(ctx, tx, k.TenantID)
		return err
	})
	return v, err
}

// Key returns the tenant's key with id, revoked or not.
func (s *IdentityStore) Key(ctx context.Context, tenantID, id uuid.UUID) (identity.Key, error) {
	k, err := scanKey(s.db.Pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE tenant_id = $1 AND id = $2`, tenantID, id))
	return k, mapErr(err, "key")
}

// ListKeys returns the tenant's keys, newest first.
func (s *IdentityStore) ListKeys(ctx context.Context, tenantID uuid.UUID) ([]identity.Key, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+keyCols+` FROM api_keys WHERE tenant_id = $1 ORDER BY created_at DESC, id`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.Key, error) { return scanKey(r) })
}

// RevokeKey marks the tenant's key revoked (idempotently) and bumps the
// policy version.
func (s *IdentityStore) RevokeKey(ctx context.Context, tenantID, id uuid.UUID) (k identity.Key, v int64, err error) {
	err = s.db.InTx(ctx, func(tx pgx.Tx) error {
		k, err = scanKey(tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
			WHERE tenant_id = $1 AND id = $2 RETURNING `+keyCols, tenantID, id))
		if err != nil {
			return mapErr(err, "key")
		}
		v, err = BumpPolicyVersion(ctx, tx, tenantID)
		return err
	})
	return k, v, err
}
