package server

import (
	"context"
	"net/http"
)

// Parking lets a request that holds its response open for long (an idle
// notification stream) wait with a small stack. A handler goroutine's
// stack grows to the request's deepest moment (the middleware chain,
// authentication, decoding) and the collector shrinks it only once less
// than a quarter of it is in use, which a goroutine parked at the bottom of
// that chain never reaches. So a request the server was told may park
// (ParkWhen) runs the whole chain on a short-lived goroutine; a handler
// that parks (Park) hands back its wait, and the request's own goroutine,
// whose stack never grew, runs it once the chain has returned. Every
// middleware still runs for the request, in order, before the wait.

type parkingKey struct{}

// parking is one request's hand-off: the wait a handler left, and what
// middleware asked to run after it (the request's log line).
type parking struct {
	wait  func()
	after []func()
}

// ParkWhen makes the requests match accepts eligible to park. match sees
// only the request line and headers, before any middleware.
func (s *Server) ParkWhen(match func(*http.Request) bool) { s.parks = match }

// Park hands wait to the request's own goroutine, to run once the
// middleware chain has returned, and reports whether it did. When it
// reports false (the request is not eligible, or is served by something
// other than Serve, such as a test's recorder), the handler waits itself.
// After a true, the handler must return without touching the response
// again other than through what wait uses, and must not use a response
// writer wrapped by echo (echo reuses its response for later requests).
func Park(ctx context.Context, wait func()) bool {
	p, _ := ctx.Value(parkingKey{}).(*parking)
	if p == nil || p.wait != nil {
		return false
	}
	p.wait = wait
	return true
}

// afterPark runs fn after the request's wait, when a handler parked it,
// and reports whether it will.
func afterPark(ctx context.Context, fn func()) bool {
	p, _ := ctx.Value(parkingKey{}).(*parking)
	if p == nil || p.wait == nil {
		return false
	}
	p.after = append(p.after, fn)
	return true
}

// ServeHTTP serves r through echo; a request eligible to park runs the
// chain on a goroutine of its own (see Parking).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.parks == nil || !s.parks(r) {
		s.e.ServeHTTP(w, r)
		return
	}
	p := &parking{}
	r = r.WithContext(context.WithValue(r.Context(), parkingKey{}, p))
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		s.e.ServeHTTP(w, r)
	}()
	if v := <-done; v != nil {
		panic(v) // as if raised here: net/http logs it and drops the request
	}
	if p.wait == nil {
		return
	}
	defer func() {
		for _, fn := range p.after {
			fn()
		}
	}()
	p.wait()
}
