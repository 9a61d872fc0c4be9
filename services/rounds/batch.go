package rounds

import (
	"context"
	"sync"
	"time"
)

// group coalesces the database work of concurrent deliveries: a call
// joins the set waiting for the one in flight, and each set runs as one
// batch of statements. Under no load a set is one call and costs what a
// call alone did; under a burst the sets grow, so the statements per
// delivery fall as the load rises. No goroutine is left behind: one runs
// while calls wait and ends when none do.
type group[In, Out any] struct {
	// run does one set's work, setting each call's result. Its context is
	// not any one caller's: a caller that gives up does not fail the
	// others of its set.
	run     func(ctx context.Context, calls []*call[In, Out])
	max     int           // largest set
	timeout time.Duration // bound of one set's work

	mu      sync.Mutex
	pending []*call[In, Out]
	running bool
}

// call is one caller's part of a set.
type call[In, Out any] struct {
	in   In
	out  Out
	err  error
	done chan struct{}
}

// groupMax bounds one set of deliveries' statements.
const groupMax = 500

func newGroup[In, Out any](run func(context.Context, []*call[In, Out])) *group[In, Out] {
	return &group[In, Out]{run: run, max: groupMax, timeout: 30 * time.Second}
}

// do adds in to the next set and waits for its result, or for ctx to end
// (the set still runs, its result unread).
func (g *group[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &call[In, Out]{in: in, done: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	if !g.running {
		g.running = true
		go g.loop()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, context.Cause(ctx)
	}
}

// loop runs sets while calls wait.
func (g *group[In, Out]) loop() {
	for {
		g.mu.Lock()
		n := min(len(g.pending), g.max)
		if n == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		set := g.pending[:n:n]
		g.pending = g.pending[n:]
		if len(g.pending) == 0 {
			g.pending = nil // let the set's backing array go
		}
		g.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
		g.run(ctx, set)
		cancel()
		for _, c := range set {
			close(c.done)
		}
	}
}
