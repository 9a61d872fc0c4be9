package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/secrets"
)

// guardedMCPServer is a Go SDK MCP server with one tool that answers only
// requests carrying Authorization: Bearer <token>.
func guardedMCPServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "guarded", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "ping", Description: "Answers pong.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestUpstreamCLIAndRotation: an operator adds a server whose bearer is a
// sealed header, lists it without the value, rotates the key with `visor
// secrets rotate` (the header is one of the re-wrapped secrets) and the
// server is still reachable under the new key alone; then removes it.
func TestUpstreamCLIAndRotation(t *testing.T) {
	t.Parallel()
	needRedis(t)
	vars := testEnv(t, emptyMigrated(t))
	up := guardedMCPServer(t, "s3cret-token")
	oldKey, err := secrets.NewKey("old")
	require.NoError(t, err)
	newKey, err := secrets.NewKey("new")
	require.NoError(t, err)
	run := func(keys string, args ...string) result {
		t.Helper()
		vars["VISOR_SECRET_KEYS"], vars["VISOR_MCP_DEV_HOSTS"] = keys, "127.0.0.1"
		return runCmd(t, vars, args...)
	}
	require.NoError(t, run(oldKey, "tenant", "create", "-slug", "acme", "-name", "Acme").err)
	res := run(oldKey, "upstream", "add", "-tenant", "acme", "-name", "guarded", "-url", up.URL+"/mcp")
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "(0 tools); last refresh failed", "no bearer yet: the server refuses")
	res = run(oldKey, "upstream", "secret-set", "-tenant", "acme", "-name", "guarded", "-variable", "Authorization",
		"-secret-value", "Bearer s3cret-token")
	require.NoError(t, res.err, res.stderr)
	refresh := []string{"upstream", "refresh", "-tenant", "acme", "-name", "guarded"}
	res = run(oldKey, refresh...)
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "(enabled true, 1 tools)")
	res = run(oldKey, "upstream", "list", "-tenant", "acme")
	require.NoError(t, res.err)
	require.Contains(t, res.stdout, "header:Authorization")
	require.NotContains(t, res.stdout, "s3cret-token")

	res = run(newKey, refresh...)
	require.ErrorContains(t, res.err, "cannot be opened", "without the old key the header is lost")
	both := newKey + "," + oldKey
	res = run(both, "secrets", "rotate")
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "re-wrapped 1 secret(s) under key \"new\"")
	res = run(newKey, refresh...)
	require.NoError(t, res.err, "after rotation the old key can go: %s", res.stderr)

	res = run(newKey, "upstream", "update", "-tenant", "acme", "-name", "guarded", "-timeout", "5s")
	require.NoError(t, res.err, res.stderr)
	require.NoError(t, run(newKey, "upstream", "disable", "-tenant", "acme", "-name", "guarded").err)
	require.NoError(t, run(newKey, "upstream", "enable", "-tenant", "acme", "-name", "guarded").err)
	require.NoError(t, run(newKey, "upstream", "secret-unset", "-tenant", "acme", "-name", "guarded", "-variable", "Authorization").err)
	require.NoError(t, run(newKey, "upstream", "remove", "-tenant", "acme", "-name", "guarded").err)
	res = run(newKey, "upstream", "list", "-tenant", "acme")
	require.NotContains(t, res.stdout, "guarded")
	res = run(newKey, "upstream", "add", "-tenant", "acme", "-name", "meta", "-url", "http://169.254.169.254/mcp")
	require.ErrorContains(t, res.err, "url")
}
