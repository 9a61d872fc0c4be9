package agents

import (
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func ptr[T any](v T) *T { return &v }

// Register declares the agents family in reg.
func (s *Service) Register(reg *tools.Registry) {
	name := tools.Param{Name: "name", Type: "string", Required: true, Description: "The AI employee's name (1-63 lower-case letters, digits, - or _)."}
	reg.Register(tools.Tool{
		Name: "create_agent", Family: "agents", Scope: identity.ScopeToolsAdmin, Permission: tools.PermCreateAgents,
		Description: "Create an AI employee. Refused while its name is reserved (a removed employee's) or when [permissions] can_create_agents is false.",
		Params: []tools.Param{name,
			{Name: "department", Type: "string", Description: "Department, at most 100 bytes."},
			{Name: "role", Type: "string", Description: "Role, at most 100 bytes."},
			{Name: "reports_to", Type: "string", Description: "Name of the AI employee it reports to."},
			{Name: "budget_cents", Type: "integer", Description: "Spending budget in cents, not negative."}},
		Annotations: tools.Annotations{Title: "Create AI employee", Destructive: ptr(false), OpenWorld: ptr(false)},
		Handler:     s.create,
	})
	reg.Register(tools.Tool{
		Name: "agent_update", Family: "agents", Scope: identity.ScopeToolsAdmin,
		Description: "Change an AI employee's department, role, reports_to, budget or db_sources. Refused for your own department, reports_to, db_sources, budget_cents and role.",
		Params: []tools.Param{name,
			{Name: "department", Type: "string", Description: "New department."},
			{Name: "role", Type: "string", Description: "New role."},
			{Name: "reports_to", Type: "string", Description: "Name of the new manager; empty string for none."},
			{Name: "budget_cents", Type: "integer", Description: "New budget in cents."},
			{Name: "db_sources", Type: "array", Description: "Replaces the database sources (names) the employee may query."},
			{Name: "db_sources_add", Type: "array", Description: "Database source names to add."},
			{Name: "db_sources_remove", Type: "array", Description: "Database source names to remove."}},
		Annotations: tools.Annotations{Title: "Update AI employee", Destructive: ptr(false), Idempotent: true, OpenWorld: ptr(false)},
		Handler:     s.update,
	})
	reg.Register(tools.Tool{
		Name: "agent_remove", Family: "agents", Scope: identity.ScopeToolsAdmin,
		Description: "Move an AI employee to the trash. An administrator can restore it; its name stays reserved for create_agent.",
		Params:      []tools.Param{name},
		Annotations: tools.Annotations{Title: "Remove AI employee", Destructive: ptr(true), OpenWorld: ptr(false)},
		Handler:     s.remove,
	})
	reg.Register(tools.Tool{
		Name: "agent_status", Family: "agents", Scope: identity.ScopeToolsRead,
		Description: "Show AI employees' status: department, role, manager, budget and whether each is active or in the trash. Without a name, the team by name a page at a time.",
		Params: []tools.Param{
			{Name: "name", Type: "string", Description: "One employee's name; omit for the whole team."},
			{Name: "limit", Type: "integer", Description: "Without a name: at most this many employees, 1-100 (default 50)."},
			{Name: "cursor", Type: "string", Description: "next_cursor of the previous page."}},
		Annotations: tools.Annotations{Title: "AI employee status", ReadOnly: true, OpenWorld: ptr(false)},
		Handler:     s.status,
	})
}
