package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres"
)

func tableExists(t *testing.T, url, table string) bool {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var ok bool
	require.NoError(t, c.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok))
	return ok
}

// TestMigrateRoundTrip: status on an empty database, up, status, down all
// the way (River too), status, up again.
func TestMigrateRoundTrip(t *testing.T) {
	t.Parallel()
	url := emptyDatabase(t)
	createDatabase(t, url)
	vars := testEnv(t, url)
	ms, err := postgres.LoadMigrations()
	require.NoError(t, err)

	res := runCmd(t, vars, "migrate", "status")
	require.NoError(t, res.err, res.stderr)
	require.Equal(t, len(ms), strings.Count(res.stdout, "pending"), res.stdout)
	require.Regexp(t, `river\s+queue schema\s+behind`, res.stdout)
	require.Contains(t, res.stdout, "run `visor migrate up`")

	res = runCmd(t, vars, "migrate", "up")
	require.NoError(t, res.err, res.stderr)
	require.True(t, tableExists(t, url, "agents"))
	require.True(t, tableExists(t, url, "river_job"))
	res = runCmd(t, vars, "migrate", "status")
	require.NoError(t, res.err)
	require.NotContains(t, res.stdout, "pending")
	require.Contains(t, res.stdout, "schema is current")

	res = runCmd(t, vars, "migrate", "up") // idempotent
	require.NoError(t, res.err)
	require.Contains(t, res.stdout, "0 migration(s) applied now")

	res = runCmd(t, vars, "migrate", "down")
	require.NoError(t, res.err, res.stderr)
	res = runCmd(t, vars, "migrate", "status")
	require.Equal(t, 1, strings.Count(res.stdout, "pending"), res.stdout)

	res = runCmd(t, vars, "migrate", "down", "-all", "-river")
	require.NoError(t, res.err, res.stderr)
	require.False(t, tableExists(t, url, "agents"))
	require.False(t, tableExists(t, url, "river_job"))
	res = runCmd(t, vars, "migrate", "status")
	require.Equal(t, len(ms), strings.Count(res.stdout, "pending"), res.stdout)

	res = runCmd(t, vars, "migrate", "up")
	require.NoError(t, res.err, res.stderr)
	require.True(t, tableExists(t, url, "agents"))

	res = runCmd(t, vars, "migrate", "sideways")
	require.ErrorIs(t, res.err, errUsage)
}

// TestServeAndWorkerRefuseAnOldSchema: one migration behind, both say to
// run `visor migrate up` and do not start.
func TestServeAndWorkerRefuseAnOldSchema(t *testing.T) {
	t.Parallel()
	needRedis(t)
	url := emptyDatabase(t)
	createDatabase(t, url)
	vars := testEnv(t, url)
	require.NoError(t, runCmd(t, vars, "migrate", "up").err)
	require.NoError(t, runCmd(t, vars, "migrate", "down").err)

	for _, cmd := range []string{"serve", "worker", "tenant"} {
		args := []string{cmd}
		if cmd == "tenant" {
			args = append(args, "list")
		}
		res := runCmd(t, vars, args...)
		require.Error(t, res.err, cmd)
		require.Contains(t, res.err.Error(), "run `visor migrate up`", cmd)
		require.NotContains(t, res.err.Error(), "\n")
	}

	// An empty database is "behind" too.
	url2 := emptyDatabase(t)
	createDatabase(t, url2)
	res := runCmd(t, testEnv(t, url2), "serve")
	require.ErrorContains(t, res.err, "run `visor migrate up`")
}
