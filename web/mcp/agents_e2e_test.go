package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// stack is the full endpoint on real Postgres with real keys and the
// auth package's middleware.
type stack struct {
	*fixture
	ids    *identity.Service
	db     *postgres.DB
	log    *postgres.AuditLog
	tenant identity.Tenant
	agents map[string]identity.Agent
	keys   map[string]string // agent name (or "op") -> bearer token
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := postgres.NewIdentityStore(db)
	resolver := auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), logger)
	ids := identity.NewService(store, resolver, logger) // the resolver hears committed changes
	al := postgres.NewAuditLog(db, 4, logger)
	require.NoError(t, al.Start(ctx))
	t.Cleanup(al.Stop)
	fam := agents.NewService(ids, store, postgres.NewReservationStore(db))
	reg := catalog.New(fam)
	ep := New(reg, tools.NewSubjects(store, tools.NoGrants{}, 0), al, live.NoStreams{}, Options{})
	e := echo.New()
	ep.Register(e, resolver.Middleware(""))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	s := &stack{fixture: &fixture{url: srv.URL + "/t/acme/mcp"}, ids: ids, db: db, log: al, agents: map[string]identity.Agent{}, keys: map[string]string{}}
	var err error
	s.tenant, err = ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	no := false
	for _, a := range []identity.NewAgent{
		// bo may give what it holds: a budget up to its own, its sources.
		{Name: "bo", Department: "eng", Role: "lead", BudgetCents: 1000,
			Settings: identity.AgentSettings{Capabilities: identity.Capabilities{DBSources: []string{"crm"}}}},
		{Name: "ann", Department: "eng"},
		{Name: "zed", Department: "sales"},
		{Name: "eph", Department: "ops", Settings: identity.AgentSettings{Permissions: &identity.Permissions{CanCreateAgents: &no}}},
	} {
		if a.Name == "ann" {
			a.ReportsTo = s.agents["bo"].ID
		}
		ag, err := ids.CreateAgent(ctx, s.tenant.ID, a)
		require.NoError(t, err)
		s.agents[a.Name] = ag
		_, tok, err := ids.CreateKey(ctx, s.tenant.ID, identity.NewKey{Kind: identity.KeyAgent, AgentID: ag.ID, Name: a.Name})
		require.NoError(t, err)
		s.keys[a.Name] = tok
	}
	_, tok, err := ids.CreateKey(ctx, s.tenant.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "ops", Scopes: []string{identity.ScopeToolsAdmin}})
	require.NoError(t, err)
	s.keys["op"] = tok
	return s
}

// call runs a tools/call in the 2026-07-28 era as who.
func (s *stack) call(t *testing.T, who, tool, args string) reply {
	t.Helper()
	return s.rpc(t, s.keys[who], modernHeaders("tools/call", tool),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, tool, args, modernMeta))
}

func text(t *testing.T, res map[string]any) string {
	t.Helper()
	return res["content"].([]any)[0].(map[string]any)["text"].(string)
}

func (s *stack) lastAudit(t *testing.T) audit.Entry {
	t.Helper()
	rows, err := s.log.List(context.Background(), s.tenant.ID, audit.Filter{Limit: 1})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	return rows[0]
}

