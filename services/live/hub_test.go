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
)

// fakeStream counts the notifications it receives and reports each on
// heard, when the test made it.
type fakeStream struct {
	p      identity.Principal
	n      atomic.Int32
	closed atomic.Bool
	heard  chan struct{}
}

func newStream(p identity.Principal) *fakeStream {
	return &fakeStream{p: p, heard: make(chan struct{}, 100)}
}

func (s *fakeStream) Close() { s.closed.Store(true) }

func (s *fakeStream) Principal() identity.Principal { return s.p }
func (s *fakeStream) NotifyToolsChanged(context.Context) error {
	s.n.Add(1)
	select {
	case s.heard <- struct{}{}:
	default:
	}
	return nil
}

// hear waits for the stream's next notification.
func (s *fakeStream) hear(t *testing.T) {
	t.Helper()
	select {
	case <-s.heard:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s heard no list_changed", s.p.ID())
	}
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

// versions is a fake source of policy versions: every tenant starts at 1.
type versions struct {
	mu sync.Mutex
	v  map[uuid.UUID]int64
}

func (f *versions) PolicyVersions(_ context.Context, ids []uuid.UUID) (map[uuid.UUID]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[uuid.UUID]int64{}
	for _, id := range ids {
		out[id] = max(f.v[id], 1)
	}
	return out, nil
}

// bump moves the tenant's version on, as a committed change does.
func (f *versions) bump(tenant uuid.UUID) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.v[tenant] = max(f.v[tenant], 1) + 1
	return f.v[tenant]
}

// fixture is the setup bundle: a hub on fake versions and a fake policy,
// with its test signals armed, and two tenants.
type fixture struct {
	hub    *live.Hub
	sig    *live.Signals
	pol    *policy
	vers   *versions
	ta, tb uuid.UUID
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{pol: &policy{tools: map[uuid.UUID][]string{}}, vers: &versions{v: map[uuid.UUID]int64{}}, ta: uuid.New(), tb: uuid.New()}
	f.hub, f.sig = f.start(t, live.Config{Visible: f.pol.visible})
	return f
}

// start starts a hub on cfg, filling in the fixture's fakes where cfg has
// none; no timer of its own ever fires during a test: the reconciler runs
// when the test kicks it.
func (f *fixture) start(t *testing.T, cfg live.Config) (*live.Hub, *live.Signals) {
	t.Helper()
	if cfg.Versions == nil {
		cfg.Versions = f.vers
	}
	cfg.ReconcileEvery, cfg.CheckEvery, cfg.Log = time.Hour, time.Hour, slog.New(slog.DiscardHandler)
	h := live.NewHub(cfg)
	sig := h.ArmSignals()
	require.NoError(t, h.Start(context.Background()))
	t.Cleanup(h.Stop)
	return h, sig
}

func (f *fixture) open(t *testing.T, tenant, agent uuid.UUID) *fakeStream {
	t.Helper()
	kind := identity.KindEmployee
	if agent == uuid.Nil {
		kind = identity.KindOperator
	}
	s := newStream(identity.Principal{TenantID: tenant, Kind: kind, AgentID: agent, CredentialID: "k"})
	t.Cleanup(f.hub.Open(context.Background(), s))
	return s
}

// commit bumps the tenant's policy version as a committed change would and
// returns the event announcing it.
func (f *fixture) commit(tenant, agent uuid.UUID) changes.Event {
	return changes.Event{TenantID: tenant, Kind: changes.AgentChanged, AgentID: agent, Version: f.vers.bump(tenant)}
}

// pass waits for the hub's next worker pass and checks what it did.
func (f *fixture) pass(t *testing.T, want live.Pass) {
	t.Helper()
	require.Equal(t, want, f.sig.Worked.Wait(t))
}

