package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
)

// TestTypeScriptSDKReadsRefusals runs the official MCP TypeScript SDK
// (testdata/tsclient/refusals.mjs) against a real `visor serve` and checks
// what it hands its caller for each kind of refusal: a listed tool refused
// per call ([permissions] can_create_agents = false) is a result with
// isError, the gate's message as text and structuredContent.refusal {code
// -32003, event permission_denied}; a hidden tool (a key without
// tools:admin calling create_agent) is an McpError -32003 with the gate's
// message. Either way the session goes on.
func TestTypeScriptSDKReadsRefusals(t *testing.T) {
	t.Parallel()
	dir := installNodeClient(t, "testdata/tsclient")
	w := newWorld(t)
	no := false
	eph := w.agent(t, w.acme, "eph", identity.AgentSettings{Permissions: &identity.Permissions{CanCreateAgents: &no}})
	ephKey := w.key(t, w.acme, identity.NewKey{Kind: identity.KeyAgent, AgentID: eph.ID, Name: "eph"})
	r := startReplica(t, "A", w.dbURL, privateRedis(t).URL())

	calls, _ := json.Marshal([]map[string]any{
		{"label": "listed", "token": ephKey, "tool": "create_agent", "args": map[string]any{"name": "dan"}},
		{"label": "hidden", "token": w.adaKey, "tool": "create_agent", "args": map[string]any{"name": "dan"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "refusals.mjs", r.base+"/t/acme/mcp", string(calls))
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	raw, err := cmd.Output()
	require.NoError(t, err, stderr.String())

	type toolText struct {
		Type, Text string
	}
	var out map[string]struct {
		Result *struct {
			IsError           bool       `json:"isError"`
			Content           []toolText `json:"content"`
			StructuredContent struct {
				Refusal struct {
					Code    int
					Event   string
					Message string
				}
			} `json:"structuredContent"`
		}
		Error *struct {
			Code    int
			Message string
		}
		ToolsAfter int `json:"toolsAfter"`
	}
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))

	listed := out["listed"]
	require.Nil(t, listed.Error, "a listed tool's refusal is a result")
	require.NotNil(t, listed.Result)
	require.True(t, listed.Result.IsError)
	require.Contains(t, listed.Result.Content[0].Text, "[permissions] can_create_agents is false")
	ref := listed.Result.StructuredContent.Refusal
	require.Equal(t, -32003, ref.Code)
	require.Equal(t, "permission_denied", ref.Event)
	require.Equal(t, listed.Result.Content[0].Text, ref.Message)
	require.Positive(t, listed.ToolsAfter)

	hidden := out["hidden"]
	require.Nil(t, hidden.Result, "a hidden tool's refusal is a JSON-RPC error")
	require.NotNil(t, hidden.Error)
	require.Equal(t, -32003, hidden.Error.Code)
	require.Contains(t, hidden.Error.Message, "create_agent needs the tools:admin scope")
	require.Positive(t, hidden.ToolsAfter)

	var events []string
	rows, err := w.db.Pool.Query(ctx, `SELECT event_type FROM audit_events WHERE tenant_id = $1 AND tool = 'create_agent' AND outcome = 'refused' AND code = -32003 ORDER BY at`, w.acme.ID)
	require.NoError(t, err)
	for rows.Next() {
		var e string
		require.NoError(t, rows.Scan(&e))
		events = append(events, e)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"permission_denied", "scope_denied"}, events, "each refusal is audited with its gate's event")
}
