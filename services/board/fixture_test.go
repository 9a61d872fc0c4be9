package board_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// fixture is tenant acme with ada and bob in engineering (related), cy in
// sales (related to nobody), and tenant globex with gil; one actor per
// caller kind.
type fixture struct {
	ctx    context.Context
	db     *postgres.DB
	ids    *identity.Service
	store  *postgres.BoardStore
	svc    *board.Service
	grants *endedGrants
	rounds *endedRounds

	acme, globex      identity.Tenant
	ada, bob, cy, gil identity.Agent
	// Actors through MCP.
	op, ext, adaA, bobA, cyA, gilA board.Actor
}

type endedGrants struct {
	mu    sync.Mutex
	tasks []uuid.UUID
}

func (g *endedGrants) EndTask(_ context.Context, _, task uuid.UUID) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tasks = append(g.tasks, task)
	return nil
}

func (g *endedGrants) SyncGoal(context.Context, uuid.UUID, uuid.UUID, uuid.UUID, []string) error {
	return nil
}

func (g *endedGrants) ended() []uuid.UUID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]uuid.UUID(nil), g.tasks...)
}

type endedRounds struct {
	mu    sync.Mutex
	calls [][2]uuid.UUID // task, agent
}

func (r *endedRounds) EndRounds(_ context.Context, _, task, agent uuid.UUID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, [2]uuid.UUID{task, agent})
	return nil
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), db: pgtest.New(t), grants: &endedGrants{}, rounds: &endedRounds{}}
	log := slog.New(slog.DiscardHandler)
	idStore := postgres.NewIdentityStore(f.db)
	f.ids = identity.NewService(idStore, changes.Discard{}, log)
	f.store = postgres.NewBoardStore(f.db)
	f.svc = board.NewService(board.Deps{Store: f.store, Relations: agents.NewDelegation(idStore), Directory: idStore,
		Staff: f.ids, Grants: f.grants, Rounds: f.rounds, Logger: log})
	tt := pgtest.TwoTenants(t, f.db)
	f.acme, f.globex = tt.A, tt.B
	f.ada = f.agent(t, f.acme, "ada", "eng")
	f.bob = f.agent(t, f.acme, "bob", "eng")
	f.cy = f.agent(t, f.acme, "cy", "sales")
	f.gil = f.agent(t, f.globex, "gil", "eng")
	f.op = board.Actor{Principal: identity.Principal{TenantID: f.acme.ID, Kind: identity.KindOperator, CredentialID: "key:op",
		Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: f.acme, MCP: true}
	f.ext = board.Actor{Principal: identity.Principal{TenantID: f.acme.ID, Kind: identity.KindExternal, ClientID: "c1",
		MemberID: uuid.New(), Scopes: []string{identity.ScopeToolsAdmin}}, Tenant: f.acme, MCP: true}
	f.adaA, f.bobA, f.cyA = f.employee(f.acme, f.ada), f.employee(f.acme, f.bob), f.employee(f.acme, f.cy)
	f.gilA = f.employee(f.globex, f.gil)
	return f
}

func (f *fixture) agent(t *testing.T, tn identity.Tenant, name, dept string) identity.Agent {
	t.Helper()
	a, err := f.ids.CreateAgent(f.ctx, tn.ID, identity.NewAgent{Name: name, Department: dept})
	require.NoError(t, err)
	return a
}

func (f *fixture) employee(tn identity.Tenant, a identity.Agent) board.Actor {
	a2 := a
	return board.Actor{Principal: identity.Principal{TenantID: tn.ID, Kind: identity.KindEmployee, AgentID: a.ID,
		CredentialID: "key:" + a.Name}, Tenant: tn, Agent: &a2, MCP: true}
}

// task creates a task as the operator, assigned to assignee (uuid.Nil for
// none).
func (f *fixture) task(t *testing.T, title string, assignee uuid.UUID, kind board.Kind, tags ...string) board.Task {
	t.Helper()
	tk, err := f.svc.CreateTask(f.ctx, f.op, board.NewTask{Kind: kind, Title: title, Assignee: assignee, Tags: tags})
	require.NoError(t, err)
	return tk
}

// refused asserts err is a listed-but-refused record relationship refusal.
func refused(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	var r *tools.RefusalError
	require.True(t, errors.As(err, &r), "want a relationship refusal, got %v; %v", err, msgAndArgs)
	require.Equal(t, tools.CodeRefused, r.Decision.Code)
	require.Equal(t, tools.EventRelationshipRefused, r.Decision.Event)
}

func code(t *testing.T, err error, c fault.Code, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, c, fault.CodeOf(err), "error %v; %v", err, msgAndArgs)
}
