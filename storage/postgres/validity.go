package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// LiveKeys returns those of the tenant's keys ids that can authenticate at
// now: not revoked, not expired, and for an agent key, its agent active.
// One query for any number of keys.
func (db *DB) LiveKeys(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return collectIDs[uuid.UUID](ctx, db, `SELECT k.id FROM api_keys k
		LEFT JOIN agents a ON a.tenant_id = k.tenant_id AND a.id = k.agent_id
		WHERE k.tenant_id = $1 AND k.id = ANY($2) AND k.revoked_at IS NULL
		  AND (k.expires_at IS NULL OR k.expires_at > $3)
		  AND (k.agent_id IS NULL OR a.status = 'active')`, tenantID, ids, now)
}

// LiveRoundTokens returns those of the tenant's round tokens ids that can
// authenticate at now: not revoked, not expired, their agent active.
func (db *DB) LiveRoundTokens(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return collectIDs[uuid.UUID](ctx, db, `SELECT r.id FROM round_tokens r
		JOIN agents a ON a.tenant_id = r.tenant_id AND a.id = r.agent_id
		WHERE r.tenant_id = $1 AND r.id = ANY($2) AND r.revoked_at IS NULL
		  AND r.expires_at > $3 AND a.status = 'active'`, tenantID, ids, now)
}

// LiveGrants returns those of the tenant's OAuth grants (fosite request
// ids) that still hold an active access token unexpired at now. Refreshing
// keeps the request id and swaps the access token in one transaction, so
// a grant stays live across refreshes; revocation (of either token), reuse
// of a rotated refresh token and revoking consent deactivate them all.
func (db *DB) LiveGrants(ctx context.Context, tenantID uuid.UUID, requestIDs []string, now time.Time) ([]string, error) {
	if len(requestIDs) == 0 {
		return nil, nil
	}
	return collectIDs[string](ctx, db, `SELECT DISTINCT request_id FROM oauth_tokens
		WHERE tenant_id = $1 AND kind = 'access' AND request_id = ANY($2) AND active AND expires_at > $3`,
		tenantID, requestIDs, now)
}

func collectIDs[T any](ctx context.Context, db *DB, sql string, args ...any) ([]T, error) {
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
