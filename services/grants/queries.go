package grants

import (
	"context"

	"github.com/google/uuid"
)

// The query methods below are how the edges (the admin API, the
// dashboard) read requests and grants: the service keeps its read-write
// store to itself, so every approval, denial and revocation passes through
// it. Each returns the store's answer unchanged; a row that is missing, or
// belongs to another tenant, is fault.NotFound.

// Request returns the tenant's request id.
func (s *Service) Request(ctx context.Context, tenantID, id uuid.UUID) (Request, error) {
	return s.store.Request(ctx, tenantID, id)
}

// ListRequests returns at most limit of the tenant's requests, newest
// first, after the position after (nil: from the newest); status "" means
// all.
func (s *Service) ListRequests(ctx context.Context, tenantID uuid.UUID, status Status, after *Position, limit int) ([]Request, error) {
	return s.store.ListRequests(ctx, tenantID, status, after, limit)
}

// ListGrants returns the tenant's grants, newest first; agentID Nil means
// every agent, live restricts to grants in force.
func (s *Service) ListGrants(ctx context.Context, tenantID, agentID uuid.UUID, live bool) ([]Grant, error) {
	return s.store.ListGrants(ctx, tenantID, agentID, live)
}
