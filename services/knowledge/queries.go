package knowledge

import (
	"context"

	"github.com/google/uuid"
)

// The query methods below are how the operator's edges (the admin API and
// the dashboard) read what employees stored: the service keeps its
// read-write store to itself, so every write carries its source and every
// forgetting passes through Forget. Each returns the store's answer
// unchanged; a row that is missing, or belongs to another tenant, is
// fault.NotFound.

// Wiki reads a page of an employee's wiki; agentID uuid.Nil is the shared
// wiki.
func (s *Service) Wiki(ctx context.Context, tenantID, agentID uuid.UUID, path string) (WikiPage, error) {
	return s.cfg.Store.Wiki(ctx, tenantID, agentID, path)
}

// Wikis lists a wiki's pages (without content), by path, at most limit;
// agentID uuid.Nil is the shared wiki.
func (s *Service) Wikis(ctx context.Context, tenantID, agentID uuid.UUID, limit int) ([]WikiPage, error) {
	return s.cfg.Store.Wikis(ctx, tenantID, agentID, limit)
}
