package tools

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestAnEmployeeMadeByAnotherMayCallNothingItsCreatorMayNot is the
// authority rule of create_agent and spawn_agent through the one policy:
// whatever the creator's settings, and whatever the new employee asked
// for, a tool the creator may not call (scoped ones it holds a grant for
// included: the new employee holds no grant) is not callable by the new
// employee either.
func TestAnEmployeeMadeByAnotherMayCallNothingItsCreatorMayNot(t *testing.T) {
	r := testRegistry()
	everything := identity.AgentSettings{
		Capabilities: identity.Capabilities{OSNative: true, Recording: true, SystemOperator: true, Codrive: true, ComputerUse: true,
			ComputerUseConfig: identity.ComputerUseConfig{Workspace: true}, DBSources: []string{"crm"}},
		Fork: identity.Fork{Enabled: true},
	}
	creators := map[string]identity.AgentSettings{
		"fresh":        {},
		"denies":       {Capabilities: identity.Capabilities{DeniedTools: []string{"plain_write", "mcp__visor__create_agent"}}},
		"allow list":   {Capabilities: identity.Capabilities{AllowedTools: []string{"plain_*", "tasks_create"}}},
		"scoped":       {Capabilities: identity.Capabilities{ScopedTools: []string{"plain_read", "admin_only"}}},
		"flags":        {Permissions: &identity.Permissions{CanCreateAgents: &no, CanScheduleTasks: &no}},
		"unreadable":   {Permissions: &identity.Permissions{Unreadable: true}},
		"computer":     {Capabilities: identity.Capabilities{ComputerUse: true}},
		"db and fork":  {Capabilities: identity.Capabilities{DBSources: []string{"crm"}}, Fork: identity.Fork{Enabled: true}},
		"opts, denies": {Capabilities: identity.Capabilities{OSNative: true, DeniedTools: []string{"os_click"}}},
	}
	asked := map[string]identity.AgentSettings{
		"nothing":    {},
		"everything": everything,
		"own lists":  {Capabilities: identity.Capabilities{AllowedTools: []string{"plain_*", "tasks_create", "os_click"}}, Permissions: &identity.Permissions{CanCreateAgents: &yes}},
	}
	argSets := []map[string]any{nil, {"schedule": "@daily"}}
	for cname, cs := range creators {
		for aname, as := range asked {
			child, err := cs.Restrict(as)
			if err != nil {
				continue // refused outright: nothing is created
			}
			creator := employee(cs)
			creator.Grants = []string{"plain_read", "admin_only"}
			made := employee(child)
			for _, tl := range r.All() {
				for _, args := range argSets {
					if !r.Decide(creator, tl, args).Allowed {
						require.False(t, r.Decide(made, tl, args).Allowed,
							"creator %q, asked %q: %s (args %v) is refused to the creator but allowed to the employee it made", cname, aname, tl.Name, args)
					}
				}
			}
		}
	}
}

// TestAnEmployeeIsBoundedToItsDepartmentAndBudget: the rest of
// Agent.Bound.
func TestAnEmployeeIsBoundedToItsDepartmentAndBudget(t *testing.T) {
	lead := identity.Agent{ID: agentID, Department: "eng", BudgetCents: 100}
	in, err := lead.Bound(identity.NewAgent{Name: "x"})
	require.NoError(t, err)
	require.Equal(t, "eng", in.Department)
	require.Equal(t, agentID, in.ReportsTo)
	_, err = lead.Bound(identity.NewAgent{Name: "x", Department: "sales"})
	require.Error(t, err)
	_, err = lead.Bound(identity.NewAgent{Name: "x", BudgetCents: 101})
	require.Error(t, err)
	_, err = lead.Bound(identity.NewAgent{Name: "x", Settings: identity.AgentSettings{Capabilities: identity.Capabilities{AllowedTools: []string{"a"}}}})
	require.NoError(t, err, "a creator without an allow list bounds nothing there")
}
