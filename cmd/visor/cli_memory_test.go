package main

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/storage/postgres"
)

// TestCLIForgetSource: `visor memory forget-source` forgets a source an
// operator found with `visor memory list`; the memory is gone, the page
// it wrote is listed for review, and the source's next write is refused.
func TestCLIForgetSource(t *testing.T) {
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
	ok("tenant", "create", "-slug", "acme", "-name", "Acme")
	ok("agent", "create", "-tenant", "acme", "-name", "lead")

	ctx := context.Background()
	db, err := postgres.Open(ctx, url)
	require.NoError(t, err)
	defer db.Close()
	ids := postgres.NewIdentityStore(db)
	tn, err := ids.TenantBySlug(ctx, "acme")
	require.NoError(t, err)
	lead, err := ids.AgentByName(ctx, tn.ID, "lead")
	require.NoError(t, err)
	store := postgres.NewKnowledgeStore(db)
	svc := knowledge.NewService(knowledge.Config{Store: store, Directory: ids, Relations: agents.NewDelegation(ids)})
	round := identity.Principal{TenantID: tn.ID, Kind: identity.KindEmployee, AgentID: lead.ID, TaskID: uuid.New(),
		CredentialID: "round:" + uuid.NewString()}
	m, err := svc.StoreMemory(ctx, round, uuid.New(), knowledge.NewMemory{Content: "The lead's note."})
	require.NoError(t, err)
	_, err = svc.WriteWiki(ctx, round, uuid.New(), knowledge.ScopeShared, "notes/lead", "text")
	require.NoError(t, err)

	require.Contains(t, ok("memory", "list", "-tenant", "acme", "-agent", "lead"), m.Source.Key)
	out := ok("memory", "forget-source", "-tenant", "acme", "-source", m.Source.Key)
	require.Contains(t, out, "forgot "+m.Source.Key+": 1 memories")
	require.Contains(t, out, "notes/lead")
	_, err = store.Memory(ctx, tn.ID, m.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	_, err = svc.StoreMemory(ctx, round, uuid.New(), knowledge.NewMemory{Content: "again"})
	require.Equal(t, knowledge.MsgForgotten, fault.Message(err))
	require.Contains(t, ok("memory", "forget-source", "-tenant", "acme", "-source", m.Source.Key), "already forgotten")
	res := runCmd(t, vars, "memory", "forget-source", "-tenant", "acme", "-source", "nonsense")
	require.Error(t, res.err)
}
