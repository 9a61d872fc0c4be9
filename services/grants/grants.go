// Package grants holds scoped grants: an AI employee's
// capabilities.scoped_tools stay hidden until a live grant for that employee
// names the tool. An employee asks with capability_request (a pending
// Request); an operator approves, creating a Grant that may expire, or
// denies. Revocation, expiry and the end of the grant's task take the tool
// away again. Every change to a grant commits with a bump of the tenant's
// policy version and is then announced, so the live hub tells exactly the
// affected employee's streams.
package grants

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/keyset"
)

// Status is where a request stands.
type Status string

// Request statuses.
const (
	Pending  Status = "pending"
	Approved Status = "approved"
	Denied   Status = "denied"
)

// Valid reports whether s is a known status.
func (s Status) Valid() bool { return s == Pending || s == Approved || s == Denied }

// Request is an AI employee's ask for a scoped tool.
type Request struct {
	ID           uuid.UUID  `json:"id"`
	TenantID     uuid.UUID  `json:"-"`
	AgentID      uuid.UUID  `json:"agent_id"`
	Tool         string     `json:"tool"`
	Reason       string     `json:"reason"`
	TaskID       uuid.UUID  `json:"task_id,omitzero"`
	Status       Status     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	DecidedAt    *time.Time `json:"decided_at,omitempty"`
	DecidedBy    string     `json:"decided_by,omitempty"`
	DecisionNote string     `json:"decision_note,omitempty"`
	GrantID      uuid.UUID  `json:"grant_id,omitzero"`
}

// Position is a request's place in the newest-first order, for keyset
// paging: the sort key of the last request of a page.
type Position = keyset.Position

// PositionOf returns r's position.
func PositionOf(r Request) Position { return Position{At: r.CreatedAt, ID: r.ID} }

// RequestLimits bound what one AI employee may ask for, so that a looping
// or hostile employee cannot bury operators in requests.
type RequestLimits struct {
	// MaxPending is how many of its requests may wait for a decision at
	// once.
	MaxPending int
	// PerWindow is how many requests it may make within Window.
	PerWindow int
	Window    time.Duration
}

// DefaultRequestLimits are the limits of a Service unless changed.
var DefaultRequestLimits = RequestLimits{MaxPending: 5, PerWindow: 10, Window: time.Hour}

// EndReason says why a grant ended.
type EndReason string

// Reasons a grant ends.
const (
	Revoked   EndReason = "revoked"
	Expired   EndReason = "expired"
	TaskEnded EndReason = "task_ended"
)

// Grant lets one agent see and call the scoped tools its Tool entry names
// (an allowed_tools-style entry), until it expires or ends.
type Grant struct {
	ID        uuid.UUID  `json:"id"`
	TenantID  uuid.UUID  `json:"-"`
	AgentID   uuid.UUID  `json:"agent_id"`
	Tool      string     `json:"tool"`
	RequestID uuid.UUID  `json:"request_id,omitzero"`
	TaskID    uuid.UUID  `json:"task_id,omitzero"`
	GrantedBy string     `json:"granted_by"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	EndReason EndReason  `json:"end_reason,omitempty"`
	EndedBy   string     `json:"ended_by,omitempty"`
}

// LiveAt reports whether g is in force at now.
func (g Grant) LiveAt(now time.Time) bool {
	return g.EndedAt == nil && (g.ExpiresAt == nil || g.ExpiresAt.After(now))
}

// Ended names one grant that ended, for announcing it.
type Ended struct {
	TenantID, AgentID uuid.UUID
	Version           int64 // the tenant's policy version after ending it
}

// Store persists requests and grants. Every method takes the tenant
// explicitly; another tenant's row is fault.NotFound, like a missing one.
// Methods that start or end a grant bump the tenant's policy version in the
// same transaction and return it.
type Store interface {
	// CreateRequest inserts a pending request within lim, checked
	// atomically with the insert: a pending request of the same agent for
	// the same tool, or lim.MaxPending pending requests of the agent, is
	// fault.Conflict; lim.PerWindow requests of the agent made within
	// lim.Window is fault.RateLimited.
	CreateRequest(ctx context.Context, r *Request, lim RequestLimits) error
	Request(ctx context.Context, tenantID, id uuid.UUID) (Request, error)
	// ListRequests returns at most limit of the tenant's requests, newest
	// first, after the position after (nil: from the newest); status ""
	// means all.
	ListRequests(ctx context.Context, tenantID uuid.UUID, status Status, after *Position, limit int) ([]Request, error)
	// Approve marks the pending request approved and inserts g for it. A
	// request that is not pending is fault.Conflict.
	Approve(ctx context.Context, tenantID, requestID uuid.UUID, g *Grant, note string) (Request, int64, error)
	// Deny marks the pending request denied. Nothing visible changes, so
	// the policy version does not move.
	Deny(ctx context.Context, tenantID, requestID uuid.UUID, by, note string) (Request, error)

	// CreateGrant inserts a grant that no request asked for.
	CreateGrant(ctx context.Context, g *Grant) (int64, error)
	Grant(ctx context.Context, tenantID, id uuid.UUID) (Grant, error)
	// ListGrants returns the tenant's grants, newest first; agentID Nil
	// means every agent, live restricts to grants in force.
	ListGrants(ctx context.Context, tenantID, agentID uuid.UUID, live bool) ([]Grant, error)
	// LiveTools returns the Tool entries of the agent's grants in force now.
	LiveTools(ctx context.Context, tenantID, agentID uuid.UUID) ([]string, error)
	// Revoke ends a grant in force; one already ended is fault.Conflict.
	Revoke(ctx context.Context, tenantID, id uuid.UUID, by string) (Grant, int64, error)
	// EndTask ends every grant of the task, returning one Ended per agent.
	EndTask(ctx context.Context, tenantID, taskID uuid.UUID) ([]Ended, error)
	// ExpireDue ends every grant whose expiry is at or before now, in every
	// tenant, returning one Ended per (tenant, agent).
	ExpireDue(ctx context.Context, now time.Time) ([]Ended, error)
}
