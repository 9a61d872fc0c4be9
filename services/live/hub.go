package live

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unique"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/lifecycle"
)

// Versions reads tenants' policy versions from the source of truth
// (tenants.policy_version in Postgres). Tenants it does not return are
// treated as unchanged.
type Versions interface {
	PolicyVersions(ctx context.Context, tenantIDs []uuid.UUID) (map[uuid.UUID]int64, error)
}

// Config configures a Hub.
type Config struct {
	// Visible computes a principal's visible tools (required).
	Visible VisibleFunc
	// Versions is what the reconciler compares against (required).
	Versions Versions
	Log      *slog.Logger
	// ReconcileEvery is the reconciler's period; default 2s.
	ReconcileEvery time.Duration
	// Workers bounds how many tenants are recomputed at once; default 4.
	Workers int
	// NotifyTimeout bounds one NotifyToolsChanged call; default 5s. A
	// stream that cannot take a notification in that time is dropped.
	NotifyTimeout time.Duration
	// Senders bounds how many notifications are written at once; default
	// 32. Each stream has at most one in flight: changes that arrive while
	// one is written are merged into one more notification after it.
	Senders int
	// Valid re-checks the credentials of streams (optional: without it no
	// stream is ever closed for a revoked credential). The hub calls it for
	// a tenant's streams on every event that can revoke a credential (key,
	// agent and OAuth events), when it sees that events were lost, and for
	// every stream every CheckEvery, and closes the streams whose
	// credential is gone.
	Valid ValidFunc
	// CheckEvery is the period of the sweep that re-checks every stream's
	// credential, which catches expiry and revocations whose event and
	// policy-version bump were both lost; default 30s.
	CheckEvery time.Duration
	// Now stamps when a stream opened (Connection.Opened); default
	// time.Now.
	Now func() time.Time
}

// Hub implements Streams. It remembers, for each live stream of this
// replica, the principal and the visible set last announced to it; on a
// change event it recomputes the affected principals of that tenant only and
// notifies the streams whose set changed. A reconciler repairs lost events
// by comparing tenants' policy versions with the last ones it saw.
//
// A Hub is also a changes.Publisher that delivers to itself, for a single
// process running without Redis.
type Hub struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	wake    *sync.Cond
	tenants map[uuid.UUID]*tenant
	ready   []*tenant // tenants with pending work, not yet taken by a worker
	stopped bool
	// sendq holds the streams with a notification to write, each once,
	// for the senders; sendWake wakes them.
	sendq    []*entry
	sendWake *sync.Cond
	// counters for Stats
	notified, repaired, revoked, dropped int64

	kick chan struct{}
	life lifecycle.Base // workers, senders and the reconciler

	signals signals // armed by tests only
}

var (
	_ Streams           = (*Hub)(nil)
	_ changes.Publisher = (*Hub)(nil)
)

// toolSet is an interned visible set: equal sets are equal handles, so
// streams with the same set share one copy and compare in O(1). The zero
// value means "not known yet".
type toolSet = unique.Handle[string]

// tenant is one tenant's streams on this replica.
type tenant struct {
	id uuid.UUID
	// seen is the policy version whose changes this replica has applied or
	// queued. 0 means not known yet: the first reconcile fills it.
	seen       int64
	principals map[string]*principal
	streams    int

	// pending work, merged until a worker takes it.
	all     bool
	agents  map[uuid.UUID]struct{}
	queued  bool
	running bool
	failed  bool // a recompute failed; the reconciler retries the tenant

	// pending credential checks, merged like the recomputes above.
	checkAll    bool
	checkAgents map[uuid.UUID]struct{}
	checkFailed bool // a credential check failed; the reconciler retries it
}

// principal groups the streams of one caller, whose sets are computed once.
type principal struct {
	p       identity.Principal
	last    toolSet // the set last computed for p
	streams map[*entry]struct{}
}

