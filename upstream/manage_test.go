package upstream_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
)

// TestManageTool: an AI employee whose settings hold mcp_manage adds a
// server, sets a header secret (named, never shown, not in the audit
// row), lists, disables, enables, refreshes and removes it through
// mcp_manage; an employee without the setting does not see the tool and
// is refused as for a hidden tool.
func TestManageTool(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	log := postgres.NewAuditLog(h.db, 1, slog.New(slog.DiscardHandler))
	require.NoError(t, log.Start(ctx))
	t.Cleanup(log.Stop)
	pipe := calls.New(h.reg, tools.NewSubjects(h.istore, tools.NoGrants{}, 0), log, nil)
	who := identity.Principal{TenantID: h.a.ID, Kind: identity.KindEmployee, AgentID: h.agentA.ID, Scopes: []string{identity.ScopeToolsAdmin}}
	manage := func(args map[string]any) calls.Answer {
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return pipe.Call(ctx, who, "mcp_manage", raw, nil)
	}

	a := manage(map[string]any{"action": "list"})
	require.NotNil(t, a.Refusal, "without [capabilities] mcp_manage")
	require.True(t, a.Refusal.Hidden)
	require.Contains(t, a.Refusal.Reason, "needs [capabilities] mcp_manage")

	_, err := h.ids.UpdateAgent(ctx, h.a.ID, h.agentA.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.MCPManage = true
		return nil
	})
	require.NoError(t, err)
	a = manage(map[string]any{"action": "add", "server": "fixture", "url": f.http.URL + "/mcp"})
	require.NotNil(t, a.Result, a.ToolError)
	require.Contains(t, a.Result.Text, "add: fixture (enabled true, 7 tools)")
	a = manage(map[string]any{"action": "env_set", "server": "fixture", "variable": "X-Api-Key", "value": "k-123-secret"})
	require.NotNil(t, a.Result, a.ToolError)
	a = manage(map[string]any{"action": "env_list", "server": "fixture"})
	require.NotNil(t, a.Result, a.ToolError)
	raw, _ := json.Marshal(a.Result.Structured)
	require.JSONEq(t, `{"server":"fixture","secrets":[{"kind":"header","name":"X-Api-Key","set":true}]}`, string(raw))
	a = manage(map[string]any{"action": "refresh", "server": "fixture"})
	require.NotNil(t, a.Result, a.ToolError)
	require.True(t, f.seen("X-Api-Key", "k-123-secret"), "the header reaches the server")
	a = manage(map[string]any{"action": "inspect", "server": "fixture"})
	raw, _ = json.Marshal(a.Result.Structured)
	require.NotContains(t, string(raw), "k-123-secret")
	require.Contains(t, string(raw), `"tool_count":7`)

	a = manage(map[string]any{"action": "disable", "server": "fixture"})
	require.Contains(t, a.Result.Text, "enabled false")
	a = manage(map[string]any{"action": "enable", "server": "fixture"})
	require.Contains(t, a.Result.Text, "enabled true")
	a = manage(map[string]any{"action": "env_unset", "server": "fixture", "variable": "X-Api-Key"})
	require.NotNil(t, a.Result, a.ToolError)
	a = manage(map[string]any{"action": "add", "server": "meta", "url": "https://169.254.169.254/mcp"})
	require.Contains(t, a.ToolError, "private or special address")
	a = manage(map[string]any{"action": "explode", "server": "fixture"})
	require.Contains(t, a.ToolError, "action must be one of")
	a = manage(map[string]any{"action": "remove", "server": "fixture"})
	require.NotNil(t, a.Result, a.ToolError)
	a = manage(map[string]any{"action": "list"})
	raw, _ = json.Marshal(a.Result.Structured)
	require.JSONEq(t, `{"servers":[]}`, string(raw))

	rows, err := log.List(ctx, h.a.ID, audit.Filter{Limit: 100, Tool: "mcp_manage"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rows), 12)
	for _, r := range rows {
		require.NotContains(t, r.Change+r.Message, "k-123-secret", "a secret value never reaches the audit trail")
	}
}
