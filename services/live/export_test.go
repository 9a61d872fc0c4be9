package live

import (
	"time"

	"github.com/visorhq/visor/internal/testsignal"
)

// ArmSignals arms the hub's test signals and returns them; call it before
// Start.
func (h *Hub) ArmSignals() *Signals {
	h.signals.Worked.Init()
	h.signals.Reconciled.Init()
	h.signals.Sent.Init()
	return &h.signals
}

// Signals are the hub's test signals.
type Signals = signals

// Pass is what one worker pass did (signals.Worked).
type Pass = pass

// Settle returns once the hub has nothing queued, running or being sent.
// Every piece of work ends with a signal (a pass with Worked, a send with
// Sent), so it waits on those, never on the clock; the hub's signals must
// be armed and read by nothing else.
func (h *Hub) Settle(t testsignal.TB) {
	t.Helper()
	deadline := time.After(testsignal.Timeout)
	for h.busy() {
		select {
		case <-h.signals.Worked.C():
		case <-h.signals.Sent.C():
		case <-deadline:
			t.Fatalf("the hub did not settle within %s", testsignal.Timeout)
		}
	}
}

// busy reports whether work is queued, running or being sent.
func (h *Hub) busy() bool { return h.Stats().Pending > 0 }
