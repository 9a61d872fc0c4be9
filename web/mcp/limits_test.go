package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// openListen opens a 2026-07-28 listen stream as token and returns the
// response; a held stream's events are read into the returned channel.
func (f *fixture) openListen(t *testing.T, ctx context.Context, token string, id int) (*http.Response, chan string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, id, modernMeta)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url, strings.NewReader(body))
	for k, v := range modernHeaders("subscriptions/listen", "") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan string, 10)
	if resp.StatusCode == http.StatusOK {
		go readEvents(resp, events)
		select {
		case ev := <-events:
			require.Contains(t, ev, "notifications/subscriptions/acknowledged")
		case <-time.After(5 * time.Second):
			t.Fatal("no acknowledgment")
		}
	}
	return resp, events
}

// refusedStream checks a refused stream's answer: the status, Retry-After,
// and a JSON-RPC error with the request's id naming the reason.
func refusedStream(t *testing.T, resp *http.Response, status int, reason string, id any) {
	t.Helper()
	require.Equal(t, status, resp.StatusCode)
	require.Equal(t, "7", resp.Header.Get("Retry-After"))
	var msg struct {
		ID    any `json:"id"`
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&msg))
	require.Equal(t, id, msg.ID)
	require.Equal(t, codeStreamLimit, msg.Error.Code)
	require.Equal(t, reason, msg.Error.Data["reason"])
	require.EqualValues(t, 7, msg.Error.Data["retry_after_secs"])
	require.Contains(t, msg.Error.Message, "retry in 7 s")
}

// TestStreamLimitsRefuseCleanly: a replica at its stream limit refuses the
// next stream with 503 and Retry-After, a credential at its own limit with
// 429; the replica turns unready at DrainAt; tools/call keeps answering at
// the limit; a stream that ends frees its place; the metrics count both.
func TestStreamLimitsRefuseCleanly(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	f.metrics = NewMetrics(reg)
	f.streams = StreamLimits{Max: 2, PerCredential: 1, DrainAt: 2, RetryAfter: 7 * time.Second}
	f.url = f.mount()
	ctx := context.Background()

	first, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	f.openListen(t, first, "op", 1)
	require.NoError(t, f.ep.Ready(ctx), "one of two streams: still ready")

	again, _ := f.openListen(t, ctx, "op", 2)
	refusedStream(t, again, http.StatusTooManyRequests, refusedCredential, float64(2))

	f.openListen(t, ctx, "op2", 3)
	require.Error(t, f.ep.Ready(ctx), "at DrainAt the replica is unready")
	f.hub.wait(t, 2)

	full, _ := f.openListen(t, ctx, "emp", 4)
	refusedStream(t, full, http.StatusServiceUnavailable, refusedReplicaFull, float64(4))

	// A legacy GET stream is refused the same way, with a null id.
	id := f.session(t, "emp", "2025-11-25")
	get, _ := http.NewRequest(http.MethodGet, f.url, nil)
	get.Header.Set("Authorization", "Bearer emp")
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", id)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	legacy, err := http.DefaultClient.Do(get)
	require.NoError(t, err)
	defer legacy.Body.Close()
	refusedStream(t, legacy, http.StatusServiceUnavailable, refusedReplicaFull, nil)

	// Calls are not streams: they are answered at the limit.
	r := f.rpc(t, "emp", modernHeaders("tools/call", "agent_status"),
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"agent_status","arguments":{"text":"hi"},`+modernMeta+`}}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	require.Equal(t, "echo: hi", r.result(t)["content"].([]any)[0].(map[string]any)["text"])

	got := gathered(t, reg)
	require.Equal(t, map[string]float64{"visor_mcp_streams": 2, "visor_mcp_streams_limit": 2,
		"visor_mcp_stream_refusals_total/credential_limit": 1, "visor_mcp_stream_refusals_total/replica_full": 2}, got)

	// The first stream ends: its place is free again, for its own
	// credential too.
	cancelFirst()
	require.Eventually(t, func() bool { return f.ep.gate.held() == 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, f.ep.Ready(ctx))
	resp, _ := f.openListen(t, ctx, "op", 6)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	f.ep.Close()
}

// TestStreamGateCountsByCredential: the gate's counts go back to zero, and
// the credential's entry is forgotten, once every stream is released; a
// release called twice counts once.
func TestStreamGateCountsByCredential(t *testing.T) {
	f := newFixture(t)
	g := newStreamGate(StreamLimits{Max: 3, PerCredential: 2}, nil)
	require.Equal(t, 2, g.lim.DrainAt, "nine tenths of the limit")
	a1, why := g.acquire(f.tokens["op"])
	require.Empty(t, why)
	a2, _ := g.acquire(f.tokens["op"])
	_, why = g.acquire(f.tokens["op"])
	require.Equal(t, refusedCredential, why)
	b, why := g.acquire(f.tokens["emp"])
	require.Empty(t, why)
	_, why = g.acquire(f.tokens["op2"])
	require.Equal(t, refusedReplicaFull, why)
	a1()
	a1()
	require.Equal(t, 2, g.held())
	a2()
	b()
	require.Equal(t, 0, g.held())
	require.Empty(t, g.byCred)
}

// gathered returns the stream metrics on reg by name (and label value).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.Contains(mf.GetName(), "stream") {
			continue
		}
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			out[name] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}
