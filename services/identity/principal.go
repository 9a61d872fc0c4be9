package identity

import (
	"context"
	"slices"

	"github.com/google/uuid"
)

// PrincipalKind says what sort of caller a request is.
type PrincipalKind string

// Principal kinds: who is calling (docs/oauth.md, "Principals").
const (
	// KindOperator maps to no AI employee and is unrestricted in its tenant.
	KindOperator PrincipalKind = "operator"
	// KindEmployee acts as one agent: its key, or a token minted for a round.
	KindEmployee PrincipalKind = "employee"
	// KindExternal is a third-party client a member authorized with OAuth.
	KindExternal PrincipalKind = "external"
)

// Principal is who a request is, resolved from its bearer credential on every
// request. It is a value: copy it freely.
type Principal struct {
	TenantID   uuid.UUID
	TenantSlug string
	Kind       PrincipalKind
	AgentID    uuid.UUID // employee only
	MemberID   uuid.UUID // external (the consenting member) or a member session
	ClientID   string    // external: the OAuth client id
	// CredentialID identifies the key, token grant or session that
	// authenticated the request, for audit and revocation.
	CredentialID string
	Scopes       []string
	TaskID       uuid.UUID // a round token's task; uuid.Nil otherwise
	// Role is the member role that bounds what the principal may do: the
	// member's own for a member session or an OAuth token, the creating
	// member's current role for an API key a member made. Empty when no
	// member stands behind it (keys made by the platform token or the
	// CLI, the platform token itself, AI employees): its scopes alone
	// bound it.
	Role Role `json:",omitempty"`
	// CreatorID is the member who made the API key, whose current role
	// is Role; uuid.Nil for every other credential.
	CreatorID uuid.UUID `json:",omitzero"`
}

// Scopes. Tool scopes are ordered: a holder of tools:admin also holds
// tools:write and tools:read.
const (
	ScopeToolsRead  = "tools:read"
	ScopeToolsWrite = "tools:write"
	ScopeToolsAdmin = "tools:admin"
	ScopeAdminRead  = "admin:read"
	ScopeAdminWrite = "admin:write"
)

// AllScopes lists every scope Visor knows, in a stable order.
var AllScopes = []string{ScopeToolsRead, ScopeToolsWrite, ScopeToolsAdmin, ScopeAdminRead, ScopeAdminWrite}

// ToolScopes are the scopes of the MCP endpoint: the only ones an OAuth
// client can be granted, since its tokens are bound to that endpoint. The
// admin scopes belong to API keys and member sessions.
var ToolScopes = []string{ScopeToolsRead, ScopeToolsWrite, ScopeToolsAdmin}

var scopeImplies = map[string][]string{
	ScopeToolsAdmin: {ScopeToolsWrite, ScopeToolsRead},
	ScopeToolsWrite: {ScopeToolsRead},
	ScopeAdminWrite: {ScopeAdminRead},
}

// KnownScope reports whether s is one of AllScopes.
func KnownScope(s string) bool { return slices.Contains(AllScopes, s) }

// HasScope reports whether p holds scope, directly or through a stronger one.
func (p Principal) HasScope(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope || slices.Contains(scopeImplies[s], scope) {
			return true
		}
	}
	return false
}

// IsEmployee reports whether p acts as an AI employee.
func (p Principal) IsEmployee() bool { return p.Kind == KindEmployee && p.AgentID != uuid.Nil }

// ID returns a stable string naming the principal inside its tenant, for
// audit rows and stream bookkeeping.
func (p Principal) ID() string {
	switch p.Kind {
	case KindEmployee:
		return "agent:" + p.AgentID.String()
	case KindExternal:
		return "client:" + p.ClientID + "/member:" + p.MemberID.String()
	case KindOperator:
		if p.MemberID != uuid.Nil {
			return "member:" + p.MemberID.String()
		}
	}
	return "operator:" + p.CredentialID
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal in ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}
