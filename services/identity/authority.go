package identity

import (
	"slices"
)

// Action is one thing a principal may do in its tenant. The authority
// matrix (Role.Allows) says which actions a member of each role may take;
// a credential's scopes say which it may take at all (Action.Scope). Every
// admin API route declares the action it needs, the OAuth consent page
// offers the scopes of the actions a member may take, and keys, round
// tokens and the CLI are checked against the same table.
type Action string

// The actions. Reading never shows a secret (password hashes, key hashes,
// client secrets).
const (
	// ReadTenant reads the tenant's configuration: its settings, members,
	// agents, keys, OAuth clients, grants, capability requests and
	// reserved names.
	ReadTenant Action = "read_tenant"
	// ReadAudit reads and exports the audit trail.
	ReadAudit Action = "read_audit"
	// ManageOwnConsents lists and withdraws the caller's own OAuth consents.
	ManageOwnConsents Action = "manage_own_consents"
	// ManageAgents creates, changes, trashes, restores and purges AI
	// employees and their settings, releases reserved names, and mints
	// and revokes round tokens.
	ManageAgents Action = "manage_agents"
	// ManageGrants decides capability requests and grants and revokes
	// scoped tools.
	ManageGrants Action = "manage_grants"
	// ManageKeys creates and revokes API keys, never with more authority
	// than the creator's own (Principal.Delegate).
	ManageKeys Action = "manage_keys"
	// ManageClients pre-registers and deletes OAuth clients.
	ManageClients Action = "manage_clients"
	// ManageSettings changes the tenant's name and settings.
	ManageSettings Action = "manage_settings"
	// ManageMembers adds members, changes their role or password and
	// removes them, as long as no owner is involved (ManageOwners), and
	// withdraws other members' OAuth consents.
	ManageMembers Action = "manage_members"
	// ManageOwners makes, changes and removes owners and sets their
	// passwords.
	ManageOwners Action = "manage_owners"
	// CallReadTools, CallWriteTools and CallAdminTools call MCP tools whose
	// minimum scope is tools:read, tools:write and tools:admin.
	CallReadTools  Action = "call_read_tools"
	CallWriteTools Action = "call_write_tools"
	CallAdminTools Action = "call_admin_tools"
	// ManageTenants creates and lists tenants. No role holds it: only the
	// platform admin token does.
	ManageTenants Action = "manage_tenants"
)

// actionRule is one row of the matrix: the scope a credential must hold,
// the weakest role that may take the action ("" for none), and whether it
// is an admin API action (which AI employees and OAuth clients never take).
type actionRule struct {
	scope string
	least Role
	admin bool
}

var matrix = map[Action]actionRule{
	ReadTenant:        {ScopeAdminRead, RoleViewer, true},
	ReadAudit:         {ScopeAdminRead, RoleViewer, true},
	ManageOwnConsents: {ScopeAdminRead, RoleViewer, true},
	ManageAgents:      {ScopeAdminWrite, RoleOperator, true},
	ManageGrants:      {ScopeAdminWrite, RoleOperator, true},
	ManageKeys:        {ScopeAdminWrite, RoleOperator, true},
	ManageClients:     {ScopeAdminWrite, RoleAdmin, true},
	ManageSettings:    {ScopeAdminWrite, RoleAdmin, true},
	ManageMembers:     {ScopeAdminWrite, RoleAdmin, true},
	ManageOwners:      {ScopeAdminWrite, RoleOwner, true},
	CallReadTools:     {ScopeToolsRead, RoleViewer, false},
	CallWriteTools:    {ScopeToolsWrite, RoleOperator, false},
	CallAdminTools:    {ScopeToolsAdmin, RoleOperator, false},
	ManageTenants:     {ScopeAdminWrite, "", true},
}

// Actions lists every action, in the order the authority page shows them.
var Actions = []Action{ReadTenant, ReadAudit, ManageOwnConsents, ManageAgents, ManageGrants, ManageKeys,
	ManageClients, ManageSettings, ManageMembers, ManageOwners, CallReadTools, CallWriteTools, CallAdminTools, ManageTenants}

// Roles lists the member roles, strongest first.
var Roles = []Role{RoleOwner, RoleAdmin, RoleOperator, RoleViewer}

// Known reports whether a is one of Actions.
func (a Action) Known() bool { _, ok := matrix[a]; return ok }

// Scope is the scope a credential must hold to take a.
func (a Action) Scope() string { return matrix[a].scope }

// AdminAPI reports whether a is taken through the admin API, where only
// operator keys, member sessions and the platform token are accepted.
func (a Action) AdminAPI() bool { return matrix[a].admin }

// PlatformOnly reports whether only the platform admin token may take a.
func (a Action) PlatformOnly() bool { r, ok := matrix[a]; return ok && r.least == "" }

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 4
	case RoleAdmin:
		return 3
	case RoleOperator:
		return 2
	case RoleViewer:
		return 1
	}
	return 0
}

// Outranks reports whether r is a stronger role than o.
func (r Role) Outranks(o Role) bool { return r.rank() > o.rank() }

// Allows reports whether a member of role r may take action a. This is the
// authority matrix; everything else asks it.
func (r Role) Allows(a Action) bool {
	rule, ok := matrix[a]
	return ok && rule.least != "" && r.rank() > 0 && r.rank() >= rule.least.rank()
}

// Scopes returns the scopes a member of role r holds, in AllScopes order:
// those of the actions it may take.
func (r Role) Scopes() []string {
	var out []string
	for _, s := range AllScopes {
		if slices.ContainsFunc(Actions, func(a Action) bool { return matrix[a].scope == s && r.Allows(a) }) {
			out = append(out, s)
		}
	}
	return out
}

// Bound splits scopes into those a member of role r holds and those it
// does not. A credential a member's authority stands behind (an OAuth
// token, a key the member made) never holds more than Bound keeps, and the
// consent page withholds the rest.
func (r Role) Bound(scopes []string) (kept, withheld []string) {
	own := r.Scopes()
	for _, s := range scopes {
		if slices.Contains(own, s) {
			kept = append(kept, s)
		} else {
			withheld = append(withheld, s)
		}
	}
	return kept, withheld
}
