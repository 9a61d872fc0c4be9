package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
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

// runCmdIn runs one command to completion in-process with stdin as its
// standard input.
func runCmdIn(t *testing.T, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, args, &env{getenv: func(k string) string { return vars[k] }, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb})
	return result{out.String(), errb.String(), err}
}

// TestUpstreamCLIStdioImagesAndAuth: `visor tenant stdio-images` keeps a
// tenant's list of stdio images, and `visor upstream add|update` saves a
// stdio server only with an image on its own tenant's list (a refusal is
// audited), with its command (words or a JSON array) and allowed hosts;
// and a remote server with its OAuth settings, the client secret read
// from standard input, sealed, named and never shown or audited.
func TestUpstreamCLIStdioImagesAndAuth(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := emptyMigrated(t)
	vars := testEnv(t, url)
	key, err := secrets.NewKey("k")
	require.NoError(t, err)
	vars["VISOR_SECRET_KEYS"], vars["VISOR_MCP_DEV_HOSTS"] = key, "127.0.0.1"
	ok := func(stdin string, args ...string) string {
		t.Helper()
		res := runCmdIn(t, vars, stdin, args...)
		require.NoError(t, res.err, "%v: %s", args, res.stderr)
		return res.stdout
	}
	refused := func(want string, args ...string) {
		t.Helper()
		res := runCmdIn(t, vars, "", args...)
		require.ErrorContains(t, res.err, want, "%v", args)
	}
	ok("", "tenant", "create", "-slug", "acme", "-name", "Acme")
	ok("", "tenant", "create", "-slug", "globex", "-name", "Globex")
	addTools := func(tenant string) []string {
		return []string{"upstream", "add", "-tenant", tenant, "-name", "tools", "-transport", "stdio", "-image", "acme/tools:1",
			"-command", `["node", "server.js", "--title", "a b"]`, "-allow-hosts", "api.example.com, other.example.com", "-disabled"}
	}
	refused("mcp_stdio_images", addTools("acme")...)
	require.Contains(t, ok("", "tenant", "stdio-images", "-tenant", "acme"), "allows no stdio image")
	out := ok("", "tenant", "stdio-images", "-tenant", "acme", "-add", "acme/tools:1,acme/more:2")
	require.Contains(t, out, "  acme/tools:1\n  acme/more:2\n")
	require.Contains(t, ok("", addTools("acme")...), "saved server tools in acme: acme/tools:1, auth none")
	require.Contains(t, ok("", "tenant", "stdio-images", "-tenant", "globex"), "allows no stdio image", "acme's list is acme's")
	refused("mcp_stdio_images", addTools("globex")...)

	db, err := postgres.Open(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	ctx := context.Background()
	acme, err := postgres.NewIdentityStore(db).TenantBySlug(ctx, "acme")
	require.NoError(t, err)
	store := postgres.NewUpstreamStore(db)
	server := func(name string) upstreams.Server {
		t.Helper()
		s, err := store.ServerByName(ctx, acme.ID, name)
		require.NoError(t, err)
		return s
	}
	s := server("tools")
	require.Equal(t, []string{"node", "server.js", "--title", "a b"}, s.Command)
	require.Equal(t, []string{"api.example.com", "other.example.com"}, s.AllowHosts)
	ok("", "upstream", "update", "-tenant", "acme", "-name", "tools", "-command", "node other.js", "-image", "acme/more:2")
	s = server("tools")
	require.Equal(t, []string{"node", "other.js"}, s.Command)
	require.Equal(t, "acme/more:2", s.Image)
	refused("mcp_stdio_images", "upstream", "update", "-tenant", "acme", "-name", "tools", "-image", "acme/nope:1")
	refused("OAuth is for remote servers", "upstream", "update", "-tenant", "acme", "-name", "tools", "-auth", "oauth")
	out = ok("", "tenant", "stdio-images", "-tenant", "acme", "-remove", "acme/tools:1")
	require.NotContains(t, out, "acme/tools:1")
	require.Contains(t, out, "acme/more:2")

	up := guardedMCPServer(t, "unused")
	const clientSecret = "cli-client-s3cret"
	out = ok(clientSecret+"\n", "upstream", "add", "-tenant", "acme", "-name", "cc", "-url", up.URL+"/mcp", "-auth", "client_credentials",
		"-client-id", "visor-client", "-scopes", "read, write", "-client-secret-stdin", "-disabled")
	require.Contains(t, out, "auth client_credentials")
	s = server("cc")
	require.Equal(t, upstreams.AuthClientCredentials, s.Auth.Kind)
	require.Equal(t, "visor-client", s.Auth.ClientID)
	require.Equal(t, []string{"read", "write"}, s.Auth.Scopes)
	require.Equal(t, []upstreams.SecretName{{Kind: upstreams.SecretClientSecret, Name: "client_secret", Set: true}}, s.Secrets)
	out = ok("", "upstream", "list", "-tenant", "acme")
	require.Contains(t, out, "client_secret:client_secret")
	require.NotContains(t, out, clientSecret)
	ok("", "upstream", "update", "-tenant", "acme", "-name", "cc", "-auth", "oauth", "-per-member")
	s = server("cc")
	require.Equal(t, upstreams.AuthOAuth, s.Auth.Kind)
	require.True(t, s.Auth.PerMember)
	require.Empty(t, s.Auth.ClientID, "another kind keeps nothing of the last")
	refused("-client-secret-stdin: nothing to read", "upstream", "update", "-tenant", "acme", "-name", "cc", "-client-secret-stdin")
	refused("auth.kind must be", "upstream", "update", "-tenant", "acme", "-name", "cc", "-auth", "static")

	rows, err := postgres.NewAuditLog(db, 1, slog.New(slog.DiscardHandler)).List(ctx, acme.ID, audit.Filter{Source: audit.SourceCLI, Limit: 100})
	require.NoError(t, err)
	rejected := 0
	for _, r := range rows {
		require.NotContains(t, r.Change+r.Message, clientSecret, "the client secret never reaches the audit trail")
		if r.Action == "createMCPServer" && r.Outcome == audit.OutcomeRejected && strings.Contains(r.Message, "mcp_stdio_images") {
			rejected++
		}
	}
	require.Equal(t, 1, rejected, "acme's refused add is audited in acme")
}
