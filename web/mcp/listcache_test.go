package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// listStack is the endpoint on real Postgres with no Subject cache, so the
// tools/list cache is the only cache between a change and the next list.
type listStack struct {
	h      *Handler
	ids    *identity.Service
	grants *grants.Service
}

func newListStack(t *testing.T, entries int) listStack {
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	ids := identity.NewService(store, changes.Discard{}, slog.New(slog.DiscardHandler))
	reg := benchRegistry(ids, store, db)
	gs := grants.NewService(postgres.NewGrantStore(db), store, changes.Discard{}, tools.Match, slog.New(slog.DiscardHandler))
	h := New(reg, tools.NewSubjects(store, gs, 0), &audit.Memory{}, live.NoStreams{},
		Options{PageSize: 3, ListCacheEntries: entries})
	return listStack{h: h, ids: ids, grants: gs}
}

func (s listStack) employee(t *testing.T, tenant identity.Tenant, name string) identity.Principal {
	a, err := s.ids.CreateAgent(context.Background(), tenant.ID, identity.NewAgent{Name: name})
	require.NoError(t, err)
	return identity.Principal{TenantID: tenant.ID, TenantSlug: tenant.Slug, Kind: identity.KindEmployee,
		AgentID: a.ID, Scopes: identity.DefaultEmployeeScopes, CredentialID: "key-" + name}
}

// listAll pages through tools/list as p and returns the names and the pages.
func (s listStack) listAll(t *testing.T, p identity.Principal) ([]string, []*listPage) {
	var names []string
	var pages []*listPage
	cursor := ""
	for {
		pg, rerr := s.h.listPage(context.Background(), p, cursor, "")
		require.Nil(t, rerr)
		require.Equal(t, "private", pg.CacheScope)
		pages = append(pages, pg)
		for _, tl := range pg.Tools {
			names = append(names, tl.Name)
		}
		if pg.NextCursor == "" {
			return names, pages
		}
		cursor = pg.NextCursor
	}
}

func TestListCacheServesAChangeOnTheNextList(t *testing.T) {
	s := newListStack(t, 0)
	ctx := context.Background()
	tenant, err := s.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	p := s.employee(t, tenant, "bee")

	before, pages := s.listAll(t, p)
	require.Contains(t, before, "bench_echo")
	require.Greater(t, len(pages), 1, "the catalog spans several pages")
	again, pagesAgain := s.listAll(t, p)
	require.Equal(t, before, again)
	for i := range pages {
		require.Same(t, pages[i], pagesAgain[i], "an unchanged caller is served the cached page")
	}
	require.Equal(t, 1, s.h.lists.decisions.len(), "the policy decided once for this caller and version")

	// A settings edit (which bumps the tenant's policy version) is on the
	// very next list, and so is its revert.
	_, err = s.ids.UpdateAgent(ctx, tenant.ID, p.AgentID, func(a *identity.Agent) error {
		a.Settings.Capabilities.DeniedTools = []string{"bench_echo"}
		return nil
	})
	require.NoError(t, err)
	after, _ := s.listAll(t, p)
	require.NotContains(t, after, "bench_echo")
	require.Len(t, after, len(before)-1)

	_, err = s.ids.UpdateAgent(ctx, tenant.ID, p.AgentID, func(a *identity.Agent) error {
		a.Settings.Capabilities.DeniedTools = nil
		return nil
	})
	require.NoError(t, err)
	reverted, _ := s.listAll(t, p)
	require.Equal(t, before, reverted)

	// A scoped tool is hidden until a grant, which is on the next list,
	// and hidden again once the grant is revoked.
	_, err = s.ids.UpdateAgent(ctx, tenant.ID, p.AgentID, func(a *identity.Agent) error {
		a.Settings.Capabilities.ScopedTools = []string{"bench_echo"}
		return nil
	})
	require.NoError(t, err)
	scoped, _ := s.listAll(t, p)
	require.NotContains(t, scoped, "bench_echo")
	g, err := s.grants.Grant(ctx, tenant.ID, p.AgentID, "bench_echo", uuid.Nil, time.Hour, "test")
	require.NoError(t, err)
	granted, _ := s.listAll(t, p)
	require.Equal(t, before, granted)
	_, err = s.grants.Revoke(ctx, tenant.ID, g.ID, "test")
	require.NoError(t, err)
	revoked, _ := s.listAll(t, p)
	require.NotContains(t, revoked, "bench_echo")

	// A tenant settings edit bumps the version too: the next list decides
	// afresh rather than reuse the last decision.
	n := s.h.lists.decisions.len()
	_, err = s.ids.UpdateTenant(ctx, tenant.ID, func(t *identity.Tenant) error {
		t.Settings.ServerName = "acme"
		return nil
	})
	require.NoError(t, err)
	s.listAll(t, p)
	require.Equal(t, n+1, s.h.lists.decisions.len())
}

