package responsibilities

import (
	"context"

	"github.com/google/uuid"
)

// The query methods below are how the edges (the admin API, the
// dashboard) read responsibilities as an operator sees them: the service
// keeps its read-write store to itself, so every change passes through it.
// Each returns the store's answer unchanged; a row that is missing, or
// belongs to another tenant, is fault.NotFound.

// Responsibility returns the tenant's responsibility id.
func (s *Service) Responsibility(ctx context.Context, tenantID, id uuid.UUID) (Responsibility, error) {
	return s.store.Responsibility(ctx, tenantID, id)
}

// ListResponsibilities returns the tenant's responsibilities that f
// selects.
func (s *Service) ListResponsibilities(ctx context.Context, tenantID uuid.UUID, f Filter) ([]Responsibility, error) {
	return s.store.ListResponsibilities(ctx, tenantID, f)
}

// Runs lists a responsibility's runs, newest first, after a position.
func (s *Service) Runs(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *RunPosition, limit int) ([]Run, error) {
	return s.store.Runs(ctx, tenantID, responsibilityID, after, limit)
}

// Skips lists a responsibility's skips, newest first, after a position.
func (s *Service) Skips(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *RunPosition, limit int) ([]Skip, error) {
	return s.store.Skips(ctx, tenantID, responsibilityID, after, limit)
}
