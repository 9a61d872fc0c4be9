package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

// credSetup adds the credential store, a member and a client to the
// two-tenant bundle.
func credSetup(t *testing.T) (twoTenants, *postgres.CredentialStore, identity.Member, credentials.Client) {
	t.Helper()
	ctx := context.Background()
	s := tenantsOnly(t)
	s.agentA = s.tt.Agent(t, s.a, "ada")
	m := s.tt.Member(t, s.a, "alice@acme.test", identity.RoleOwner)
	cs := postgres.NewCredentialStore(s.db)
	c := credentials.Client{TenantID: s.a.ID, ID: "vc_1", Kind: credentials.ClientDynamic, RedirectURIs: []string{"https://c.example/cb"},
		GrantTypes: []string{"authorization_code"}, Scopes: []string{"tools:read"}, AuthMethod: credentials.AuthNone}
	require.NoError(t, cs.CreateClient(ctx, &c))
	return s, cs, m, c
}

func TestClientIsolation(t *testing.T) {
	t.Parallel()
	s, cs, _, c := credSetup(t)
	ctx := context.Background()
	_, err := cs.Client(ctx, s.b.ID, c.ID)
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	require.True(t, fault.Is(cs.DeleteClient(ctx, s.b.ID, c.ID), fault.NotFound))
	list, err := cs.ListClients(ctx, s.b.ID)
	require.NoError(t, err)
	require.Empty(t, list)
	n, err := cs.CountClientsSince(ctx, s.b.ID, credentials.ClientDynamic, time.Time{})
	require.NoError(t, err)
	require.Zero(t, n)
	// The same id is free in another tenant; a duplicate in one tenant conflicts.
	cb := c
	cb.TenantID = s.b.ID
	require.NoError(t, cs.CreateClient(ctx, &cb))
	require.True(t, fault.Is(cs.CreateClient(ctx, &c), fault.Conflict))
	// A metadata document cannot take over a registered client's id.
	now := time.Now()
	md := credentials.Client{TenantID: s.a.ID, ID: c.ID, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes, Scopes: c.Scopes, FetchedAt: &now}
	require.True(t, fault.Is(cs.PutMetadataClient(ctx, &md), fault.Conflict))
	got, err := cs.Client(ctx, s.a.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, credentials.ClientDynamic, got.Kind)
}

func TestTokenAndConsentIsolation(t *testing.T) {
	t.Parallel()
	s, cs, m, c := credSetup(t)
	ctx := context.Background()
	tok := credentials.Token{TenantID: s.a.ID, Kind: credentials.KindAccess, Signature: "sig", RequestID: "req", ClientID: c.ID,
		MemberID: m.ID, Request: []byte(`{}`), ExpiresAt: time.Now().Add(time.Hour)}
	require.NoError(t, cs.CreateToken(ctx, &tok))
	_, err := cs.Token(ctx, s.b.ID, credentials.KindAccess, "sig")
	require.True(t, fault.Is(err, fault.NotFound))
	require.True(t, fault.Is(cs.DeactivateToken(ctx, s.b.ID, credentials.KindAccess, "sig"), fault.NotFound))
	require.NoError(t, cs.RevokeGrant(ctx, s.b.ID, "", "req"))
	require.NoError(t, cs.DeleteToken(ctx, s.b.ID, credentials.KindAccess, "sig"))
	got, err := cs.Token(ctx, s.a.ID, credentials.KindAccess, "sig")
	require.NoError(t, err)
	require.True(t, got.Active, "tenant B's calls left A's token alone")
	require.NoError(t, cs.DeactivateToken(ctx, s.a.ID, credentials.KindAccess, "sig"))
	require.True(t, fault.Is(cs.DeactivateToken(ctx, s.a.ID, credentials.KindAccess, "sig"), fault.NotFound), "single use")

	require.NoError(t, cs.AddConsent(ctx, s.a.ID, m.ID, c.ID, []string{"tools:read"}))
	require.NoError(t, cs.AddConsent(ctx, s.a.ID, m.ID, c.ID, []string{"tools:write"}))
	sc, err := cs.Consent(ctx, s.a.ID, m.ID, c.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"tools:read", "tools:write"}, sc)
	_, err = cs.Consent(ctx, s.b.ID, m.ID, c.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	all, err := cs.ListConsents(ctx, s.b.ID, m.ID)
	require.NoError(t, err)
	require.Empty(t, all)
	require.True(t, fault.Is(cs.RevokeConsent(ctx, s.b.ID, m.ID, c.ID), fault.NotFound))
	require.NoError(t, cs.RevokeConsent(ctx, s.a.ID, m.ID, c.ID))
}

func TestSessionRoundTokenAndCleanup(t *testing.T) {
	t.Parallel()
	s, cs, m, c := credSetup(t)
	ctx := context.Background()
	now := time.Now()
	live := credentials.Session{TenantID: s.a.ID, IDHash: []byte("live-hash-000000000000000000000000"), MemberID: m.ID, ExpiresAt: now.Add(time.Hour)}
	old := credentials.Session{TenantID: s.a.ID, IDHash: []byte("old-hash-0000000000000000000000000"), MemberID: m.ID, ExpiresAt: now.Add(-48 * time.Hour)}
	require.NoError(t, cs.CreateSession(ctx, &live))
	require.NoError(t, cs.CreateSession(ctx, &old))
	got, err := cs.SessionByHash(ctx, live.IDHash, now)
	require.NoError(t, err)
	require.Equal(t, s.a.ID, got.TenantID, "a session names its own tenant")
	_, err = cs.SessionByHash(ctx, old.IDHash, now)
	require.True(t, fault.Is(err, fault.NotFound), "expired sessions do not resolve")

	rt := credentials.RoundToken{TenantID: s.a.ID, ID: uuid.New(), AgentID: s.agentA.ID, TaskID: pgtest.Task(t, s.db, s.a.ID), SecretHash: []byte("h"),
		ExpiresAt: now.Add(-48 * time.Hour)}
	require.NoError(t, cs.CreateRoundToken(ctx, &rt))
	_, err = cs.RoundToken(ctx, s.b.ID, rt.ID)
	require.True(t, fault.Is(err, fault.NotFound))
	require.True(t, fault.Is(cs.RevokeRoundToken(ctx, s.b.ID, rt.ID), fault.NotFound))

	expired := credentials.Token{TenantID: s.a.ID, Kind: credentials.KindCode, Signature: "old", RequestID: "r", ClientID: c.ID,
		MemberID: m.ID, Request: []byte(`{}`), ExpiresAt: now.Add(-48 * time.Hour)}
	fresh := expired
	fresh.Signature, fresh.ExpiresAt = "fresh", now.Add(time.Hour)
	require.NoError(t, cs.CreateToken(ctx, &expired))
	require.NoError(t, cs.CreateToken(ctx, &fresh))
	n, err := cs.DeleteExpired(ctx, now.Add(-24*time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "the expired code, session and round token")
	_, err = cs.Token(ctx, s.a.ID, credentials.KindCode, "fresh")
	require.NoError(t, err)
	_, err = cs.SessionByHash(ctx, live.IDHash, now)
	require.NoError(t, err)
}
