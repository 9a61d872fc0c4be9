package tools

import (
	"context"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

func nop(context.Context, Call) (*Result, error) { return &Result{Text: "ok"}, nil }

// testRegistry declares one tool per filter-table row, by metadata alone.
func testRegistry() *Registry {
	r := NewRegistry()
	add := func(t Tool) {
		if t.Scope == "" {
			t.Scope = identity.ScopeToolsRead
		}
		t.Handler = nop
		r.Register(t)
	}
	add(Tool{Name: "agent_status"})
	add(Tool{Name: "plain_read"})
	add(Tool{Name: "plain_write", Scope: identity.ScopeToolsWrite})
	add(Tool{Name: "admin_only", Scope: identity.ScopeToolsAdmin})
	add(Tool{Name: "working_state_get", ProcessAgent: true})
	add(Tool{Name: "gmail_send", Gate: GateGoogleWorkspace})
	add(Tool{Name: "github_issue", Gate: GateGitHub})
	add(Tool{Name: "responsibility_get", Gate: GateResponsibilities})
	add(Tool{Name: "os_click", Gate: GateOSNative})
	add(Tool{Name: "recording_start", Gate: GateRecording})
	add(Tool{Name: "system_reboot", Gate: GateSystemOperator})
	add(Tool{Name: "codrive_run", Gate: GateCodrive})
	add(Tool{Name: "computer_click", Gate: GateComputerUse})
	add(Tool{Name: "computer_workspace_list", Gate: GateComputerWorkspace})
	add(Tool{Name: "db_query", Gate: GateDBSources})
	add(Tool{Name: "fork_spawn", Gate: GateFork})
	add(Tool{Name: "create_agent", Scope: identity.ScopeToolsAdmin, Permission: PermCreateAgents})
	add(Tool{Name: "tasks_create", Scope: identity.ScopeToolsWrite, Permission: PermScheduleTasks,
		PermissionIf: func(a map[string]any) bool { _, ok := a["schedule"]; return ok }})
	r.Register(Tool{Name: "old_status", DeprecatedFor: "agent_status"})
	return r
}

var (
	tenantID = uuid.New()
	agentID  = uuid.New()
	no, yes  = false, true
)

func operator(scopes ...string) identity.Principal {
	return identity.Principal{TenantID: tenantID, Kind: identity.KindOperator, CredentialID: "k1", Scopes: scopes}
}

func external(scopes ...string) identity.Principal {
	return identity.Principal{TenantID: tenantID, Kind: identity.KindExternal, ClientID: "c", MemberID: uuid.New(), Scopes: scopes}
}

// employee is an AI employee holding the default scopes of its
// credentials (every tool scope).
func employee(s identity.AgentSettings) *Subject {
	a := identity.Agent{ID: agentID, TenantID: tenantID, Name: "ann", Status: identity.AgentActive, Settings: s}
	return &Subject{Principal: identity.Principal{TenantID: tenantID, Kind: identity.KindEmployee, AgentID: agentID,
		Scopes: identity.DefaultEmployeeScopes}, Agent: &a}
}

func visibleNames(r *Registry, s *Subject) []string {
	var out []string
	for _, tl := range r.Visible(s) {
		out = append(out, tl.Name)
	}
	return out
}

func TestFilterTable(t *testing.T) {
	r := testRegistry()
	fresh := employee(identity.AgentSettings{})
	everything := employee(identity.AgentSettings{
		Capabilities: identity.Capabilities{OSNative: true, Recording: true, SystemOperator: true, Codrive: true, ComputerUse: true,
			ComputerUseConfig: identity.ComputerUseConfig{Workspace: true}, DBSources: []string{"crm"}},
		Fork: identity.Fork{Enabled: true},
	})
	everything.Tenant.Settings = identity.TenantSettings{Integrations: identity.Integrations{GoogleWorkspace: true, GitHub: true}, Responsibilities: true}
	computerNoWS := employee(identity.AgentSettings{Capabilities: identity.Capabilities{ComputerUse: true}})
	wsNoComputer := employee(identity.AgentSettings{Capabilities: identity.Capabilities{ComputerUseConfig: identity.ComputerUseConfig{Workspace: true}}})
	withTenant := func(s *Subject, ts identity.TenantSettings) *Subject { s.Tenant.Settings = ts; return s }

	tests := []struct {
		name string
		s    *Subject
		want []string
	}{
		{"a fresh agent has none of the opt-ins", fresh,
			[]string{"agent_status", "admin_only", "create_agent", "old_status", "plain_read", "plain_write", "tasks_create", "working_state_get"}},
		{"every opt-in on", everything,
			[]string{"agent_status", "admin_only", "codrive_run", "computer_click", "computer_workspace_list", "create_agent", "db_query",
				"fork_spawn", "github_issue", "gmail_send", "old_status", "os_click", "plain_read", "plain_write", "recording_start",
				"responsibility_get", "system_reboot", "tasks_create", "working_state_get"}},
		{"workspace needs computer_use too", computerNoWS,
			[]string{"agent_status", "admin_only", "computer_click", "create_agent", "old_status", "plain_read", "plain_write", "tasks_create", "working_state_get"}},
		{"workspace alone shows nothing", wsNoComputer,
			[]string{"agent_status", "admin_only", "create_agent", "old_status", "plain_read", "plain_write", "tasks_create", "working_state_get"}},
		{"operator with tools:admin: no process-agent or agent-gated tools", &Subject{Principal: operator(identity.ScopeToolsAdmin)},
			[]string{"agent_status", "admin_only", "create_agent", "old_status", "plain_read", "plain_write", "tasks_create"}},
		{"operator with tools:read sees read tools only", &Subject{Principal: operator(identity.ScopeToolsRead)},
			[]string{"agent_status", "old_status", "plain_read"}},
		{"operator with tools:write", &Subject{Principal: operator(identity.ScopeToolsWrite)},
			[]string{"agent_status", "old_status", "plain_read", "plain_write", "tasks_create"}},
		{"operator, tenant integrations on", withTenant(&Subject{Principal: operator(identity.ScopeToolsRead)},
			identity.TenantSettings{Integrations: identity.Integrations{GoogleWorkspace: true, GitHub: true}, Responsibilities: true}),
			[]string{"agent_status", "github_issue", "gmail_send", "old_status", "plain_read", "responsibility_get"}},
		{"external sees the default whitelist within its scopes", &Subject{Principal: external(identity.ScopeToolsRead)},
			[]string{"agent_status", "old_status"}},
		{"external with tools:admin: whitelist + explicit scope tools", &Subject{Principal: external(identity.ScopeToolsAdmin)},
			[]string{"admin_only", "agent_status", "create_agent", "old_status", "tasks_create"}},
		{"external with explicit tools:write", &Subject{Principal: external(identity.ScopeToolsWrite)},
			[]string{"agent_status", "old_status", "plain_write", "tasks_create"}},
		{"external never sees responsibilities", withTenant(&Subject{Principal: external(identity.ScopeToolsRead)},
			identity.TenantSettings{Responsibilities: true, ExternalWhitelist: []string{"responsibility_get", "plain_read"}}),
			[]string{"plain_read"}},
		{"per-tenant whitelist replaces the default", withTenant(&Subject{Principal: external(identity.ScopeToolsRead)},
			identity.TenantSettings{ExternalWhitelist: []string{"plain_read", "working_state_get", "plain_write"}}),
			[]string{"plain_read"}},
		{"denied_tools hides, allowed_tools hides the rest, denied wins", employee(identity.AgentSettings{Capabilities: identity.Capabilities{
			AllowedTools: []string{"plain_*", "mcp__visor__agent_status", "mcp__other__create_agent", "tasks*create"},
			DeniedTools:  []string{"plain_write"}}}),
			[]string{"agent_status", "old_status", "plain_read"}},
		{"mcp__<server>__* names every tool with a custom server name", withTenant(employee(identity.AgentSettings{Capabilities: identity.Capabilities{
			DeniedTools: []string{"mcp__acme__*"}}}), identity.TenantSettings{ServerName: "acme"}),
			nil},
		{"mcp__visor__* names nothing when the tenant calls Visor acme", withTenant(employee(identity.AgentSettings{Capabilities: identity.Capabilities{
			DeniedTools: []string{"mcp__visor__*"}}}), identity.TenantSettings{ServerName: "acme"}),
			[]string{"agent_status", "admin_only", "create_agent", "old_status", "plain_read", "plain_write", "tasks_create", "working_state_get"}},
		{"scoped_tools hidden until a live grant", employee(identity.AgentSettings{Capabilities: identity.Capabilities{
			ScopedTools: []string{"plain_write", "plain_read"}}}),
			[]string{"agent_status", "admin_only", "create_agent", "old_status", "tasks_create", "working_state_get"}},
		{"a live grant shows the scoped tool", func() *Subject {
			s := employee(identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"plain_write", "plain_read"}}})
			s.Grants = []string{"plain_write"}
			return s
		}(), []string{"agent_status", "admin_only", "create_agent", "old_status", "plain_write", "tasks_create", "working_state_get"}},
		{"listed but refused: permission flags keep the tool listed", employee(identity.AgentSettings{Permissions: &identity.Permissions{
			CanCreateAgents: &no, CanScheduleTasks: &no}}),
			[]string{"agent_status", "admin_only", "create_agent", "old_status", "plain_read", "plain_write", "tasks_create", "working_state_get"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := visibleNames(r, tc.s)
			require.True(t, slices.IsSorted(got), "stable name order")
			want := slices.Clone(tc.want)
			slices.Sort(want)
			require.Equal(t, want, got)
			// discoverable ⇔ callable (permission gates aside, checked below)
			for _, tl := range r.All() {
				d := r.Decide(tc.s, tl, nil)
				if tl.Permission == PermNone {
					require.Equal(t, d.Visible(), d.Allowed, tl.Name)
				}
			}
		})
	}
}

