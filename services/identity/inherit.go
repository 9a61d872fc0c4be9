package identity

import (
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Bound returns in as an AI employee created by creator (create_agent,
// spawn_agent) may have it: an employee never makes one with more
// authority than it holds. The new employee keeps every restriction of
// creator (Restrict), sits in creator's department (empty means creator's)
// and reports to creator unless in names a manager, with a budget no
// larger than creator's. Another department or a larger budget is
// fault.Forbidden, as are allow lists that share no entry.
func (creator Agent) Bound(in NewAgent) (NewAgent, error) {
	if in.Department == "" {
		in.Department = creator.Department
	}
	if in.Department != creator.Department {
		return in, fault.New(fault.Forbidden, "an AI employee creates employees only in its own department (%q), not %q", creator.Department, in.Department)
	}
	if in.ReportsTo == uuid.Nil {
		in.ReportsTo = creator.ID
	}
	if in.BudgetCents > creator.BudgetCents {
		return in, fault.New(fault.Forbidden, "budget_cents %d is more than your own budget (%d)", in.BudgetCents, creator.BudgetCents)
	}
	var err error
	in.Settings, err = creator.Settings.Restrict(in.Settings)
	return in, err
}

// Restrict returns child narrowed to what s allows: s's denied and scoped
// tools added, its allow list applied, each [permissions] flag false in s
// (all of them when s's are unreadable) false, and each capability,
// database source and computer-use domain kept only when s has it too.
// Child allow lists sharing no entry with s's are fault.Forbidden.
func (s AgentSettings) Restrict(child AgentSettings) (AgentSettings, error) {
	own, c := s.Capabilities, &child.Capabilities
	c.DeniedTools = union(c.DeniedTools, own.DeniedTools)
	c.ScopedTools = union(c.ScopedTools, own.ScopedTools)
	switch {
	case len(own.AllowedTools) == 0:
	case len(c.AllowedTools) == 0:
		c.AllowedTools = slices.Clone(own.AllowedTools)
	default:
		if c.AllowedTools = both(c.AllowedTools, own.AllowedTools); len(c.AllowedTools) == 0 {
			return child, fault.New(fault.Forbidden, "allowed_tools shares no entry with your own allowed_tools")
		}
	}
	for _, f := range []struct{ mine, theirs *bool }{{&c.OSNative, &own.OSNative}, {&c.Recording, &own.Recording},
		{&c.SystemOperator, &own.SystemOperator}, {&c.Codrive, &own.Codrive}, {&c.ComputerUse, &own.ComputerUse},
		{&c.ComputerUseConfig.Workspace, &own.ComputerUseConfig.Workspace}, {&child.Fork.Enabled, &s.Fork.Enabled},
		{&c.MCPManage, &own.MCPManage}, {&c.Workspace, &own.Workspace}} {
		*f.mine = *f.mine && *f.theirs
	}
	c.DBSources = both(c.DBSources, own.DBSources)
	c.WorkspaceConfig.AllowedHosts = both(c.WorkspaceConfig.AllowedHosts, own.WorkspaceConfig.AllowedHosts)
	c.ComputerUseConfig.AllowedDomains = both(c.ComputerUseConfig.AllowedDomains, own.ComputerUseConfig.AllowedDomains)
	if m := own.ComputerUseConfig.MaxActions; m > 0 && (c.ComputerUseConfig.MaxActions == 0 || c.ComputerUseConfig.MaxActions > m) {
		c.ComputerUseConfig.MaxActions = m
	}
	child.Permissions = s.Permissions.restrict(child.Permissions)
	return child, nil
}

// restrict returns child with every flag p refuses set false. A nil p
// (no [permissions] section) refuses nothing; an unreadable one refuses
// everything.
func (p *Permissions) restrict(child *Permissions) *Permissions {
	if p == nil {
		return child
	}
	out := &Permissions{}
	if child != nil {
		*out = *child
	}
	no := false
	for _, f := range []struct{ mine, theirs **bool }{{&out.CanCreateAgents, &p.CanCreateAgents},
		{&out.CanSendCrossAgent, &p.CanSendCrossAgent}, {&out.CanScheduleTasks, &p.CanScheduleTasks},
		{&out.CanModifyOwnSkills, &p.CanModifyOwnSkills}} {
		if p.Unreadable || (*f.theirs != nil && !**f.theirs) {
			*f.mine = &no
		}
	}
	return out
}

// union is a followed by the entries of b it lacks.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// both is the entries of a that b holds too, in a's order.
func both(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
