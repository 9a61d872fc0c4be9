package postgres

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// PruneKeys deletes the tenant's keys revoked or expired before cutoff. A
// live key is never touched. Deleting a dead key changes no policy, so the
// policy version stays.
func (s *IdentityStore) PruneKeys(ctx context.Context, tenantID uuid.UUID, cutoff time.Time) (n int64, err error) {
	defer fault.Wrap(&err, "prune keys")
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM api_keys WHERE tenant_id = $1
		AND (revoked_at < $2 OR expires_at < $2)`, tenantID, cutoff)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