func TestHiddenToolRefusedByItsGate(t *testing.T) {
	r := testRegistry()
	s := employee(identity.AgentSettings{})
	tl, _ := r.Get("github_issue")
	d := r.Decide(s, tl, map[string]any{})
	require.False(t, d.Allowed)
	require.Equal(t, CodeRefused, d.Code)
	require.Equal(t, EventCapabilityDenied, d.Event)
	require.Contains(t, d.Reason, "GitHub integration is off")

	ext := &Subject{Principal: external(identity.ScopeToolsRead)}
	tl, _ = r.Get("plain_write")
	d = r.Decide(ext, tl, nil)
	require.Equal(t, EventScopeDenied, d.Event)
	require.Equal(t, identity.ScopeToolsWrite, d.NeedScope)

	tl, _ = r.Get("working_state_get")
	d = r.Decide(&Subject{Principal: operator(identity.ScopeToolsAdmin)}, tl, nil)
	require.Contains(t, d.Reason, "not an AI employee")
}

// TestEmployeeScopesBind: an AI employee's credential (agent key or round
// token) holds scopes, and they bound what it sees and calls exactly as an
// operator key's do; the default (every tool scope) leaves its settings to
// decide.
func TestEmployeeScopesBind(t *testing.T) {
	r := testRegistry()
	withScopes := func(scopes ...string) *Subject {
		s := employee(identity.AgentSettings{})
		s.Principal.Scopes = scopes
		return s
	}
	require.Equal(t, []string{"agent_status", "old_status", "plain_read", "working_state_get"},
		visibleNames(r, withScopes(identity.ScopeToolsRead)))
	require.Equal(t, []string{"agent_status", "old_status", "plain_read", "plain_write", "tasks_create", "working_state_get"},
		visibleNames(r, withScopes(identity.ScopeToolsWrite)))
	require.Equal(t, visibleNames(r, employee(identity.AgentSettings{})), visibleNames(r, withScopes(identity.ScopeToolsAdmin)))
	require.Empty(t, visibleNames(r, withScopes()), "a credential without scopes calls nothing")

	create, _ := r.Get("create_agent")
	d := r.Decide(withScopes(identity.ScopeToolsRead, identity.ScopeToolsWrite), create, map[string]any{"name": "x"})
	require.False(t, d.Allowed, "a tools:read/tools:write round token cannot create agents")
	require.Equal(t, EventScopeDenied, d.Event)
	require.Contains(t, d.Reason, "needs the tools:admin scope")
}

