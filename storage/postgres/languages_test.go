package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestMemberLanguageIsPerTenant: a member's language choice is read and
// written only through the member's own tenant; naming another tenant's
// member stores nothing and reads nothing.
func TestMemberLanguageIsPerTenant(t *testing.T) {
	t.Parallel()
	tt := pgtest.TwoTenants(t, nil)
	store, a, b := tt.Store, tt.A, tt.B
	ctx := context.Background()
	alice := tt.Member(t, a, "alice@acme.test", identity.RoleOwner)

	got, err := store.MemberLanguage(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Empty(t, got, "no choice yet")
	require.NoError(t, store.SetMemberLanguage(ctx, a.ID, alice.ID, "ja"))
	require.NoError(t, store.SetMemberLanguage(ctx, a.ID, alice.ID, "en"))
	got, err = store.MemberLanguage(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Equal(t, "en", got)

	got, err = store.MemberLanguage(ctx, b.ID, alice.ID)
	require.NoError(t, err)
	require.Empty(t, got, "tenant B reads nothing of tenant A's member")
	err = store.SetMemberLanguage(ctx, b.ID, alice.ID, "ja")
	require.True(t, fault.Is(err, fault.Invalid), "tenant B cannot write for tenant A's member: %v", err)
	got, err = store.MemberLanguage(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Equal(t, "en", got)
	require.True(t, fault.Is(store.SetMemberLanguage(ctx, a.ID, alice.ID, "xx"), fault.Invalid), "only offered languages")
	require.True(t, fault.Is(store.SetMemberLanguage(ctx, a.ID, uuid.New(), "ja"), fault.Invalid), "no such member")
}

// TestAuditKeepsDashboardRows: the trail accepts rows from the dashboard
// and filters by that source.
func TestAuditKeepsDashboardRows(t *testing.T) {
	t.Parallel()
	l, s := newAuditLog(t)
	ctx := context.Background()
	e := audit.Entry{ID: uuid.New(), TenantID: s.a.ID, PrincipalKind: "operator", PrincipalID: "member:m1", Source: audit.SourceDashboard,
		Outcome: audit.OutcomeRefused, Code: 403, Event: "operator_action", Action: "createAgent", Object: "agent:x", At: time.Now()}
	require.NoError(t, l.Record(ctx, e))
	got, err := l.List(ctx, s.a.ID, audit.Filter{Source: audit.SourceDashboard})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "createAgent", got[0].Action)
	got, err = l.List(ctx, s.b.ID, audit.Filter{Source: audit.SourceDashboard})
	require.NoError(t, err)
	require.Empty(t, got)
}
