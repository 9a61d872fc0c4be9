package identity

// TenantSettings are a tenant's own switches: integrations, opt-in
// features, the external-client tool list and the delegation policy.
// The zero value is a fresh tenant: no integrations, no opt-in features.
type TenantSettings struct {
	// ServerName is the name the tenant gives Visor in its clients' MCP
	// configuration; "mcp__<ServerName>__*" in an allow or deny list names
	// every Visor tool. Empty means "visor".
	ServerName   string       `json:"server_name,omitempty"`
	Integrations Integrations `json:"integrations"`
	// ExternalWhitelist lists the tools an external OAuth client may see
	// without holding a scope that grants more. Nil means the documented
	// default (see services/tools).
	ExternalWhitelist []string `json:"external_whitelist,omitempty"`
	// Responsibilities switches the responsibility_* tools on.
	Responsibilities bool `json:"responsibilities"`
	// Odoo holds per-module feature switches; Odoo tools of a switched-off
	// module stay listed and are refused per call.
	Odoo OdooFeatures `json:"odoo"`
	// Delegation is the policy for record relationship checks.
	Delegation DelegationPolicy `json:"delegation"`
	// ComputerUseWorkspaces enables computer_workspace_* calls tenant-wide.
	ComputerUseWorkspaces bool `json:"computer_use_workspaces"`
	// SandboxImage is the image execute_program runs scripts in; it must be
	// on the platform's allow-list. Empty means the platform's default.
	SandboxImage string `json:"sandbox_image,omitempty"`
	// MCPStdioImages are the images the tenant's stdio MCP servers may
	// run. An image must be here and on the stdio worker's own list
	// (VISOR_MCP_STDIO_IMAGES); empty allows no stdio server.
	MCPStdioImages []string `json:"mcp_stdio_images,omitempty"`
	// ScriptWhenUnavailable is "" (refuse) or "run_unsandboxed".
	ScriptWhenUnavailable string `json:"script_when_unavailable,omitempty"`
	// SharedMemory lets an AI employee search the memories of the
	// employees the delegation policy relates it to (default off: each
	// employee reads only its own).
	SharedMemory bool `json:"shared_memory,omitempty"`
	// TimeZone is the IANA time zone routines run in ("Europe/Paris");
	// empty means UTC.
	TimeZone string `json:"time_zone,omitempty"`
}

// Integrations are tenant-wide third-party connections.
type Integrations struct {
	GoogleWorkspace bool `json:"google_workspace"`
	GitHub          bool `json:"github"`
}

// OdooFeatures switches Odoo modules. Project and HR are off by default.
type OdooFeatures struct {
	CRM      bool `json:"crm"`
	Sales    bool `json:"sales"`
	Invoices bool `json:"invoices"`
	Project  bool `json:"project"`
	HR       bool `json:"hr"`
}

// DelegationPolicy says which AI employees may act on each other's records.
type DelegationPolicy struct {
	// SameDepartment relates two agents of one department (default on when
	// the policy is absent; see AllowSameDepartment).
	SameDepartment *bool `json:"same_department,omitempty"`
	// ReportsTo relates an agent to those it reports to, and to those who
	// report to it, at any depth (default on).
	ReportsTo *bool `json:"reports_to,omitempty"`
	// Pairs are extra related pairs of agent names, in either order.
	Pairs [][2]string `json:"pairs,omitempty"`
}

// AllowSameDepartment reports whether same-department delegation is on.
func (p DelegationPolicy) AllowSameDepartment() bool {
	return p.SameDepartment == nil || *p.SameDepartment
}

// AllowReportsTo reports whether reports_to delegation is on.
func (p DelegationPolicy) AllowReportsTo() bool { return p.ReportsTo == nil || *p.ReportsTo }

// AgentSettings are an agent's own switches: capabilities, tool lists and
// [permissions] flags.
// The zero value is a fresh agent: nothing opted in.
type AgentSettings struct {
	Capabilities Capabilities `json:"capabilities"`
	// Permissions is nil when the agent has no [permissions] section
	// (everything allowed). See Permissions for unreadable settings.
	Permissions *Permissions `json:"permissions,omitempty"`
	Fork        Fork         `json:"fork"`
}

// Capabilities is the [capabilities] section: what the agent may see.
type Capabilities struct {
	AllowedTools      []string          `json:"allowed_tools,omitempty"`
	DeniedTools       []string          `json:"denied_tools,omitempty"`
	OSNative          bool              `json:"os_native"`
	Recording         bool              `json:"recording"`
	SystemOperator    bool              `json:"system_operator"`
	Codrive           bool              `json:"codrive"`
	ComputerUse       bool              `json:"computer_use"`
	ComputerUseConfig ComputerUseConfig `json:"computer_use_config"`
	DBSources         []string          `json:"db_sources,omitempty"`
	// MCPManage lets the agent manage the tenant's upstream MCP servers
	// (mcp_manage).
	MCPManage bool `json:"mcp_manage,omitempty"`
	// Workspace lists the workspace tools (files, commands, tasks,
	// Skills, artifacts); WorkspaceConfig says where its container may
	// connect.
	Workspace       bool            `json:"workspace"`
	WorkspaceConfig WorkspaceConfig `json:"workspace_config"`
	// ScopedTools stay hidden until a live grant names them for this agent.
	ScopedTools []string `json:"scoped_tools,omitempty"`
}

// ComputerUseConfig is [capabilities.computer_use_config].
type ComputerUseConfig struct {
	Workspace      bool     `json:"workspace"`
	AllowedDomains []string `json:"allowed_domains,omitempty"`
	MaxActions     int      `json:"max_actions,omitempty"`
}

// WorkspaceConfig is [capabilities.workspace_config].
type WorkspaceConfig struct {
	// AllowedHosts are the host names the workspace container may reach
	// over HTTPS (port 443, through the worker's egress proxy); empty
	// means no network at all.
	AllowedHosts []string `json:"allowed_hosts,omitempty"`
}

// Fork is the [fork] section.
type Fork struct {
	Enabled bool `json:"enabled"`
}

// Permissions is the [permissions] section: listed-but-refused flags.
// A flag that is nil is allowed; only an explicit false refuses.
//
// Unreadable is set by storage when the agent has a permissions document
// that cannot be parsed: every permission-gated tool is then refused.
type Permissions struct {
	CanCreateAgents    *bool `json:"can_create_agents,omitempty"`
	CanSendCrossAgent  *bool `json:"can_send_cross_agent,omitempty"`
	CanScheduleTasks   *bool `json:"can_schedule_tasks,omitempty"`
	CanModifyOwnSkills *bool `json:"can_modify_own_skills,omitempty"`
	Unreadable         bool  `json:"-"`
}
