package redisx_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// hearing is a live.Stream that reports each list_changed on a channel.
type hearing struct {
	p     identity.Principal
	heard chan struct{}
}

func (s *hearing) Principal() identity.Principal { return s.p }
func (s *hearing) Close()                        {}
func (s *hearing) NotifyToolsChanged(context.Context) error {
	s.heard <- struct{}{}
	return nil
}

// oneVersion is a live.Versions that never moves: only events tell the hubs.
type oneVersion struct{}

func (oneVersion) PolicyVersions(_ context.Context, ids []uuid.UUID) (map[uuid.UUID]int64, error) {
	out := map[uuid.UUID]int64{}
	for _, id := range ids {
		out[id] = 1
	}
	return out, nil
}

// TestHubsHearEachOtherOverRedis: a change committed on one replica reaches
// a stream held by another through the bus.
func TestHubsHearEachOtherOverRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	tenant, ada := uuid.New(), uuid.New()
	var mu sync.Mutex
	tools := []string{"a"}
	visible := func(context.Context, identity.Principal) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		return tools, nil
	}
	hub := func() *live.Hub {
		h := live.NewHub(live.Config{Visible: visible, Versions: oneVersion{}, ReconcileEvery: time.Hour, CheckEvery: time.Hour,
			Log: slog.New(slog.DiscardHandler)})
		require.NoError(t, h.Start(context.Background()))
		t.Cleanup(h.Stop)
		subscribed := make(chan struct{}, 4)
		sub := redisx.NewSubscriber(srv.Client(), h.Handle, func() { h.Kick(); subscribed <- struct{}{} }, slog.New(slog.DiscardHandler))
		require.NoError(t, sub.Start(context.Background()))
		t.Cleanup(sub.Stop)
		<-subscribed
		return h
	}
	hub()          // the replica where the change commits holds no stream
	other := hub() // the one that holds the stream
	s := &hearing{p: identity.Principal{TenantID: tenant, Kind: identity.KindEmployee, AgentID: ada}, heard: make(chan struct{}, 4)}
	t.Cleanup(other.Open(context.Background(), s))

	mu.Lock()
	tools = []string{"a", "b"}
	mu.Unlock()
	require.NoError(t, redisx.NewBus(srv.Client()).Publish(context.Background(),
		changes.Event{TenantID: tenant, Kind: changes.AgentChanged, AgentID: ada, Version: 2}))
	select {
	case <-s.heard:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream on the other replica heard no list_changed")
	}
}
