package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestBackupAndRestoreRoundTrip runs the backup and restore commands
// docs/deployment.md gives: pg_dump --format=custom of a live database,
// pg_restore --no-owner into a new one, then `visor migrate status` and the
// data itself from the restored copy.
func TestBackupAndRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			pgtest.Unavailable(t, tool+" (postgresql-client)", err)
		}
	}
	needRedis(t)
	src := emptyMigrated(t)
	require.NoError(t, runCmd(t, testEnv(t, src), "tenant", "create", "-slug", "acme", "-name", "Acme").err)

	dump := filepath.Join(t.TempDir(), "visor.dump")
	out, err := exec.Command("pg_dump", "--format=custom", "--file="+dump, src).CombinedOutput()
	require.NoError(t, err, "pg_dump: %s", out)

	dst := emptyDatabase(t)
	createDatabase(t, dst)
	out, err = exec.Command("pg_restore", "--no-owner", "--dbname="+dst, dump).CombinedOutput()
	require.NoError(t, err, "pg_restore: %s", out)

	res := runCmd(t, testEnv(t, dst), "migrate", "status")
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "schema is current")
	res = runCmd(t, testEnv(t, dst), "tenant", "list")
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "acme")
	// A restored database is one serve accepts: its schema check passes.
	startCmd(t, testEnv(t, dst), "serve")
}
