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
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// recorder collects what a Subscriber delivers.
type recorder struct {
	mu         sync.Mutex
	events     []changes.Event
	subscribed int
}

func (r *recorder) handle(e changes.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}
func (r *recorder) onSub() { r.mu.Lock(); r.subscribed++; r.mu.Unlock() }
func (r *recorder) snapshot() ([]changes.Event, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]changes.Event(nil), r.events...), r.subscribed
}

func startSubscriber(t *testing.T, srv *redistest.Server) *recorder {
	t.Helper()
	r := &recorder{}
	sub := redisx.NewSubscriber(srv.Client(), r.handle, r.onSub, slog.New(slog.DiscardHandler))
	require.NoError(t, sub.Start(context.Background()))
	t.Cleanup(sub.Stop)
	require.Eventually(t, func() bool { _, n := r.snapshot(); return n == 1 }, 5*time.Second, 10*time.Millisecond)
	return r
}

func TestBusDeliversEachTenantsEventsOnItsOwnChannel(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	r := startSubscriber(t, srv)
	bus := redisx.NewBus(srv.Client())
	ctx := context.Background()

	a, b := uuid.New(), uuid.New()
	agent := uuid.New()
	require.NoError(t, bus.Publish(ctx, changes.Event{TenantID: a, Kind: changes.AgentChanged, AgentID: agent, Version: 2}))
	require.NoError(t, bus.Publish(ctx, changes.Event{TenantID: b, Kind: changes.TenantSettings, Version: 7}))
	require.Eventually(t, func() bool { ev, _ := r.snapshot(); return len(ev) == 2 }, 5*time.Second, 10*time.Millisecond)
	ev, _ := r.snapshot()
	require.Equal(t, []changes.Event{
		{TenantID: a, Kind: changes.AgentChanged, AgentID: agent, Version: 2},
		{TenantID: b, Kind: changes.TenantSettings, Version: 7},
	}, ev)

	// The raw channel is per tenant.
	n, err := srv.Client().PubSubNumPat(ctx).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Equal(t, "visor:tenant:"+a.String()+":changes", redisx.ChangesChannel(a))
}

func TestSubscriberRefusesAnEventOnAnotherTenantsChannel(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	r := startSubscriber(t, srv)
	ctx := context.Background()
	a, b := uuid.New(), uuid.New()
	forged := `{"tenant_id":"` + b.String() + `","kind":"agent","version":3}`
	require.NoError(t, srv.Client().Publish(ctx, redisx.ChangesChannel(a), forged).Err())
	require.NoError(t, srv.Client().Publish(ctx, redisx.ChangesChannel(a), "not json").Err())
	require.NoError(t, redisx.NewBus(srv.Client()).Publish(ctx, changes.Event{TenantID: a, Kind: changes.KeyChanged, Version: 4}))
	// Redis delivers one channel's messages in order and the subscriber
	// handles them one at a time, so once the genuine event is in, the two
	// published before it have been refused, not merely delayed.
	require.Eventually(t, func() bool { ev, _ := r.snapshot(); return len(ev) == 1 }, 5*time.Second, 10*time.Millisecond)
	ev, _ := r.snapshot()
	require.Equal(t, []changes.Event{{TenantID: a, Kind: changes.KeyChanged, Version: 4}}, ev)
}

func TestSubscriberResubscribesAfterRedisRestartsAndSaysSo(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	r := startSubscriber(t, srv)
	ctx := context.Background()

	srv.Kill()
	// Publishing while Redis is down fails fast instead of hanging the
	// committing request.
	bus := redisx.NewBus(srv.Client())
	start := time.Now()
	require.Error(t, bus.Publish(ctx, changes.Event{TenantID: uuid.New(), Kind: changes.AgentChanged, Version: 2}))
	require.Less(t, time.Since(start), 3*time.Second)

	srv.Restart()
	require.Eventually(t, func() bool { _, n := r.snapshot(); return n == 2 }, 10*time.Second, 20*time.Millisecond,
		"the subscriber must resubscribe and signal it")
	tenant := uuid.New()
	require.Eventually(t, func() bool {
		_ = bus.Publish(ctx, changes.Event{TenantID: tenant, Kind: changes.AgentChanged, Version: 9})
		ev, _ := r.snapshot()
		return len(ev) > 0
	}, 5*time.Second, 50*time.Millisecond)
}

func TestSubscriberReplacesAStalledConnection(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	r := startSubscriber(t, srv)

	srv.Pause()
	// Sleep, not a signal: the subscriber notices a frozen server only by
	// its silence lasting three idle periods, so the silence must last.
	time.Sleep(4500 * time.Millisecond)
	srv.Resume()
	require.Eventually(t, func() bool { _, n := r.snapshot(); return n >= 2 }, 10*time.Second, 20*time.Millisecond,
		"a subscription that stopped answering must be replaced and the replacement signalled")
}

func TestPublishToAFrozenRedisGivesUpQuickly(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	c, err := redisx.Open(context.Background(), srv.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	bus := redisx.NewBus(c.Client)
	srv.Pause()
	t.Cleanup(srv.Resume)
	start := time.Now()
	require.Error(t, bus.Publish(context.Background(), changes.Event{TenantID: uuid.New(), Kind: changes.AgentChanged, Version: 2}))
	require.Less(t, time.Since(start), 2*time.Second, "the committed request must not wait on a frozen Redis")
}
