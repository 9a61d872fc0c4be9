package mcp

import (
	"context"
	"errors"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
)

// bearer adds a bearer token to every request of an SDK client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestRefusalsReachTheOfficialGoClient connects the official MCP Go SDK
// client, in every era, to the real endpoint (Postgres, keys, the auth
// middleware). A listed tool refused per call ([permissions]
// can_create_agents = false) reaches it as a result: IsError, the gate's
// message as text, and structuredContent.refusal with code -32003 and the
// audit event, which is also what the audit row holds. A hidden tool's
// refusal stays a JSON-RPC -32003 error: this SDK version wraps that code
// in ErrConnectionClosed, but the error carries the gate's message and the
// session goes on.
func TestRefusalsReachTheOfficialGoClient(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	_, reader, err := s.ids.CreateKey(ctx, s.tenant.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "reader", Scopes: []string{identity.ScopeToolsRead}})
	require.NoError(t, err)
	for _, version := range []string{"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
		connect := func(token string) *sdk.ClientSession {
			c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-client", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url,
				HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}},
				&sdk.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err, version)
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		create := &sdk.CallToolParams{Name: "create_agent", Arguments: map[string]any{"name": "dan"}}

		eph := connect(s.keys["eph"])
		res, err := eph.CallTool(ctx, create)
		require.NoError(t, err, "%s: a listed tool's refusal is a result", version)
		require.True(t, res.IsError, version)
		msg := res.Content[0].(*sdk.TextContent).Text
		require.Contains(t, msg, "[permissions] can_create_agents is false", version)
		ref := res.StructuredContent.(map[string]any)["refusal"].(map[string]any)
		require.EqualValues(t, -32003, ref["code"], version)
		require.Equal(t, "permission_denied", ref["event"], version)
		require.Equal(t, msg, ref["message"], version)
		row := s.lastAudit(t)
		require.Equal(t, audit.OutcomeRefused, row.Outcome)
		require.EqualValues(t, -32003, row.Code)
		require.Equal(t, "permission_denied", row.Event)

		rd := connect(reader)
		_, err = rd.CallTool(ctx, create)
		require.Error(t, err, version)
		require.True(t, errors.Is(err, sdk.ErrConnectionClosed), "%s: go-sdk's reading of -32003; if this changes, update docs/tools.md", version)
		require.Contains(t, err.Error(), "create_agent needs the tools:admin scope", version)
		require.Equal(t, "scope_denied", s.lastAudit(t).Event)
		list, err := rd.ListTools(ctx, nil)
		require.NoError(t, err, "%s: the session goes on after the refusal", version)
		require.NotEmpty(t, list.Tools)
	}
}
