package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBootstrapCommands sets up a tenant from nothing with the CLI alone
// and uses the key it printed against the admin API.
func TestBootstrapCommands(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := emptyMigrated(t)
	vars := testEnv(t, url)
	ok := func(args ...string) string {
		t.Helper()
		res := runCmd(t, vars, args...)
		require.NoError(t, res.err, "%v: %s", args, res.stderr)
		return res.stdout
	}
	ok("tenant", "create", "-slug", "acme", "-name", "Acme Inc")
	require.Contains(t, ok("tenant", "list"), "acme")
	out := ok("member", "create", "-tenant", "acme", "-email", "boss@acme.example")
	require.Regexp(t, `password: \S{10,}`, out)
	ok("agent", "create", "-tenant", "acme", "-name", "lead", "-department", "sales")
	ok("agent", "create", "-tenant", "acme", "-name", "rep", "-reports-to", "lead")
	require.Regexp(t, `rep\s+active`, ok("agent", "list", "-tenant", "acme"))
	out = ok("key", "create", "-tenant", "acme", "-name", "ops")
	token := regexp.MustCompile(`vsk_\S+`).FindString(out)
	require.NotEmpty(t, token)
	agentKey := ok("key", "create", "-tenant", "acme", "-agent", "rep", "-scopes", "tools:read")
	require.Contains(t, agentKey, "created agent key")

	r := startCmd(t, vars, "serve")
	code, body := httpGet(t, r.base+"/api/v1/tenants/acme/agents", token)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"name":"rep"`)

	id := regexp.MustCompile(`\(([0-9a-f-]{36})\)`).FindStringSubmatch(out)[1]
	ok("key", "revoke", "-tenant", "acme", id)
	// The CLI is another process: the server refuses the key once the
	// change event reaches it, or at the latest when its cache expires.
	require.Eventually(t, func() bool {
		code, _ = httpGet(t, r.base+"/api/v1/tenants/acme/agents", token)
		return code == 401
	}, 10*time.Second, 20*time.Millisecond, "the revoked key is still accepted")

	for _, bad := range [][]string{
		{"tenant", "create", "-slug", "acme", "-name", "again"},
		{"member", "create", "-tenant", "nope", "-email", "x@y.example"},
		{"agent", "create", "-tenant", "acme", "-name", "Bad Name"},
		{"key", "create", "-tenant", "acme", "-scopes", "root"},
		{"key", "revoke", "-tenant", "acme", "not-an-id"},
	} {
		res := runCmd(t, vars, bad...)
		require.Error(t, res.err, "%v", bad)
		require.False(t, strings.Contains(res.err.Error(), "\n"), res.err.Error())
	}
}
