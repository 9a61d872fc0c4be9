package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
)

// knowFixture is twoTenants with the knowledge store and service.
type knowFixture struct {
	twoTenants
	ks  *postgres.KnowledgeStore
	svc *knowledge.Service
}

func knowSetup(t testing.TB) knowFixture {
	t.Helper()
	s := setup(t)
	ks := postgres.NewKnowledgeStore(s.db)
	return knowFixture{twoTenants: s, ks: ks, svc: knowledge.NewService(knowledge.Config{Store: ks, Directory: s.store,
		Relations: agents.NewDelegation(s.store)})}
}

// round is the principal of a round token of agent on a new task.
func round(tenant identity.Tenant, agent identity.Agent) identity.Principal {
	return identity.Principal{TenantID: tenant.ID, TenantSlug: tenant.Slug, Kind: identity.KindEmployee, AgentID: agent.ID,
		TaskID: uuid.New(), CredentialID: "round:" + uuid.NewString(), Scopes: []string{identity.ScopeToolsWrite}}
}

func operator(tenant identity.Tenant) identity.Principal {
	return identity.Principal{TenantID: tenant.ID, TenantSlug: tenant.Slug, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: identity.AllScopes}
}

func sourceKey(p identity.Principal) string { return p.CredentialID }

// requireFenced checks a write refused because its source was forgotten:
// the exact text, and the audit event.
func requireFenced(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, msg, fault.Message(err))
	var ev *tools.EventError
	require.True(t, errors.As(err, &ev), "%v", err)
	require.Equal(t, knowledge.EventFenced, ev.Event)
}

func rows(t *testing.T, f knowFixture, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}
