package rounds

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
)

// MaxWait is the longest a long-poll waits for a wake-up.
const MaxWait = 60 * time.Second

// recheck bounds how long a waiting long-poll goes without looking, in
// case a ring was lost (a replica's listener reconnecting).
const recheck = 2 * time.Second

// Bell wakes the long-polls of an employee when one of its wake-ups turns
// ready. Storage rings it from Postgres notifications, so a wake-up made
// ready by any worker reaches a long-poll held by any replica.
type Bell struct {
	mu      sync.Mutex
	waiters map[[2]uuid.UUID]map[chan struct{}]struct{}
}

// NewBell returns a Bell with no waiters.
func NewBell() *Bell { return &Bell{waiters: map[[2]uuid.UUID]map[chan struct{}]struct{}{}} }

// wait registers a waiter for the employee; cancel removes it.
func (b *Bell) wait(tenantID, agentID uuid.UUID) (<-chan struct{}, func()) {
	k := [2]uuid.UUID{tenantID, agentID}
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.waiters[k] == nil {
		b.waiters[k] = map[chan struct{}]struct{}{}
	}
	b.waiters[k][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.waiters[k], ch)
		if len(b.waiters[k]) == 0 {
			delete(b.waiters, k)
		}
		b.mu.Unlock()
	}
}

// Waiting returns how many long-polls wait on the bell now.
func (b *Bell) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, ws := range b.waiters {
		n += len(ws)
	}
	return n
}

// Ring wakes every long-poll of the employee.
func (b *Bell) Ring(tenantID, agentID uuid.UUID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.waiters[[2]uuid.UUID{tenantID, agentID}] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// SetBell installs the bell long-polls wait on (nil: they re-check every
// two seconds).
func (s *Service) SetBell(b *Bell) { s.bell = b }

// Poll is the runtime's long-poll: it hands out the employee's ready
// wake-ups (Take) and, when there are none, waits up to wait (at most
// MaxWait) for one, returning an empty list when none came. It returns
// early, empty, when ctx or closing ends.
func (s *Service) Poll(ctx context.Context, tenantID uuid.UUID, slug string, agentID uuid.UUID, limit int, wait time.Duration, closing <-chan struct{}) ([]Payload, error) {
	wait = min(max(wait, 0), MaxWait)
	deadline := time.Now().Add(wait)
	for {
		var ring <-chan struct{}
		cancel := func() {}
		if s.bell != nil {
			ring, cancel = s.bell.wait(tenantID, agentID) // before looking, so no ring is missed
		}
		ps, err := s.Take(ctx, tenantID, slug, agentID, limit)
		left := time.Until(deadline)
		if err != nil || len(ps) > 0 || left <= 0 {
			cancel()
			return ps, err
		}
		t := time.NewTimer(min(left, recheck))
		select {
		case <-ring:
		case <-t.C:
		case <-ctx.Done():
			deadline = time.Now()
		case <-closing:
			deadline = time.Now()
		}
		t.Stop()
		cancel()
		if ctx.Err() != nil {
			return []Payload{}, nil
		}
	}
}
