package live

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// work takes tenants with pending changes, one at a time per tenant, until
// the hub stops.
func (h *Hub) work(ctx context.Context) {
	for {
		h.mu.Lock()
		for len(h.ready) == 0 && !h.stopped {
			h.wake.Wait()
		}
		if h.stopped {
			h.mu.Unlock()
			return
		}
		t := h.ready[0]
		h.ready = h.ready[1:]
		checks := h.takeChecks(t)
		targets := h.take(t)
		h.mu.Unlock()

		// Streams whose credential is gone are closed before anything is
		// recomputed, so a revoked caller hears nothing more, not even the
		// list_changed its own revocation would cause.
		// Streams whose principal's scopes changed (a member's new role)
		// have moved to the principal they hold now, which is recomputed
		// with the rest.
		done := pass{Tenant: t.id}
		if len(checks) > 0 {
			moved, closed := h.check(ctx, t, checks)
			done.Closed = closed
			for _, pr := range moved {
				if !slices.Contains(targets, pr) {
					targets = append(targets, pr)
				}
			}
		}
		failed := false
		for _, pr := range targets {
			n, err := h.recompute(ctx, t, pr)
			done.Notified += n
			if err != nil {
				failed = true
				h.log.WarnContext(ctx, "recompute visible tools", "tenant", t.id, "err", err)
			}
		}

		h.mu.Lock()
		t.running = false
		t.failed = t.failed || failed
		switch {
		case t.all || len(t.agents) > 0 || t.checkAll || len(t.checkAgents) > 0:
			h.enqueue(t)
		case t.streams == 0 && h.tenants[t.id] == t:
			delete(h.tenants, t.id)
		}
		h.mu.Unlock()
		h.signals.Worked.Signal(done)
	}
}

// take moves t's pending work to a worker and returns the principals it
// concerns. h.mu is held.
func (h *Hub) take(t *tenant) []*principal {
	all, agents := t.all, t.agents
	t.all, t.agents, t.queued, t.running = false, nil, false, true
	var out []*principal
	for _, pr := range t.principals {
		if _, ok := agents[pr.p.AgentID]; all || (ok && pr.p.AgentID != uuid.Nil) {
			out = append(out, pr)
		}
	}
	return out
}

// check is one stream whose credential is to be re-checked.
type check struct {
	e *entry
}

// takeChecks moves t's pending credential checks to a worker and returns
// the streams they concern. h.mu is held.
func (h *Hub) takeChecks(t *tenant) []check {
	all, agents := t.checkAll, t.checkAgents
	t.checkAll, t.checkAgents = false, nil
	if !all && len(agents) == 0 {
		return nil
	}
	var out []check
	for _, pr := range t.principals {
		if _, ok := agents[pr.p.AgentID]; all || (ok && pr.p.AgentID != uuid.Nil) {
			for e := range pr.streams {
				out = append(out, check{e: e})
			}
		}
	}
	return out
}

// check asks Valid about the credentials of cs, each credential once and all
// in one call, and closes the streams whose credential is gone. A stream
// whose credential now resolves to other scopes (its member's role changed)
// moves to the principal with those scopes, keeping the set last announced
// on it; check returns those principals, for the caller to recompute and
// notify the streams whose set changed, and how many streams it closed. A
// failed check closes and moves nothing (availability first) and is
// retried by the reconciler.
func (h *Hub) check(ctx context.Context, t *tenant, cs []check) ([]*principal, int) {
	index := map[string]int{}
	var ps []identity.Principal
	for _, c := range cs {
		p := c.e.s.Principal()
		if _, ok := index[p.CredentialID]; !ok {
			index[p.CredentialID] = len(ps)
			ps = append(ps, p)
		}
	}
	fresh, err := h.cfg.Valid(ctx, t.id, ps)
	if err == nil && len(fresh) != len(ps) {
		err = fmt.Errorf("credential check answered %d of %d", len(fresh), len(ps))
	}
	if err != nil {
		h.log.WarnContext(ctx, "re-check stream credentials; streams stay open until the next try", "tenant", t.id, "err", err)
		h.mu.Lock()
		t.checkFailed = true
		h.mu.Unlock()
		return nil, 0
	}
	var closing []Stream
	var moved []*principal
	h.mu.Lock()
	for _, c := range cs {
		if c.e.gone {
			continue
		}
		f := fresh[index[c.e.s.Principal().CredentialID]]
		if f.TenantID == uuid.Nil {
			h.remove(t, c.e)
			h.revoked++
			closing = append(closing, c.e.s)
			continue
		}
		if sameScopes(f.Scopes, c.e.pr.p.Scopes) {
			continue
		}
		// Move the stream to its principal's new scopes, keeping streams of
		// one principal grouped. The stream keys its group by its own
		// principal, as Open does.
		np := c.e.s.Principal()
		np.Scopes = slices.Clone(f.Scopes)
		key := principalKey(np)
		h.leave(t, c.e)
		pr := t.principals[key]
		if pr == nil {
			pr = &principal{p: np, streams: map[*entry]struct{}{}}
			t.principals[key] = pr
		}
		pr.streams[c.e] = struct{}{}
		c.e.pr, c.e.key = pr, key
		if !slices.Contains(moved, pr) {
			moved = append(moved, pr)
		}
	}
	h.mu.Unlock()
	for _, s := range closing {
		s.Close()
	}
	if len(closing) > 0 {
		h.log.InfoContext(ctx, "closed streams whose credential is no longer valid", "tenant", t.id, "streams", len(closing))
	}
	return moved, len(closing)
}

