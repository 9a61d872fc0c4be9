package ui_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestTenantStdioImagesSetting: an owner lists the tenant's stdio images on
// the settings page, one a line; they are saved for that tenant alone and
// shown again, and an entry that is not an image reference is refused
// with the field named.
func TestTenantStdioImagesSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	b := e.browser()
	e.signIn(b, identity.RoleOwner)
	res := b.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/tenant",
		url.Values{"name": {"Acme"}, "mcp_stdio_images": {"acme/tools:1\r\n  acme/more:2\r\n"}})
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	a, err := e.ids.Tenant(ctx, e.a.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"acme/tools:1", "acme/more:2"}, a.Settings.MCPStdioImages)
	g, err := e.ids.Tenant(ctx, e.b.ID)
	require.NoError(t, err)
	require.Empty(t, g.Settings.MCPStdioImages, "another tenant's list is its own")
	p := b.get("/t/acme/dashboard/tenant")
	require.Contains(t, p.body, "acme/tools:1\nacme/more:2\n</textarea>")

	res = b.submit("/t/acme/dashboard/tenant", "/t/acme/dashboard/tenant", url.Values{"name": {"Acme"}, "mcp_stdio_images": {"Not/An:Image"}})
	require.Equal(t, http.StatusBadRequest, res.status)
	require.Contains(t, res.body, "Stdio MCP server images")
	a, err = e.ids.Tenant(ctx, e.a.ID)
	require.NoError(t, err)
	require.Len(t, a.Settings.MCPStdioImages, 2, "the refused list changed nothing")
}
