package live

import (
	"github.com/google/uuid"

	"github.com/visorhq/visor/internal/testsignal"
)

// signals are the hub's test signals: a test arms them to wait for the
// hub's work instead of sleeping. Unarmed, they cost nothing.
type signals struct {
	// Worked fires when a worker has finished one pass over a tenant.
	Worked testsignal.Signal[pass]
	// Reconciled fires when the reconcile loop has finished a round, with
	// how many tenants it found changed and queued for a recompute (-1
	// when it could not read the versions).
	Reconciled testsignal.Signal[int]
	// Sent fires when a sender has written one notification and counted
	// it, with the stream's answer.
	Sent testsignal.Signal[error]
}

// pass is what one worker pass over a tenant did: by the time it is
// signalled, every notification it queued is in the send queue.
type pass struct {
	Tenant uuid.UUID
	// Notified counts the streams it queued a list_changed for; Closed
	// those it closed for a credential that is gone.
	Notified, Closed int
}