func TestAgentsFamilyEndToEnd(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()

	// create_agent works for an employee whose [permissions] are absent...
	res := s.call(t, "ann", "create_agent", `{"name":"carl","department":"eng"}`).result(t)
	require.Equal(t, "Created AI employee carl.", text(t, res))
	require.Equal(t, tools.EventCall, s.lastAudit(t).Event)
	// ...and is listed but refused when can_create_agents is false.
	e := s.call(t, "eph", "create_agent", `{"name":"dan"}`).refusal(t)
	require.EqualValues(t, -32003, e["code"])
	require.Equal(t, "permission_denied", e["event"])
	row := s.lastAudit(t)
	require.Equal(t, "permission_denied", row.Event)
	require.Equal(t, audit.OutcomeRefused, row.Outcome)
	list := s.rpc(t, s.keys["eph"], modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`).result(t)
	require.Contains(t, toolNames(list), "create_agent", "listed but refused")

	// agent_remove moves to the trash, answers without a path, reserves the name.
	res = s.call(t, "op", "agent_remove", `{"name":"carl"}`).result(t)
	require.Contains(t, text(t, res), "carl was removed. An administrator can restore it")
	require.NotContains(t, text(t, res), "/")
	res = s.call(t, "op", "create_agent", `{"name":"carl"}`).result(t)
	require.Equal(t, true, res["isError"])
	require.Contains(t, text(t, res), `"carl" is reserved: an AI employee with that name is in the trash`)
	// A different name works.
	require.NotContains(t, s.call(t, "op", "create_agent", `{"name":"carla"}`).result(t), "isError")

	// Operators restore it (admin API → identity.Service), or purge it: the
	// name then stays reserved for MCP callers, recorded without its row...
	_, err := s.ids.RestoreAgent(ctx, s.tenant.ID, s.agents["ann"].ID)
	require.Error(t, err, "ann is not in the trash")
	carl, err := s.ids.AgentByName(ctx, s.tenant.ID, "carl")
	require.NoError(t, err)
	require.NoError(t, s.ids.PurgeAgent(ctx, s.tenant.ID, carl.ID))
	res = s.call(t, "op", "create_agent", `{"name":"carl"}`).result(t)
	require.Equal(t, true, res["isError"])
	require.Contains(t, text(t, res), "belonged to a removed AI employee")
	// ...until an operator reuses it through the admin API.
	_, err = s.ids.CreateAgent(ctx, s.tenant.ID, identity.NewAgent{Name: "carl"})
	require.NoError(t, err)

	// agent_update: an AI employee may not change its own authority fields.
	e = s.call(t, "ann", "agent_update", `{"name":"ann","role":"boss","budget_cents":100}`).refusal(t)
	require.EqualValues(t, -32003, e["code"])
	require.Contains(t, e["message"], "cannot change its own budget_cents, role")
	require.Equal(t, "agent_authority_refused", s.lastAudit(t).Event)
	// Its manager may edit it, giving no more than it holds itself.
	e = s.call(t, "bo", "agent_update", `{"name":"ann","budget_cents":1001}`).refusal(t)
	require.Equal(t, "agent_authority_refused", e["event"])
	res = s.call(t, "bo", "agent_update", `{"name":"ann","department":"platform","budget_cents":500,"db_sources_add":["crm"]}`).result(t)
	require.Equal(t, "Updated AI employee ann.", text(t, res))
	a, err := s.ids.Agent(ctx, s.tenant.ID, s.agents["ann"].ID)
	require.NoError(t, err)
	require.EqualValues(t, 500, a.BudgetCents)
	require.Equal(t, []string{"crm"}, a.Settings.Capabilities.DBSources)
	// An unrelated employee is refused by the delegation policy.
	e = s.call(t, "zed", "agent_update", `{"name":"ann","department":"sales"}`).refusal(t)
	require.Contains(t, e["message"], "delegation relationship")
	require.Equal(t, "relationship_refused", s.lastAudit(t).Event)

	// agent_status reads everyone.
	res = s.call(t, "zed", "agent_status", `{}`).result(t)
	require.Contains(t, text(t, res), "ann: active, platform")
	require.Contains(t, text(t, res), "reports to bo")
	// One by name shows exactly its line and entry of the whole list, its
	// manager's name included.
	everyone := res
	res = s.call(t, "zed", "agent_status", `{"name":"ann"}`).result(t)
	var annLine string
	for _, l := range strings.Split(text(t, everyone), "\n") {
		if strings.HasPrefix(l, "ann: ") {
			annLine = l + "\n"
		}
	}
	require.Equal(t, annLine, text(t, res))
	require.Contains(t, annLine, "reports to bo")
	var annEntry any
	for _, v := range everyone["structuredContent"].(map[string]any)["agents"].([]any) {
		if v.(map[string]any)["name"] == "ann" {
			annEntry = v
		}
	}
	require.Equal(t, []any{annEntry}, res["structuredContent"].(map[string]any)["agents"])
	res = s.call(t, "zed", "agent_status", `{"name":"nobody"}`).result(t)
	require.Equal(t, true, res["isError"])
	require.Contains(t, text(t, res), `no AI employee is named "nobody"`)
	// Without a name the team comes a page at a time, by name; the pages
	// together are the whole list.
	var paged string
	cursor := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 20)
		args := `{"limit":2}`
		if cursor != "" {
			args = fmt.Sprintf(`{"limit":2,"cursor":%q}`, cursor)
		}
		res = s.call(t, "zed", "agent_status", args).result(t)
		st := res["structuredContent"].(map[string]any)
		require.LessOrEqual(t, len(st["agents"].([]any)), 2)
		next, more := st["next_cursor"].(string)
		paged += strings.TrimSuffix(text(t, res), "More AI employees: pass next_cursor as cursor.\n")
		if !more {
			break
		}
		cursor = next
	}
	require.Equal(t, text(t, everyone), paged)
	e = s.call(t, "zed", "agent_status", `{"limit":101}`).result(t)
	require.Equal(t, true, e["isError"])
	require.Contains(t, text(t, e), "limit must be 1-100")

	// Every call above left exactly one durable audit row.
	rows, err := s.log.List(ctx, s.tenant.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rows, 17)
	for _, r := range rows {
		require.False(t, strings.Contains(r.ArgsDigest, "carl"))
		require.EqualValues(t, 7, r.ID.Version(), "audit ids are time-ordered (UUIDv7)")
	}
}

// TestEmployeeCannotLeaveTheDelegationRules: an AI employee cannot move
// itself into another department, and a refused move leaves it where it
// was, so it still cannot edit, re-parent or remove the employees there. Nor
// can it climb under an unrelated employee by re-parenting its own manager:
// every check of a call reads the org chart as it stood before the call.
func TestEmployeeCannotLeaveTheDelegationRules(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	refused := func(who, tool, args, event, message string) {
		t.Helper()
		e := s.call(t, who, tool, args).refusal(t)
		require.EqualValues(t, -32003, e["code"], "%s %s", tool, args)
		require.Contains(t, e["message"], message)
		row := s.lastAudit(t)
		require.Equal(t, event, row.Event)
		require.Equal(t, audit.OutcomeRefused, row.Outcome)
	}
	ann := func() identity.Agent {
		a, err := s.ids.Agent(ctx, s.tenant.ID, s.agents["ann"].ID)
		require.NoError(t, err)
		return a
	}

	refused("ann", "agent_update", `{"name":"ann","department":"sales"}`, "agent_authority_refused", "cannot change its own department")
	refused("ann", "agent_update", `{"name":"ann","department":"sales","role":"x"}`, "agent_authority_refused", "cannot change its own department, role")
	require.Equal(t, "eng", ann().Department, "a refused move changes nothing")

	// zed is in sales: ann, still in eng, may not touch it.
	refused("ann", "agent_update", `{"name":"zed","role":"intern"}`, "relationship_refused", "updating zed needs a delegation relationship")
	refused("ann", "agent_update", `{"name":"zed","reports_to":"ann"}`, "relationship_refused", "updating zed needs a delegation relationship")
	refused("ann", "agent_remove", `{"name":"zed"}`, "relationship_refused", "removing zed needs a delegation relationship")
	// Putting its manager under zed would put ann under zed too.
	refused("ann", "agent_update", `{"name":"bo","reports_to":"zed"}`, "relationship_refused", "placing bo under zed needs a delegation relationship")
	bo, err := s.ids.Agent(ctx, s.tenant.ID, s.agents["bo"].ID)
	require.NoError(t, err)
	require.Equal(t, "sales", s.agents["zed"].Department)
	require.NotEqual(t, s.agents["zed"].ID, bo.ReportsTo)
	z, err := s.ids.Agent(ctx, s.tenant.ID, s.agents["zed"].ID)
	require.NoError(t, err)
	require.Equal(t, identity.AgentActive, z.Status)
	require.Empty(t, z.Role)

	// An operator moves ann; from then on the new department is hers.
	require.NotContains(t, s.call(t, "op", "agent_update", `{"name":"ann","department":"sales"}`).result(t), "isError")
	require.NotContains(t, s.call(t, "ann", "agent_update", `{"name":"zed","role":"intern"}`).result(t), "isError")
	// Re-parenting within reach still works for the manager.
	require.NotContains(t, s.call(t, "bo", "agent_update", `{"name":"ann","reports_to":"bo"}`).result(t), "isError")
}
