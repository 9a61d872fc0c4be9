package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/catalog"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// boardStack is the endpoint with the task board family on real Postgres:
// acme's ada and bob work in engineering (related), cy in sales.
type boardStack struct {
	*stack
	db *postgres.DB
}

func newBoardStack(t testing.TB) *boardStack {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := postgres.NewIdentityStore(db)
	resolver := auth.NewResolver(store, store, auth.NewURLs("http://visor.test"), logger)
	ids := identity.NewService(store, resolver, logger)
	al := postgres.NewAuditLog(db, 4, logger)
	require.NoError(t, al.Start(ctx))
	t.Cleanup(al.Stop)
	bs := board.NewService(board.Deps{Store: postgres.NewBoardStore(db), Relations: agents.NewDelegation(store),
		Directory: store, Staff: ids, Logger: logger})
	ep := New(catalog.New(bs), tools.NewSubjects(store, tools.NoGrants{}, 0), al, live.NoStreams{}, Options{})
	e := echo.New()
	ep.Register(e, resolver.Middleware(""))
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)

	s := &stack{fixture: &fixture{url: srv.URL + "/t/acme/mcp"}, ids: ids, log: al, agents: map[string]identity.Agent{}, keys: map[string]string{}}
	var err error
	s.tenant, err = ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	for _, a := range []identity.NewAgent{{Name: "ada", Department: "eng"}, {Name: "bob", Department: "eng"}, {Name: "cy", Department: "sales"}} {
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
	return &boardStack{stack: s, db: db}
}

// TestBoardRefusalsAreListedRefusedAndAudited: through the real endpoint,
// a record relationship refusal is a refused result carrying -32003, with a
// relationship_refused audit row, and the tool stays in the caller's list.
func TestBoardRefusalsAreListedRefusedAndAudited(t *testing.T) {
	s := newBoardStack(t)
	res := s.call(t, "op", "tasks_create", `{"title":"Ship it","assignee":"bob"}`).result(t)
	require.NotEqual(t, true, res["isError"], text(t, res))
	id := res["structuredContent"].(map[string]any)["id"].(string)

	refusedCall := func(who, tool, args, says string) {
		t.Helper()
		e := s.call(t, who, tool, args).refusal(t)
		require.EqualValues(t, -32003, e["code"], "%s %s", who, tool)
		require.Contains(t, e["message"], says)
		row := s.lastAudit(t)
		require.Equal(t, tools.EventRelationshipRefused, row.Event, "%s %s", who, tool)
		require.Equal(t, audit.OutcomeRefused, row.Outcome)
		require.Equal(t, tool, row.Tool)
	}
	task := fmt.Sprintf(`"task_id":%q`, id)
	refusedCall("cy", "tasks_update", `{`+task+`,"title":"mine"}`, "delegation relationship")
	refusedCall("cy", "activity_post", `{`+task+`,"text":"hi"}`, "delegation relationship")
	refusedCall("cy", "tasks_complete", `{`+task+`}`, "delegation relationship")
	refusedCall("cy", "tasks_block", `{`+task+`,"reason":"no"}`, "delegation relationship")
	refusedCall("cy", "tasks_claim", `{`+task+`}`, "delegation relationship")
	refusedCall("cy", "team_handoff", `{`+task+`,"to":"cy","packet":"{\"goal\":\"g\"}"}`, "delegation relationship")
	refusedCall("cy", "tasks_create", `{"title":"sub","parent_task_id":`+fmt.Sprintf("%q", id)+`}`, "delegation relationship")
	refusedCall("op", "tasks_update", `{`+task+`,"acceptance_criteria":"green"}`, "admin API")
	refusedCall("bob", "tasks_update", `{`+task+`,"tags":["outcome:x"]}`, "operators")
	refusedCall("cy", "create_reminder", `{"text":"x","in_seconds":60,"agent":"bob"}`, "delegation relationship")

	list := s.rpc(t, s.keys["cy"], modernHeaders("tools/list", ""), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`).result(t)
	for _, tool := range []string{"tasks_update", "activity_post", "tasks_complete", "tasks_block", "tasks_claim", "team_handoff", "create_reminder"} {
		require.Contains(t, toolNames(list), tool, "listed but refused")
	}

	// The related employee and the assignee pass.
	res = s.call(t, "ada", "activity_post", `{`+task+`,"text":"on it"}`).result(t)
	require.NotEqual(t, true, res["isError"], text(t, res))
	require.Equal(t, tools.EventCall, s.lastAudit(t).Event)
	// A malformed packet is a tool error naming the problem, and nothing moves.
	res = s.call(t, "bob", "team_handoff", `{`+task+`,"to":"ada","packet":"{\"goal\":\"g\",\"extra\":1}"}`).result(t)
	require.Equal(t, true, res["isError"])
	require.Contains(t, text(t, res), "nothing was handed off")
	res = s.call(t, "bob", "tasks_complete", `{`+task+`,"summary":"shipped"}`).result(t)
	require.NotEqual(t, true, res["isError"], text(t, res))
}
