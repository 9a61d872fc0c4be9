package knowledge_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/tools"
)

// TestToolsUnderThePolicy: the family's tools are declared with the
// names the policy already knows; those acting for the caller's own
// process are hidden from and refused to every other caller; the two on
// the default external whitelist are what an OAuth client sees.
func TestToolsUnderThePolicy(t *testing.T) {
	reg := tools.NewRegistry()
	(*knowledge.Service)(nil).Register(reg)
	var names []string
	for _, tl := range reg.All() {
		names = append(names, tl.Name)
	}
	require.ElementsMatch(t, []string{"memory_store", "memory_search", "memory_search_by_layer", "user_profile_record", "decision_resolve",
		"wiki_write", "wiki_read", "shared_wiki_delete", "working_state_handoff", "working_state_get", "belief_record", "belief_settle",
		"belief_stats"}, names)
	require.Empty(t, tools.CheckBudget(reg, nil), "200-byte descriptions")

	tenant := identity.Tenant{ID: uuid.New()}
	op := &tools.Subject{Tenant: tenant, Principal: identity.Principal{TenantID: tenant.ID, Kind: identity.KindOperator, Scopes: identity.AllScopes}}
	emp := &tools.Subject{Tenant: tenant, Agent: &identity.Agent{ID: uuid.New()}, Principal: identity.Principal{TenantID: tenant.ID,
		Kind: identity.KindEmployee, AgentID: uuid.New(), Scopes: []string{identity.ScopeToolsWrite}}}
	ext := &tools.Subject{Tenant: tenant, Principal: identity.Principal{TenantID: tenant.ID, Kind: identity.KindExternal, ClientID: "c",
		Scopes: []string{identity.ScopeToolsRead}}}
	own := []string{"memory_search_by_layer", "shared_wiki_delete", "working_state_handoff", "working_state_get", "belief_record", "belief_settle"}
	for _, tl := range reg.All() {
		require.True(t, reg.Decide(emp, tl, nil).Allowed, "%s for an employee", tl.Name)
		if contains(own, tl.Name) {
			require.False(t, reg.Decide(op, tl, nil).Visible(), "%s is hidden from an operator", tl.Name)
			require.False(t, reg.Decide(op, tl, nil).Allowed, "%s is refused to an operator", tl.Name)
		} else {
			require.True(t, reg.Decide(op, tl, nil).Allowed, "%s for an operator", tl.Name)
		}
	}
	var seen []string
	for _, tl := range reg.Visible(ext) {
		seen = append(seen, tl.Name)
	}
	require.ElementsMatch(t, []string{"memory_search", "wiki_read"}, seen, "the default external whitelist")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
