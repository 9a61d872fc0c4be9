package upstream_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// TestLimits: a server's timeout, concurrency limit, circuit breaker and
// result cap each refuse with an error naming the server, and a hung call
// to one server stalls no call to another.
func TestLimits(t *testing.T) {
	t.Parallel()
	f, other, h := newFixture(t), newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "fixture", f.http.URL+"/mcp", func(in *upstreams.Input) {
		in.Limits = upstreams.Limits{Timeout: 300 * time.Millisecond, MaxConcurrent: 1}
	})
	h.add(t, h.a, "other", other.http.URL+"/mcp", func(in *upstreams.Input) { in.Limits = upstreams.Limits{MaxResultBytes: 64 << 10} })
	sub := h.operator(h.a)

	// One slow call holds the only slot: a second is refused at once, and
	// another server answers meanwhile.
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := h.svc.Call(ctx, sub, "fixture:slow", nil)
		done <- err
	}()
	<-started
	require.Eventually(t, func() bool {
		_, err := h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": "x"})
		return fault.Is(err, fault.RateLimited) && contains(fault.Message(err), "upstream server fixture is running its limit of 1 calls")
	}, 2*time.Second, 5*time.Millisecond)
	out, err := h.svc.Call(ctx, sub, "other:echo", map[string]any{"text": "meanwhile"})
	require.NoError(t, err)
	require.Equal(t, "other", out.Server)
	err = <-done
	require.True(t, fault.Is(err, fault.Unavailable), "the slow call times out: %v", err)
	require.Contains(t, fault.Message(err), "upstream server fixture did not answer within 300ms")

	_, err = h.svc.Call(ctx, sub, "other:big", nil)
	require.True(t, fault.Is(err, fault.TooLarge), "over the result cap: %v", err)
	require.Contains(t, fault.Message(err), "upstream server other answered")

	// Four more timeouts make five in a row: the breaker opens.
	for range 4 {
		_, err = h.svc.Call(ctx, sub, "fixture:slow", nil)
		require.True(t, fault.Is(err, fault.Unavailable))
	}
	_, err = h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": "x"})
	require.True(t, fault.Is(err, fault.Unavailable), "the breaker is open: %v", err)
	require.Contains(t, fault.Message(err), "upstream server fixture is failing (5 calls in a row); calls to it are paused")
	_, err = h.svc.Call(ctx, sub, "other:echo", map[string]any{"text": "x"})
	require.NoError(t, err, "another server's breaker is its own")
	// A refresh that works closes the breaker.
	_, err = h.svc.Refresh(ctx, h.a.ID, "fixture")
	require.NoError(t, err)
	_, err = h.svc.Call(ctx, sub, "fixture:echo", map[string]any{"text": "x"})
	require.NoError(t, err)
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestSecretsAndSSE: static headers are sealed, sent upstream, named but
// never returned; the older HTTP+SSE transport works as Streamable HTTP
// does; the caller's credential never reaches the server.
func TestSecretsAndSSE(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	h.add(t, h.a, "legacy", f.http.URL+"/sse", func(in *upstreams.Input) { in.Transport = upstreams.SSE })
	srv, err := h.svc.SetSecret(ctx, h.a.ID, "legacy", upstreams.SecretHeader, "Authorization", "Bearer upstream-token-1")
	require.NoError(t, err)
	require.Equal(t, []upstreams.SecretName{{Kind: upstreams.SecretHeader, Name: "Authorization", Set: true}}, srv.Secrets)
	raw, err := json.Marshal(srv)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "upstream-token-1")
	secs, err := h.store.Secrets(ctx, h.a.ID, srv.ID)
	require.NoError(t, err)
	require.NotContains(t, secs[0].Sealed, "upstream-token-1", "sealed at rest")

	sub := h.employee(t, h.a, h.agentA, nil)
	out, err := h.svc.Call(ctx, sub, "legacy:echo", map[string]any{"text": "over sse"})
	require.NoError(t, err)
	require.Contains(t, contentOf(t, out.Result.Content)[0]["text"], "echo: over sse")
	require.True(t, f.seen("Authorization", "Bearer upstream-token-1"))

	_, err = h.svc.SetSecret(ctx, h.a.ID, "legacy", upstreams.SecretEnv, "TOKEN", "x")
	require.True(t, fault.Is(err, fault.Invalid), "an env var on a remote server: %v", err)
	_, err = h.svc.SetSecret(ctx, h.a.ID, "legacy", upstreams.SecretHeader, "Mcp-Session-Id", "x")
	require.True(t, fault.Is(err, fault.Invalid), "a header the transport sets: %v", err)
	_, err = h.svc.UnsetSecret(ctx, h.a.ID, "legacy", upstreams.SecretHeader, "Authorization")
	require.NoError(t, err)
	_, err = h.svc.UnsetSecret(ctx, h.a.ID, "legacy", upstreams.SecretHeader, "Authorization")
	require.True(t, fault.Is(err, fault.NotFound))
}

