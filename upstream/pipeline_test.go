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

// TestEntryPointsThroughThePipeline: an AI employee searches, inspects and
// calls an upstream tool through the call pipeline; a denied upstream tool
// is refused as a hidden tool and audited; every row names the server and
// tool and keeps an argument digest, never the arguments; a removed server
// disappears from search and its tools are refused.
func TestEntryPointsThroughThePipeline(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	_, err := h.ids.UpdateAgent(ctx, h.a.ID, h.agentA.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.DeniedTools = []string{"mcp__fixture__note"}
		return nil
	})
	require.NoError(t, err)
	log := postgres.NewAuditLog(h.db, 1, slog.New(slog.DiscardHandler))
	require.NoError(t, log.Start(ctx))
	t.Cleanup(log.Stop)
	pipe := calls.New(h.reg, tools.NewSubjects(h.istore, tools.NoGrants{}, 0), log, nil)
	who := identity.Principal{TenantID: h.a.ID, Kind: identity.KindEmployee, AgentID: h.agentA.ID, Scopes: []string{identity.ScopeToolsAdmin}}
	call := func(name string, args any) calls.Answer {
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return pipe.Call(ctx, who, name, raw, nil)
	}

	a := call("mcp_tool_search", map[string]any{"query": "note echo"})
	require.NotNil(t, a.Result, a.ToolError)
	hits := a.Result.Structured.(map[string]any)["tools"]
	raw, _ := json.Marshal(hits)
	require.Contains(t, string(raw), "fixture:echo")
	require.NotContains(t, string(raw), "fixture:note", "search hides the denied tool")
	a = call("mcp_tool_inspect", map[string]any{"name": "fixture:echo"})
	require.NotNil(t, a.Result, a.ToolError)
	require.Contains(t, a.Result.Text, `"input_schema"`)

	a = call("mcp_tool_call", map[string]any{"name": "fixture:echo", "arguments": map[string]any{"text": "private-words"}})
	require.NotNil(t, a.Result, a.ToolError)
	require.Contains(t, string(a.Result.Content), "echo: private-words")
	require.Equal(t, audit.OutcomeOK, a.Entry.Outcome)
	ok := a.Entry

	a = call("mcp_tool_call", map[string]any{"name": "fixture:broken"})
	require.NotNil(t, a.Result)
	require.True(t, a.Result.IsError)
	require.Equal(t, audit.OutcomeToolError, a.Entry.Outcome)

	a = call("mcp_tool_call", map[string]any{"name": "fixture:note"})
	require.NotNil(t, a.Refusal)
	require.True(t, a.Refusal.Hidden, "refused as a hidden tool is")
	require.Equal(t, tools.CodeRefused, a.Refusal.Code)
	refused := a.Entry

	rows, err := log.List(ctx, h.a.ID, audit.Filter{Limit: 100, Tool: "mcp_tool_call"})
	require.NoError(t, err)
	byID := map[string]audit.Entry{}
	for _, r := range rows {
		byID[r.ID.String()] = r
		require.NotContains(t, r.Change+r.Message, "private-words", "argument values never reach the audit trail")
	}
	row, found := byID[ok.ID.String()]
	require.True(t, found, "%d rows: %+v", len(rows), rows)
	require.Equal(t, audit.OutcomeOK, row.Outcome)
	require.NotEmpty(t, row.ArgsDigest)
	var note map[string]any
	require.NoError(t, json.Unmarshal([]byte(row.Change), &note))
	require.Equal(t, "fixture", note["server"])
	require.Equal(t, "echo", note["upstream_tool"])
	require.Positive(t, row.Latency, "the row keeps the call's duration")
	row = byID[refused.ID.String()]
	require.Equal(t, audit.OutcomeRefused, row.Outcome)
	require.Equal(t, tools.EventCapabilityDenied, row.Event)
	require.Contains(t, row.Message, `denied_tools entry "mcp__fixture__note"`)

	_, err = h.svc.Remove(ctx, h.a.ID, "fixture")
	require.NoError(t, err)
	a = call("mcp_tool_search", map[string]any{})
	require.Equal(t, 0, a.Result.Structured.(map[string]any)["total"])
	a = call("mcp_tool_call", map[string]any{"name": "fixture:echo", "arguments": map[string]any{"text": "x"}})
	require.NotNil(t, a.Refusal)
	require.Equal(t, tools.EventUnknownTool, a.Refusal.Event)
}
