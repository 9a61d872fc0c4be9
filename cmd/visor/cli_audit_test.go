package main

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/dbsource/dbtest"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/storage/postgres"
)

// TestCLIChangesAreAudited runs every CLI action that changes state and
// checks that each leaves an operator-action row (source cli) naming the
// admin API operation, the object and the flags given, with the password
// masked; a refused change is recorded too. An action added without an
// audit name, or left out of this walk, fails here.
func TestCLIChangesAreAudited(t *testing.T) {
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
	const pw = "cli secret password 41d2"
	ok("tenant", "create", "-slug", "acme", "-name", "Acme")
	ok("tenant", "stdio-images", "-tenant", "acme", "-add", "acme/tools:1")
	ok("member", "create", "-tenant", "acme", "-email", "boss@acme.example", "-password", pw)
	generated := regexp.MustCompile(`password: (\S+)`).FindStringSubmatch(ok("member", "create", "-tenant", "acme", "-email", "two@acme.example"))[1]
	ok("agent", "create", "-tenant", "acme", "-name", "lead")
	out := ok("key", "create", "-tenant", "acme", "-name", "ops")
	token := regexp.MustCompile(`vsk_\S+`).FindString(out)
	keyID := regexp.MustCompile(`\(([0-9a-f-]{36})\)`).FindStringSubmatch(out)[1]
	ok("key", "revoke", "-tenant", "acme", keyID)
	require.Error(t, runCmd(t, vars, "agent", "create", "-tenant", "acme", "-name", "lead").err, "a name taken twice")
	require.Error(t, runCmd(t, vars, "member", "create", "-tenant", "nope", "-email", "x@y.example").err, "no tenant: no row anywhere")
	tenantDB := dbtest.NewPostgres(t)
	key, err := secrets.NewKey("cli")
	require.NoError(t, err)
	vars["VISOR_SECRET_KEYS"], vars["VISOR_DB_ALLOWED_NETWORKS"] = key, "127.0.0.0/8"
	ok("dbsource", "add", "-tenant", "acme", "-name", "sales", "-connection-string", tenantDB.URL(tenantDB.Reader))
	ok("dbsource", "update", "-tenant", "acme", "-name", "sales", "-max-rows", "50", "-schemas", "public")
	require.Contains(t, ok("dbsource", "list", "-tenant", "acme"), "sales")
	ok("dbsource", "test", "-tenant", "acme", "-name", "sales")
	ok("dbsource", "remove", "-tenant", "acme", "-name", "sales")
	up := guardedMCPServer(t, "cli-token")
	vars["VISOR_MCP_DEV_HOSTS"] = "127.0.0.1"
	ok("upstream", "add", "-tenant", "acme", "-name", "guarded", "-url", up.URL+"/mcp")
	ok("upstream", "secret-set", "-tenant", "acme", "-name", "guarded", "-variable", "Authorization", "-secret-value", "Bearer cli-token")
	ok("upstream", "update", "-tenant", "acme", "-name", "guarded", "-max-concurrent", "2")
	ok("upstream", "refresh", "-tenant", "acme", "-name", "guarded")
	ok("upstream", "disable", "-tenant", "acme", "-name", "guarded")
	ok("upstream", "enable", "-tenant", "acme", "-name", "guarded")
	ok("upstream", "secret-unset", "-tenant", "acme", "-name", "guarded", "-variable", "Authorization")
	ok("upstream", "remove", "-tenant", "acme", "-name", "guarded")
	require.Error(t, runCmd(t, vars, "memory", "forget-source", "-tenant", "acme", "-source", "round:"+uuid.NewString()).err, "no such source")

	db, err := postgres.Open(context.Background(), url)
	require.NoError(t, err)
	defer db.Close()
	tn, err := postgres.NewIdentityStore(db).TenantBySlug(context.Background(), "acme")
	require.NoError(t, err)
	rows, err := postgres.NewAuditLog(db, 1, slog.New(slog.DiscardHandler)).List(context.Background(), tn.ID, audit.Filter{Source: audit.SourceCLI, Limit: 100})
	require.NoError(t, err)

	seen := map[string][]audit.Entry{}
	for _, r := range rows {
		seen[r.Action] = append(seen[r.Action], r)
		require.Equal(t, "operator_action", r.Event)
		require.True(t, strings.HasPrefix(r.PrincipalID, "operator:system/cli:"), r.PrincipalID)
		for _, s := range []string{pw, generated, token, tenantDB.Reader.Password, "cli-token"} {
			require.NotContains(t, r.Change+r.Message+r.Object, s, "a secret reached the audit trail")
		}
	}
	for _, c := range commands() {
		for _, ac := range c.actions {
			if ac.name == "list" {
				require.Empty(t, ac.audit, "visor %s list reads", c.name)
				continue
			}
			require.NotEmpty(t, ac.audit, "visor %s %s changes state but names no audit action", c.name, ac.name)
			require.NotEmpty(t, seen[ac.audit], "visor %s %s (%s) left no audit row", c.name, ac.name, ac.audit)
		}
	}
	require.Equal(t, "tenant:"+tn.ID.String(), seen["createTenant"][0].Object)
	require.Len(t, seen["createMember"], 2)
	require.Contains(t, seen["createMember"][1].Change, `"password":"(set)"`)
	require.Equal(t, "key:"+keyID, seen["revokeKey"][0].Object)
	require.Equal(t, "key:"+keyID, seen["createKey"][0].Object)
	agents := seen["createAgent"]
	require.Len(t, agents, 2)
	require.Equal(t, audit.OutcomeRejected, agents[0].Outcome, "the second lead conflicts")
	require.Equal(t, 409, int(agents[0].Code))
	require.Equal(t, audit.OutcomeOK, agents[1].Outcome)
	require.Equal(t, `{"name":"lead","tenant":"acme"}`, agents[1].Change)
}
