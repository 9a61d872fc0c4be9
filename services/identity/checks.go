package identity

import (
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Credential ids of the principals no credential row stands behind.
const (
	// PlatformCredential is the platform admin token's.
	PlatformCredential = "platform"
	// SystemCredential is the process's own: `visor dev` and other
	// in-process callers that act for the deployment.
	SystemCredential = "system"
)

// System is the principal of the deployment itself (the CLI, `visor dev`,
// jobs): every scope, bound by no role. It may do anything inside a tenant
// except what only the platform token may.
var System = Principal{Kind: KindOperator, CredentialID: SystemCredential, Scopes: AllScopes}

// IsPlatform reports whether p is the platform admin token.
func (p Principal) IsPlatform() bool {
	return p.Kind == KindOperator && p.CredentialID == PlatformCredential
}

// ActingMember is the member whose authority stands behind p: the member
// of a session, or the member who made an API key. uuid.Nil when none does.
func (p Principal) ActingMember() uuid.UUID {
	if p.Kind == KindOperator && p.MemberID != uuid.Nil {
		return p.MemberID
	}
	return p.CreatorID
}

// Allows reports whether p may take action a (see Check).
func (p Principal) Allows(a Action) bool { return p.Check(a) == nil }

// Check returns nil when p may take action a, and otherwise a
// fault.Forbidden saying why. A principal takes an action when it holds
// the action's scope and, if a member's role bounds it, the role allows
// it. Admin API actions are never taken by AI employees or OAuth clients;
// platform-only actions only by the platform token, which may take every
// action.
func (p Principal) Check(a Action) error {
	rule, ok := matrix[a]
	switch {
	case !ok:
		return fault.New(fault.Forbidden, "no one may do %q", a)
	case p.IsPlatform():
		return nil
	case rule.least == "":
		return fault.New(fault.Forbidden, "this needs the platform admin token (VISOR_ADMIN_TOKEN)")
	case rule.admin && p.Kind == KindEmployee:
		return fault.New(fault.Forbidden, "AI employees' credentials cannot use the admin API; use an operator key or a member's session")
	case rule.admin && p.Kind != KindOperator:
		return fault.New(fault.Forbidden, "OAuth clients' tokens cannot use the admin API")
	case p.Role != "" && !p.Role.Allows(a):
		return fault.New(fault.Forbidden, "a member with role %s may not %s", p.Role, a.words())
	case !p.HasScope(rule.scope):
		return fault.New(fault.Forbidden, "this credential lacks the %s scope, which is needed to %s", rule.scope, a.words())
	}
	return nil
}

func (a Action) words() string { return actionWords[a] }

var actionWords = map[Action]string{
	ReadTenant:        "read the tenant's configuration",
	ReadAudit:         "read the audit trail",
	ManageOwnConsents: "manage their own OAuth consents",
	ManageAgents:      "manage AI employees or round tokens",
	ManageGrants:      "decide capability requests or grant scoped tools",
	ManageKeys:        "create or revoke API keys",
	ManageClients:     "register or delete OAuth clients",
	ManageSettings:    "change the tenant's settings",
	ManageMembers:     "add, change or remove members",
	ManageOwners:      "make, change or remove owners or set their passwords",
	CallReadTools:     "call tools that need tools:read",
	CallWriteTools:    "call tools that need tools:write",
	CallAdminTools:    "call tools that need tools:admin",
	ManageTenants:     "create or list tenants",
}

// Delegate returns the scopes a credential that p creates (an API key, a
// round token) may be given: the requested scopes when p holds every one of
// them, or, when none are requested, those of defaults that p holds. A
// requested scope p does not hold is fault.Forbidden: no credential is made
// with more authority than its creator. Unknown scopes are fault.Invalid.
func (p Principal) Delegate(requested, defaults []string) ([]string, error) {
	for _, s := range requested {
		if !KnownScope(s) {
			return nil, fault.New(fault.Invalid, "unknown scope %q; known scopes: %v", s, AllScopes)
		}
		if !p.HasScope(s) {
			return nil, fault.New(fault.Forbidden, "a credential cannot be given the %s scope by a creator who does not hold it", s)
		}
	}
	if len(requested) == 0 {
		requested = slices.DeleteFunc(slices.Clone(defaults), func(s string) bool { return !p.HasScope(s) })
	}
	return slices.Compact(slices.Sorted(slices.Values(requested))), nil
}

// MemberChange describes a change to a member for CheckMemberChange.
type MemberChange struct {
	// Before is the member as it is; nil when the change adds a member.
	Before *Member
	// Role is the role after the change; empty when it stays.
	Role Role
	// Password is set when the change sets the member's password.
	Password bool
	// Remove is set when the change removes the member.
	Remove bool
}

// CheckMemberChange returns nil when p may make change c, and otherwise a
// fault.Forbidden saying why. Members are managed with ManageMembers; a
// change that makes, changes or removes an owner, or sets an owner's
// password, also needs ManageOwners; and nobody raises their own role (the
// member behind a session, or behind a key they made).
func (p Principal) CheckMemberChange(c MemberChange) error {
	if err := p.Check(ManageMembers); err != nil {
		return err
	}
	if c.Role == RoleOwner || (c.Before != nil && c.Before.Role == RoleOwner) {
		if err := p.Check(ManageOwners); err != nil {
			return err
		}
	}
	if c.Before != nil && c.Role.Outranks(c.Before.Role) && p.ActingMember() == c.Before.ID {
		return fault.New(fault.Forbidden, "nobody may raise their own role; ask an owner")
	}
	return nil
}