// sameScopes reports whether a and b hold the same scopes, in any order.
func sameScopes(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// CheckCredentials queues a re-check of the credential of every stream on
// this replica. The reconciler calls it every CheckEvery.
func (h *Hub) CheckCredentials() {
	if h.cfg.Valid == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.tenants {
		t.checkAll = true
		h.enqueue(t)
	}
}

// recompute computes pr's visible set and notifies each of its streams whose
// announced set differs, returning how many it notified.
func (h *Hub) recompute(ctx context.Context, t *tenant, pr *principal) (int, error) {
	names, err := h.cfg.Visible(ctx, pr.p)
	if err != nil {
		return 0, err
	}
	set := makeSet(names)

	n := 0
	h.mu.Lock()
	pr.last = set
	for e := range pr.streams {
		if e.set != set {
			e.set = set
			if !e.opening {
				h.notify(e)
				n++
			}
		}
	}
	h.mu.Unlock()
	return n, nil
}

// notify queues a list_changed for e, merging it with one already queued,
// or with the one being written (another follows it). h.mu is held.
func (h *Hub) notify(e *entry) {
	switch {
	case e.gone || e.queued:
	case e.sending:
		e.again = true
	default:
		e.queued = true
		h.sendq = append(h.sendq, e)
		h.sendWake.Signal()
	}
}

// sender writes queued notifications, one stream at a time, each bounded by
// NotifyTimeout and by the hub's life (ctx). A stream that fails to take
// one is dropped: the hub forgets it, and the stream has ended itself
// (Stream.NotifyToolsChanged).
func (h *Hub) sender(ctx context.Context) {
	for {
		h.mu.Lock()
		for len(h.sendq) == 0 && !h.stopped {
			h.sendWake.Wait()
		}
		if h.stopped {
			h.mu.Unlock()
			return
		}
		e := h.sendq[0]
		h.sendq[0] = nil
		h.sendq = h.sendq[1:]
		e.queued, e.sending, e.again = false, true, false
		h.mu.Unlock()

		nctx, cancel := context.WithTimeout(ctx, h.cfg.NotifyTimeout)
		err := e.s.NotifyToolsChanged(nctx)
		cancel()

		h.mu.Lock()
		e.sending = false
		if err == nil {
			h.notified++
		}
		switch {
		case err != nil && ctx.Err() == nil:
			// The hub is running and the stream could not take it. The
			// stream has ended itself, and may have unregistered already.
			h.remove(e.t, e)
			h.dropped++
			h.log.InfoContext(ctx, "dropped a stream that could not take a notification", "tenant", e.s.Principal().TenantID, "err", err)
		case e.again && !e.gone:
			e.again = false
			e.queued = true
			h.sendq = append(h.sendq, e)
			h.sendWake.Signal()
		}
		h.mu.Unlock()
		h.signals.Sent.Signal(err)
	}
}

// reconcileLoop compares policy versions every ReconcileEvery and whenever
// kicked.
func (h *Hub) reconcileLoop(ctx context.Context) {
	tick := time.NewTicker(h.cfg.ReconcileEvery)
	defer tick.Stop()
	sweep := time.NewTicker(h.cfg.CheckEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep.C:
			h.CheckCredentials()
			continue
		case <-tick.C:
		case <-h.kick:
		}
		queued, err := h.reconcile(ctx)
		if err != nil && ctx.Err() == nil {
			h.log.WarnContext(ctx, "reconcile live streams", "err", err)
		}
		h.signals.Reconciled.Signal(queued)
	}
}

// Reconcile reads the policy version of every tenant with a stream here and
// recomputes each tenant whose version moved past the last one seen (or
// whose last recompute failed). It is how a lost event or a Redis outage is
// repaired.
func (h *Hub) Reconcile(ctx context.Context) error {
	_, err := h.reconcile(ctx)
	return err
}

// reconcile is Reconcile; it also returns how many tenants it queued (-1
// when it failed).
func (h *Hub) reconcile(ctx context.Context) (int, error) {
	h.mu.Lock()
	ids := make([]uuid.UUID, 0, len(h.tenants))
	for id, t := range h.tenants {
		ids = append(ids, id)
		if t.checkFailed {
			t.checkFailed, t.checkAll = false, true
			h.enqueue(t)
		}
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return 0, nil
	}
	versions, err := h.cfg.Versions.PolicyVersions(ctx, ids)
	if err != nil {
		return -1, err
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	queued := 0
	for id, v := range versions {
		t := h.tenants[id]
		if t == nil || (v <= t.seen && !t.failed) {
			continue
		}
		if t.seen != 0 || t.failed {
			h.repaired++
			h.log.InfoContext(ctx, "reconcile: tenant policy moved without an event", "tenant", id, "seen", t.seen, "version", v)
		}
		t.seen = max(t.seen, v)
		t.failed = false
		t.all = true
		// A lost event may have been a revocation.
		t.checkAll = t.checkAll || h.cfg.Valid != nil
		h.enqueue(t)
		queued++
	}
	return queued, nil
}
