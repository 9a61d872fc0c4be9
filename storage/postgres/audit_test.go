package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

func entry(tenant uuid.UUID, tool, outcome string) audit.Entry {
	return audit.Entry{ID: uuid.New(), TenantID: tenant, PrincipalKind: "employee", PrincipalID: "agent:x", Tool: tool,
		ArgsDigest: "d", Outcome: outcome, Event: "tool_call", Latency: 1500 * time.Microsecond, At: time.Now()}
}

type auditEnv struct {
	db   *postgres.DB
	a, b identity.Tenant
}

func newAuditLog(t *testing.T) (*postgres.AuditLog, auditEnv) { return newAuditLogTB(t) }

func newAuditLogTB(t testing.TB) (*postgres.AuditLog, auditEnv) {
	env := newAuditEnv(t)
	l := postgres.NewAuditLog(env.db, 4, discardLogger())
	require.NoError(t, l.Start(context.Background()))
	t.Cleanup(l.Stop)
	return l, env
}

// newAuditEnv is a fresh database with two tenants.
func newAuditEnv(t testing.TB) auditEnv {
	tt := pgtest.TwoTenants(t, nil)
	return auditEnv{db: tt.DB, a: tt.A, b: tt.B}
}

func TestAuditGroupCommitAndDurability(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- l.Record(ctx, entry(s.a.ID, fmt.Sprintf("tool_%d", i%5), audit.OutcomeOK))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Every Record returned only after its row committed: all are readable now.
	got, err := l.List(ctx, s.a.ID, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, n)
	require.Less(t, l.Commits(), int64(n), "concurrent calls share commits")
	t.Logf("%d rows in %d commits", n, l.Commits())
}

func TestAuditFiltersPagingAndIsolation(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	for i := range 5 {
		e := entry(s.a.ID, "agent_status", audit.OutcomeOK)
		e.At = time.Now().Add(time.Duration(i) * time.Second)
		require.NoError(t, l.Record(ctx, e))
	}
	refused := entry(s.a.ID, "create_agent", audit.OutcomeRefused)
	refused.Event, refused.Code, refused.At = "permission_denied", -32003, time.Now().Add(time.Minute)
	require.NoError(t, l.Record(ctx, refused))
	require.NoError(t, l.Record(ctx, entry(s.b.ID, "agent_status", audit.OutcomeOK)))

	got, err := l.List(ctx, s.a.ID, audit.Filter{Event: "permission_denied"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, refused.ID, got[0].ID)
	require.EqualValues(t, -32003, got[0].Code)
	require.Equal(t, 1500*time.Microsecond, got[0].Latency)

	page1, err := l.List(ctx, s.a.ID, audit.Filter{Tool: "agent_status", Limit: 3})
	require.NoError(t, err)
	require.Len(t, page1, 3)
	page2, err := l.List(ctx, s.a.ID, audit.Filter{Tool: "agent_status", Limit: 3, Before: page1[2].ID})
	require.NoError(t, err)
	require.Len(t, page2, 2)
	require.True(t, page2[0].At.Before(page1[2].At))

	// Tenant B sees only its own row; tenant A's rows are invisible to it.
	other, err := l.List(ctx, s.b.ID, audit.Filter{})
	require.NoError(t, err)
	require.Len(t, other, 1)
	none, err := l.List(ctx, s.b.ID, audit.Filter{Before: refused.ID})
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestAuditAppendOnly(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	e := entry(s.a.ID, "agent_status", audit.OutcomeOK)
	require.NoError(t, l.Record(ctx, e))
	_, err := s.db.Pool.Exec(ctx, `UPDATE audit_events SET outcome = 'failed' WHERE id = $1`, e.ID)
	require.ErrorContains(t, err, "append-only")
}

// TestAuditOperatorActions: an operator action's row keeps where it came
// from, what was done to which object and the masked change; the filters
// select by each, old-style rows read as tool calls, and another tenant
// sees none of it.
func TestAuditOperatorActions(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	call := entry(s.a.ID, "agent_status", audit.OutcomeOK) // Source left empty: a tool call
	op := audit.Entry{ID: uuid.New(), TenantID: s.a.ID, PrincipalKind: "operator", PrincipalID: "member:m1", Source: audit.SourceAdminAPI,
		Action: "updateMember", Object: "member:m2", Change: `{"password":"(set)","role":"admin"}`, ArgsDigest: "sha",
		Outcome: audit.OutcomeOK, Code: 200, Event: "operator_action", At: time.Now()}
	rejected := op
	rejected.ID, rejected.Source, rejected.Action, rejected.Outcome, rejected.Code = uuid.New(), audit.SourceCLI, "createMember", audit.OutcomeRejected, 400
	other := op
	other.ID, other.TenantID = uuid.New(), s.b.ID
	for _, e := range []audit.Entry{call, op, rejected, other} {
		require.NoError(t, l.Record(ctx, e))
	}

	got, err := l.List(ctx, s.a.ID, audit.Filter{Source: audit.SourceAdminAPI})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, op.Change, got[0].Change)
	require.Equal(t, op.Object, got[0].Object)
	require.Equal(t, "updateMember", got[0].Action)

	got, err = l.List(ctx, s.a.ID, audit.Filter{Object: "member:m2"})
	require.NoError(t, err)
	require.Len(t, got, 2)
	got, err = l.List(ctx, s.a.ID, audit.Filter{Action: "createMember", Outcome: audit.OutcomeRejected})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, audit.SourceCLI, got[0].Source)
	got, err = l.List(ctx, s.a.ID, audit.Filter{Source: audit.SourceMCP})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, call.ID, got[0].ID)

	got, err = l.List(ctx, s.b.ID, audit.Filter{Object: "member:m2"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, other.ID, got[0].ID)
}
