package live

import (
	"context"
	"time"

	"github.com/google/uuid"
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
		targets := h.take(t)
		h.mu.Unlock()

		failed := false
		for _, pr := range targets {
			if err := h.recompute(ctx, t, pr); err != nil {
				failed = true
				h.log.WarnContext(ctx, "recompute visible tools", "tenant", t.id, "err", err)
			}
		}

		h.mu.Lock()
		t.running = false
		t.failed = t.failed || failed
		switch {
		case t.all || len(t.agents) > 0:
			h.enqueue(t)
		case t.streams == 0 && h.tenants[t.id] == t:
			delete(h.tenants, t.id)
		}
		h.mu.Unlock()
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

// recompute computes pr's visible set and notifies each of its streams whose
// announced set differs.
func (h *Hub) recompute(ctx context.Context, t *tenant, pr *principal) error {
	names, err := h.cfg.Visible(ctx, pr.p)
	if err != nil {
		return err
	}
	set := makeSet(names)

	h.mu.Lock()
	pr.last = set
	var notify []Stream
	for e := range pr.streams {
		if e.set != set {
			e.set = set
			notify = append(notify, e.s)
		}
	}
	h.notified += int64(len(notify))
	h.mu.Unlock()

	for _, s := range notify {
		h.sends.Go(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.NotifyTimeout)
			defer cancel()
			if err := s.NotifyToolsChanged(ctx); err != nil {
				h.log.DebugContext(ctx, "notify tools/list_changed", "tenant", t.id, "err", err)
			}
		})
	}
	return nil
}

// reconcileLoop compares policy versions every ReconcileEvery and whenever
// kicked.
func (h *Hub) reconcileLoop(ctx context.Context) {
	tick := time.NewTicker(h.cfg.ReconcileEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-h.kick:
		}
		if err := h.Reconcile(ctx); err != nil && ctx.Err() == nil {
			h.log.WarnContext(ctx, "reconcile live streams", "err", err)
		}
	}
}

// Reconcile reads the policy version of every tenant with a stream here and
// recomputes each tenant whose version moved past the last one seen (or
// whose last recompute failed). It is how a lost event or a Redis outage is
// repaired.
func (h *Hub) Reconcile(ctx context.Context) error {
	h.mu.Lock()
	ids := make([]uuid.UUID, 0, len(h.tenants))
	for id := range h.tenants {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	versions, err := h.cfg.Versions.PolicyVersions(ctx, ids)
	if err != nil {
		return err
	}

	h.mu.Lock()
	defer h.mu.Unlock()
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
		h.enqueue(t)
	}
	return nil
}
