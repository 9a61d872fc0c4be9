package tools

import (
	"github.com/visorhq/visor/services/identity"
)

// Gate is the policy row (docs/tools.md, "The one policy") that hides a tool
// while it is off.
// A new family picks its row here; the policy needs no new code.
type Gate string

// The gates. Tenant gates read the tenant's settings; agent gates read the
// calling AI employee's settings, so a caller that is no AI employee never
// passes them (a fresh agent has none of them opted in).
const (
	GateNone              Gate = ""
	GateGoogleWorkspace   Gate = "google_workspace"   // tenant [integrations] google_workspace
	GateGitHub            Gate = "github"             // tenant [integrations] github
	GateResponsibilities  Gate = "responsibilities"   // tenant [responsibilities] enabled; never external callers
	GateOSNative          Gate = "os_native"          // agent [capabilities] os_native
	GateRecording         Gate = "recording"          // agent [capabilities] recording
	GateSystemOperator    Gate = "system_operator"    // agent [capabilities] system_operator
	GateCodrive           Gate = "codrive"            // agent [capabilities] codrive
	GateComputerUse       Gate = "computer_use"       // agent [capabilities] computer_use
	GateComputerWorkspace Gate = "computer_workspace" // computer_use and computer_use_config.workspace
	GateDBSources         Gate = "db_sources"         // agent [capabilities] db_sources non-empty
	GateFork              Gate = "fork"               // agent [fork] enabled
	GateMCPManage         Gate = "mcp_manage"         // agent [capabilities] mcp_manage
	GateWorkspace         Gate = "workspace"          // agent [capabilities] workspace
)

type gateRule struct {
	tenant func(identity.TenantSettings, identity.Principal) bool // nil for agent gates
	agent  func(identity.AgentSettings) bool                      // nil for tenant gates
	off    string                                                 // why the tool is unavailable
}

var gateRules = map[Gate]gateRule{
	GateGoogleWorkspace: {tenant: func(s identity.TenantSettings, _ identity.Principal) bool { return s.Integrations.GoogleWorkspace },
		off: "the Google Workspace integration is off for this tenant"},
	GateGitHub: {tenant: func(s identity.TenantSettings, _ identity.Principal) bool { return s.Integrations.GitHub },
		off: "the GitHub integration is off for this tenant"},
	GateResponsibilities: {tenant: func(s identity.TenantSettings, p identity.Principal) bool {
		return s.Responsibilities && p.Kind != identity.KindExternal
	}, off: "responsibilities are off for this tenant, or the caller is an external client"},
	GateOSNative:       {agent: func(s identity.AgentSettings) bool { return s.Capabilities.OSNative }, off: "needs [capabilities] os_native"},
	GateRecording:      {agent: func(s identity.AgentSettings) bool { return s.Capabilities.Recording }, off: "needs [capabilities] recording"},
	GateSystemOperator: {agent: func(s identity.AgentSettings) bool { return s.Capabilities.SystemOperator }, off: "needs [capabilities] system_operator"},
	GateCodrive:        {agent: func(s identity.AgentSettings) bool { return s.Capabilities.Codrive }, off: "needs [capabilities] codrive"},
	GateComputerUse:    {agent: func(s identity.AgentSettings) bool { return s.Capabilities.ComputerUse }, off: "needs [capabilities] computer_use"},
	GateComputerWorkspace: {agent: func(s identity.AgentSettings) bool {
		return s.Capabilities.ComputerUse && s.Capabilities.ComputerUseConfig.Workspace
	}, off: "needs [capabilities] computer_use and computer_use_config.workspace"},
	GateDBSources: {agent: func(s identity.AgentSettings) bool { return len(s.Capabilities.DBSources) > 0 }, off: "needs [capabilities] db_sources"},
	GateFork:      {agent: func(s identity.AgentSettings) bool { return s.Fork.Enabled }, off: "needs [fork] enabled"},
	GateMCPManage: {agent: func(s identity.AgentSettings) bool { return s.Capabilities.MCPManage }, off: "needs [capabilities] mcp_manage"},
	GateWorkspace: {agent: func(s identity.AgentSettings) bool { return s.Capabilities.Workspace }, off: "needs [capabilities] workspace"},
}

// Known reports whether g is a gate the policy knows.
func (g Gate) Known() bool { _, ok := gateRules[g]; return ok || g == GateNone }

// Permission is a [permissions] flag: a listed-but-refused gate.
type Permission string

// The [permissions] flags (docs/tools.md, "Listed but refused").
const (
	PermNone            Permission = ""
	PermCreateAgents    Permission = "can_create_agents"
	PermSendCrossAgent  Permission = "can_send_cross_agent"
	PermScheduleTasks   Permission = "can_schedule_tasks"
	PermModifyOwnSkills Permission = "can_modify_own_skills"
)

// flag returns the value of perm in p, nil when unset.
func (perm Permission) flag(p *identity.Permissions) *bool {
	switch perm {
	case PermCreateAgents:
		return p.CanCreateAgents
	case PermSendCrossAgent:
		return p.CanSendCrossAgent
	case PermScheduleTasks:
		return p.CanScheduleTasks
	case PermModifyOwnSkills:
		return p.CanModifyOwnSkills
	}
	return nil
}