// entry is one registered stream and the set last announced on it.
type entry struct {
	s   Stream
	set toolSet
	// pr and key are the principal group the stream is in now: the one its
	// principal was opened with, or the one it moved to when its scopes
	// changed (a member's new role).
	pr  *principal
	key string
	t   *tenant
	// gone is set when the hub closed the stream for a revoked credential
	// and removed it; its unregister function is then a no-op.
	gone bool
	// queued: the stream is in sendq; sending: a sender is writing to it;
	// again: its set changed while it was written, so one more
	// notification follows.
	queued, sending, again bool
	// opened is when Open registered the stream.
	opened time.Time
	// opening is set while Open computes the stream's first set. The
	// caller has not yet been told the stream is open (a listen stream is
	// acknowledged after Open returns), so whatever it lists next already
	// includes any change made meanwhile: a recompute then records the set
	// without announcing it.
	opening bool
}

// NewHub returns a hub; call Start before use and Stop when done.
func NewHub(cfg Config) *Hub {
	if cfg.ReconcileEvery <= 0 {
		cfg.ReconcileEvery = 2 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.NotifyTimeout <= 0 {
		cfg.NotifyTimeout = 5 * time.Second
	}
	if cfg.Senders <= 0 {
		cfg.Senders = 32
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Hub{cfg: cfg, log: cfg.Log, tenants: map[uuid.UUID]*tenant{}, kick: make(chan struct{}, 1)}
	h.wake = sync.NewCond(&h.mu)
	h.sendWake = sync.NewCond(&h.mu)
	h.life.OnStop(func() { // workers and senders wait on conds, not on the context
		h.mu.Lock()
		h.stopped = true
		h.wake.Broadcast()
		h.sendWake.Broadcast()
		h.mu.Unlock()
	})
	return h
}

// Start runs the workers and the reconciler until Stop. It runs once
// (lifecycle.Base).
func (h *Hub) Start(ctx context.Context) error {
	fns := []func(context.Context){h.reconcileLoop}
	for range h.cfg.Workers {
		fns = append(fns, h.work)
	}
	for range h.cfg.Senders {
		fns = append(fns, h.sender)
	}
	return h.life.Start(ctx, fns...)
}

// Stop ends the workers, the senders and the reconciler. Notifications in
// flight see their context cancelled, so Stop waits for no client: a
// stream that has stopped reading cannot hold it up. It is safe to call
// twice.
func (h *Hub) Stop() {
	h.life.Stop()
}

// Open registers s. Its current visible set is computed now, so that the
// first change that alters it is announced and one that does not is not.
func (h *Hub) Open(ctx context.Context, s Stream) func() {
	p := s.Principal()
	key := principalKey(p)
	e := &entry{s: s, opened: h.cfg.Now()}

	h.mu.Lock()
	t := h.tenants[p.TenantID]
	if t == nil {
		t = &tenant{id: p.TenantID, principals: map[string]*principal{}}
		h.tenants[p.TenantID] = t
	}
	pr := t.principals[key]
	if pr == nil {
		pr = &principal{p: p, streams: map[*entry]struct{}{}}
		t.principals[key] = pr
	}
	pr.streams[e] = struct{}{}
	e.pr, e.key, e.t = pr, key, t
	t.streams++
	e.set = pr.last
	known := e.set != toolSet{}
	e.opening = !known
	h.mu.Unlock()

	if !known {
		names, err := h.cfg.Visible(ctx, p)
		if err != nil {
			// The set stays unknown: the next reconcile recomputes the
			// tenant and announces whatever it finds to this stream.
			h.log.WarnContext(ctx, "compute visible tools for a new stream", "tenant", p.TenantID, "err", err)
			h.mu.Lock()
			t.failed = true
			e.opening = false
			h.mu.Unlock()
		} else {
			set := makeSet(names)
			h.mu.Lock()
			// A recompute that ran meanwhile already recorded a newer set;
			// keep it.
			if e.set == (toolSet{}) {
				e.set, pr.last = set, set
			}
			e.opening = false
			h.mu.Unlock()
		}
	}

	var once sync.Once
	return func() { once.Do(func() { h.close(t, e) }) }
}

func (h *Hub) close(t *tenant, e *entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.remove(t, e)
}

// remove forgets e, once. h.mu is held.
func (h *Hub) remove(t *tenant, e *entry) {
	if e.gone {
		return
	}
	e.gone = true
	t.streams--
	h.leave(t, e)
}

// leave takes e out of its principal group, forgetting the group when it
// empties. h.mu is held.
func (h *Hub) leave(t *tenant, e *entry) {
	delete(e.pr.streams, e)
	if len(e.pr.streams) == 0 && t.principals[e.key] == e.pr {
		delete(t.principals, e.key)
	}
	if t.streams == 0 && !t.queued && !t.running && h.tenants[t.id] == t {
		delete(h.tenants, t.id)
	}
}

// Publish delivers e to this hub, as if it came from the bus.
func (h *Hub) Publish(_ context.Context, e changes.Event) error {
	h.Handle(e)
	return nil
}

// Handle queues the recompute an event calls for. Events for tenants with no
// stream here are dropped. A version that skips ahead of the last one seen
// means events were lost, so the whole tenant is recomputed.
func (h *Hub) Handle(e changes.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.tenants[e.TenantID]
	if t == nil {
		return
	}
	lost := t.seen != 0 && e.Version > t.seen+1
	switch {
	case h.cfg.Valid == nil:
	// Events that may have revoked a credential re-check the streams that
	// could hold it: an agent's (or an agent key's) streams, or all of the
	// tenant's for an operator key, an OAuth grant or consent, or when
	// events were lost.
	case lost || e.Kind == changes.ClientChanged ||
		((e.Kind == changes.KeyChanged || e.Kind == changes.AgentChanged) && e.AgentID == uuid.Nil):
		t.checkAll = true
	case e.Kind == changes.KeyChanged || e.Kind == changes.AgentChanged:
		if t.checkAgents == nil {
			t.checkAgents = map[uuid.UUID]struct{}{}
		}
		t.checkAgents[e.AgentID] = struct{}{}
	}
	switch {
	case e.AgentID == uuid.Nil || t.seen == 0 || e.Version == 0 || e.Version > t.seen+1:
		t.all = true
	default:
		if t.agents == nil {
			t.agents = map[uuid.UUID]struct{}{}
		}
		t.agents[e.AgentID] = struct{}{}
	}
	t.seen = max(t.seen, e.Version)
	h.enqueue(t)
}

// Kick asks the reconciler to run now, for example after the bus
// (re)subscribed and may have missed events.
func (h *Hub) Kick() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// Stats counts what the hub holds and what it has done.
type Stats struct {
	Tenants, Principals, Streams int
	// Notified counts list_changed notifications sent; Repaired counts
	// tenants the reconciler found changed without (or ahead of) an event;
	// Revoked counts streams closed because their credential was gone;
	// Dropped counts streams dropped because they could not take a
	// notification in time (or at all).
	Notified, Repaired, Revoked, Dropped int64
	// Pending counts the work in hand: tenants queued or being
	// recomputed, and notifications queued or being written. 0 means the
	// hub has acted on everything it was told.
	Pending int
}

// Stats returns current counts.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := Stats{Notified: h.notified, Repaired: h.repaired, Revoked: h.revoked, Dropped: h.dropped}
	for _, t := range h.tenants {
		s.Tenants++
		s.Principals += len(t.principals)
		s.Streams += t.streams
		if t.queued || t.running {
			s.Pending++
		}
		for _, pr := range t.principals {
			for e := range pr.streams {
				if e.queued || e.sending {
					s.Pending++
				}
			}
		}
	}
	return s
}

// enqueue hands t to a worker unless one has it already. h.mu is held.
func (h *Hub) enqueue(t *tenant) {
	if t.queued || t.running {
		return
	}
	t.queued = true
	h.ready = append(h.ready, t)
	h.wake.Signal()
}

// principalKey groups streams whose visible sets are necessarily equal: the
// same caller holding the same scopes for the same task.
func principalKey(p identity.Principal) string {
	scopes := slices.Clone(p.Scopes)
	slices.Sort(scopes)
	var b strings.Builder
	b.WriteString(p.ID())
	b.WriteByte('|')
	b.WriteString(strings.Join(scopes, " "))
	if p.TaskID != uuid.Nil {
		b.WriteString("|task:")
		b.WriteString(p.TaskID.String())
	}
	return b.String()
}

// makeSet interns names as a set: order and duplicates do not matter.
func makeSet(names []string) toolSet {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	return unique.Make(strings.Join(names, "\n"))
}
