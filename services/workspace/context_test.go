package workspace_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/workspace"
)

// upstreamsByAgent lists upstream servers per employee, so the test shows
// the context tool asks for the caller's own list.
type upstreamsByAgent map[string][]workspace.UpstreamServer

func (u upstreamsByAgent) UpstreamsFor(_ context.Context, sub *tools.Subject) ([]workspace.UpstreamServer, error) {
	return u[sub.Agent.Name], nil
}

// TestContextTool: visor_context states the runtime facts of the caller's
// workspace (its allowed hosts and quota), only its active Skills, the
// upstream MCP servers the caller may use and the operating rules, with no
// generic ok key (the fixture's call checks that).
func TestContextTool(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) {
		c.Image = "visor-workspace:test"
		c.Quota = 32 << 20
		c.Upstreams = upstreamsByAgent{"ada": {{Name: "github", Description: "GitHub issues", Tools: 12}}}
	})
	f.ada.Agent.Settings.Capabilities.WorkspaceConfig.AllowedHosts = []string{"pypi.org"}

	res, m, err := f.call(t, f.ada, "visor_context", map[string]any{})
	require.NoError(t, err)
	rt := m["runtime"].(map[string]any)
	require.Equal(t, "/workspace", rt["workspace_path"])
	require.Equal(t, "visor-workspace:test", rt["image"])
	require.Equal(t, []any{"pypi.org"}, rt["network_allowed_hosts"])
	require.EqualValues(t, 32<<20, rt["quota"])
	require.EqualValues(t, workspace.DefaultTimeout.Milliseconds(), rt["command_timeout_default_ms"])
	require.NotEmpty(t, rt["workspace_id"])
	require.Equal(t, []any{map[string]any{"name": "github", "description": "GitHub issues", "tools": float64(12)}}, m["upstream_servers"])
	require.Empty(t, m["skills"])
	rules := m["rules"].([]any)
	require.NotEmpty(t, rules)
	require.Contains(t, rules, "A Skill is a document: read skill://<name>/SKILL.md, then act with real tools. Installing never runs it.")
	require.Contains(t, res.Text, "network: pypi.org")
	require.Contains(t, res.Text, "upstream MCP servers (1): github")

	// Bob (same tenant) has no upstream servers and no network.
	_, m, err = f.call(t, f.bob, "visor_context", map[string]any{})
	require.NoError(t, err)
	require.Empty(t, m["upstream_servers"])
	require.Equal(t, []any{}, m["runtime"].(map[string]any)["network_allowed_hosts"])
	require.NotEqual(t, rt["workspace_id"], m["runtime"].(map[string]any)["workspace_id"], "each employee has a workspace")

	// Only the active version of an installed Skill is listed.
	st := f.store
	for _, v := range []string{"one", "two"} {
		_, err = st.AddSkill(context.Background(), f.ada.Principal.TenantID, workspace.Skill{AgentID: f.ada.Principal.AgentID, Name: "deploy-app",
			Description: "Ship it " + v, SHA256: "00", Size: 1}, packSkill(t, map[string]string{"SKILL.md": "---\nname: deploy-app\n---\n" + v}))
		require.NoError(t, err)
	}
	res, m, err = f.call(t, f.ada, "visor_context", map[string]any{})
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"name": "deploy-app", "version": float64(2), "description": "Ship it two", "read": "skill://deploy-app/SKILL.md"}}, m["skills"])
	require.Contains(t, res.Text, "skills (1): deploy-app")

	// Without an employee there is no workspace to describe.
	op := &tools.Subject{Principal: f.ada.Principal}
	op.Principal.Kind = identity.KindOperator
	_, _, err = f.call(t, op, "visor_context", map[string]any{})
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
}
