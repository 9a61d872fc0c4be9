// Package testsignal lets code under test tell its tests what it has just
// done, so a test waits for the event itself instead of sleeping and
// hoping. A Signal does nothing until a test calls Init: production code
// fires it for free. Until waits on a condition a test can only observe
// from outside (another process, a container engine, a browser).
package testsignal

import "time"

// Timeout bounds a Wait: long enough for a loaded CI machine, short enough
// that a missing signal fails the test rather than hanging it.
const Timeout = 10 * time.Second

// capacity is how many unread signals a Signal holds; a test that lets more
// pile up is told so rather than blocking the code under test.
const capacity = 1000

// TB is the part of testing.TB a Signal needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal carries values of T from the code under test to its test.
type Signal[T any] struct {
	ch chan T
}

// Init arms the signal; call it before the code under test runs.
func (s *Signal[T]) Init() { s.ch = make(chan T, capacity) }

// Signal records v when the signal is armed. It never blocks: a signal
// whose buffer is full panics, since the test lost track of what happened.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		panic("testsignal: buffer full; the test does not read its signals")
	}
}

// Wait returns the next value, failing t when none comes within Timeout.
func (s *Signal[T]) Wait(t TB) T {
	t.Helper()
	select {
	case v := <-s.ch:
		return v
	case <-time.After(Timeout):
		var zero T
		t.Fatalf("testsignal: no signal within %s", Timeout)
		return zero
	}
}

// C is the signal's channel, for a test that waits on several at once.
func (s *Signal[T]) C() <-chan T { return s.ch }

// RequireEmpty fails t when a value is waiting.
func (s *Signal[T]) RequireEmpty(t TB) {
	t.Helper()
	select {
	case v := <-s.ch:
		t.Fatalf("testsignal: unexpected signal %+v", v)
	default:
	}
}

// Until calls ok every period until it reports true, failing t with what
// once within has passed. ok runs on the caller's goroutine, so it may
// fail t itself. It is for conditions the code under test cannot signal:
// another process, a container engine, a browser, a database row.
func Until(t TB, within, period time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for !ok() {
		select {
		case <-deadline.C:
			t.Fatalf("%s: not within %s", what, within)
			return
		case <-tick.C:
		}
	}
}