func TestPermissionGates(t *testing.T) {
	r := testRegistry()
	create, _ := r.Get("create_agent")
	tasks, _ := r.Get("tasks_create")
	tests := []struct {
		name    string
		perms   *identity.Permissions
		tool    *Tool
		args    map[string]any
		allowed bool
	}{
		{"absent settings allow", nil, create, nil, true},
		{"unset flag allows", &identity.Permissions{}, create, nil, true},
		{"true allows", &identity.Permissions{CanCreateAgents: &yes}, create, nil, true},
		{"false refuses", &identity.Permissions{CanCreateAgents: &no}, create, nil, false},
		{"unreadable refuses", &identity.Permissions{Unreadable: true}, create, nil, false},
		{"tasks_create without a schedule stays allowed", &identity.Permissions{CanScheduleTasks: &no}, tasks, map[string]any{"title": "x"}, true},
		{"tasks_create with a schedule is refused", &identity.Permissions{CanScheduleTasks: &no}, tasks, map[string]any{"schedule": "daily"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := r.Decide(employee(identity.AgentSettings{Permissions: tc.perms}), tc.tool, tc.args)
			require.Equal(t, tc.allowed, d.Allowed)
			require.True(t, d.Visible(), "listed but refused")
			if !tc.allowed {
				require.Equal(t, int64(-32003), d.Code)
				require.Equal(t, "permission_denied", d.Event)
			}
		})
	}
	// Operators and external clients own no [permissions] section.
	require.True(t, r.Decide(&Subject{Principal: operator(identity.ScopeToolsAdmin)}, create, nil).Allowed)
}

