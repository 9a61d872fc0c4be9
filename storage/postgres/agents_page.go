package postgres

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/visorhq/visor/services/identity"
)

// agentMatches is the search of ListAgentsPage: $2 empty, or found (case
// folded) in the name, department or role.
const agentMatches = `($2 = '' OR strpos(lower(name), lower($2)) > 0 OR strpos(lower(department), lower($2)) > 0
	OR strpos(lower(role), lower($2)) > 0)`

// ListAgentsPage returns one page of the tenant's agents by name, trashed
// ones included: up to p.Limit named after p.After and matching p.Search,
// and how many match p.Search in all. The page walks the (tenant, name)
// index, so its cost does not grow with the pages before it.
func (s *IdentityStore) ListAgentsPage(ctx context.Context, tenantID uuid.UUID, p identity.AgentPage) ([]identity.Agent, int, error) {
	var total int
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM agents WHERE tenant_id = $1 AND `+agentMatches, tenantID, p.Search).Scan(&total)
	if err != nil {
		return nil, 0, err
	}
	as, err := s.agentsAfter(ctx, tenantID, p)
	return as, total, err
}

// AgentsAfter returns up to limit of the tenant's agents named after after,
// by name, trashed ones included: ListAgentsPage without the search and
// the count.
func (s *IdentityStore) AgentsAfter(ctx context.Context, tenantID uuid.UUID, after string, limit int) ([]identity.Agent, error) {
	return s.agentsAfter(ctx, tenantID, identity.AgentPage{After: after, Limit: limit})
}

// agentsAfter is the page of ListAgentsPage, walking the (tenant, name)
// index.
func (s *IdentityStore) agentsAfter(ctx context.Context, tenantID uuid.UUID, p identity.AgentPage) ([]identity.Agent, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+agentCols+` FROM agents WHERE tenant_id = $1 AND `+agentMatches+`
		AND name > $3 ORDER BY name LIMIT $4`, tenantID, p.Search, p.After, p.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.Agent, error) { return scanAgent(r) })
}

// AgentNames returns the names of the tenant's agents among ids; ids of
// other tenants' agents, or of none, are absent from the map.
func (s *IdentityStore) AgentNames(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	names := make(map[uuid.UUID]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT id, name FROM agents WHERE tenant_id = $1 AND id = ANY($2)`, tenantID, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		names[id] = name
	}
	return names, rows.Err()
}
