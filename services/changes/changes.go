// Package changes names the events that tell replicas a tenant's policy
// inputs changed, and the interfaces that carry them. A change is always
// committed to Postgres first (bumping the tenant's policy version) and
// published second; a lost publication is repaired by reconciliation
// against that version, never by trusting the bus.
package changes

import (
	"context"

	"github.com/google/uuid"
)

// Kind says which policy input changed.
type Kind string

// Kinds of change.
const (
	TenantSettings Kind = "tenant_settings" // integrations, whitelist, feature switches
	AgentChanged   Kind = "agent"           // an agent's settings, role, status
	KeyChanged     Kind = "key"             // a key's scopes or revocation
	GrantChanged   Kind = "grant"           // a scoped grant started or ended
	ClientChanged  Kind = "oauth"           // an OAuth grant or consent was revoked
)

// Event is one committed change. AgentID narrows it to one agent's callers;
// uuid.Nil means every caller in the tenant may be affected.
type Event struct {
	TenantID uuid.UUID `json:"tenant_id"`
	Kind     Kind      `json:"kind"`
	AgentID  uuid.UUID `json:"agent_id,omitzero"`
	// Version is the tenant's policy version after the change.
	Version int64 `json:"version"`
}

// Publisher announces committed changes. Publish must be called after the
// change commits; an error means "maybe not delivered", which reconciliation
// repairs.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// Discard is a Publisher that drops every event, for tools and tests that run
// without live streams.
type Discard struct{}

// Publish drops e.
func (Discard) Publish(context.Context, Event) error { return nil }

// Multi is a Publisher that publishes to each of its publishers in order,
// for example this replica's caches first and the bus second. Every one is
// tried; the first error is returned.
type Multi []Publisher

// Publish publishes e to every publisher.
func (m Multi) Publish(ctx context.Context, e Event) error {
	var first error
	for _, p := range m {
		if err := p.Publish(ctx, e); err != nil && first == nil {
			first = err
		}
	}
	return first
}
