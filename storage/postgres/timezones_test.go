package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// TestMemberTimeZoneIsPerTenant: a member's time zone is read, changed and
// forgotten only through the member's own tenant.
func TestMemberTimeZoneIsPerTenant(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	svc := identity.NewService(store, changes.Discard{}, discardLogger())
	ctx := context.Background()
	a, err := svc.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	b, err := svc.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	alice, err := svc.CreateMember(ctx, a.ID, "alice@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)

	got, err := store.MemberTimeZone(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Empty(t, got, "none chosen: the tenant's applies")
	require.NoError(t, store.SetMemberTimeZone(ctx, a.ID, alice.ID, "Asia/Tokyo"))
	require.NoError(t, store.SetMemberTimeZone(ctx, a.ID, alice.ID, "Europe/Paris"))
	got, err = store.MemberTimeZone(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Equal(t, "Europe/Paris", got)

	got, err = store.MemberTimeZone(ctx, b.ID, alice.ID)
	require.NoError(t, err)
	require.Empty(t, got, "tenant B reads nothing of tenant A's member")
	require.True(t, fault.Is(store.SetMemberTimeZone(ctx, b.ID, alice.ID, "UTC"), fault.Invalid), "tenant B cannot write for tenant A's member")
	require.NoError(t, store.SetMemberTimeZone(ctx, b.ID, alice.ID, ""), "forgetting in tenant B touches nothing")
	got, err = store.MemberTimeZone(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Equal(t, "Europe/Paris", got)
	require.True(t, fault.Is(store.SetMemberTimeZone(ctx, a.ID, uuid.New(), "UTC"), fault.Invalid), "no such member")

	require.NoError(t, store.SetMemberTimeZone(ctx, a.ID, alice.ID, ""))
	got, err = store.MemberTimeZone(ctx, a.ID, alice.ID)
	require.NoError(t, err)
	require.Empty(t, got, "forgotten")
}
