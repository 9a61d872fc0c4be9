package upstream_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/labstack/echo/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/web/mcp"
)

// bearer adds a Visor key to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestUpstreamToolsOverMCP is the upstream family as an AI employee's
// runtime reaches it: the official Go SDK client with the employee's own
// key, Visor's MCP endpoint behind the auth middleware, and a Go SDK
// server upstream. tools/list holds the entry points and no upstream
// tool; search → inspect → call works; the call's audit row is durable as
// pending before the upstream is called; a denied upstream tool is refused
// and audited; the employee's key never reaches the upstream in any
// header; a removed server is gone from search and refused.
func TestUpstreamToolsOverMCP(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	var pendingSeen atomic.Int64
	pendingSeen.Store(-1)
	f.srv.AddTool(&sdkTool{Name: "witness", Description: "Counts the pending audit rows of its call.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var n int64
			err := h.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND tool = 'mcp_tool_call' AND outcome = $2`,
				h.a.ID, audit.OutcomePending).Scan(&n)
			if err == nil {
				pendingSeen.Store(n)
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "seen"}}}, nil
		})
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	_, err := h.ids.UpdateAgent(ctx, h.a.ID, h.agentA.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.DeniedTools = []string{"mcp__fixture__note"}
		return nil
	})
	require.NoError(t, err)
	_, key, err := h.ids.CreateKey(ctx, h.a.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: h.agentA.ID, Name: "ada"})
	require.NoError(t, err)

	logger := slog.New(slog.DiscardHandler)
	al := postgres.NewAuditLog(h.db, 1, logger)
	require.NoError(t, al.Start(ctx))
	t.Cleanup(al.Stop)
	resolver := auth.NewResolver(h.istore, h.istore, auth.NewURLs("http://visor.test"), logger)
	ep := mcp.New(h.reg, tools.NewSubjects(h.istore, tools.NoGrants{}, 0), al, live.NoStreams{}, mcp.Options{})
	e := echo.New()
	ep.Register(e, resolver.Middleware(""))
	visor := httptest.NewServer(e)
	t.Cleanup(visor.Close)

	c := sdk.NewClient(&sdk.Implementation{Name: "runtime", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: visor.URL + "/t/acme/mcp",
		HTTPClient: &http.Client{Transport: bearer{token: key, next: http.DefaultTransport}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, tl := range list.Tools {
		listed[tl.Name] = true
	}
	for _, entry := range []string{"mcp_tool_search", "mcp_tool_inspect", "mcp_tool_call"} {
		require.True(t, listed[entry], "%s is listed", entry)
	}
	for name := range listed {
		require.False(t, strings.Contains(name, "echo") || strings.HasPrefix(name, "mcp__"), "upstream tool %s merged into tools/list", name)
	}

	call := func(name string, args map[string]any) (*sdk.CallToolResult, error) {
		return cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	}
	res, err := call("mcp_tool_search", map[string]any{"query": "echo note"})
	require.NoError(t, err)
	raw, _ := json.Marshal(res.StructuredContent)
	require.Contains(t, string(raw), "fixture:echo")
	require.NotContains(t, string(raw), "fixture:note", "search shows only what the caller may call")
	res, err = call("mcp_tool_inspect", map[string]any{"name": "fixture:echo"})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, `"input_schema"`)
	res, err = call("mcp_tool_call", map[string]any{"name": "fixture:echo", "arguments": map[string]any{"text": "over mcp"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, res.Content[0].(*sdk.TextContent).Text, "echo: over mcp")

	res, err = call("mcp_tool_call", map[string]any{"name": "fixture:witness"})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.EqualValues(t, 1, pendingSeen.Load(), "the call's row is durable as pending before the upstream is called")

	_, err = call("mcp_tool_call", map[string]any{"name": "fixture:note"})
	require.Error(t, err, "a denied upstream tool is refused as a hidden tool")
	require.Contains(t, err.Error(), `denied_tools entry "mcp__fixture__note"`)
	rows, err := al.List(ctx, h.a.ID, audit.Filter{Limit: 1, Tool: "mcp_tool_call"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, audit.OutcomeRefused, rows[0].Outcome, "the refusal is audited")
	require.Equal(t, tools.EventCapabilityDenied, rows[0].Event)

	f.mu.Lock()
	require.NotEmpty(t, f.headers)
	for _, hdr := range f.headers {
		for name, values := range hdr {
			for _, v := range values {
				require.NotContains(t, v, key, "the caller's Visor key reached the upstream in %s", name)
			}
		}
	}
	f.mu.Unlock()

	_, err = h.svc.Remove(ctx, h.a.ID, "fixture")
	require.NoError(t, err)
	res, err = call("mcp_tool_search", map[string]any{})
	require.NoError(t, err)
	require.EqualValues(t, 0, res.StructuredContent.(map[string]any)["total"], "a removed server is gone from search")
	_, err = call("mcp_tool_call", map[string]any{"name": "fixture:echo", "arguments": map[string]any{"text": "x"}})
	require.Error(t, err, "a removed server's tool is refused")
	require.Contains(t, err.Error(), "no upstream tool fixture:echo")
}
