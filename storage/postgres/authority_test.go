package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
)

// TestKeyCreatorsAndMemberRemoval: a key records who made it and the
// member behind it; removing the member revokes that member's keys (and
// only theirs, and only in their tenant) and ends their sessions; LiveKeys
// reports the member's current role and drops keys whose member is gone.
func TestKeyCreatorsAndMemberRemoval(t *testing.T) {
	t.Parallel()
	s := setup(t)
	db := s.db
	ctx := context.Background()
	alice, err := s.svc.CreateMember(ctx, s.a.ID, "alice@acme.test", "correct horse battery", identity.RoleOperator)
	require.NoError(t, err)
	_, err = s.svc.CreateMember(ctx, s.a.ID, "owner@acme.test", "correct horse battery", identity.RoleOwner)
	require.NoError(t, err)
	asAlice := identity.Principal{TenantID: s.a.ID, Kind: identity.KindOperator, MemberID: alice.ID, Role: alice.Role,
		Scopes: alice.Role.Scopes(), CredentialID: "session:0011223344556677"}
	hers, _, err := s.svc.IssueKey(ctx, asAlice, s.a.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "alice's"})
	require.NoError(t, err)
	platform, _, err := s.svc.CreateKey(ctx, s.a.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "platform's"})
	require.NoError(t, err)
	bKey, _, err := s.svc.CreateKey(ctx, s.b.ID, identity.NewKey{Kind: identity.KeyOperator, Name: "globex"})
	require.NoError(t, err)

	got, err := s.store.Key(ctx, s.a.ID, hers.ID)
	require.NoError(t, err)
	require.Equal(t, "member:"+alice.ID.String(), got.CreatedBy)
	require.Equal(t, alice.ID, got.CreatorMember)
	all := slices.Sorted(slices.Values(identity.AllScopes))
	require.Equal(t, all, got.Scopes, "an operator holds every scope; the role bounds the key at use")
	got, err = s.store.Key(ctx, s.a.ID, platform.ID)
	require.NoError(t, err)
	require.Equal(t, "operator:system", got.CreatedBy)
	require.Equal(t, uuid.Nil, got.CreatorMember)

	live, err := db.LiveKeys(ctx, s.a.ID, []uuid.UUID{hers.ID, platform.ID, bKey.ID}, time.Now())
	require.NoError(t, err)
	require.ElementsMatch(t, []credentials.LiveKey{{ID: hers.ID, Scopes: all, Role: "operator"},
		{ID: platform.ID, Scopes: all}}, live, "globex's key is not acme's")

	// Alice signs in twice; removing her through tenant B does nothing.
	cs := postgres.NewCredentialStore(db)
	for _, v := range []string{"one", "two"} {
		sum := sha256.Sum256([]byte(v))
		require.NoError(t, cs.CreateSession(ctx, &credentials.Session{TenantID: s.a.ID, IDHash: sum[:], MemberID: alice.ID,
			ExpiresAt: time.Now().Add(time.Hour)}))
	}
	_, err = s.store.DeleteMember(ctx, s.b.ID, alice.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	require.NoError(t, s.store.EndSessions(ctx, s.b.ID, alice.ID, ""), "ending sessions through another tenant ends none")
	require.Equal(t, 2, sessionsOf(t, db, alice.ID))

	// Ending all but one keeps exactly the one named.
	one := sha256.Sum256([]byte("one"))
	require.NoError(t, s.store.EndSessions(ctx, s.a.ID, alice.ID, hex.EncodeToString(one[:8])))
	require.Equal(t, 1, sessionsOf(t, db, alice.ID))
	_, err = cs.SessionByHash(ctx, one[:], time.Now())
	require.NoError(t, err, "the kept session is still there")

	v, err := s.store.DeleteMember(ctx, s.a.ID, alice.ID)
	require.NoError(t, err)
	require.Positive(t, v)
	require.Equal(t, 0, sessionsOf(t, db, alice.ID))
	got, err = s.store.Key(ctx, s.a.ID, hers.ID)
	require.NoError(t, err)
	require.NotNil(t, got.RevokedAt, "her key is revoked with her")
	got, err = s.store.Key(ctx, s.a.ID, platform.ID)
	require.NoError(t, err)
	require.Nil(t, got.RevokedAt, "nobody else's")
	live, err = db.LiveKeys(ctx, s.a.ID, []uuid.UUID{hers.ID, platform.ID}, time.Now())
	require.NoError(t, err)
	require.Len(t, live, 1)
}

func sessionsOf(t *testing.T, db *postgres.DB, member uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM member_sessions WHERE member_id = $1`, member).Scan(&n))
	return n
}
