// Package identity holds Visor's tenancy domain: tenants, their members,
// their AI employees (agents), credentials, and the Principal every request
// resolves to. It imports no infrastructure; storage implements its Store.
package identity

import (
	"regexp"
	"time"

	"github.com/google/uuid"
)

// Tenant is an organization. Everything it owns carries its ID.
type Tenant struct {
	ID        uuid.UUID
	Slug      string // URL name: /t/{slug}/mcp
	Name      string
	Settings  TenantSettings
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Role is a member's role inside a tenant.
type Role string

// Member roles, strongest first.
const (
	RoleOwner    Role = "owner"
	RoleAdmin    Role = "admin"
	RoleOperator Role = "operator"
	RoleViewer   Role = "viewer"
)

// Valid reports whether r is one of the four roles.
func (r Role) Valid() bool {
	switch r {
	case RoleOwner, RoleAdmin, RoleOperator, RoleViewer:
		return true
	}
	return false
}

// Member is a human in a tenant who signs in to the dashboard and approves
// OAuth consent.
type Member struct {
	ID           uuid.UUID
	TenantID     uuid.UUID
	Email        string // stored lower-cased
	Role         Role
	PasswordHash string // argon2id PHC string; never serialized to callers
	CreatedAt    time.Time
}

// AgentStatus tells whether an agent is working or in the trash.
type AgentStatus string

// Agent statuses. A trashed agent keeps its row, so its name stays reserved
// until an operator restores or purges it.
const (
	AgentActive  AgentStatus = "active"
	AgentTrashed AgentStatus = "trashed"
)

// Agent is an AI employee.
type Agent struct {
	ID          uuid.UUID
	TenantID    uuid.UUID
	Name        string
	Department  string
	ReportsTo   uuid.UUID // uuid.Nil when it reports to no agent
	Role        string
	BudgetCents int64
	Settings    AgentSettings
	// SettingsVersion increases on every change to Settings.
	SettingsVersion int64
	Status          AgentStatus
	TrashedAt       *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

var (
	slugRE      = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$`)
	agentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
)

// ValidSlug reports whether s can name a tenant in a URL: 3–40 lower-case
// letters, digits and inner hyphens.
func ValidSlug(s string) bool { return slugRE.MatchString(s) }

// ValidAgentName reports whether s can name an agent: 1–63 lower-case letters,
// digits, '-' and '_', starting with a letter or digit.
func ValidAgentName(s string) bool { return agentNameRE.MatchString(s) }
