package dbsources

import (
	"context"

	"github.com/google/uuid"
)

// List returns the tenant's sources by name, for the operator's edges (the
// admin API, the dashboard, the CLI): the service keeps its read-write
// store to itself, so every save is checked and tested here. A Source
// carries its password sealed, never in the clear.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID) ([]Source, error) {
	return s.store.List(ctx, tenantID)
}
