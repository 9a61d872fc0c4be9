package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/storage/postgres"
)

func newUpstream(tenant uuid.UUID, name string) *upstreams.Server {
	return &upstreams.Server{ID: uuid.New(), TenantID: tenant, Name: name, Transport: upstreams.StreamableHTTP,
		URL: "https://mcp.example.com/mcp", Auth: upstreams.Auth{Kind: upstreams.AuthNone}, Enabled: true, Limits: upstreams.DefaultLimits,
		Command: []string{}, AllowHosts: []string{}}
}

// TestUpstreamIsolation: tenant B gets not-found for tenant A's server,
// its secrets, tools and tokens by every path, and searches none of them.
func TestUpstreamIsolation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewUpstreamStore(s.db)
	ctx := context.Background()
	srv := newUpstream(s.a.ID, "github")
	require.NoError(t, st.Create(ctx, srv, 10))
	require.NoError(t, st.SetSecret(ctx, s.a.ID, srv.ID, upstreams.Secret{Kind: upstreams.SecretHeader, Name: "Authorization", Sealed: "v1.k.x.y"}, 10))
	tools := []upstreams.Tool{{Name: "create_issue", Description: "Open an issue", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	got, err := st.Server(ctx, s.a.ID, srv.ID)
	require.NoError(t, err)
	require.NoError(t, st.SaveTools(ctx, s.a.ID, srv.ID, got.Version, tools, ""))
	require.NoError(t, st.SaveToken(ctx, upstreams.Token{TenantID: s.a.ID, ServerID: srv.ID, SealedAccess: "v1.k.a.b"}))

	got, err = st.ServerByName(ctx, s.a.ID, "github")
	require.NoError(t, err)
	require.Equal(t, 1, got.ToolCount)
	require.Equal(t, []upstreams.SecretName{{Kind: upstreams.SecretHeader, Name: "Authorization", Set: true}}, got.Secrets)
	require.Equal(t, int64(2), got.Version, "a secret bumps the version")
	cat, err := st.Catalog(ctx, s.a.ID, "")
	require.NoError(t, err)
	require.Len(t, cat, 1)

	notFound := func(err error, what string) {
		t.Helper()
		require.True(t, fault.Is(err, fault.NotFound), "tenant B %s: %v", what, err)
	}
	_, err = st.Server(ctx, s.b.ID, srv.ID)
	notFound(err, "reading A's server by id")
	_, err = st.ServerByName(ctx, s.b.ID, "github")
	notFound(err, "reading A's server by name")
	_, err = st.Update(ctx, s.b.ID, srv.ID, func(*upstreams.Server) error { return nil })
	notFound(err, "updating A's server")
	_, _, err = st.Delete(ctx, s.b.ID, srv.ID)
	notFound(err, "deleting A's server")
	err = st.SetSecret(ctx, s.b.ID, srv.ID, upstreams.Secret{Kind: upstreams.SecretHeader, Name: "X", Sealed: "v"}, 10)
	notFound(err, "setting a secret of A's server")
	err = st.DeleteSecret(ctx, s.b.ID, srv.ID, upstreams.SecretHeader, "Authorization")
	notFound(err, "deleting a secret of A's server")
	secs, err := st.Secrets(ctx, s.b.ID, srv.ID)
	require.NoError(t, err)
	require.Empty(t, secs)
	err = st.SaveTools(ctx, s.b.ID, srv.ID, got.Version, tools, "")
	notFound(err, "saving tools of A's server")
	_, _, err = st.Tool(ctx, s.b.ID, "github", "create_issue")
	notFound(err, "reading A's tool")
	_, err = st.Token(ctx, s.b.ID, srv.ID, uuid.Nil)
	notFound(err, "reading A's token")
	err = st.SaveToken(ctx, upstreams.Token{TenantID: s.b.ID, ServerID: srv.ID, SealedAccess: "x"})
	notFound(err, "saving a token for A's server")
	err = st.DeleteToken(ctx, s.b.ID, srv.ID, uuid.Nil)
	notFound(err, "deleting A's token")
	list, err := st.List(ctx, s.b.ID)
	require.NoError(t, err)
	require.Empty(t, list)
	cat, err = st.Catalog(ctx, s.b.ID, "")
	require.NoError(t, err)
	require.Empty(t, cat)

	require.NoError(t, st.Create(ctx, newUpstream(s.b.ID, "github"), 10), "B may use the same name")
	err = st.Create(ctx, newUpstream(s.a.ID, "github"), 10)
	require.True(t, fault.Is(err, fault.Conflict), "a second server of the same name: %v", err)
	err = st.Create(ctx, newUpstream(s.a.ID, "other"), 1)
	require.True(t, fault.Is(err, fault.Conflict), "over the tenant's limit: %v", err)

	// A's server, disabled, leaves the catalog; deleted, it takes its
	// secrets, tools and tokens with it.
	_, err = st.Update(ctx, s.a.ID, srv.ID, func(s *upstreams.Server) error { s.Enabled = false; return nil })
	require.NoError(t, err)
	cat, err = st.Catalog(ctx, s.a.ID, "")
	require.NoError(t, err)
	require.Empty(t, cat)
	_, tokens, err := st.Delete(ctx, s.a.ID, srv.ID)
	require.NoError(t, err)
	require.Len(t, tokens, 1)
	secs, err = st.Secrets(ctx, s.a.ID, srv.ID)
	require.NoError(t, err)
	require.Empty(t, secs)
}

// TestUpstreamStaleRefresh: tools listed for an older version of a server
// are not saved over a change.
func TestUpstreamStaleRefresh(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewUpstreamStore(s.db)
	ctx := context.Background()
	srv := newUpstream(s.a.ID, "files")
	require.NoError(t, st.Create(ctx, srv, 10))
	old := srv.Version
	_, err := st.Update(ctx, s.a.ID, srv.ID, func(*upstreams.Server) error { return nil })
	require.NoError(t, err)
	require.NoError(t, st.SaveTools(ctx, s.a.ID, srv.ID, old, []upstreams.Tool{{Name: "read", InputSchema: json.RawMessage(`{}`)}}, ""))
	got, err := st.Server(ctx, s.a.ID, srv.ID)
	require.NoError(t, err)
	require.Zero(t, got.ToolCount)
	require.Nil(t, got.RefreshedAt)
}

// TestUpstreamConnectStates: a pending Connect is taken once, only by its
// tenant, member and session, only before it expires; another tenant can
// neither take one nor save one for a server it does not own; a member's
// pending Connects are bounded.
func TestUpstreamConnectStates(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewUpstreamStore(s.db)
	ctx := context.Background()
	srv := newUpstream(s.a.ID, "github")
	require.NoError(t, st.Create(ctx, srv, 10))
	m := uuid.New()
	state := func(hash string, expires time.Time) upstreams.State {
		return upstreams.State{TenantID: s.a.ID, StateHash: hash, ServerID: srv.ID, MemberID: m, SessionHash: "session",
			SealedVerifier: "v1.k.a.b", RedirectURI: "https://visor.example/t/a/dashboard/mcp-servers/callback", ExpiresAt: expires}
	}
	require.NoError(t, st.SaveState(ctx, state("expired", time.Now().Add(-time.Minute))))
	_, err := st.TakeState(ctx, s.a.ID, "expired", m, "session")
	require.True(t, fault.Is(err, fault.NotFound), "expired")

	require.NoError(t, st.SaveState(ctx, state("live", time.Now().Add(time.Hour))))
	_, err = st.TakeState(ctx, s.b.ID, "live", m, "session")
	require.True(t, fault.Is(err, fault.NotFound), "another tenant")
	_, err = st.TakeState(ctx, s.a.ID, "live", m, "another session")
	require.True(t, fault.Is(err, fault.NotFound), "another session")
	_, err = st.TakeState(ctx, s.a.ID, "live", uuid.New(), "session")
	require.True(t, fault.Is(err, fault.NotFound), "another member")
	got, err := st.TakeState(ctx, s.a.ID, "live", m, "session")
	require.NoError(t, err)
	require.Equal(t, srv.ID, got.ServerID)
	_, err = st.TakeState(ctx, s.a.ID, "live", m, "session")
	require.True(t, fault.Is(err, fault.NotFound), "taken once")

	foreign := state("foreign", time.Now().Add(time.Hour))
	foreign.TenantID = s.b.ID
	require.Error(t, st.SaveState(ctx, foreign), "no state for another tenant's server")

	for i := range 20 {
		require.NoError(t, st.SaveState(ctx, state(fmt.Sprint("many-", i), time.Now().Add(time.Hour))))
	}
	require.True(t, fault.Is(st.SaveState(ctx, state("one-too-many", time.Now().Add(time.Hour))), fault.Conflict))
}
