package rounds

import (
	"context"
	"sync"

	"github.com/google/uuid"
)

// DefaultEndpointLimit is how many pushes one process sends to one
// endpoint at once when Config.EndpointLimit is zero.
const DefaultEndpointLimit = 16

// gates bounds the pushes in flight per endpoint, so a worker that runs
// many deliveries at once never floods one runtime: a push past the
// limit waits for a slot (its attempt's timeout bounds the wait).
type gates struct {
	limit int
	mu    sync.Mutex
	slots map[uuid.UUID]chan struct{}
}

func newGates(limit int) *gates {
	if limit <= 0 {
		limit = DefaultEndpointLimit
	}
	return &gates{limit: limit, slots: map[uuid.UUID]chan struct{}{}}
}

// acquire takes a slot of endpoint id, waiting while all are taken; the
// release it returns gives it back. It fails only when ctx ends first.
func (g *gates) acquire(ctx context.Context, id uuid.UUID) (func(), error) {
	g.mu.Lock()
	ch, ok := g.slots[id]
	if !ok {
		ch = make(chan struct{}, g.limit)
		g.slots[id] = ch
	}
	g.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