func TestDeprecatedAlias(t *testing.T) {
	r := testRegistry()
	alias, _ := r.Get("old_status")
	require.Equal(t, "[deprecated → agent_status] ", r.ListedDescription(alias)[:len("[deprecated → agent_status] ")])
	require.Equal(t, "agent_status", r.Target(alias).Name)
	// Denying the new name denies the alias too.
	s := employee(identity.AgentSettings{Capabilities: identity.Capabilities{DeniedTools: []string{"agent_status"}}})
	require.False(t, r.Decide(s, alias, nil).Allowed)
	require.NoError(t, r.CheckAliases())
}

func TestMatch(t *testing.T) {
	tests := []struct {
		entry, tool, server string
		want                bool
	}{
		{"memory_search", "memory_search", "", true},
		{"memory_search", "memory_search_by_layer", "", false},
		{"memory_*", "memory_search", "", true},
		{"memory_*", "xmemory_search", "", false}, // anchored
		{"*", "anything", "", true},
		{"mcp__visor__*", "anything", "", true},
		{"mcp__visor__odoo_*", "odoo_crm_leads", "", true},
		{"mcp__visor__odoo_*", "memory_search", "", false},
		{"mcp__visor__memory_search", "memory_search", "", true},
		{"mcp__other__memory_search", "memory_search", "", false},
		{"mcp__other__*", "memory_search", "", false},
		{"mcp__acme__*", "memory_search", "acme", true},
		{"mcp__visor__*", "memory_search", "acme", false},
		{"mem*_search", "memory_search", "", false}, // '*' elsewhere is literal
		{"mem*_search", "mem*_search", "", true},
		{"**", "*x", "", true}, // trailing * of "**": prefix "*"
		{"**", "x", "", false},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, Match(tc.entry, tc.tool, tc.server), "%s vs %s (server %q)", tc.entry, tc.tool, tc.server)
	}
}
