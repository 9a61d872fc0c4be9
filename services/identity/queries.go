package identity

import (
	"context"

	"github.com/google/uuid"
)

// The query methods below are how the edges (the admin API, the
// dashboard, the CLI, the OAuth server) read identity rows: the service
// keeps its read-write store to itself, so every write passes through the
// rules above. Each returns the store's answer unchanged; a row that is
// missing, or belongs to another tenant, is fault.NotFound.

// Tenant returns the tenant with id.
func (s *Service) Tenant(ctx context.Context, id uuid.UUID) (Tenant, error) {
	return s.store.Tenant(ctx, id)
}

// TenantBySlug returns the tenant whose slug is slug.
func (s *Service) TenantBySlug(ctx context.Context, slug string) (Tenant, error) {
	return s.store.TenantBySlug(ctx, slug)
}

// ListTenants returns every tenant of the deployment.
func (s *Service) ListTenants(ctx context.Context) ([]Tenant, error) {
	return s.store.ListTenants(ctx)
}

// PolicyVersion returns the tenant's current policy version.
func (s *Service) PolicyVersion(ctx context.Context, tenantID uuid.UUID) (int64, error) {
	return s.store.PolicyVersion(ctx, tenantID)
}

// Member returns the tenant's member id.
func (s *Service) Member(ctx context.Context, tenantID, id uuid.UUID) (Member, error) {
	return s.store.Member(ctx, tenantID, id)
}

// MemberByEmail returns the tenant's member with email.
func (s *Service) MemberByEmail(ctx context.Context, tenantID uuid.UUID, email string) (Member, error) {
	return s.store.MemberByEmail(ctx, tenantID, email)
}

// ListMembers returns the tenant's members.
func (s *Service) ListMembers(ctx context.Context, tenantID uuid.UUID) ([]Member, error) {
	return s.store.ListMembers(ctx, tenantID)
}

// Agent returns the tenant's agent id, trashed or not.
func (s *Service) Agent(ctx context.Context, tenantID, id uuid.UUID) (Agent, error) {
	return s.store.Agent(ctx, tenantID, id)
}

// AgentByName returns the tenant's agent named name, trashed or not.
func (s *Service) AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (Agent, error) {
	return s.store.AgentByName(ctx, tenantID, name)
}

// ListAgents returns the tenant's agents, trashed ones included, by name.
func (s *Service) ListAgents(ctx context.Context, tenantID uuid.UUID) ([]Agent, error) {
	return s.store.ListAgents(ctx, tenantID)
}

// ListAgentsPage returns one page of the tenant's agents and how many match
// p.Search in all (Store.ListAgentsPage).
func (s *Service) ListAgentsPage(ctx context.Context, tenantID uuid.UUID, p AgentPage) ([]Agent, int, error) {
	return s.store.ListAgentsPage(ctx, tenantID, p)
}

// AgentNames returns the names of the tenant's agents among ids.
func (s *Service) AgentNames(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error) {
	return s.store.AgentNames(ctx, tenantID, ids)
}

// Key returns the tenant's key id.
func (s *Service) Key(ctx context.Context, tenantID, id uuid.UUID) (Key, error) {
	return s.store.Key(ctx, tenantID, id)
}

// ListKeys returns the tenant's keys.
func (s *Service) ListKeys(ctx context.Context, tenantID uuid.UUID) ([]Key, error) {
	return s.store.ListKeys(ctx, tenantID)
}

// EndSessions ends every dashboard session of the tenant's member (the
// dashboard's "sign out everywhere").
func (s *Service) EndSessions(ctx context.Context, tenantID, memberID uuid.UUID) error {
	return s.store.EndSessions(ctx, tenantID, memberID, "")
}