func TestHubNotifiesExactlyTheStreamsWhoseSetChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
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
	passes := []live.Pass{f.sig.Worked.Wait(t), f.sig.Worked.Wait(t)}
	require.ElementsMatch(t, []live.Pass{{Tenant: f.ta}, {Tenant: f.tb}}, passes)
	calls := f.pol.calls.Load()

	// A no-op edit of ada: nothing is sent.
	f.hub.Handle(f.commit(f.ta, ada))
	f.pass(t, live.Pass{Tenant: f.ta})

	// A real change of ada reaches both of ada's streams and no one else.
	// The set is compared, not the order.
	f.pol.set(ada, "c", "b", "a")
	f.hub.Handle(f.commit(f.ta, ada))
	f.pass(t, live.Pass{Tenant: f.ta, Notified: 2})
	adaStreams[0].hear(t)
	adaStreams[1].hear(t)
	f.pol.set(ada, "b", "a", "c", "a")
	f.hub.Handle(f.commit(f.ta, ada))
	f.pass(t, live.Pass{Tenant: f.ta})
	require.EqualValues(t, 1, adaStreams[0].n.Load())
	require.Zero(t, bobStream.n.Load())
	require.Zero(t, otherTenant.n.Load())
	// An agent event recomputes that agent's principal only.
	require.EqualValues(t, calls+3, f.pol.calls.Load())

	// Another tenant's change with the same agent id pattern reaches only
	// that tenant, even when its set did change.
	f.pol.set(other, "z")
	f.hub.Handle(f.commit(f.tb, uuid.Nil))
	f.pass(t, live.Pass{Tenant: f.tb, Notified: 1})
	otherTenant.hear(t)
	require.EqualValues(t, 1, adaStreams[0].n.Load())
	require.Zero(t, bobStream.n.Load())
}

func TestHubTenantWideEventRecomputesEveryPrincipalOfThatTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ada, bob := uuid.New(), uuid.New()
	f.pol.set(ada, "a")
	f.pol.set(bob, "a")
	f.pol.set(uuid.Nil, "a", "admin")
	sa, sb, op := f.open(t, f.ta, ada), f.open(t, f.ta, bob), f.open(t, f.ta, uuid.Nil)

	f.pol.set(ada, "a", "gmail_send")
	f.pol.set(uuid.Nil, "a", "admin", "gmail_send")
	f.hub.Handle(f.commit(f.ta, uuid.Nil))
	f.pass(t, live.Pass{Tenant: f.ta, Notified: 2})
	sa.hear(t)
	op.hear(t)
	require.Zero(t, sb.n.Load(), "bob's set did not change")
}

func TestHubClosedStreamsHearNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ada := uuid.New()
	f.pol.set(ada, "a")
	s := newStream(identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada})
	closeStream := f.hub.Open(context.Background(), s)
	require.Equal(t, live.Stats{Tenants: 1, Principals: 1, Streams: 1}, f.hub.Stats())
	closeStream()
	closeStream()
	require.Equal(t, live.Stats{}, f.hub.Stats())
	f.pol.set(ada, "b")
	// Handle drops the event for a tenant with no stream here before it
	// returns: no pass is queued.
	f.hub.Handle(f.commit(f.ta, ada))
	f.sig.Worked.RequireEmpty(t)
	require.Zero(t, s.n.Load())
}

func TestReconcilerRepairsALostEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ada, bob := uuid.New(), uuid.New()
	f.pol.set(ada, "a")
	f.pol.set(bob, "a")
	sa, sb := f.open(t, f.ta, ada), f.open(t, f.ta, bob)
	other := f.open(t, f.tb, uuid.New())
	// The first round of the reconcile loop learns the versions.
	f.hub.Kick()
	require.Equal(t, 2, f.sig.Reconciled.Wait(t))
	f.sig.Worked.Wait(t)
	f.sig.Worked.Wait(t)

	// The change commits but its event is lost.
	f.pol.set(ada, "a", "b")
	f.vers.bump(f.ta)
	f.hub.Kick()
	require.Equal(t, 1, f.sig.Reconciled.Wait(t))
	f.pass(t, live.Pass{Tenant: f.ta, Notified: 1})
	require.NoError(t, f.sig.Sent.Wait(t))
	require.EqualValues(t, 1, sa.n.Load())
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
	f := newFixture(t)
	ada, bob := uuid.New(), uuid.New()
	f.pol.set(ada, "a")
	f.pol.set(bob, "a")
	sa, sb := f.open(t, f.ta, ada), f.open(t, f.ta, bob)
	// The hub learns the version; its first recompute (each principal's
	// set again) finds nothing changed.
	f.hub.Handle(f.commit(f.ta, ada))
	f.pass(t, live.Pass{Tenant: f.ta})
	require.EqualValues(t, 4, f.pol.calls.Load())

	f.pol.set(bob, "a", "b")
	f.vers.bump(f.ta)                        // lost
	f.hub.Handle(f.commit(f.ta, uuid.New())) // names someone else
	f.pass(t, live.Pass{Tenant: f.ta, Notified: 1})
	sb.hear(t)
	require.Zero(t, sa.n.Load(), "the gap must trigger a tenant-wide recompute, telling bob only")
	require.Zero(t, f.hub.Stats().Repaired)
}

