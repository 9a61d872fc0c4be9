package postgres

import (
	"context"

	"github.com/google/uuid"
)

// KeyTenant returns the tenant of the key with id. Key ids are globally
// unique, so an admin request can name its tenant through its key alone;
// the caller still verifies the key inside that tenant. It implements
// auth.KeyLocator.
func (s *IdentityStore) KeyTenant(ctx context.Context, id uuid.UUID) (uuid.UUID, error) {
	var tid uuid.UUID
	err := s.db.Pool.QueryRow(ctx, `SELECT tenant_id FROM api_keys WHERE id = $1`, id).Scan(&tid)
	return tid, mapErr(err, "key")
}
