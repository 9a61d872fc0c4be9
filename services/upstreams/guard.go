package upstreams

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// The circuit breaker: after breakerFailures calls in a row fail at the
// transport (unreachable, timed out, a broken session), the server's
// calls are refused for breakerOpen; then one call is let through, and
// its outcome closes the breaker or opens it again.
const (
	breakerFailures = 5
	breakerOpen     = 30 * time.Second
)

// guards holds each server's running calls and breaker on this replica.
type guards struct {
	mu  sync.Mutex
	all map[uuid.UUID]*guard
	now func() time.Time
}

type guard struct {
	running   int
	failures  int
	openUntil time.Time
	probing   bool
}

func newGuards() *guards { return &guards{all: map[uuid.UUID]*guard{}, now: time.Now} }

// enter takes one of srv's call slots, or refuses with a message naming
// the server: RateLimited at its concurrency limit, Unavailable while its
// breaker is open. done reports whether the call failed at the transport.
func (g *guards) enter(srv Server) (done func(failed bool), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.all[srv.ID]
	if st == nil {
		st = &guard{}
		g.all[srv.ID] = st
	}
	now := g.now()
	probe := false
	if st.failures >= breakerFailures {
		if now.Before(st.openUntil) || st.probing {
			wait := max(st.openUntil.Sub(now).Round(time.Second), time.Second)
			return nil, fault.New(fault.Unavailable, "upstream server %s is failing (%d calls in a row); calls to it are paused, retry in %s",
				srv.Name, st.failures, wait)
		}
		probe, st.probing = true, true
	}
	if st.running >= srv.Limits.MaxConcurrent {
		if probe {
			st.probing = false
		}
		return nil, fault.New(fault.RateLimited, "upstream server %s is running its limit of %d calls; retry when one finishes",
			srv.Name, srv.Limits.MaxConcurrent)
	}
	st.running++
	return func(failed bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		st.running--
		if probe {
			st.probing = false
		}
		if !failed {
			st.failures = 0
			return
		}
		st.failures++
		if st.failures >= breakerFailures {
			st.openUntil = g.now().Add(breakerOpen)
		}
	}, nil
}

// reset forgets a server's breaker (it was changed or refreshed well).
func (g *guards) reset(id uuid.UUID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.all[id]; st != nil {
		st.failures = 0
	}
}
