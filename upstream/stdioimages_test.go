package upstream_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/calls"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
)

// setStdioImages sets tenant's allow list of stdio images.
func (h *harness) setStdioImages(t *testing.T, tenant uuid.UUID, images ...string) {
	t.Helper()
	_, err := h.ids.UpdateTenant(context.Background(), tenant, func(t *identity.Tenant) error {
		t.Settings.MCPStdioImages = images
		return nil
	})
	require.NoError(t, err)
}

// TestStdioImagesOfTheTenant: a stdio server's image must be on its
// tenant's list. With an empty list no stdio server is saved; tenant A's
// list allows A's server and not B's; an update to an image off the list
// is refused; mcp_manage's refusal is audited; and once A takes the image
// off its list, calls to the saved server are refused (not counted as
// the server's failures) and its kept session is closed.
func TestStdioImagesOfTheTenant(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	const image = "acme/tools:1"
	in := upstreams.Input{Name: "tools", Transport: upstreams.Stdio, Image: image, Command: []string{"tools", "serve"}}

	_, err := h.svc.Create(ctx, h.a.ID, in, "test")
	require.True(t, fault.Is(err, fault.Invalid), "an empty list allows no image: %v", err)
	require.ErrorContains(t, err, "mcp_stdio_images")
	require.ErrorContains(t, err, image)
	require.Zero(t, h.stdio.opened, "nothing was started")

	h.setStdioImages(t, h.a.ID, image)
	srv, err := h.svc.Create(ctx, h.a.ID, in, "test")
	require.NoError(t, err)
	require.Empty(t, srv.LastError)
	require.Equal(t, 1, srv.ToolCount)

	_, err = h.svc.Create(ctx, h.b.ID, in, "test")
	require.True(t, fault.Is(err, fault.Invalid), "tenant A's list does not allow tenant B: %v", err)
	_, err = h.ids.UpdateTenant(ctx, h.b.ID, func(t *identity.Tenant) error {
		t.Settings.MCPStdioImages = []string{"Not An Image"}
		return nil
	})
	require.ErrorContains(t, err, `mcp_stdio_images holds "Not An Image"`)

	other := in
	other.Image = "acme/other:1"
	_, err = h.svc.Update(ctx, h.a.ID, "tools", other)
	require.True(t, fault.Is(err, fault.Invalid), "an update to an image off the list: %v", err)
	got, err := h.svc.Server(ctx, h.a.ID, "tools")
	require.NoError(t, err)
	require.Equal(t, image, got.Image, "the refused update changed nothing")

	log := postgres.NewAuditLog(h.db, 1, slog.New(slog.DiscardHandler))
	require.NoError(t, log.Start(ctx))
	t.Cleanup(log.Stop)
	pipe := calls.New(h.reg, tools.NewSubjects(h.istore, tools.NoGrants{}, 0), log, nil)
	_, err = h.ids.UpdateAgent(ctx, h.a.ID, h.agentA.ID, func(a *identity.Agent) error {
		a.Settings.Capabilities.MCPManage = true
		return nil
	})
	require.NoError(t, err)
	who := identity.Principal{TenantID: h.a.ID, Kind: identity.KindEmployee, AgentID: h.agentA.ID, Scopes: []string{identity.ScopeToolsAdmin}}
	call := func(tool string, args map[string]any) calls.Answer {
		t.Helper()
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		return pipe.Call(ctx, who, tool, raw, nil)
	}
	a := call("mcp_manage", map[string]any{"action": "add", "server": "other", "transport": "stdio", "image": "acme/other:1"})
	require.Contains(t, a.ToolError, "mcp_stdio_images")
	require.NotEqual(t, "ok", a.Entry.Outcome, "the refusal is audited as such")
	require.Contains(t, a.Entry.Message, "mcp_stdio_images")

	a = call("mcp_tool_call", map[string]any{"name": "tools:echo", "arguments": map[string]any{}})
	require.NotNil(t, a.Result, "%s %s", a.ToolError, a.Failure)
	require.Equal(t, 1, h.stdio.open(), "one kept session")

	h.setStdioImages(t, h.a.ID, "acme/other:1")
	for range 6 { // more than the breaker's threshold: none counts as a failure
		a = call("mcp_tool_call", map[string]any{"name": "tools:echo", "arguments": map[string]any{}})
		require.Nil(t, a.Result)
		// Refused as a tool the caller cannot see is: the reason goes to
		// the audit row, not to the caller.
		require.NotContains(t, a.ToolError+a.Failure, "acme/tools")
		require.Contains(t, a.Entry.Message, "not on the tenant's allow list of stdio images")
		require.Contains(t, a.Entry.Message, "mcp_stdio_images")
	}
	require.Zero(t, h.stdio.open(), "the kept session was closed")
	a = call("mcp_tool_search", map[string]any{"server": "tools"})
	require.NotNil(t, a.Result, "%s %s", a.ToolError, a.Failure)
	found, err := json.Marshal(a.Result)
	require.NoError(t, err)
	require.NotContains(t, string(found), "tools:echo", "what cannot be called is not found")
	a = call("mcp_tool_inspect", map[string]any{"name": "tools:echo"})
	require.Nil(t, a.Result, "nor inspected")
	_, err = h.svc.Refresh(ctx, h.a.ID, "tools")
	require.True(t, fault.Is(err, fault.Unavailable) || fault.Is(err, fault.Forbidden), "a refresh is refused too: %v", err)

	h.setStdioImages(t, h.a.ID, image)
	a = call("mcp_tool_call", map[string]any{"name": "tools:echo", "arguments": map[string]any{}})
	require.NotNil(t, a.Result, "back on the list, the server answers again: %s %s", a.ToolError, a.Failure)
}
