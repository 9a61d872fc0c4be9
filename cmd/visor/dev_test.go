package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// TestDevFromNothing runs `visor dev --json FILE` against a database that
// does not exist yet, then uses what it printed: readiness, the admin API
// with the operator key, the owner's password. A second run keeps the
// credentials working.
func TestDevFromNothing(t *testing.T) {
	t.Parallel()
	needRedis(t)
	dbURL := emptyDatabase(t)
	vars := testEnv(t, dbURL)
	out := filepath.Join(t.TempDir(), "dev.json")

	r := startCmd(t, vars, "dev", "--json", out)
	creds := readDevJSON(t, out)
	require.Equal(t, r.base, creds["base_url"])
	require.Equal(t, r.base+"/t/demo/mcp", creds["mcp_url"])
	require.Equal(t, "demo", creds["tenant"])
	require.NotEmpty(t, creds["owner_email"])
	require.GreaterOrEqual(t, len(creds["owner_password"]), 10)
	require.True(t, strings.HasPrefix(creds["operator_key"], "vsk_"))
	require.True(t, strings.HasPrefix(creds["agent_key"], "vsk_"))
	require.Contains(t, r.stdout.String(), creds["mcp_url"])
	require.Contains(t, r.stdout.String(), creds["operator_key"])
	// Each step is printed as it goes, in order, then a snippet to paste.
	require.Regexp(t, `(?s)\[1/5\] Database\.\.\. +created "visor_[a-z0-9_]+" on [^\n]+:\d+\n`+
		`\[2/5\] Migrations\.\.\. +applied \d+, the schema is current\n`+
		`\[3/5\] Sandbox\.\.\. +(sandbox worker running in this process|no sandbox worker, so execute_program answers no_worker\. [^\n]+)\n`+
		`\[4/5\] Listening\.\.\. +`+regexp.QuoteMeta(r.base)+` \(Redis connected, job worker running in this process\)\n`+
		`\[5/5\] Demo data\.\.\. +tenant "demo" with owner `, r.stdout.String())
	require.Contains(t, r.stdout.String(), "claude mcp add --transport http visor "+creds["mcp_url"]+"\n")
	require.Contains(t, r.stdout.String(), "claude mcp add --transport http visor "+creds["mcp_url"]+
		` --header "Authorization: Bearer `+creds["operator_key"]+`"`)

	code, body := httpGet(t, r.base+"/readyz", "")
	require.Equal(t, 200, code, body)
	code, body = httpGet(t, r.base+"/api/v1/tenants/demo/agents", creds["operator_key"])
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"name":"assistant"`)
	// The operator key sees every tool an operator may call: all but those
	// that act for an AI employee's own process.
	var operatorTools []string
	for _, tl := range servedRegistry().Visible(&tools.Subject{Principal: identity.Principal{Kind: identity.KindOperator, Scopes: identity.AllScopes}}) {
		operatorTools = append(operatorTools, tl.Name)
	}
	require.ElementsMatch(t, operatorTools, mcpTools(t, creds["mcp_url"], creds["operator_key"]))
	require.Subset(t, operatorTools, []string{"agent_status", "tasks_create", "create_agent"})
	require.NotContains(t, operatorTools, "capability_request")
	// The agent key is the agent's, not an operator's.
	code, _ = httpGet(t, r.base+"/api/v1/tenants/demo/agents", creds["agent_key"])
	require.Equal(t, 403, code)
	// The owner's password signs in, and the session works on the admin API.
	signInAndUseAdminAPI(t, r.base, creds["owner_email"], creds["owner_password"])
	// The in-process worker runs jobs: the key prune runs on start.
	require.Eventually(t, func() bool { return jobCompleted(t, dbURL, "prune_keys") }, 30*time.Second, 200*time.Millisecond,
		"the dev worker never completed a prune_keys job")
	require.NoError(t, r.stop())

	// Again: same database, same dev dir. Nothing is duplicated and the
	// kept credentials still work.
	os.Remove(out)
	r = startCmd(t, vars, "dev", "--json", out)
	again := readDevJSON(t, out)
	require.Equal(t, creds["operator_key"], again["operator_key"])
	require.Equal(t, creds["agent_key"], again["agent_key"])
	require.Equal(t, creds["owner_password"], again["owner_password"])
	code, body = httpGet(t, r.base+"/api/v1/tenants/demo/keys", again["operator_key"])
	require.Equal(t, 200, code)
	var keys struct{ Keys []any }
	require.NoError(t, json.Unmarshal([]byte(body), &keys))
	require.Len(t, keys.Keys, 2, "a repeat run mints no new keys")
	require.NoError(t, r.stop())

	// Credentials that stopped working (e.g. a revoked key) are replaced.
	var k struct{ Keys []struct{ ID, Kind string } }
	require.NoError(t, json.Unmarshal([]byte(body), &k))
	for _, key := range k.Keys {
		if key.Kind == "operator" {
			res := runCmd(t, vars, "key", "revoke", "-tenant", "demo", key.ID)
			require.NoError(t, res.err, res.stderr)
		}
	}
	os.Remove(out)
	r = startCmd(t, vars, "dev", "--json", out)
	fresh := readDevJSON(t, out)
	require.NotEqual(t, creds["operator_key"], fresh["operator_key"])
	code, _ = httpGet(t, r.base+"/api/v1/tenants/demo", fresh["operator_key"])
	require.Equal(t, 200, code)
}

func readDevJSON(t *testing.T, path string) map[string]string {
	t.Helper()
	var m map[string]string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &m) == nil
	}, 30*time.Second, 50*time.Millisecond, "dev never wrote %s", path)
	for _, k := range []string{"mcp_url", "tenant", "owner_email", "owner_password", "operator_key", "agent_key", "base_url"} {
		require.Contains(t, m, k)
	}
	return m
}

// signInAndUseAdminAPI signs in through the tenant's login form and calls
// the admin API with the member session cookie.
func signInAndUseAdminAPI(t *testing.T, base, email, password string) {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(base + "/t/demo/login")
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, m, string(page))
	res, err = c.PostForm(base+"/t/demo/login", url.Values{"csrf_token": {string(m[1])}, "email": {email}, "password": {password}})
	require.NoError(t, err)
	res.Body.Close()
	require.Less(t, res.StatusCode, 400, "sign in")

	res, err = c.Get(base + "/api/v1/tenants/demo/members")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, string(body))
	require.Contains(t, string(body), email)

	req, _ := http.NewRequest("POST", base+"/api/v1/tenants/demo/members",
		strings.NewReader(`{"email":"second@demo.example.com","password":"long enough pw","role":"viewer"}`))
	req.Header.Set("Origin", base)
	req.Header.Set("Content-Type", "application/json")
	res, err = c.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 201, res.StatusCode, string(body))
}

func jobCompleted(t *testing.T, dbURL, kind string) bool {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var n int
	require.NoError(t, c.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'completed'`, kind).Scan(&n))
	return n > 0
}
