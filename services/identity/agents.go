package identity

import (
	"context"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// NewAgent is what a caller supplies to create an agent.
type NewAgent struct {
	Name        string
	Department  string
	ReportsTo   uuid.UUID
	Role        string
	BudgetCents int64
	Settings    AgentSettings
	// Creator is the AI employee creating this one (create_agent,
	// spawn_agent), whose authority bounds it (Agent.Bound); uuid.Nil
	// when an operator or a member creates it.
	Creator uuid.UUID
}

// CreateAgent validates and creates an agent. A name held by any agent of
// the tenant, trashed ones included, is fault.Conflict. An agent created by
// another (in.Creator) is bounded by its creator as stored now, whatever a
// caller's cached copy says: fault.Forbidden when in asks for more
// (Agent.Bound), fault.NotFound when the creator is gone.
func (s *Service) CreateAgent(ctx context.Context, tenantID uuid.UUID, in NewAgent) (Agent, error) {
	if in.Creator != uuid.Nil {
		creator, err := s.store.Agent(ctx, tenantID, in.Creator)
		if err != nil {
			return Agent{}, err
		}
		if creator.Status != AgentActive {
			return Agent{}, fault.New(fault.NotFound, "the creating AI employee %s is in the trash", creator.Name)
		}
		if in, err = creator.Bound(in); err != nil {
			return Agent{}, err
		}
	}
	a := Agent{
		ID: uuid.New(), TenantID: tenantID, Name: strings.TrimSpace(in.Name), Department: in.Department,
		ReportsTo: in.ReportsTo, Role: in.Role, BudgetCents: in.BudgetCents, Settings: in.Settings,
		SettingsVersion: 1, Status: AgentActive,
	}
	if err := s.validateAgent(ctx, &a); err != nil {
		return Agent{}, err
	}
	if err := s.checkSources(ctx, tenantID, nil, a.Settings.Capabilities.DBSources); err != nil {
		return Agent{}, err
	}
	v, err := s.store.CreateAgent(ctx, &a)
	if err != nil {
		return Agent{}, err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.AgentChanged, AgentID: a.ID, Version: v})
	return a, nil
}

// UpdateAgent applies fn to the agent, validates and saves it, and announces
// the change. fn must not change ID, TenantID or Name.
func (s *Service) UpdateAgent(ctx context.Context, tenantID, id uuid.UUID, fn func(*Agent) error) (Agent, error) {
	a, v, err := s.store.UpdateAgent(ctx, tenantID, id, func(a *Agent) error {
		name, sources := a.Name, slices.Clone(a.Settings.Capabilities.DBSources)
		if err := fn(a); err != nil {
			return err
		}
		if a.Name != name {
			return fault.New(fault.Invalid, "an agent cannot be renamed")
		}
		if err := s.validateAgent(ctx, a); err != nil {
			return err
		}
		return s.checkSources(ctx, tenantID, sources, a.Settings.Capabilities.DBSources)
	})
	if err != nil {
		return Agent{}, err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.AgentChanged, AgentID: id, Version: v})
	return a, nil
}

// TrashAgent moves an active agent to the trash. Its name stays reserved and
// its keys stop working while it is there.
func (s *Service) TrashAgent(ctx context.Context, tenantID, id uuid.UUID) (Agent, error) {
	return s.UpdateAgent(ctx, tenantID, id, func(a *Agent) error {
		if a.Status == AgentTrashed {
			return fault.New(fault.Conflict, "agent %s is already in the trash", a.Name)
		}
		now := s.now()
		a.Status, a.TrashedAt = AgentTrashed, &now
		return nil
	})
}

// RestoreAgent brings a trashed agent back.
func (s *Service) RestoreAgent(ctx context.Context, tenantID, id uuid.UUID) (Agent, error) {
	return s.UpdateAgent(ctx, tenantID, id, func(a *Agent) error {
		if a.Status != AgentTrashed {
			return fault.New(fault.Conflict, "agent %s is not in the trash", a.Name)
		}
		a.Status, a.TrashedAt = AgentActive, nil
		return nil
	})
}

// PurgeAgent deletes a trashed agent for good, so its name can be reused.
func (s *Service) PurgeAgent(ctx context.Context, tenantID, id uuid.UUID) error {
	a, err := s.store.Agent(ctx, tenantID, id)
	if err != nil {
		return err
	}
	if a.Status != AgentTrashed {
		return fault.New(fault.Conflict, "only an agent in the trash can be purged; remove %s first", a.Name)
	}
	v, err := s.store.PurgeAgent(ctx, tenantID, id)
	if err != nil {
		return err
	}
	s.publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.AgentChanged, AgentID: id, Version: v})
	return nil
}

func (s *Service) validateAgent(ctx context.Context, a *Agent) error {
	if !ValidAgentName(a.Name) {
		return fault.New(fault.Invalid, "agent name %q must be 1-63 lower-case letters, digits, '-' or '_'", a.Name)
	}
	if len(a.Department) > 100 || len(a.Role) > 100 {
		return fault.New(fault.Invalid, "department and role must be at most 100 bytes")
	}
	if a.BudgetCents < 0 {
		return fault.New(fault.Invalid, "budget_cents must not be negative")
	}
	if a.ReportsTo == a.ID {
		return fault.New(fault.Invalid, "an agent cannot report to itself")
	}
	if a.ReportsTo != uuid.Nil {
		if err := s.checkReportsTo(ctx, a); err != nil {
			return err
		}
	}
	return ValidateAgentSettings(a.Settings)
}

// checkReportsTo refuses an unknown manager and a reporting cycle.
func (s *Service) checkReportsTo(ctx context.Context, a *Agent) error {
	seen := map[uuid.UUID]bool{a.ID: true}
	for next := a.ReportsTo; next != uuid.Nil; {
		if seen[next] {
			return fault.New(fault.Invalid, "reports_to would create a reporting cycle")
		}
		seen[next] = true
		m, err := s.store.Agent(ctx, a.TenantID, next)
		if fault.Is(err, fault.NotFound) {
			return fault.New(fault.Invalid, "reports_to names no agent of this tenant")
		}
		if err != nil {
			return err
		}
		next = m.ReportsTo
	}
	return nil
}