// TestSaveChecks: names, transports and URLs are checked at save, every
// URL through the outbound guard.
func TestSaveChecks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	for _, c := range []struct {
		in   upstreams.Input
		want string
	}{
		{upstreams.Input{Name: "Bad_Name", Transport: upstreams.StreamableHTTP, URL: "https://example.com/mcp"}, "lower-case"},
		{upstreams.Input{Name: "visor", Transport: upstreams.StreamableHTTP, URL: "https://example.com/mcp"}, "Visor's own tools"},
		{upstreams.Input{Name: "x", Transport: "ws", URL: "https://example.com/mcp"}, "transport must be"},
		{upstreams.Input{Name: "x", Transport: upstreams.StreamableHTTP}, "needs url"},
		{upstreams.Input{Name: "x", Transport: upstreams.StreamableHTTP, URL: "http://10.0.0.1/mcp"}, "url: must use https"},
		{upstreams.Input{Name: "x", Transport: upstreams.StreamableHTTP, URL: "https://169.254.169.254/mcp"}, "private or special address"},
		{upstreams.Input{Name: "x", Transport: upstreams.StreamableHTTP, URL: "https://user:pw@example.com/mcp"}, "without credentials"},
		{upstreams.Input{Name: "x", Transport: upstreams.Stdio, Image: "Bad Image"}, "image must be"},
		{upstreams.Input{Name: "x", Transport: upstreams.Stdio, Image: "node:20", AllowHosts: []string{"http://x.com"}}, "allow_hosts"},
		{upstreams.Input{Name: "x", Transport: upstreams.StreamableHTTP, URL: "https://example.com/mcp",
			Limits: upstreams.Limits{Timeout: time.Hour}}, "timeout_ms must be"},
	} {
		_, err := h.svc.Create(ctx, h.a.ID, c.in, "test")
		require.True(t, fault.Is(err, fault.Invalid), "%+v: %v", c.in, err)
		require.Contains(t, fault.Message(err), c.want)
	}
	// A server that cannot be reached is saved with its error, to be fixed
	// and refreshed.
	srv, err := h.svc.Create(ctx, h.a.ID, upstreams.Input{Name: "down", Transport: upstreams.StreamableHTTP, URL: "http://127.0.0.1:1/mcp"}, "test")
	require.NoError(t, err)
	require.Contains(t, srv.LastError, "cannot connect to upstream server down")
}

// TestFloodingServerGetsOneRefreshAtATime: a server that floods
// notifications/tools/list_changed gets one refresh at a time and one
// more after it, however many it sends; while its refresh hangs, calls
// to it and to another server answer.
func TestFloodingServerGetsOneRefreshAtATime(t *testing.T) {
	t.Parallel()
	f, h := newFixture(t), newHarness(t)
	ctx := context.Background()
	const image = "acme/tools:1"
	h.setStdioImages(t, h.a.ID, image)
	h.add(t, h.a, "tools", "", func(in *upstreams.Input) {
		in.Transport, in.URL, in.Image = upstreams.Stdio, "", image
	})
	h.add(t, h.a, "other", f.http.URL+"/mcp", nil)
	require.Equal(t, 1, h.stdio.listings(), "saving lists once")
	gate := make(chan struct{})
	h.stdio.mu.Lock()
	h.stdio.gate = gate
	changed := h.stdio.changed
	h.stdio.mu.Unlock()
	require.NotNil(t, changed, "the session listens for list_changed")

	for range 1000 {
		changed()
	}
	require.Eventually(t, func() bool { return h.stdio.listings() == 2 }, 10*time.Second, 5*time.Millisecond, "one refresh runs")
	sub := h.operator(h.a)
	_, err := h.svc.Call(ctx, sub, "tools:echo", nil)
	require.NoError(t, err, "a call to the flooding server answers while its refresh hangs")
	_, err = h.svc.Call(ctx, sub, "other:echo", map[string]any{"text": "x"})
	require.NoError(t, err, "another server answers")
	close(gate)
	require.Eventually(t, func() bool { return h.stdio.listings() == 3 }, 10*time.Second, 5*time.Millisecond, "one more after it")
	h.svc.Stop() // waits for the refreshes
	require.Equal(t, 3, h.stdio.listings(), "a thousand notifications made two refreshes")
}
