package identity

import (
	"context"

	"github.com/google/uuid"
)

// Store persists the identity domain. Every method that touches
// tenant-owned rows takes the tenant explicitly; a row of another tenant is
// reported as fault.NotFound, exactly as a missing one.
//
// Mutations that change a policy input (tenant settings, an agent's settings
// or status, a key) bump the tenant's policy version in the same transaction
// and return it, so callers can publish a changes.Event carrying it.
type Store interface {
	CreateTenant(ctx context.Context, t *Tenant) error
	Tenant(ctx context.Context, id uuid.UUID) (Tenant, error)
	TenantBySlug(ctx context.Context, slug string) (Tenant, error)
	ListTenants(ctx context.Context) ([]Tenant, error)
	// UpdateTenant loads the tenant, applies fn and saves Name and Settings.
	UpdateTenant(ctx context.Context, id uuid.UUID, fn func(*Tenant) error) (Tenant, int64, error)
	// PolicyVersion returns the tenant's current policy version.
	PolicyVersion(ctx context.Context, tenantID uuid.UUID) (int64, error)

	CreateMember(ctx context.Context, m *Member) error
	Member(ctx context.Context, tenantID, id uuid.UUID) (Member, error)
	MemberByEmail(ctx context.Context, tenantID uuid.UUID, email string) (Member, error)
	ListMembers(ctx context.Context, tenantID uuid.UUID) ([]Member, error)
	// UpdateMember applies fn to the member under a row lock and saves its
	// role and password hash.
	UpdateMember(ctx context.Context, tenantID, id uuid.UUID, fn func(*Member) error) (Member, error)
	// DeleteMember removes the member, ending their sessions and revoking
	// the keys they stand behind (Key.CreatorMember), in one transaction
	// that bumps the policy version, which it returns.
	DeleteMember(ctx context.Context, tenantID, id uuid.UUID) (int64, error)
	// EndSessions ends the member's dashboard sessions except the one
	// named keep (a CredentialSession ID; "" ends all).
	EndSessions(ctx context.Context, tenantID, memberID uuid.UUID, keep string) error

	// CreateAgent inserts a; a name already held by any agent of the tenant,
	// trashed ones included, is fault.Conflict.
	CreateAgent(ctx context.Context, a *Agent) (int64, error)
	Agent(ctx context.Context, tenantID, id uuid.UUID) (Agent, error)
	AgentByName(ctx context.Context, tenantID uuid.UUID, name string) (Agent, error)
	// ListAgents returns the tenant's agents, trashed ones included, by name.
	ListAgents(ctx context.Context, tenantID uuid.UUID) ([]Agent, error)
	// ListAgentsPage returns up to p.Limit of the tenant's agents named
	// after p.After that match p.Search, trashed ones included, by name,
	// and how many match p.Search in all.
	ListAgentsPage(ctx context.Context, tenantID uuid.UUID, p AgentPage) ([]Agent, int, error)
	// AgentNames returns the names of the tenant's agents among ids.
	AgentNames(ctx context.Context, tenantID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]string, error)
	// UpdateAgent loads the agent, applies fn and saves every mutable field.
	UpdateAgent(ctx context.Context, tenantID, id uuid.UUID, fn func(*Agent) error) (Agent, int64, error)
	// PurgeAgent deletes a trashed agent's row, freeing its name.
	PurgeAgent(ctx context.Context, tenantID, id uuid.UUID) (int64, error)

	CreateKey(ctx context.Context, k *Key) (int64, error)
	Key(ctx context.Context, tenantID, id uuid.UUID) (Key, error)
	ListKeys(ctx context.Context, tenantID uuid.UUID) ([]Key, error)
	RevokeKey(ctx context.Context, tenantID, id uuid.UUID) (Key, int64, error)
}

// AgentPage asks for one page of a tenant's agents, by name.
type AgentPage struct {
	// After is the last name of the previous page; "" for the first.
	After string
	// Search is found, case folded, in an agent's name, department or
	// role; "" matches every agent.
	Search string
	Limit  int
}
