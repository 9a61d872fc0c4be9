package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// callTool sends one tools/call to the MCP endpoint of r as token
// (2026-07-28, no session) and returns whether the result is an error and
// its text.
func callTool(t *testing.T, r replica, slug, token, name string, args map[string]any) (bool, string) {
	t.Helper()
	const version = "2026-07-28"
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": name, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}}})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, r.base+"/t/"+slug+"/mcp", bytes.NewReader(body))
	require.NoError(t, err)
	for k, v := range map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json",
		"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version, "Mcp-Method": "tools/call", "Mcp-Name": name} {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(d)
				break
			}
		}
	}
	var msg struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &msg), string(raw))
	require.Nil(t, msg.Error, string(raw))
	require.Len(t, msg.Result.Content, 1, string(raw))
	return msg.Result.IsError, msg.Result.Content[0].Text
}

// TestCapabilityRequestLimitsOnTheEndpoint: an AI employee's
// capability_request is refused, as an isError result the model reads,
// once it has grants.DefaultRequestLimits.MaxPending requests pending and
// once it has made PerWindow within the window; each refusal is in the
// audit trail with its message.
func TestCapabilityRequestLimitsOnTheEndpoint(t *testing.T) {
	t.Parallel()
	needRedis(t)
	r := startReplicas(t, 1, pgtest.NewURL(t))[0]
	ctx := context.Background()
	tn, err := r.a.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	ada, err := r.a.ids.CreateAgent(ctx, tn.ID, identity.NewAgent{Name: "ada",
		Settings: identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"secret_*"}}}})
	require.NoError(t, err)
	_, key, err := r.a.ids.CreateKey(ctx, tn.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: ada.ID, Name: "ada"})
	require.NoError(t, err)
	lim := grants.DefaultRequestLimits
	n := 0
	ask := func() (bool, string) {
		n++
		return callTool(t, r, "acme", key, "capability_request", map[string]any{"tool": fmt.Sprintf("secret_%d", n), "reason": "for the audit task"})
	}
	denyAll := func() {
		pending, err := r.a.grants.ListRequests(ctx, tn.ID, grants.Pending, nil, 100)
		require.NoError(t, err)
		for _, p := range pending {
			_, err := r.a.grants.Deny(ctx, tn.ID, p.ID, "op", "")
			require.NoError(t, err)
		}
	}

	for range lim.MaxPending {
		isErr, text := ask()
		require.False(t, isErr, text)
	}
	isErr, capText := ask()
	require.True(t, isErr, "one request over the pending cap")
	require.Equal(t, fmt.Sprintf("you already have %d capability requests waiting for an operator, the most one AI employee may; wait for a decision before asking for another", lim.MaxPending), capText)

	made := lim.MaxPending
	for made < lim.PerWindow {
		denyAll()
		for range min(lim.MaxPending, lim.PerWindow-made) {
			isErr, text := ask()
			require.False(t, isErr, text)
			made++
		}
	}
	denyAll()
	isErr, rateText := ask()
	require.True(t, isErr, "one request over the rate, with nothing pending")
	require.Equal(t, fmt.Sprintf("you made %d capability requests in the last hour, the most one AI employee may; wait before asking again", lim.PerWindow), rateText)

	rows, err := r.a.stores.audit.List(ctx, tn.ID, audit.Filter{Tool: "capability_request", Outcome: audit.OutcomeToolError})
	require.NoError(t, err)
	var messages []string
	for _, row := range rows {
		require.Equal(t, "agent:"+ada.ID.String(), row.PrincipalID)
		messages = append(messages, row.Message)
	}
	require.ElementsMatch(t, []string{capText, rateText}, messages, "both refusals are audited with their message")
}
