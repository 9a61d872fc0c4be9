package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigDefaultsWorkOnADeveloperMachine(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/visor?sslmode=disable", c.DatabaseURL)
	require.Equal(t, "redis://127.0.0.1:6379/0", c.RedisURL)
	require.Equal(t, ":8080", c.HTTPAddr)
	require.Equal(t, int64(1<<20), c.BodyLimit)
	require.Equal(t, 30*time.Second, c.ShutdownTimeout)
	require.Empty(t, c.OTLPEndpoint)
	require.Empty(t, c.AdminToken)
}

// TestConfigProblemsAreOneLineEach: every bad variable is named on its own
// line with what to set, and all of them are reported at once.
func TestConfigProblemsAreOneLineEach(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"VISOR_DATABASE_URL":          "mysql://root:hunter2@db/visor",
		"VISOR_REDIS_URL":             "redis//nohost",
		"VISOR_HTTP_ADDR":             "8080",
		"VISOR_BASE_URL":              "ftp://x",
		"VISOR_LOG_LEVEL":             "loud",
		"VISOR_LOG_FORMAT":            "xml",
		"VISOR_HTTP_BODY_LIMIT":       "lots",
		"VISOR_SHUTDOWN_TIMEOUT":      "-1s",
		"VISOR_ADMIN_TOKEN":           "short",
		"VISOR_WORKER_CONCURRENCY":    "0",
		"VISOR_WORKER_HTTP_ADDR":      "9090",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318",
		"VISOR_MCP_ALLOWED_ORIGINS":   "https://app.example.com/mcp",
	}
	_, err := LoadConfig(func(k string) string { return bad[k] })
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, len(bad), err.Error())
	for name := range bad {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, name+": ") {
				n++
			}
		}
		require.Equal(t, 1, n, "%s should be named on exactly one line:\n%s", name, err)
	}
	require.NotContains(t, err.Error(), "hunter2", "URLs may hold passwords")
}

// TestMCPAllowedOrigins: origins are scheme://host[:port] as browsers
// send them; anything else names the variable.
func TestMCPAllowedOrigins(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(func(k string) string {
		return map[string]string{"VISOR_MCP_ALLOWED_ORIGINS": " https://App.example.com , http://localhost:6274,"}[k]
	})
	require.NoError(t, err)
	require.Equal(t, []string{"https://app.example.com", "http://localhost:6274"}, c.MCPOrigins)
	for _, bad := range []string{"*", "app.example.com", "https://app.example.com/", "https://u@app.example.com", "ftp://x.example",
		"https://app.example.com?x", "https://app.example.com#x"} {
		_, err := LoadConfig(func(k string) string { return map[string]string{"VISOR_MCP_ALLOWED_ORIGINS": bad}[k] })
		require.ErrorContains(t, err, "VISOR_MCP_ALLOWED_ORIGINS: ", bad)
	}
}

func TestUnreachableServicesAreOneClearLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"postgres down", map[string]string{"VISOR_DATABASE_URL": "postgres://postgres:pw@127.0.0.1:1/visor"}, "start Postgres or set VISOR_DATABASE_URL"},
		{"redis down", nil, "start Redis or set VISOR_REDIS_URL"},
		{"bad url", map[string]string{"VISOR_DATABASE_URL": "postgres://x:y@[::1"}, "VISOR_DATABASE_URL:"},
	}
	url := "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := map[string]string{"VISOR_DATABASE_URL": url, "VISOR_REDIS_URL": "redis://127.0.0.1:1/0", "VISOR_HTTP_ADDR": "127.0.0.1:0"}
			if c.name == "redis down" {
				vars["VISOR_DATABASE_URL"] = emptyMigrated(t)
			}
			for k, v := range c.vars {
				vars[k] = v
			}
			res := runCmd(t, vars, "serve")
			require.Error(t, res.err)
			require.Contains(t, res.err.Error(), c.want)
			require.NotContains(t, res.err.Error(), "\n")
			require.NotContains(t, res.err.Error(), ":pw@")
			require.NotContains(t, res.err.Error(), "goroutine")
		})
	}
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := emptyMigrated(t)
	first := startCmd(t, testEnv(t, url), "serve")
	addr := strings.TrimPrefix(first.base, "http://localhost")
	res := runCmd(t, testEnv(t, url, "VISOR_HTTP_ADDR", "127.0.0.1"+addr), "serve")
	require.ErrorContains(t, res.err, "already in use")
	require.ErrorContains(t, res.err, "set VISOR_HTTP_ADDR")
}

func emptyMigrated(t *testing.T) string {
	t.Helper()
	url := emptyDatabase(t)
	createDatabase(t, url)
	require.NoError(t, runCmd(t, testEnv(t, url), "migrate", "up").err)
	return url
}

// TestDeliveryClaimConfig: the claimers' settings have their documented
// defaults; a lease shorter than an attempt (the webhook timeout and a
// margin) is refused, naming the floor.
func TestDeliveryClaimConfig(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, 2, c.Rounds.Claimers)
	require.Equal(t, 500, c.Rounds.ClaimBatch)
	require.Equal(t, 100*time.Millisecond, c.Rounds.ClaimEvery)
	require.Equal(t, 2*time.Minute, c.Rounds.Lease)

	env := map[string]string{"VISOR_WORKER_ROUNDS_CLAIMERS": "4", "VISOR_WORKER_ROUNDS_BATCH": "200",
		"VISOR_WORKER_ROUNDS_POLL": "50ms", "VISOR_WEBHOOK_TIMEOUT": "5s", "VISOR_WORKER_ROUNDS_LEASE": "20s"}
	c, err = LoadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, []any{4, 200, 50 * time.Millisecond, 20 * time.Second},
		[]any{c.Rounds.Claimers, c.Rounds.ClaimBatch, c.Rounds.ClaimEvery, c.Rounds.Lease})

	env = map[string]string{"VISOR_WORKER_ROUNDS_CLAIMERS": "0", "VISOR_WORKER_ROUNDS_BATCH": "lots",
		"VISOR_WORKER_ROUNDS_POLL": "1ms", "VISOR_WORKER_ROUNDS_LEASE": "20s"}
	_, err = LoadConfig(func(k string) string { return env[k] })
	require.ErrorContains(t, err, `VISOR_WORKER_ROUNDS_CLAIMERS: "0" must be a number 1-64`)
	require.ErrorContains(t, err, `VISOR_WORKER_ROUNDS_BATCH: "lots" must be a number 1-10000`)
	require.ErrorContains(t, err, `VISOR_WORKER_ROUNDS_POLL: "1ms" must be a duration between 10ms and 1m`)
	require.ErrorContains(t, err, `VISOR_WORKER_ROUNDS_LEASE: "20s" must be a duration of at least 25s (VISOR_WEBHOOK_TIMEOUT and 15s)`)
}
