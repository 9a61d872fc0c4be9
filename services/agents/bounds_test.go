package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestAnEmployeeCreatesNoMoreAuthorityThanItHolds: create_agent called by
// a restricted employee makes an employee with at least its restrictions,
// in its department, under itself or someone it is related to, with no
// larger budget. Operators are not bounded.
func TestAnEmployeeCreatesNoMoreAuthorityThanItHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	ids := identity.NewService(store, changes.Discard{}, slog.New(slog.DiscardHandler))
	svc := agents.NewService(ids, store, postgres.NewReservationStore(db))
	reg := tools.NewRegistry()
	svc.Register(reg)
	create, _ := reg.Get("create_agent")

	tn, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	no := false
	lead, err := ids.CreateAgent(ctx, tn.ID, identity.NewAgent{Name: "lead", Department: "eng", BudgetCents: 500, Settings: identity.AgentSettings{
		Capabilities: identity.Capabilities{DeniedTools: []string{"memory_write"}, AllowedTools: []string{"tasks_*", "create_agent"},
			ScopedTools: []string{"execute_program"}, ComputerUse: true,
			ComputerUseConfig: identity.ComputerUseConfig{AllowedDomains: []string{"example.com"}, MaxActions: 20}},
		Permissions: &identity.Permissions{CanScheduleTasks: &no},
	}})
	require.NoError(t, err)
	_, err = ids.CreateAgent(ctx, tn.ID, identity.NewAgent{Name: "stranger", Department: "sales"})
	require.NoError(t, err)

	asLead := &tools.Subject{Principal: identity.Principal{TenantID: tn.ID, Kind: identity.KindEmployee, AgentID: lead.ID,
		Scopes: identity.DefaultEmployeeScopes}, Tenant: tn, Agent: &lead}
	call := func(sub *tools.Subject, args map[string]any) error {
		_, err := create.Handler(ctx, tools.Call{Subject: sub, Name: "create_agent", Args: args})
		return err
	}
	for _, tc := range []struct {
		args  map[string]any
		event string
	}{
		{map[string]any{"name": "x1", "department": "finance"}, tools.EventAgentAuthorityRefused},
		{map[string]any{"name": "x2", "budget_cents": json.Number("501")}, tools.EventAgentAuthorityRefused},
		{map[string]any{"name": "x3", "reports_to": "stranger"}, tools.EventRelationshipRefused},
	} {
		err := call(asLead, tc.args)
		var r *tools.RefusalError
		require.True(t, errors.As(err, &r), "%v: want a refusal, got %v", tc.args, err)
		require.Equal(t, tc.event, r.Decision.Event, "%v", tc.args)
		_, err = store.AgentByName(ctx, tn.ID, tc.args["name"].(string))
		require.Error(t, err, "a refused create_agent creates nobody")
	}

	require.NoError(t, call(asLead, map[string]any{"name": "junior", "budget_cents": json.Number("100")}))
	junior, err := store.AgentByName(ctx, tn.ID, "junior")
	require.NoError(t, err)
	require.Equal(t, "eng", junior.Department, "the creator's department")
	require.Equal(t, lead.ID, junior.ReportsTo, "it reports to its creator")
	c := junior.Settings.Capabilities
	require.Equal(t, []string{"memory_write"}, c.DeniedTools)
	require.Equal(t, []string{"tasks_*", "create_agent"}, c.AllowedTools)
	require.Equal(t, []string{"execute_program"}, c.ScopedTools)
	require.False(t, c.ComputerUse, "a capability is never switched on by creating")
	require.NotNil(t, junior.Settings.Permissions)
	require.False(t, *junior.Settings.Permissions.CanScheduleTasks)

	update, _ := reg.Get("agent_update")
	for _, args := range []map[string]any{
		{"name": "junior", "budget_cents": json.Number("501")},
		{"name": "junior", "db_sources_add": []any{"payroll"}},
	} {
		_, err := update.Handler(ctx, tools.Call{Subject: asLead, Name: "agent_update", Args: args})
		var r *tools.RefusalError
		require.True(t, errors.As(err, &r), "%v: want a refusal, got %v", args, err)
		require.Equal(t, tools.EventAgentAuthorityRefused, r.Decision.Event)
	}
	_, err = update.Handler(ctx, tools.Call{Subject: asLead, Name: "agent_update", Args: map[string]any{"name": "junior", "budget_cents": json.Number("400")}})
	require.NoError(t, err, "within its own budget")

	op := &tools.Subject{Principal: identity.Principal{TenantID: tn.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: tn}
	require.NoError(t, call(op, map[string]any{"name": "free", "department": "finance", "budget_cents": json.Number("10000")}), "operators are not bounded")
	free, err := store.AgentByName(ctx, tn.ID, "free")
	require.NoError(t, err)
	require.Empty(t, free.Settings.Capabilities.DeniedTools)
}
