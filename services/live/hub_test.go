package live_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/storage/redisx/redistest"
)

// fakeStream counts the notifications it receives.
type fakeStream struct {
	p      identity.Principal
	n      atomic.Int32
	closed atomic.Bool
}

func (s *fakeStream) Close() { s.closed.Store(true) }

func (s *fakeStream) Principal() identity.Principal { return s.p }
func (s *fakeStream) NotifyToolsChanged(context.Context) error {
	s.n.Add(1)
	return nil
}

// policy is a fake VisibleFunc: each agent's (or operator's) visible tools,
// with a count of computations.
type policy struct {
	mu    sync.Mutex
	tools map[uuid.UUID][]string // by agent id; uuid.Nil for operators
	calls atomic.Int32
}

func (p *policy) set(agent uuid.UUID, tools ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tools[agent] = tools
}

func (p *policy) visible(_ context.Context, pr identity.Principal) ([]string, error) {
	p.calls.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tools[pr.AgentID]...), nil
}

// fixture is the setup bundle: a hub on a real database with two tenants.
type fixture struct {
	db     *postgres.DB
	hub    *live.Hub
	pol    *policy
	ta, tb uuid.UUID
}

func newFixture(t *testing.T, reconcileEvery time.Duration) *fixture {
	t.Helper()
	db := pgtest.New(t)
	store := postgres.NewIdentityStore(db)
	ctx := context.Background()
	f := &fixture{db: db, pol: &policy{tools: map[uuid.UUID][]string{}}}
	for _, slug := range []string{"acme", "globex"} {
		tn := identity.Tenant{ID: uuid.New(), Slug: slug, Name: slug}
		require.NoError(t, store.CreateTenant(ctx, &tn))
		if slug == "acme" {
			f.ta = tn.ID
		} else {
			f.tb = tn.ID
		}
	}
	f.hub = live.NewHub(live.Config{Visible: f.pol.visible, Versions: db, ReconcileEvery: reconcileEvery,
		Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, f.hub.Start(ctx))
	t.Cleanup(f.hub.Stop)
	return f
}

func (f *fixture) open(t *testing.T, tenant, agent uuid.UUID) *fakeStream {
	t.Helper()
	kind := identity.KindEmployee
	if agent == uuid.Nil {
		kind = identity.KindOperator
	}
	s := &fakeStream{p: identity.Principal{TenantID: tenant, Kind: kind, AgentID: agent, CredentialID: "k"}}
	t.Cleanup(f.hub.Open(context.Background(), s))
	return s
}

// commit bumps the tenant's policy version as a committed change would and
// returns the event announcing it.
func (f *fixture) commit(t *testing.T, tenant, agent uuid.UUID) changes.Event {
	t.Helper()
	v, err := postgres.BumpPolicyVersion(context.Background(), f.db.Pool, tenant)
	require.NoError(t, err)
	return changes.Event{TenantID: tenant, Kind: changes.AgentChanged, AgentID: agent, Version: v}
}

// settle waits until the hub has worked through everything queued.
func settle() { time.Sleep(150 * time.Millisecond) }

func TestHubNotifiesExactlyTheStreamsWhoseSetChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	ada, bob, other := uuid.New(), uuid.New(), uuid.New()
	f.pol.set(ada, "a", "b")
	f.pol.set(bob, "a")
	f.pol.set(other, "a", "b")
	adaStreams := []*fakeStream{f.open(t, f.ta, ada), f.open(t, f.ta, ada)}
	bobStream := f.open(t, f.ta, bob)
	otherTenant := f.open(t, f.tb, other)
	// The first reconcile learns each tenant's policy version (and finds
	// nothing changed).
	require.NoError(t, f.hub.Reconcile(context.Background()))
	settle()
	calls := f.pol.calls.Load()

	// A no-op edit of ada: nothing is sent.
	f.hub.Handle(f.commit(t, f.ta, ada))
	settle()
	require.Zero(t, adaStreams[0].n.Load()+adaStreams[1].n.Load())

	// A real change of ada reaches both of ada's streams and no one else.
	// The set is compared, not the order.
	f.pol.set(ada, "c", "b", "a")
	f.hub.Handle(f.commit(t, f.ta, ada))
	require.Eventually(t, func() bool { return adaStreams[0].n.Load() == 1 && adaStreams[1].n.Load() == 1 }, 2*time.Second, 5*time.Millisecond)
	f.pol.set(ada, "b", "a", "c", "a")
	f.hub.Handle(f.commit(t, f.ta, ada))
	settle()
	require.EqualValues(t, 1, adaStreams[0].n.Load())
	require.Zero(t, bobStream.n.Load())
	require.Zero(t, otherTenant.n.Load())
	// An agent event recomputes that agent's principal only.
	require.EqualValues(t, calls+3, f.pol.calls.Load())

	// Another tenant's change with the same agent id pattern reaches only
	// that tenant, even when its set did change.
	f.pol.set(other, "z")
	f.hub.Handle(f.commit(t, f.tb, uuid.Nil))
	require.Eventually(t, func() bool { return otherTenant.n.Load() == 1 }, 2*time.Second, 5*time.Millisecond)
	settle()
	require.EqualValues(t, 1, adaStreams[0].n.Load())
	require.Zero(t, bobStream.n.Load())
}