func TestListCacheSharesPagesWithinATenantOnly(t *testing.T) {
	s := newListStack(t, 0)
	ctx := context.Background()
	acme, err := s.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	globex, err := s.ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)

	n1, a := s.listAll(t, s.employee(t, acme, "bee"))
	n2, b := s.listAll(t, s.employee(t, acme, "wasp"))
	n3, c := s.listAll(t, s.employee(t, globex, "bee"))
	require.Equal(t, n1, n2)
	require.Equal(t, n1, n3)
	for i := range a {
		require.Same(t, a[i], b[i], "two callers with the same set in one tenant share the encoded page")
		require.NotSame(t, a[i], c[i], "another tenant never shares it")
		require.JSONEq(t, string(a[i].raw), string(c[i].raw))
	}
	require.Equal(t, 3, s.h.lists.decisions.len(), "one decision per caller")
}

func TestListCacheIsBounded(t *testing.T) {
	s := newListStack(t, 2)
	ctx := context.Background()
	tenant, err := s.ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	var first []string
	for i, name := range []string{"a1", "a2", "a3", "a4"} {
		names, _ := s.listAll(t, s.employee(t, tenant, name))
		if i == 0 {
			first = names
		}
		require.Equal(t, first, names)
		require.LessOrEqual(t, s.h.lists.decisions.len(), 2)
		require.LessOrEqual(t, s.h.lists.pages.len(), 2)
	}

	c := newLRU[string, int](2)
	c.put("a", 1)
	c.put("b", 2)
	_, _ = c.get("a") // a is now the most recent
	c.put("c", 3)
	_, ok := c.get("b")
	require.False(t, ok, "the least recently used entry is evicted")
	for _, k := range []string{"a", "c"} {
		_, ok := c.get(k)
		require.True(t, ok, k)
	}
	require.Equal(t, 2, c.len())
}

func TestListCacheBoundsThePagesBytes(t *testing.T) {
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	ids := identity.NewService(store, changes.Discard{}, slog.New(slog.DiscardHandler))
	reg := benchRegistry(ids, store, db)
	ctx := context.Background()
	tenant, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	// Four employees with four different visible sets: each page is about
	// 1.5 KB, and the budget holds two of them.
	var ps []identity.Principal
	for i, denied := range [][]string{nil, {"bench_echo"}, {"bench_write"}, {"bench_echo", "bench_write"}} {
		a, err := ids.CreateAgent(ctx, tenant.ID, identity.NewAgent{Name: fmt.Sprintf("e%d", i),
			Settings: identity.AgentSettings{Capabilities: identity.Capabilities{DeniedTools: denied}}})
		require.NoError(t, err)
		ps = append(ps, identity.Principal{TenantID: tenant.ID, TenantSlug: tenant.Slug, Kind: identity.KindEmployee,
			AgentID: a.ID, Scopes: identity.DefaultEmployeeScopes, CredentialID: fmt.Sprintf("key-%d", i)})
	}
	first, rerr := New(reg, tools.NewSubjects(store, tools.NoGrants{}, 0), &audit.Memory{}, live.NoStreams{},
		Options{PageSize: 1000}).listPage(ctx, ps[0], "", "")
	require.Nil(t, rerr)
	budget := len(first.raw)*2 + len(first.raw)/2
	h := New(reg, tools.NewSubjects(store, tools.NoGrants{}, 0), &audit.Memory{}, live.NoStreams{},
		Options{PageSize: 1000, ListCacheBytes: budget})
	seen := map[string]bool{}
	for _, p := range ps {
		pg, rerr := h.listPage(ctx, p, "", "")
		require.Nil(t, rerr)
		seen[string(pg.raw)] = true
		require.LessOrEqual(t, h.lists.pages.size(), budget)
	}
	require.Len(t, seen, 4, "four different sets")
	require.Equal(t, 2, h.lists.pages.len(), "the pages within the budget stay")
	require.Equal(t, 4, h.lists.decisions.len(), "the visible sets are not bounded by the page budget")

	// The least recently used pages go first; the newest is kept even when
	// it alone is over the budget.
	c := newLRU[string, string](10)
	c.maxWeight, c.weigh = 5, func(v string) int { return len(v) }
	c.put("a", "xx")
	c.put("b", "xx")
	_, _ = c.get("a")
	c.put("c", "xx")
	_, ok := c.get("b")
	require.False(t, ok)
	require.Equal(t, 4, c.size())
	c.put("a", "xxxxxxxx")
	require.Equal(t, 1, c.len())
	require.Equal(t, 8, c.size())
	c.put("a", "x")
	require.Equal(t, 1, c.size())
}
