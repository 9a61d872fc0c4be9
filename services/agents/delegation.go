package agents

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Delegation is the one place that decides whether one AI employee may act
// on another's records (docs/tools.md, "Record relationship rules"): the same
// department, a reports_to chain above or below at any depth, or a
// whitelisted pair of names, each switchable in TenantSettings.Delegation.
// Every family with a record relationship check asks it.
type Delegation struct {
	dir Directory
}

// NewDelegation returns the delegation policy over dir.
func NewDelegation(dir Directory) *Delegation { return &Delegation{dir: dir} }

// Related reports whether caller may act on target's records under policy.
// An agent is always related to itself.
func (d *Delegation) Related(ctx context.Context, policy identity.DelegationPolicy, tenantID, caller, target uuid.UUID) (bool, error) {
	if caller == target {
		return true, nil
	}
	all, err := d.dir.ListAgents(ctx, tenantID)
	if err != nil {
		return false, err
	}
	return Related(policy, all, caller, target), nil
}

// Related is the policy over an already loaded org chart.
func Related(policy identity.DelegationPolicy, all []identity.Agent, caller, target uuid.UUID) bool {
	if caller == target {
		return true
	}
	byID := make(map[uuid.UUID]identity.Agent, len(all))
	for _, a := range all {
		byID[a.ID] = a
	}
	c, ok1 := byID[caller]
	t, ok2 := byID[target]
	if !ok1 || !ok2 {
		return false
	}
	if policy.AllowSameDepartment() && c.Department != "" && c.Department == t.Department {
		return true
	}
	if policy.AllowReportsTo() && (reportsUpTo(byID, c, t.ID) || reportsUpTo(byID, t, c.ID)) {
		return true
	}
	return slices.ContainsFunc(policy.Pairs, func(p [2]string) bool {
		return (p[0] == c.Name && p[1] == t.Name) || (p[0] == t.Name && p[1] == c.Name)
	})
}

// reportsUpTo reports whether a reports to boss directly or through managers.
func reportsUpTo(byID map[uuid.UUID]identity.Agent, a identity.Agent, boss uuid.UUID) bool {
	seen := map[uuid.UUID]bool{}
	for next := a.ReportsTo; next != uuid.Nil && !seen[next]; next = byID[next].ReportsTo {
		if next == boss {
			return true
		}
		seen[next] = true
	}
	return false
}