func TestHubTenantWideEventRecomputesEveryPrincipalOfThatTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	ada, bob := uuid.New(), uuid.New()
	f.pol.set(ada, "a")
	f.pol.set(bob, "a")
	f.pol.set(uuid.Nil, "a", "admin")
	sa, sb, op := f.open(t, f.ta, ada), f.open(t, f.ta, bob), f.open(t, f.ta, uuid.Nil)

	f.pol.set(ada, "a", "gmail_send")
	f.pol.set(uuid.Nil, "a", "admin", "gmail_send")
	f.hub.Handle(f.commit(t, f.ta, uuid.Nil))
	require.Eventually(t, func() bool { return sa.n.Load() == 1 && op.n.Load() == 1 }, 2*time.Second, 5*time.Millisecond)
	settle()
	require.Zero(t, sb.n.Load(), "bob's set did not change")
}

func TestHubClosedStreamsHearNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	ada := uuid.New()
	f.pol.set(ada, "a")
	s := &fakeStream{p: identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada}}
	closeStream := f.hub.Open(context.Background(), s)
	require.Equal(t, live.Stats{Tenants: 1, Principals: 1, Streams: 1}, f.hub.Stats())
	closeStream()
	closeStream()
	require.Equal(t, live.Stats{}, f.hub.Stats())
	f.pol.set(ada, "b")
	f.hub.Handle(f.commit(t, f.ta, ada))
	settle()
	require.Zero(t, s.n.Load())
}

func TestReconcilerRepairsALostEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 200*time.Millisecond)
	ada, bob := uuid.New(), uuid.New()
	f.pol.set(ada, "a")
	f.pol.set(bob, "a")
	sa, sb := f.open(t, f.ta, ada), f.open(t, f.ta, bob)
	other := f.open(t, f.tb, uuid.New())
	time.Sleep(500 * time.Millisecond) // the first reconcile learns the versions

	// The change commits but its event is lost.
	f.pol.set(ada, "a", "b")
	f.commit(t, f.ta, ada)
	require.Eventually(t, func() bool { return sa.n.Load() == 1 }, 3*time.Second, 10*time.Millisecond)
	require.Zero(t, sb.n.Load())
	require.Zero(t, other.n.Load())
	require.EqualValues(t, 1, f.hub.Stats().Repaired)
	require.EqualValues(t, 1, f.hub.Stats().Notified)
}

// An event whose version skips a lost one recomputes the whole tenant, not
// only the agent it names. No reconciler runs here, so only the gap can
// tell bob.
func TestAVersionGapRecomputesTheWholeTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	ada, bob := uuid.New(), uuid.New()
	f.pol.set(ada, "a")
	f.pol.set(bob, "a")
	sa, sb := f.open(t, f.ta, ada), f.open(t, f.ta, bob)
	// The hub learns the version; its first recompute (each principal's
	// set again) finds nothing changed.
	f.hub.Handle(f.commit(t, f.ta, ada))
	require.Eventually(t, func() bool { return f.pol.calls.Load() == 4 }, 5*time.Second, 5*time.Millisecond)

	f.pol.set(bob, "a", "b")
	f.commit(t, f.ta, bob)                      // lost
	f.hub.Handle(f.commit(t, f.ta, uuid.New())) // names someone else
	require.Eventually(t, func() bool { return sb.n.Load() == 1 }, 5*time.Second, 5*time.Millisecond,
		"the gap must trigger a tenant-wide recompute")
	require.Zero(t, sa.n.Load())
	require.Zero(t, f.hub.Stats().Repaired)
}

