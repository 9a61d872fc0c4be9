package grants_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

func nop(context.Context, tools.Call) (*tools.Result, error) { return &tools.Result{Text: "ok"}, nil }

// fixture: a tenant with an employee whose scoped_tools name secret_* and
// the Visor-named mcp__visor__plain_write, a registry with those tools and
// capability_request, and a hub that announces to a counting stream.
type fixture struct {
	ctx      context.Context
	svc      *grants.Service
	reg      *tools.Registry
	subjects *tools.Subjects
	hub      *live.Hub
	tenant   identity.Tenant
	other    identity.Tenant
	ada      identity.Agent
	gil      identity.Agent
	stream   *countStream
	employee identity.Principal
}

type countStream struct {
	p identity.Principal
	n atomic.Int32
}

func (s *countStream) Principal() identity.Principal            { return s.p }
func (s *countStream) NotifyToolsChanged(context.Context) error { s.n.Add(1); return nil }
func (s *countStream) Close()                                   {}

func setup(t *testing.T) *fixture {
	t.Helper()
	db := pgtest.New(t)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	store := postgres.NewIdentityStore(db)
	f := &fixture{ctx: ctx}
	f.hub = live.NewHub(live.Config{Versions: db, ReconcileEvery: time.Hour, Log: log,
		Visible: func(ctx context.Context, p identity.Principal) ([]string, error) {
			return tools.VisibleFunc(f.reg, f.subjects)(ctx, p)
		}})
	ids := identity.NewService(store, f.hub, log)
	f.svc = grants.NewService(postgres.NewGrantStore(db), store, f.hub, tools.Match, log)
	f.reg = tools.NewRegistry()
	for _, name := range []string{"agent_status", "plain_write", "secret_read", "secret_write"} {
		f.reg.Register(tools.Tool{Name: name, Scope: identity.ScopeToolsRead, Handler: nop})
	}
	f.svc.Register(f.reg)
	f.subjects = tools.NewSubjects(store, f.svc, 0)
	require.NoError(t, f.hub.Start(ctx))
	t.Cleanup(f.hub.Stop)

	tt := pgtest.TwoTenants(t, db)
	f.tenant, f.other = tt.A, tt.B
	var err error
	scoped := identity.AgentSettings{Capabilities: identity.Capabilities{ScopedTools: []string{"secret_*", "mcp__visor__plain_write"}}}
	f.ada, err = ids.CreateAgent(ctx, f.tenant.ID, identity.NewAgent{Name: "ada", Settings: scoped})
	require.NoError(t, err)
	f.gil, err = ids.CreateAgent(ctx, f.other.ID, identity.NewAgent{Name: "gil", Settings: scoped})
	require.NoError(t, err)
	f.employee = identity.Principal{TenantID: f.tenant.ID, Kind: identity.KindEmployee, AgentID: f.ada.ID, Scopes: identity.DefaultEmployeeScopes}
	f.stream = &countStream{p: f.employee}
	t.Cleanup(f.hub.Open(ctx, f.stream))
	return f
}

func (f *fixture) visible(t *testing.T) []string {
	t.Helper()
	names, err := tools.VisibleFunc(f.reg, f.subjects)(f.ctx, f.employee)
	require.NoError(t, err)
	return names
}

// settle waits until the hub has acted on every change announced so far:
// the services publish to it before they return, so what it has not sent
// by then it never will.
func (f *fixture) settle(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return f.hub.Stats().Pending == 0 }, 5*time.Second, time.Millisecond)
}

func (f *fixture) waitNotified(t *testing.T, n int32, what string) {
	t.Helper()
	require.Eventually(t, func() bool { return f.stream.n.Load() == n }, 3*time.Second, 5*time.Millisecond, what)
}

func TestScopedToolHiddenUntilApprovedAndGoneWhenRevoked(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.Equal(t, []string{"agent_status", "capability_request"}, f.visible(t), "scoped tools start hidden")

	r, err := f.svc.Ask(f.ctx, f.employee, "secret_read", "I need to read the vault for task 7")
	require.NoError(t, err)
	require.Equal(t, grants.Pending, r.Status)
	_, err = f.svc.Ask(f.ctx, f.employee, "secret_read", "again")
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	f.settle(t)
	require.Zero(t, f.stream.n.Load(), "a pending request changes nothing visible")

	_, g, err := f.svc.Approve(f.ctx, f.tenant.ID, r.ID, grants.Approval{By: "operator:k"})
	require.NoError(t, err)
	f.waitNotified(t, 1, "approval announces the new tool")
	require.Equal(t, []string{"agent_status", "capability_request", "secret_read"}, f.visible(t))

	_, err = f.svc.Ask(f.ctx, f.employee, "secret_read", "once more")
	require.True(t, fault.Is(err, fault.Conflict), "already granted: %v", err)

	_, err = f.svc.Revoke(f.ctx, f.tenant.ID, g.ID, "operator:k")
	require.NoError(t, err)
	f.waitNotified(t, 2, "revocation announces the loss")
	require.Equal(t, []string{"agent_status", "capability_request"}, f.visible(t))
}

