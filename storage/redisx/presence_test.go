package redisx_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// streams is a replica's streams by tenant, changed by the test.
type streams struct {
	mu sync.Mutex
	m  map[uuid.UUID][]live.Connection
}

func (s *streams) set(m map[uuid.UUID][]live.Connection) { s.mu.Lock(); s.m = m; s.mu.Unlock() }
func (s *streams) snap(string) map[uuid.UUID][]live.Connection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m
}

// TestPresenceListsEveryReplicasStreams: each replica's report shows up in
// its tenants' listings only, named by replica, oldest first; a stream that
// closed disappears at the next report, a replica that stops withdraws its
// streams, and a report older than three periods is ignored.
func TestPresenceListsEveryReplicasStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redistest.New(t).Client
	log := slog.New(slog.DiscardHandler)
	acme, globex := uuid.New(), uuid.New()
	t0 := time.Now().Add(-time.Minute)
	ada := live.Connection{Kind: identity.KindEmployee, AgentID: uuid.New(), CredentialID: "key:ada", Opened: t0}
	bob := live.Connection{Kind: identity.KindEmployee, AgentID: uuid.New(), CredentialID: "key:bob", Opened: t0.Add(time.Second)}
	gil := live.Connection{Kind: identity.KindExternal, ClientID: "client-g", CredentialID: "oauth:gil", Opened: t0}
	var sa, sb streams
	sa.set(map[uuid.UUID][]live.Connection{acme: {bob}})
	sb.set(map[uuid.UUID][]live.Connection{acme: {ada}, globex: {gil}})
	a := redisx.NewPresence(rdb, "replica-a", time.Hour, sa.snap, log)
	b := redisx.NewPresence(rdb, "replica-b", time.Hour, sb.snap, log)
	a.Report(ctx)
	require.NoError(t, b.Start(ctx)) // reports at once
	t.Cleanup(b.Stop)
	t.Cleanup(a.Stop)

	want := func(replica string, c live.Connection) live.Connection {
		c.Replica, c.Opened = replica, c.Opened.UTC().Round(0)
		return c
	}
	require.Eventually(t, func() bool {
		got, err := a.Connected(ctx, acme)
		return err == nil && len(got) == 2
	}, 5*time.Second, 10*time.Millisecond)
	got, err := a.Connected(ctx, acme)
	require.NoError(t, err)
	require.Equal(t, []live.Connection{want("replica-b", ada), want("replica-a", bob)}, normalize(got))
	got, err = a.Connected(ctx, globex)
	require.NoError(t, err)
	require.Equal(t, []live.Connection{want("replica-b", gil)}, normalize(got), "globex sees only its own streams")

	sa.set(nil) // bob's stream closed
	a.Report(ctx)
	got, err = b.Connected(ctx, acme)
	require.NoError(t, err)
	require.Equal(t, []live.Connection{want("replica-b", ada)}, normalize(got))

	b.Stop() // withdraws
	got, err = a.Connected(ctx, acme)
	require.NoError(t, err)
	require.Empty(t, got)

	old, _ := json.Marshal(map[string]any{"at": time.Now().Add(-4 * time.Hour), "streams": []live.Connection{bob}})
	require.NoError(t, rdb.HSet(ctx, redisx.PresenceKey(acme), "replica-gone", old).Err())
	got, err = a.Connected(ctx, acme)
	require.NoError(t, err)
	require.Empty(t, got, "a report older than three periods is ignored")
}

// normalize drops the monotonic clock reading and zone JSON does not carry.
func normalize(cs []live.Connection) []live.Connection {
	for i := range cs {
		cs[i].Opened = cs[i].Opened.UTC().Round(0)
	}
	return cs
}