func TestHubOverRedisAcrossTwoHubs(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	f := newFixture(t, time.Hour)
	// A second replica's hub on the same database.
	hubB := live.NewHub(live.Config{Visible: f.pol.visible, Versions: f.db, ReconcileEvery: time.Hour})
	require.NoError(t, hubB.Start(context.Background()))
	t.Cleanup(hubB.Stop)

	subscribed := make(chan struct{}, 4)
	for _, h := range []*live.Hub{f.hub, hubB} {
		sub := redisx.NewSubscriber(srv.Client(), h.Handle, func() { h.Kick(); subscribed <- struct{}{} }, slog.New(slog.DiscardHandler))
		require.NoError(t, sub.Start(context.Background()))
		t.Cleanup(sub.Stop)
		<-subscribed
	}
	ada := uuid.New()
	f.pol.set(ada, "a")
	s := &fakeStream{p: identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada}}
	t.Cleanup(hubB.Open(context.Background(), s))

	f.pol.set(ada, "a", "b")
	require.NoError(t, redisx.NewBus(srv.Client()).Publish(context.Background(), f.commit(t, f.ta, ada)))
	require.Eventually(t, func() bool { return s.n.Load() == 1 }, 2*time.Second, 5*time.Millisecond)
}

func TestHubRetriesAStreamWhoseSetCouldNotBeComputed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 100*time.Millisecond)
	ada := uuid.New()
	f.pol.set(ada, "a")
	var fail atomic.Bool
	fail.Store(true)
	hub := live.NewHub(live.Config{Versions: f.db, ReconcileEvery: 100 * time.Millisecond,
		Visible: func(ctx context.Context, p identity.Principal) ([]string, error) {
			if fail.Load() {
				return nil, context.DeadlineExceeded
			}
			return f.pol.visible(ctx, p)
		}})
	require.NoError(t, hub.Start(context.Background()))
	t.Cleanup(hub.Stop)
	s := &fakeStream{p: identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada}}
	t.Cleanup(hub.Open(context.Background(), s))
	fail.Store(false)
	// Unknown is treated as changed: the stream is told to re-read once the
	// policy answers again.
	require.Eventually(t, func() bool { return s.n.Load() == 1 }, 3*time.Second, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	require.EqualValues(t, 1, s.n.Load(), "and only once")
}

// TestHubOpenAndCloseRaceWithEvents exercises streams opening and closing
// while events are recomputed; run it with -race.
func TestHubOpenAndCloseRaceWithEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20*time.Millisecond)
	agents := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	for _, a := range agents {
		f.pol.set(a, "a")
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := &fakeStream{p: identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: agents[(g+i)%len(agents)]}}
				closeStream := f.hub.Open(context.Background(), s)
				if i%3 == 0 {
					f.hub.Stats()
				}
				closeStream()
			}
		})
	}
	for i := range 100 {
		f.pol.set(agents[i%len(agents)], "a", "b"[:i%2])
		f.hub.Handle(changes.Event{TenantID: f.ta, Kind: changes.AgentChanged, AgentID: agents[i%len(agents)], Version: int64(i + 2)})
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Eventually(t, func() bool { return f.hub.Stats().Streams == 0 && f.hub.Stats().Tenants == 0 }, 2*time.Second, 10*time.Millisecond)
}

// TestChangeWhileAStreamOpensIsNotAnnouncedOnIt: a recompute that runs
// while Open is still computing a new stream's first set records the set
// without announcing it (the client is told the stream is open only after
// Open returns, so its next listing includes the change); the next change
// is announced as usual.
func TestChangeWhileAStreamOpensIsNotAnnouncedOnIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	ada := uuid.New()
	f.pol.set(ada, "a")
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	visible := func(ctx context.Context, p identity.Principal) ([]string, error) {
		if first.CompareAndSwap(false, true) { // Open's computation
			close(entered)
			<-release
		}
		return f.pol.visible(ctx, p)
	}
	hub := live.NewHub(live.Config{Visible: visible, Versions: f.db, ReconcileEvery: time.Hour, Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, hub.Start(context.Background()))
	t.Cleanup(hub.Stop)

	s := &fakeStream{p: identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada, CredentialID: "k"}}
	opened := make(chan func(), 1)
	go func() { opened <- hub.Open(context.Background(), s) }()
	<-entered
	f.pol.set(ada, "a", "b")
	hub.Handle(f.commit(t, f.ta, ada))
	require.Eventually(t, func() bool { return f.pol.calls.Load() == 1 }, 5*time.Second, 5*time.Millisecond, "the recompute ran")
	settle()
	close(release)
	t.Cleanup(<-opened)
	settle()
	require.Zero(t, s.n.Load(), "a change made while the stream opened was announced on it")

	f.pol.set(ada, "a")
	hub.Handle(f.commit(t, f.ta, ada))
	require.Eventually(t, func() bool { return s.n.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
}
