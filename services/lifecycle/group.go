package lifecycle

import (
	"context"
	"sync"
)

// Group starts services one after another and stops them in the reverse
// order, so a service is stopped before the services it uses. Close
// functions (a connection pool's) take their place in the same order.
type Group struct {
	mu      sync.Mutex
	stops   []func()
	stopped bool
	once    sync.Once
}

// Start starts s and adds it to the group. When s fails to start, it is
// not added; the caller stops the group to undo what already started.
// Starting into a stopped group stops s at once and returns ErrStarted.
func (g *Group) Start(ctx context.Context, s Service) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	return g.add(s.Stop)
}

// Defer adds a close function, run by Stop in its place in the reverse
// order.
func (g *Group) Defer(close func()) { _ = g.add(close) }

func (g *Group) add(stop func()) error {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		stop()
		return ErrStarted
	}
	g.stops = append(g.stops, stop)
	g.mu.Unlock()
	return nil
}

// Stop stops every service and runs every close function, newest first.
// It is safe to call twice; later and concurrent calls wait for the first.
func (g *Group) Stop() {
	g.once.Do(func() {
		g.mu.Lock()
		stops := g.stops
		g.stops, g.stopped = nil, true
		g.mu.Unlock()
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	})
}
