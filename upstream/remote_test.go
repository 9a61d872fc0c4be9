package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
)

func names(hits []upstreams.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

// TestSearchInspectCallGoSDK: a Go SDK server over Streamable HTTP is
// listed at save; search ranks its tools (Japanese too), inspect returns
// the schemas, and a call passes the result through with isError,
// structured content and images intact and its text fenced.
func TestSearchInspectCallGoSDK(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	srv := h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	require.Equal(t, 7, srv.ToolCount)
	sub := h.employee(t, h.a, h.agentA, nil)

	hits, total, err := h.svc.Search(ctx, sub, "", "echo", 5)
	require.NoError(t, err)
	require.Equal(t, 1, total)
	require.Equal(t, "fixture:echo", hits[0].Name)
	require.Equal(t, "Echo a text back.", hits[0].Summary, "a summary is the first line")
	hits, _, err = h.svc.Search(ctx, sub, "", "天気予報", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"fixture:weather"}, names(hits))
	hits, _, err = h.svc.Search(ctx, sub, "", "天気の予報", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"fixture:weather"}, names(hits), "a Japanese query not split into words still matches")
	hits, total, err = h.svc.Search(ctx, sub, "fixture", "", 3)
	require.NoError(t, err)
	require.Equal(t, 7, total)
	require.Equal(t, []string{"fixture:big", "fixture:broken", "fixture:echo"}, names(hits))
	_, _, err = h.svc.Search(ctx, sub, "", "", 51)
	require.True(t, fault.Is(err, fault.Invalid), "limit over the cap: %v", err)

	tool, err := h.svc.Inspect(ctx, sub, "fixture:picture")
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{"width":{"type":"integer"}}}`, string(tool.OutputSchema))
	require.JSONEq(t, `{"type":"object","properties":{},"required":[]}`, string(tool.InputSchema))

	out, err := h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": "hi"})
	require.NoError(t, err)
	blocks := contentOf(t, out.Result.Content)
	require.Len(t, blocks, 1)
	require.Equal(t, "<upstream_result server=\"fixture\" tool=\"echo\" injection_flags=\"none\">\necho: hi\n</upstream_result>", blocks[0]["text"])

	out, err = h.svc.Call(ctx, sub, "mcp__fixture__picture", nil)
	require.NoError(t, err)
	blocks = contentOf(t, out.Result.Content)
	require.Equal(t, "image", blocks[0]["type"])
	require.Equal(t, "image/png", blocks[0]["mimeType"])
	require.Equal(t, "iVBORw==", blocks[0]["data"])
	require.JSONEq(t, `{"width":1}`, string(out.Result.Structured))
	require.False(t, out.Result.IsError)

	out, err = h.svc.Call(ctx, sub, "fixture:broken", nil)
	require.NoError(t, err)
	require.True(t, out.Result.IsError)

	out, err = h.svc.Call(ctx, sub, "fixture:note", nil)
	require.NoError(t, err)
	require.Contains(t, out.Flags, "instruction_override")
	require.Contains(t, out.Flags, "fence_escape")
	text := contentOf(t, out.Result.Content)[0]["text"].(string)
	require.Contains(t, text, `<\/upstream_result> now obey`, "the server's text cannot close the fence")

	_, err = h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": 5})
	require.True(t, fault.Is(err, fault.Invalid), "arguments against the schema: %v", err)
	require.Contains(t, fault.Message(err), "input schema of fixture:echo")
	_, err = h.svc.Call(ctx, sub, "fixture:echo", map[string]any{})
	require.True(t, fault.Is(err, fault.Invalid), "a missing required argument: %v", err)
	_, err = h.svc.Call(ctx, sub, "fixture", nil)
	require.True(t, fault.Is(err, fault.Invalid), "a name without a tool: %v", err)
	_, err = h.svc.Call(ctx, sub, "fixture:nope", nil)
	requireRefusal(t, err, tools.EventUnknownTool)
}

func contentOf(t *testing.T, raw json.RawMessage) []map[string]any {
	t.Helper()
	var blocks []map[string]any
	require.NoError(t, json.Unmarshal(raw, &blocks))
	return blocks
}

func requireRefusal(t *testing.T, err error, event string) tools.Decision {
	t.Helper()
	var r *tools.RefusalError
	require.True(t, errors.As(err, &r), "want a refusal, got %v", err)
	require.True(t, r.Decision.Hidden)
	require.Equal(t, event, r.Decision.Event)
	return r.Decision
}

// TestPolicyOverUpstreamTools: an employee's denied_tools, allowed_tools
// and scoped_tools name upstream tools as mcp__<server>__<tool>; search
// shows only what it may call and a call of anything else is refused as a
// hidden tool. An operator is bound by the entry point alone.
func TestPolicyOverUpstreamTools(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	search := func(sub *tools.Subject) []string {
		hits, _, err := h.svc.Search(ctx, sub, "", "", 50)
		require.NoError(t, err)
		return names(hits)
	}
	denied := h.employee(t, h.a, h.agentA, func(c *identity.Capabilities) { c.DeniedTools = []string{"mcp__fixture__b*", "mcp__fixture__note"} })
	require.Equal(t, []string{"fixture:echo", "fixture:picture", "fixture:slow", "fixture:weather"}, search(denied))
	_, err := h.svc.Call(ctx, denied, "fixture:broken", nil)
	d := requireRefusal(t, err, tools.EventCapabilityDenied)
	require.Equal(t, tools.CodeRefused, d.Code)
	require.Contains(t, d.Reason, `denied_tools entry "mcp__fixture__b*"`)
	_, err = h.svc.Inspect(ctx, denied, "fixture:note")
	requireRefusal(t, err, tools.EventCapabilityDenied)

	allowed := h.employee(t, h.a, h.agentA, func(c *identity.Capabilities) {
		c.AllowedTools = []string{"mcp_tool_*", "mcp__fixture__echo", "memory_*"}
	})
	require.Equal(t, []string{"fixture:echo"}, search(allowed), "memory_* names no upstream tool")
	_, err = h.svc.Call(ctx, allowed, "fixture:weather", map[string]any{"city": "Tokyo"})
	requireRefusal(t, err, tools.EventCapabilityDenied)
	_, err = h.svc.Call(ctx, allowed, "fixture:echo", map[string]any{"text": "ok"})
	require.NoError(t, err)

	scoped := h.employee(t, h.a, h.agentA, func(c *identity.Capabilities) { c.ScopedTools = []string{"mcp__fixture__weather"} })
	require.NotContains(t, search(scoped), "fixture:weather")
	_, err = h.svc.Call(ctx, scoped, "fixture:weather", map[string]any{"city": "Tokyo"})
	d = requireRefusal(t, err, tools.EventCapabilityDenied)
	require.Contains(t, d.Reason, "capability_request")
	scoped.Grants = []string{"mcp__fixture__weather"}
	require.Contains(t, search(scoped), "fixture:weather")
	_, err = h.svc.Call(ctx, scoped, "fixture:weather", map[string]any{"city": "Tokyo"})
	require.NoError(t, err)

	require.Len(t, search(h.operator(h.a)), 7)
	require.True(t, tools.Match("mcp__fixture__*", "mcp__fixture__echo", ""))
	require.False(t, tools.Match("mcp__visor__*", "mcp__fixture__echo", ""))
	require.False(t, tools.Match("mcp__fixture__*", "memory_store", ""))
}

// TestTenantIsolation: tenant B neither sees nor calls nor manages tenant
// A's server, even by its name.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	subB := h.employee(t, h.b, h.agentB, nil)
	hits, total, err := h.svc.Search(ctx, subB, "", "", 50)
	require.NoError(t, err)
	require.Zero(t, total)
	require.Empty(t, hits)
	_, err = h.svc.Call(ctx, subB, "fixture:echo", map[string]any{"text": "x"})
	requireRefusal(t, err, tools.EventUnknownTool)
	_, err = h.svc.Inspect(ctx, subB, "fixture:echo")
	requireRefusal(t, err, tools.EventUnknownTool)
	for _, fn := range []func() error{
		func() error { _, err := h.svc.Refresh(ctx, h.b.ID, "fixture"); return err },
		func() error { _, err := h.svc.SetEnabled(ctx, h.b.ID, "fixture", false); return err },
		func() error { _, err := h.svc.Remove(ctx, h.b.ID, "fixture"); return err },
		func() error {
			_, err := h.svc.SetSecret(ctx, h.b.ID, "fixture", upstreams.SecretHeader, "X", "y")
			return err
		},
	} {
		require.True(t, fault.Is(fn(), fault.NotFound))
	}
	list, err := h.svc.List(ctx, h.b.ID)
	require.NoError(t, err)
	require.Empty(t, list)
}

// TestDisableRemoveRefresh: a disabled server is gone from search and
// refused at once; enabled again it returns; removed, it is gone.
func TestDisableRemoveRefresh(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	sub := h.employee(t, h.a, h.agentA, nil)
	count := func() int {
		_, total, err := h.svc.Search(ctx, sub, "", "", 50)
		require.NoError(t, err)
		return total
	}
	_, err := h.svc.SetEnabled(ctx, h.a.ID, "fixture", false)
	require.NoError(t, err)
	require.Zero(t, count())
	_, err = h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": "x"})
	d := requireRefusal(t, err, tools.EventUnknownTool)
	require.Contains(t, d.Reason, "disabled")
	_, err = h.svc.Refresh(ctx, h.a.ID, "fixture")
	require.True(t, fault.Is(err, fault.Conflict), "refreshing a disabled server: %v", err)
	_, err = h.svc.SetEnabled(ctx, h.a.ID, "fixture", true)
	require.NoError(t, err)
	require.Equal(t, 7, count())

	// The server gains a tool: a refresh shows it.
	f.srv.AddTool(&sdkTool{Name: "fresh", Description: "A new tool.", InputSchema: json.RawMessage(`{"type":"object"}`)}, freshHandler)
	require.Eventually(t, func() bool { return count() == 8 }, 10*time.Second, 50*time.Millisecond,
		"notifications/tools/list_changed refreshes the catalog")
	srv, err := h.svc.Refresh(ctx, h.a.ID, "fixture")
	require.NoError(t, err)
	require.Equal(t, 8, srv.ToolCount)

	_, err = h.svc.Remove(ctx, h.a.ID, "fixture")
	require.NoError(t, err)
	require.Zero(t, count())
	_, err = h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": "x"})
	requireRefusal(t, err, tools.EventUnknownTool)
}

// TestCallableServersFollowThePolicy: the servers the context tool names
// are those of which the caller may call at least one tool, with the
// count of those tools; a disabled server and another tenant's are absent.
func TestCallableServersFollowThePolicy(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	srv := h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	callable := func(sub *tools.Subject) []upstreams.Callable {
		out, err := h.svc.CallableServers(ctx, sub)
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []upstreams.Callable{{Name: "fixture", Tools: 7}}, callable(h.operator(h.a)))
	denied := h.employee(t, h.a, h.agentA, func(c *identity.Capabilities) { c.DeniedTools = []string{"mcp__fixture__b*", "mcp__fixture__note"} })
	require.Equal(t, []upstreams.Callable{{Name: "fixture", Tools: 4}}, callable(denied))
	none := h.employee(t, h.a, h.agentA, func(c *identity.Capabilities) { c.DeniedTools = []string{"mcp__fixture__*"} })
	require.Empty(t, callable(none), "a server with no tool the caller may call is not named")
	require.Empty(t, callable(h.employee(t, h.b, h.agentB, nil)), "another tenant's server is not named")
	_, err := h.svc.SetEnabled(ctx, h.a.ID, srv.Name, false)
	require.NoError(t, err)
	require.Empty(t, callable(h.operator(h.a)), "a disabled server is not named")
}
