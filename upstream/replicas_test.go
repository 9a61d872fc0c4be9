package upstream_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/upstream"
)

// TestChangesReachEveryReplica: two replicas (two services on one
// database, each with its own kept sessions). A server disabled through
// one is gone from search and refused at once on the other, which holds a
// warm session with it; a tool the server adds, heard by the replica that
// listens, is searchable on both.
func TestChangesReachEveryReplica(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	dev := []string{"127.0.0.1"}
	guard := egress.New(egress.Config{AllowPrivateHosts: dev, Timeout: time.Minute})
	remote := upstream.NewRemote(guard, "test", nil)
	other := upstreams.NewService(upstreams.Config{Store: h.store,
		Connectors: map[upstreams.Transport]upstreams.Connector{upstreams.StreamableHTTP: remote},
		CheckURL:   func(raw string) (string, error) { return egress.CheckURL(raw, dev) }})
	require.NoError(t, other.Start(ctx))
	t.Cleanup(other.Stop)
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", nil)
	sub := h.employee(t, h.a, h.agentA, nil)

	_, err := other.Call(ctx, sub, "fixture:echo", map[string]any{"text": "warm"})
	require.NoError(t, err, "the other replica keeps a session")
	_, err = h.svc.SetEnabled(ctx, h.a.ID, "fixture", false)
	require.NoError(t, err)
	_, total, err := other.Search(ctx, sub, "", "", 50)
	require.NoError(t, err)
	require.Zero(t, total, "gone from the other replica's search at once")
	_, err = other.Call(ctx, sub, "fixture:echo", map[string]any{"text": "x"})
	requireRefusal(t, err, tools.EventUnknownTool)

	_, err = h.svc.SetEnabled(ctx, h.a.ID, "fixture", true)
	require.NoError(t, err)
	f.srv.AddTool(&sdkTool{Name: "late", Description: "Added while both replicas run.", InputSchema: json.RawMessage(`{"type":"object"}`)}, freshHandler)
	require.Eventually(t, func() bool {
		hits, _, err := other.Search(ctx, sub, "", "late", 5)
		return err == nil && len(hits) == 1
	}, 10*time.Second, 50*time.Millisecond)
}
