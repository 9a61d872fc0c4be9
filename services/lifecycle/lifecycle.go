// Package lifecycle is the one start/stop lifecycle of Visor's background
// services: Start runs a service once (a second Start is refused), Stop is
// safe to call twice, concurrently, or before Start, and a Group stops what
// it started in the reverse order of starting.
//
// A service embeds Base and starts its goroutines with Base.Start; they get
// a context that carries the caller's values but ends only at Stop, so a
// process can drain its edges first and then stop its services in order.
package lifecycle

import (
	"context"
	"errors"
	"sync"
)

// ErrStarted is returned by Start of a service that was started before
// (whether or not it has stopped since): a service runs once.
var ErrStarted = errors.New("lifecycle: service started twice")

// Service is a background service.
type Service interface {
	// Start begins the service's work and returns without waiting for it.
	Start(ctx context.Context) error
	// Stop ends the work and waits for it. It is safe to call twice.
	Stop()
}

// Base gives the embedding service the lifecycle. The zero value is ready.
type Base struct {
	mu       sync.Mutex
	started  bool
	stopping bool
	cancel   context.CancelFunc
	done     <-chan struct{}
	onStop   []func()
	stop     sync.Once
	wg       sync.WaitGroup
}

// Start runs each fn on its own goroutine with the service's context, which
// ends when Stop is called (not when ctx ends). It returns ErrStarted when
// the service was started before.
func (b *Base) Start(ctx context.Context, fns ...func(ctx context.Context)) error {
	rctx, err := b.Begin(ctx)
	if err != nil {
		return err
	}
	for _, fn := range fns {
		b.Go(func() { fn(rctx) })
	}
	return nil
}

// Begin marks the service started and returns its context, for services
// that start their goroutines themselves (with Go) or none at all. It
// returns ErrStarted when the service was started before.
func (b *Base) Begin(ctx context.Context) (context.Context, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return nil, ErrStarted
	}
	b.started = true
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel, b.done = cancel, rctx.Done()
	return rctx, nil
}

// Go runs fn on a goroutine that Stop waits for. Once Stop has begun, fn
// is not run at all.
func (b *Base) Go(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return
	}
	b.wg.Go(fn)
}

// OnStop registers fn to run when Stop begins, before the service's context
// ends: a drain step that must happen while the service still runs.
// Functions run in the reverse order of registration.
func (b *Base) OnStop(fn func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onStop = append(b.onStop, fn)
}

// Stopping returns a channel closed once Stop has ended the service's
// context; nil (never ready) before Start.
func (b *Base) Stopping() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}

// Stop runs the OnStop functions, ends the service's context and waits for
// its goroutines. Later and concurrent calls wait for the first to finish.
// Stopping a service that never started does nothing, and it can then no
// longer start.
func (b *Base) Stop() {
	b.stop.Do(func() {
		b.mu.Lock()
		b.started, b.stopping = true, true // a stopped service cannot start
		hooks, cancel := b.onStop, b.cancel
		b.mu.Unlock()
		for i := len(hooks) - 1; i >= 0; i-- {
			hooks[i]()
		}
		if cancel != nil {
			cancel()
		}
		b.wg.Wait()
	})
}
