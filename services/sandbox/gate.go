package sandbox

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Caps bounds how many runs go at once on one worker: in all, per tenant and
// per employee. A cap of zero or less means one.
type Caps struct {
	Worker   int
	Tenant   int
	Employee int
}

// Gate admits runs under Caps. A run that cannot start waits in a queue;
// when a slot frees, the waiting run of the tenant with the fewest runs
// going is admitted first (the oldest on a tie), so one tenant's flood
// queues behind its own cap and never starves another tenant. It is safe
// for concurrent use.
type Gate struct {
	caps Caps

	mu       sync.Mutex
	running  int
	tenants  map[uuid.UUID]int
	employee map[[2]uuid.UUID]int
	queue    []*waiter
}

type waiter struct {
	tenant, employee uuid.UUID
	admitted         chan struct{}
}

// NewGate returns a gate with the given caps.
func NewGate(caps Caps) *Gate {
	caps.Worker, caps.Tenant, caps.Employee = max(caps.Worker, 1), max(caps.Tenant, 1), max(caps.Employee, 1)
	return &Gate{caps: caps, tenants: map[uuid.UUID]int{}, employee: map[[2]uuid.UUID]int{}}
}

// Acquire waits until a run of employee in tenant may start, and returns the
// function that ends it (call it any number of times; the first ends the
// run) and how long the run waited in the queue (zero when it did not).
// When ctx ends first it returns ctx's error and nothing is held.
func (g *Gate) Acquire(ctx context.Context, tenant, employee uuid.UUID) (release func(), waited time.Duration, err error) {
	start := time.Now()
	w := &waiter{tenant: tenant, employee: employee, admitted: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	g.admit()
	g.mu.Unlock()
	select {
	case <-w.admitted:
		return g.releaser(w), 0, nil // never queued
	default:
	}
	select {
	case <-w.admitted:
		return g.releaser(w), time.Since(start), nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-w.admitted: // admitted as ctx ended: give the slot back
			g.end(w)
		default:
			g.drop(w)
		}
		return nil, time.Since(start), ctx.Err()
	}
}

func (g *Gate) releaser(w *waiter) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.end(w)
			g.mu.Unlock()
		})
	}
}

// end gives w's slot back and admits whoever may go now. g.mu is held.
func (g *Gate) end(w *waiter) {
	g.running--
	g.tenants[w.tenant]--
	if g.tenants[w.tenant] == 0 {
		delete(g.tenants, w.tenant)
	}
	k := [2]uuid.UUID{w.tenant, w.employee}
	g.employee[k]--
	if g.employee[k] == 0 {
		delete(g.employee, k)
	}
	g.admit()
}

// admit starts waiting runs while a slot is free, each time the one of the
// tenant with the fewest runs going. g.mu is held.
func (g *Gate) admit() {
	for g.running < g.caps.Worker {
		best := -1
		for i, w := range g.queue {
			if g.tenants[w.tenant] >= g.caps.Tenant || g.employee[[2]uuid.UUID{w.tenant, w.employee}] >= g.caps.Employee {
				continue
			}
			if best < 0 || g.tenants[w.tenant] < g.tenants[g.queue[best].tenant] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := g.queue[best]
		g.queue = append(g.queue[:best], g.queue[best+1:]...)
		g.running++
		g.tenants[w.tenant]++
		g.employee[[2]uuid.UUID{w.tenant, w.employee}]++
		close(w.admitted)
	}
}

// drop removes a waiter that gave up. g.mu is held.
func (g *Gate) drop(w *waiter) {
	for i, q := range g.queue {
		if q == w {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return
		}
	}
}

// Queued returns how many runs are waiting.
func (g *Gate) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}
