package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
)

func newDBSource(tenant uuid.UUID, name string) *dbsources.Source {
	return &dbsources.Source{ID: uuid.New(), TenantID: tenant, Name: name, Kind: dbsources.Postgres,
		Endpoint:       dbsources.Endpoint{Host: "db.internal", Port: 5432, Database: "sales", User: "ro", SSLMode: "require"},
		SealedPassword: "v1.k.x.y", Schemas: []string{"public"}, Tables: []string{}, Limits: dbsources.DefaultLimits,
		UpdatedAt: time.Now().Truncate(time.Microsecond)}
}

// TestDBSourceIsolation: tenant B gets not-found for tenant A's source by
// id and by name, cannot update or delete it, and lists none of A's.
func TestDBSourceIsolation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewDBSourceStore(s.db)
	ctx := context.Background()
	src := newDBSource(s.a.ID, "sales")
	require.NoError(t, st.Create(ctx, src, 10))
	got, err := st.Source(ctx, s.a.ID, src.ID)
	require.NoError(t, err)
	require.Equal(t, "sales", got.Name)
	require.True(t, got.PasswordSet)
	require.Equal(t, dbsources.DefaultLimits, got.Limits)
	require.Equal(t, src.UpdatedAt, got.UpdatedAt)

	_, err = st.Source(ctx, s.b.ID, src.ID)
	require.True(t, fault.Is(err, fault.NotFound), "tenant B reading A's source by id: %v", err)
	_, err = st.SourceByName(ctx, s.b.ID, "sales")
	require.True(t, fault.Is(err, fault.NotFound), "tenant B reading A's source by name: %v", err)
	_, err = st.Update(ctx, s.b.ID, src.ID, func(*dbsources.Source) error { return nil })
	require.True(t, fault.Is(err, fault.NotFound), "tenant B updating A's source: %v", err)
	_, _, _, err = st.Delete(ctx, s.b.ID, src.ID)
	require.True(t, fault.Is(err, fault.NotFound), "tenant B deleting A's source: %v", err)
	list, err := st.List(ctx, s.b.ID)
	require.NoError(t, err)
	require.Empty(t, list)
	names, err := st.Existing(ctx, s.b.ID, []string{"sales"})
	require.NoError(t, err)
	require.Empty(t, names)

	require.NoError(t, st.Create(ctx, newDBSource(s.b.ID, "sales"), 10), "B may use the same name")
	err = st.Create(ctx, newDBSource(s.a.ID, "sales"), 10)
	require.True(t, fault.Is(err, fault.Conflict), "a second source of the same name: %v", err)
	err = st.Create(ctx, newDBSource(s.a.ID, "other"), 1)
	require.True(t, fault.Is(err, fault.Conflict), "over the tenant's limit: %v", err)
}

// TestDBSourceDeleteTakesTheNameOutOfEveryAgent: the source's name leaves
// the settings of A's agents that listed it (others keep their order), the
// policy version moves, and B's agent listing the same name is untouched.
func TestDBSourceDeleteTakesTheNameOutOfEveryAgent(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewDBSourceStore(s.db)
	ctx := context.Background()
	src := newDBSource(s.a.ID, "sales")
	require.NoError(t, st.Create(ctx, src, 10))
	setSources := func(tenant, agent uuid.UUID, names ...string) {
		_, err := s.svc.UpdateAgent(ctx, tenant, agent, func(a *identity.Agent) error {
			a.Settings.Capabilities.DBSources = names
			return nil
		})
		require.NoError(t, err)
	}
	setSources(s.a.ID, s.agentA.ID, "hr", "sales", "ops")
	only, err := s.svc.CreateAgent(ctx, s.a.ID, identity.NewAgent{Name: "only", Settings: identity.AgentSettings{
		Capabilities: identity.Capabilities{DBSources: []string{"sales"}}}})
	require.NoError(t, err)
	setSources(s.b.ID, s.agentB.ID, "sales")
	before, err := s.store.PolicyVersion(ctx, s.a.ID)
	require.NoError(t, err)

	_, agents, v, err := st.Delete(ctx, s.a.ID, src.ID)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{s.agentA.ID, only.ID}, agents)
	require.Equal(t, before+1, v)
	a, err := s.store.Agent(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"hr", "ops"}, a.Settings.Capabilities.DBSources)
	o, err := s.store.Agent(ctx, s.a.ID, only.ID)
	require.NoError(t, err)
	require.Empty(t, o.Settings.Capabilities.DBSources)
	require.Greater(t, o.SettingsVersion, only.SettingsVersion)
	b, err := s.store.Agent(ctx, s.b.ID, s.agentB.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"sales"}, b.Settings.Capabilities.DBSources, "another tenant's agent is untouched")
	_, err = st.Source(ctx, s.a.ID, src.ID)
	require.True(t, fault.Is(err, fault.NotFound))
}

func TestDBSourceRewrapAll(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewDBSourceStore(s.db)
	ctx := context.Background()
	one, two := newDBSource(s.a.ID, "one"), newDBSource(s.b.ID, "two")
	two.SealedPassword = "v1.new.x.y"
	none := newDBSource(s.a.ID, "none")
	none.SealedPassword = ""
	for _, src := range []*dbsources.Source{one, two, none} {
		require.NoError(t, st.Create(ctx, src, 10))
	}
	var seen []string
	n, err := st.RewrapAll(ctx, func(v string) (string, bool, error) {
		seen = append(seen, v)
		if v == "v1.new.x.y" {
			return v, false, nil
		}
		return "v1.new.re.wrapped", true, nil
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.ElementsMatch(t, []string{"v1.k.x.y", "v1.new.x.y"}, seen, "every tenant's sealed values, and only sealed ones")
	got, err := st.Source(ctx, s.a.ID, one.ID)
	require.NoError(t, err)
	require.Equal(t, "v1.new.re.wrapped", got.SealedPassword)
}
