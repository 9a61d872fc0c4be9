package mcp

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCORS: preflights and responses carry CORS headers for the origins
// the endpoint accepts (its own host, ports aside, and the allow list),
// including a 401's challenge; any other origin gets neither CORS headers
// nor an answer. (TestBrowserClient in cmd/visor/e2e drives it from
// Chromium.)
func TestCORS(t *testing.T) {
	t.Parallel()
	f, _, _ := observed(t, Options{AllowedOrigins: []string{"https://app.example.com"}})
	send := func(method, origin, token string, hdr map[string]string, body string) *http.Response {
		req, _ := http.NewRequest(method, f.url, strings.NewReader(body))
		req.Header.Set("Origin", origin)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res
	}
	preflight := map[string]string{"Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization, content-type, mcp-protocol-version, traceparent"}
	for _, origin := range []string{"https://app.example.com", "http://127.0.0.1:9999", "http://localhost:3000"} {
		res := send(http.MethodOptions, origin, "", preflight, "")
		require.Equal(t, http.StatusNoContent, res.StatusCode, origin)
		require.Equal(t, origin, res.Header.Get("Access-Control-Allow-Origin"))
		require.Contains(t, res.Header.Get("Access-Control-Allow-Methods"), "DELETE")
		for _, h := range []string{"Authorization", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID", "traceparent"} {
			require.Contains(t, res.Header.Get("Access-Control-Allow-Headers"), h)
		}
		require.Empty(t, res.Header.Get("Access-Control-Allow-Credentials"), "bearer tokens, never cookies")
	}
	for _, origin := range []string{"https://evil.example", "https://app.example.com.evil.example", "null"} {
		res := send(http.MethodOptions, origin, "", preflight, "")
		require.Equal(t, http.StatusForbidden, res.StatusCode, origin)
		require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), origin)
		res = send(http.MethodPost, origin, "emp", nil, fmt.Sprintf(initBody, "2025-06-18"))
		require.Equal(t, http.StatusForbidden, res.StatusCode, origin)
		require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"), origin)
	}
	// A page reads a 401 (where OAuth discovery starts) and a session id.
	res := send(http.MethodPost, "https://app.example.com", "", nil, fmt.Sprintf(initBody, "2025-06-18"))
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Equal(t, "https://app.example.com", res.Header.Get("Access-Control-Allow-Origin"))
	require.Contains(t, res.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate")
	res = send(http.MethodPost, "https://app.example.com", "emp", nil, fmt.Sprintf(initBody, "2025-06-18"))
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NotEmpty(t, res.Header.Get("Mcp-Session-Id"))
	require.Contains(t, res.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id")
	require.Contains(t, res.Header.Values("Vary"), "Origin")
}
