// Package agents is the agents tool family through MCP: create_agent,
// agent_update, agent_remove and agent_status, with the reserved-name rules
// (docs/tools.md, "Agents") and the delegation policy every record-relationship check of
// later families uses (Delegation).
package agents

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Reservation is a name removed through MCP, held until an operator frees
// it. It outlives the agent's row on purpose.
type Reservation struct {
	TenantID   uuid.UUID
	Name       string
	AgentID    uuid.UUID
	ReservedBy string
	ReservedAt time.Time
}

// Reservations stores reserved names, per tenant.
type Reservations interface {
	// Reserve records name as reserved for agentID (replacing an older
	// reservation of the same name).
	Reserve(ctx context.Context, r Reservation) error
	// List returns the tenant's reservations by name.
	List(ctx context.Context, tenantID uuid.UUID) ([]Reservation, error)
	// Release frees name; fault.NotFound when it is not reserved.
	Release(ctx context.Context, tenantID uuid.UUID, name string) error
}

// Service runs the agents family on top of the identity service.
type Service struct {
	ids  *identity.Service
	res  Reservations
	dirs Directory
}

// Directory is the read side the family needs (identity.Store has it).
type Directory interface {
	Agent(ctx context.Context, tenantID, id uuid.UUID) (identity.Agent, error)
	AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error)
	ListAgents(ctx context.Context, tenantID uuid.UUID) ([]identity.Agent, error)
	AgentsAfter(ctx context.Context, tenantID uuid.UUID, after string, limit int) ([]identity.Agent, error)
	AgentNames(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error)
}

// NewService returns the family's service. dir is normally the identity store.
func NewService(ids *identity.Service, dir Directory, res Reservations) *Service {
	return &Service{ids: ids, res: res, dirs: dir}
}

// Reservations returns the reservation store, for the admin API.
func (s *Service) Reservations() Reservations { return s.res }