func TestApprovalEntriesUseTheAllowedToolsMatchingRules(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r, err := f.svc.Ask(f.ctx, f.employee, "secret_read", "vault")
	require.NoError(t, err)
	// The operator widens the grant to an anchored prefix.
	_, _, err = f.svc.Approve(f.ctx, f.tenant.ID, r.ID, grants.Approval{By: "op", Tool: "secret_*"})
	require.NoError(t, err)
	f.waitNotified(t, 1, "widened approval")
	require.Equal(t, []string{"agent_status", "capability_request", "secret_read", "secret_write"}, f.visible(t))

	// mcp__visor__ names Visor's own tool; mcp__other__ never does.
	_, err = f.svc.Grant(f.ctx, f.tenant.ID, f.ada.ID, "mcp__other__plain_write", uuid.Nil, 0, "op")
	require.NoError(t, err)
	f.settle(t)
	require.EqualValues(t, 1, f.stream.n.Load(), "a grant naming another server's tool shows nothing, so nothing is sent")
	_, err = f.svc.Grant(f.ctx, f.tenant.ID, f.ada.ID, "mcp__visor__plain_write", uuid.Nil, 0, "op")
	require.NoError(t, err)
	f.waitNotified(t, 2, "mcp__visor__ grant")
	require.Contains(t, f.visible(t), "plain_write")

	// A request is for a scoped tool only: anything else could not be shown by a grant.
	_, err = f.svc.Ask(f.ctx, f.employee, "agent_status", "already visible")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	_, err = f.svc.Ask(f.ctx, f.employee, "secret read", "bad name")
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	_, err = f.svc.Ask(f.ctx, identity.Principal{TenantID: f.tenant.ID, Kind: identity.KindOperator}, "secret_read", "x")
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
}

func TestTimeLimitedGrantExpiresWithListChanged(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r, err := f.svc.Ask(f.ctx, f.employee, "secret_read", "vault")
	require.NoError(t, err)
	_, g, err := f.svc.Approve(f.ctx, f.tenant.ID, r.ID, grants.Approval{By: "op", TTL: time.Second})
	require.NoError(t, err)
	require.NotNil(t, g.ExpiresAt)
	f.waitNotified(t, 1, "approval")

	x := grants.NewExpirer(f.svc, 100*time.Millisecond, slog.New(slog.DiscardHandler))
	require.NoError(t, x.Start(f.ctx))
	t.Cleanup(x.Stop)
	f.waitNotified(t, 2, "expiry takes the tool away with list_changed")
	require.NotContains(t, f.visible(t), "secret_read")

	_, _, err = f.svc.Approve(f.ctx, f.tenant.ID, r.ID, grants.Approval{By: "op"})
	require.True(t, fault.Is(err, fault.Conflict), "%v", err)
	_, _, err = f.svc.Approve(f.ctx, f.tenant.ID, uuid.New(), grants.Approval{By: "op", TTL: -time.Second})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
}

func TestTaskEndTakesTaskGrantsAway(t *testing.T) {
	t.Parallel()
	f := setup(t)
	task := uuid.New()
	_, err := f.svc.Grant(f.ctx, f.tenant.ID, f.ada.ID, "secret_write", task, 0, "op")
	require.NoError(t, err)
	f.waitNotified(t, 1, "task grant")
	require.NoError(t, f.svc.EndTask(f.ctx, f.tenant.ID, task))
	f.waitNotified(t, 2, "task end")
	require.NotContains(t, f.visible(t), "secret_write")
}

func TestDenyAndOtherTenantsAreUntouched(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gilP := identity.Principal{TenantID: f.other.ID, Kind: identity.KindEmployee, AgentID: f.gil.ID, Scopes: identity.DefaultEmployeeScopes}
	gilStream := &countStream{p: gilP}
	t.Cleanup(f.hub.Open(f.ctx, gilStream))

	r, err := f.svc.Ask(f.ctx, f.employee, "secret_read", "vault")
	require.NoError(t, err)
	// Tenant globex cannot decide acme's request.
	_, _, err = f.svc.Approve(f.ctx, f.other.ID, r.ID, grants.Approval{By: "op"})
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	denied, err := f.svc.Deny(f.ctx, f.tenant.ID, r.ID, "op", "not now")
	require.NoError(t, err)
	require.Equal(t, grants.Denied, denied.Status)

	_, err = f.svc.Grant(f.ctx, f.tenant.ID, f.ada.ID, "secret_read", uuid.Nil, 0, "op")
	require.NoError(t, err)
	f.waitNotified(t, 1, "grant to ada")
	f.settle(t)
	require.Zero(t, gilStream.n.Load(), "another tenant's employee hears nothing")
	_, err = f.svc.Grant(f.ctx, f.other.ID, f.ada.ID, "secret_read", uuid.Nil, 0, "op")
	require.True(t, fault.Is(err, fault.NotFound), "a tenant cannot grant to another tenant's agent: %v", err)
}

var _ changes.Publisher = (*live.Hub)(nil)
