package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/credentials"
)

// LiveKeys returns those of the tenant's keys ids that can authenticate at
// now: not revoked, not expired, for an agent key its agent active, and for
// a key a member made that member still there, with the member's current
// role. One query for any number of keys.
func (db *DB) LiveKeys(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID, now time.Time) ([]credentials.LiveKey, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT k.id, k.scopes, coalesce(m.role, '') FROM api_keys k
		LEFT JOIN agents a ON a.tenant_id = k.tenant_id AND a.id = k.agent_id
		LEFT JOIN members m ON m.tenant_id = k.tenant_id AND m.id = k.creator_member
		WHERE k.tenant_id = $1 AND k.id = ANY($2) AND k.revoked_at IS NULL
		  AND (k.expires_at IS NULL OR k.expires_at > $3)
		  AND (k.agent_id IS NULL OR a.status = 'active')
		  AND (k.creator_member IS NULL OR m.id IS NOT NULL)`, tenantID, ids, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []credentials.LiveKey
	for rows.Next() {
		var k credentials.LiveKey
		if err := rows.Scan(&k.ID, &k.Scopes, &k.Role); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
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
// ids) that still hold an active access token unexpired at now, each with
// its member's current role and the scopes granted (those of its newest
// live access token). Refreshing keeps the request id and swaps the access
// token in one transaction, so a grant stays live across refreshes;
// revocation (of either token), reuse of a rotated refresh token and
// revoking consent deactivate them all. One query for any number of grants.
func (db *DB) LiveGrants(ctx context.Context, tenantID uuid.UUID, requestIDs []string, now time.Time) ([]credentials.LiveGrant, error) {
	if len(requestIDs) == 0 {
		return nil, nil
	}
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT ON (t.request_id) t.request_id, m.role,
			COALESCE(t.request->'granted_scopes', '[]'::jsonb)
		FROM oauth_tokens t JOIN members m ON m.tenant_id = t.tenant_id AND m.id = t.member_id
		WHERE t.tenant_id = $1 AND t.kind = 'access' AND t.request_id = ANY($2) AND t.active AND t.expires_at > $3
		ORDER BY t.request_id, t.created_at DESC`, tenantID, requestIDs, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []credentials.LiveGrant
	for rows.Next() {
		var g credentials.LiveGrant
		if err := rows.Scan(&g.RequestID, &g.Role, &g.Scopes); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
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