func TestHubRetriesAStreamWhoseSetCouldNotBeComputed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ada := uuid.New()
	f.pol.set(ada, "a")
	var fail atomic.Bool
	fail.Store(true)
	hub, sig := f.start(t, live.Config{Visible: func(ctx context.Context, p identity.Principal) ([]string, error) {
		if fail.Load() {
			return nil, context.DeadlineExceeded
		}
		return f.pol.visible(ctx, p)
	}})
	s := newStream(identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada})
	t.Cleanup(hub.Open(context.Background(), s))
	fail.Store(false)
	// Unknown is treated as changed: the stream is told to re-read once the
	// policy answers again.
	hub.Kick()
	require.Equal(t, 1, sig.Reconciled.Wait(t))
	require.Equal(t, live.Pass{Tenant: f.ta, Notified: 1}, sig.Worked.Wait(t))
	s.hear(t)
	// And only once: the next round finds nothing to do.
	hub.Kick()
	require.Zero(t, sig.Reconciled.Wait(t))
	sig.Worked.RequireEmpty(t)
	require.EqualValues(t, 1, s.n.Load())
}

// TestHubOpenAndCloseRaceWithEvents exercises streams opening and closing
// while events are recomputed and the reconciler runs; run it with -race.
func TestHubOpenAndCloseRaceWithEvents(t *testing.T) {
	t.Parallel()
	pol := &policy{tools: map[uuid.UUID][]string{}}
	tenant := uuid.New()
	hub := live.NewHub(live.Config{Visible: pol.visible, Versions: &versions{v: map[uuid.UUID]int64{}}, ReconcileEvery: time.Hour,
		Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, hub.Start(context.Background()))
	t.Cleanup(hub.Stop)
	agents := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	for _, a := range agents {
		pol.set(a, "a")
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
				s := &fakeStream{p: identity.Principal{TenantID: tenant, Kind: identity.KindEmployee, AgentID: agents[(g+i)%len(agents)]}}
				closeStream := hub.Open(context.Background(), s)
				if i%3 == 0 {
					hub.Stats()
				}
				closeStream()
			}
		})
	}
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = hub.Reconcile(context.Background())
			}
		}
	})
	for i := range 100 {
		pol.set(agents[i%len(agents)], "a", "b"[:i%2])
		hub.Handle(changes.Event{TenantID: tenant, Kind: changes.AgentChanged, AgentID: agents[i%len(agents)], Version: int64(i + 2)})
	}
	close(stop)
	wg.Wait()
	// A worker may still hold the tenant; it forgets it when it is done.
	// The hub's counts are the condition, observed until they hold.
	require.Eventually(t, func() bool { return hub.Stats().Streams == 0 && hub.Stats().Tenants == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestChangeWhileAStreamOpensIsNotAnnouncedOnIt: a recompute that runs
// while Open is still computing a new stream's first set records the set
// without announcing it (the client is told the stream is open only after
// Open returns, so its next listing includes the change); the next change
// is announced as usual.
func TestChangeWhileAStreamOpensIsNotAnnouncedOnIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ada := uuid.New()
	f.pol.set(ada, "a")
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	hub, sig := f.start(t, live.Config{Visible: func(ctx context.Context, p identity.Principal) ([]string, error) {
		if first.CompareAndSwap(false, true) { // Open's computation
			close(entered)
			<-release
		}
		return f.pol.visible(ctx, p)
	}})

	s := newStream(identity.Principal{TenantID: f.ta, Kind: identity.KindEmployee, AgentID: ada, CredentialID: "k"})
	opened := make(chan func(), 1)
	go func() { opened <- hub.Open(context.Background(), s) }()
	<-entered
	f.pol.set(ada, "a", "b")
	hub.Handle(f.commit(f.ta, ada))
	require.Equal(t, live.Pass{Tenant: f.ta}, sig.Worked.Wait(t), "the recompute ran and announced nothing")
	close(release)
	t.Cleanup(<-opened)
	require.Zero(t, s.n.Load(), "a change made while the stream opened was announced on it")

	f.pol.set(ada, "a")
	hub.Handle(f.commit(f.ta, ada))
	require.Equal(t, live.Pass{Tenant: f.ta, Notified: 1}, sig.Worked.Wait(t))
	s.hear(t)
}
