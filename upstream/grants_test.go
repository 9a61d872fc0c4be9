package upstream_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
)

// TestCapabilityRequestForAnUpstreamTool: a scoped upstream tool is hidden
// from search and refused until granted; the employee asks for it with
// capability_request (told it will appear in mcp_tool_search, not in
// tools/list), an operator approves, and the tool is then found and
// called. Revoking the grant hides it again.
func TestCapabilityRequestForAnUpstreamTool(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	_, err := h.ids.UpdateAgent(ctx, h.a.ID, h.agentA.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.ScopedTools = []string{"mcp__fixture__weather"}
		return nil
	})
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	gs := grants.NewService(postgres.NewGrantStore(h.db), h.istore, changes.Discard{}, tools.Match, log)
	gs.Register(h.reg)
	al := postgres.NewAuditLog(h.db, 1, log)
	require.NoError(t, al.Start(ctx))
	t.Cleanup(al.Stop)
	pipe := calls.New(h.reg, tools.NewSubjects(h.istore, gs, 0), al, nil)
	who := identity.Principal{TenantID: h.a.ID, Kind: identity.KindEmployee, AgentID: h.agentA.ID, Scopes: identity.DefaultEmployeeScopes}
	call := func(name string, args any) calls.Answer {
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return pipe.Call(ctx, who, name, raw, nil)
	}
	found := func() bool {
		a := call("mcp_tool_search", map[string]any{"query": "weather"})
		require.NotNil(t, a.Result, a.ToolError)
		raw, _ := json.Marshal(a.Result.Structured)
		return contains(string(raw), "fixture:weather")
	}
	weather := map[string]any{"name": "fixture:weather", "arguments": map[string]any{"city": "Tokyo"}}

	require.False(t, found(), "a scoped upstream tool is hidden until granted")
	a := call("mcp_tool_call", weather)
	require.NotNil(t, a.Refusal)
	require.Contains(t, a.Refusal.Reason, "capability_request")

	a = call("capability_request", map[string]any{"tool": "mcp__fixture__weather", "reason": "the forecast for the trip"})
	require.NotNil(t, a.Result, a.ToolError)
	require.Contains(t, a.Result.Text, "mcp_tool_search", "an upstream tool appears in search")
	require.NotContains(t, a.Result.Text, "tools/list", "an upstream tool never appears in tools/list")
	id := a.Result.Structured.(map[string]any)["request_id"].(uuid.UUID)
	_, g, err := gs.Approve(ctx, h.a.ID, id, grants.Approval{By: "op"})
	require.NoError(t, err)

	require.True(t, found(), "granted, the tool is found")
	a = call("mcp_tool_call", weather)
	require.NotNil(t, a.Result, a.ToolError)
	require.Contains(t, string(a.Result.Content), "晴れ")

	_, err = gs.Revoke(ctx, h.a.ID, g.ID, "op")
	require.NoError(t, err)
	require.False(t, found(), "revoked, it is hidden again")
	a = call("mcp_tool_call", weather)
	require.NotNil(t, a.Refusal)
}
