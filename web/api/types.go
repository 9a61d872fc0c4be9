package api

import (
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// The wire types. They copy the domain types field by field, so a new
// domain field (or a secret hash) never leaks onto the wire by accident.

// Tenant is a tenant on the wire.
type Tenant struct {
	ID        uuid.UUID               `json:"id"`
	Slug      string                  `json:"slug"`
	Name      string                  `json:"name"`
	Settings  identity.TenantSettings `json:"settings"`
	CreatedAt time.Time               `json:"created_at"`
	UpdatedAt time.Time               `json:"updated_at"`
}

func tenantOut(t identity.Tenant) Tenant {
	return Tenant{ID: t.ID, Slug: t.Slug, Name: t.Name, Settings: t.Settings, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// Member is a member on the wire; the password hash never is.
type Member struct {
	ID        uuid.UUID     `json:"id"`
	Email     string        `json:"email"`
	Role      identity.Role `json:"role"`
	CreatedAt time.Time     `json:"created_at"`
}

func memberOut(m identity.Member) Member {
	return Member{ID: m.ID, Email: m.Email, Role: m.Role, CreatedAt: m.CreatedAt}
}

// Agent is an AI employee on the wire.
type Agent struct {
	ID              uuid.UUID              `json:"id"`
	Name            string                 `json:"name"`
	Department      string                 `json:"department"`
	ReportsTo       *uuid.UUID             `json:"reports_to"`
	Role            string                 `json:"role"`
	BudgetCents     int64                  `json:"budget_cents"`
	Settings        identity.AgentSettings `json:"settings"`
	SettingsVersion int64                  `json:"settings_version"`
	Status          identity.AgentStatus   `json:"status"`
	TrashedAt       *time.Time             `json:"trashed_at"`
	CreatedAt       time.Time              `json:"created_at"`
	UpdatedAt       time.Time              `json:"updated_at"`
}

func agentOut(a identity.Agent) Agent {
	out := Agent{ID: a.ID, Name: a.Name, Department: a.Department, Role: a.Role, BudgetCents: a.BudgetCents,
		Settings: a.Settings, SettingsVersion: a.SettingsVersion, Status: a.Status, TrashedAt: a.TrashedAt,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
	if a.ReportsTo != uuid.Nil {
		r := a.ReportsTo
		out.ReportsTo = &r
	}
	return out
}

// AgentSettings is an agent's settings document with its version, for
// read-modify-write with optimistic concurrency.
type AgentSettings struct {
	Settings        identity.AgentSettings `json:"settings"`
	SettingsVersion int64                  `json:"settings_version"`
}

// Key is an API key on the wire; the secret hash never is.
type Key struct {
	ID        uuid.UUID        `json:"id"`
	Kind      identity.KeyKind `json:"kind"`
	AgentID   *uuid.UUID       `json:"agent_id"`
	Name      string           `json:"name"`
	Scopes    []string         `json:"scopes"`
	CreatedAt time.Time        `json:"created_at"`
	ExpiresAt *time.Time       `json:"expires_at"`
	RevokedAt *time.Time       `json:"revoked_at"`
	// CreatedBy names who made the key ("member:<id>", "operator:key:<id>",
	// "operator:platform", ...); empty for keys older than the record.
	CreatedBy string `json:"created_by"`
}

func keyOut(k identity.Key) Key {
	out := Key{ID: k.ID, Kind: k.Kind, Name: k.Name, Scopes: k.Scopes, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt,
		CreatedBy: k.CreatedBy}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	if k.AgentID != uuid.Nil {
		id := k.AgentID
		out.AgentID = &id
	}
	return out
}

// CreatedKey is a new key with its bearer token, shown this once.
type CreatedKey struct {
	Key   Key    `json:"key"`
	Token string `json:"token"`
}

func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}
