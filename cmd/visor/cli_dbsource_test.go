package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/dbsource/dbtest"
	"github.com/visorhq/visor/services/secrets"
)

// TestSecretsRotate follows docs/secrets.md with the real commands: a
// source saved under the old key, the new key added first, `visor secrets
// rotate`, then the old key removed; the password still opens (the test
// connection needs it), and before the rotation it would not have.
func TestSecretsRotate(t *testing.T) {
	t.Parallel()
	needRedis(t)
	vars := testEnv(t, emptyMigrated(t))
	tenantDB := dbtest.NewPostgres(t)
	oldKey, err := secrets.NewKey("old")
	require.NoError(t, err)
	newKey, err := secrets.NewKey("new")
	require.NoError(t, err)
	run := func(keys string, args ...string) result {
		t.Helper()
		vars["VISOR_SECRET_KEYS"], vars["VISOR_DB_ALLOWED_NETWORKS"] = keys, "127.0.0.0/8"
		return runCmd(t, vars, args...)
	}
	test := []string{"dbsource", "test", "-tenant", "acme", "-name", "sales"}
	require.NoError(t, run(oldKey, "tenant", "create", "-slug", "acme", "-name", "Acme").err)
	res := run(oldKey, "dbsource", "add", "-tenant", "acme", "-name", "sales", "-connection-string", tenantDB.URL(tenantDB.Reader))
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "password set: true")
	require.NotContains(t, res.stdout, tenantDB.Reader.Password)

	res = run(newKey, test...)
	require.ErrorContains(t, res.err, "cannot be opened", "without the old key the password is lost")
	both := newKey + "," + oldKey
	require.NoError(t, run(both, test...).err, "the new key first, the old one still opens")
	res = run(both, "secrets", "rotate")
	require.NoError(t, res.err, res.stderr)
	require.Contains(t, res.stdout, "re-wrapped 1 secret(s) under key \"new\"")
	res = run(both, "secrets", "rotate")
	require.NoError(t, res.err)
	require.Contains(t, res.stdout, "re-wrapped 0 secret(s)", "a second rotation changes nothing")
	res = run(newKey, test...)
	require.NoError(t, res.err, "after rotation the old key can go: %s", res.stderr)

	vars["VISOR_SECRET_KEYS"] = "bad"
	require.ErrorContains(t, runCmd(t, vars, "secrets", "rotate").err, "VISOR_SECRET_KEYS")
	delete(vars, "VISOR_SECRET_KEYS")
	require.ErrorContains(t, runCmd(t, vars, "secrets", "rotate").err, "VISOR_SECRET_KEYS is not set")
}
