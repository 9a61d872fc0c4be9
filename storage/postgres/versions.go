package postgres

import (
	"context"

	"github.com/google/uuid"
)

// PolicyVersions reads the tenants' policy versions in one query, for the
// live hub's reconciler (it implements live.Versions). Unknown ids are
// absent from the result.
func (db *DB) PolicyVersions(ctx context.Context, tenantIDs []uuid.UUID) (map[uuid.UUID]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, policy_version FROM tenants WHERE id = ANY($1)`, tenantIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[uuid.UUID]int64, len(tenantIDs))
	for rows.Next() {
		var id uuid.UUID
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		out[id] = v
	}
	return out, rows.Err()
}
