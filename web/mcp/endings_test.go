package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lastEvent reads events until the stream ends and returns the last one.
func lastEvent(t *testing.T, events chan string) map[string]any {
	t.Helper()
	var last string
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				require.NotEmpty(t, last, "the stream ended without a word")
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(last), &m))
				return m
			}
			last = ev
		case <-deadline:
			t.Fatal("the stream did not end")
		}
	}
}

// TestListenEndingsSayWhy: a listen stream the server ends ends with the
// listen request's result (the protocol's graceful end) whose _meta says
// why and whether to reopen it: a revoked credential, then a shutdown.
func TestListenEndingsSayWhy(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, revoked := f.openListen(t, ctx, "op", 1)
	f.hub.wait(t, 1)[0].Close()
	end := lastEvent(t, revoked)
	require.EqualValues(t, 1, end["id"])
	meta := end["result"].(map[string]any)["_meta"].(map[string]any)
	require.EqualValues(t, 1, meta["io.modelcontextprotocol/subscriptionId"])
	why := meta[metaEnding].(map[string]any)
	require.Equal(t, "credential_revoked", why["reason"])
	require.Equal(t, false, why["retry"])
	f.hub.wait(t, 0)

	_, shut := f.openListen(t, ctx, "op", 2)
	f.hub.wait(t, 1)
	f.ep.Close()
	end = lastEvent(t, shut)
	why = end["result"].(map[string]any)["_meta"].(map[string]any)[metaEnding].(map[string]any)
	require.Equal(t, "shutdown", why["reason"])
	require.Equal(t, true, why["retry"])
}

// TestLegacyStreamEndingsSayWhy: a legacy GET stream ended for a revoked
// credential, or by a shutdown, hears a last notification saying why.
func TestLegacyStreamEndingsSayWhy(t *testing.T) {
	for _, tc := range []struct {
		reason string
		end    func(f *fixture)
	}{
		{"credential_revoked", func(f *fixture) { f.hub.wait(t, 1)[0].Close() }},
		{"shutdown", func(f *fixture) { f.hub.wait(t, 1); f.ep.Close() }},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			f := newFixture(t)
			id := f.session(t, "emp", "2025-11-25")
			get, _ := http.NewRequest(http.MethodGet, f.url, nil)
			get.Header.Set("Authorization", "Bearer emp")
			get.Header.Set("Accept", "text/event-stream")
			get.Header.Set("Mcp-Session-Id", id)
			get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := http.DefaultClient.Do(get)
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			events := make(chan string, 10)
			go readEvents(resp, events)
			tc.end(f)
			end := lastEvent(t, events)
			require.Equal(t, "notifications/visor/stream_ended", end["method"])
			require.Equal(t, tc.reason, end["params"].(map[string]any)["reason"])
		})
	}
}
