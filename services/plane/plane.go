// Package plane is the worker plane: how a process that must not hold a
// dangerous resource (the Docker socket, a browser) asks a worker that
// holds it to do one piece of work, and gets its progress and its answer
// back. A request names a job kind and carries an opaque payload; it goes
// either to any worker of a named pool or to one specific worker. This
// package holds the types and the contract; storage/redisx carries them.
package plane

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Request is one piece of work for a worker.
type Request struct {
	// Kind names the handler that runs it ("sandbox.run").
	Kind string
	// Pool is the set of workers any one of which may take it. Ignored
	// when Worker is set.
	Pool string
	// Worker, when set, is the one worker that must take it (a browser
	// session that lives on one worker).
	Worker string
	// Tenant owns the work; a pool takes turns between tenants, so one
	// tenant's flood queues behind its own requests.
	Tenant uuid.UUID
	// Payload is the handler's input, at most MaxPayload bytes.
	Payload json.RawMessage
	// MaxWait bounds how long the request may wait to be taken (zero:
	// DefaultMaxWait). The call as a whole is bounded by its context.
	MaxWait time.Duration
}

// Limits of a request.
const (
	MaxPayload     = 4 << 20 // bytes of payload, and of an answer
	DefaultMaxWait = 10 * time.Minute
)

// Progress is a report from a running job.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

// Job is a request as its handler sees it.
type Job struct {
	ID       uuid.UUID
	Kind     string
	Tenant   uuid.UUID
	Payload  json.RawMessage
	Enqueued time.Time // when the caller queued it
	Worker   string    // the worker running it
	// Report sends a progress report to the caller (best effort).
	Report func(Progress)
}

// Handler runs one job on a worker. Its context ends when the caller
// cancels or goes away, or the worker stops. An error that carries a fault
// code reaches the caller with that code and its safe message; any other
// error reaches it as an internal error.
type Handler func(ctx context.Context, j Job) (json.RawMessage, error)

// Caller sends requests to workers.
type Caller interface {
	// Call queues r, reports the job's progress to onProgress (which may
	// be nil) and returns its answer. Errors: ErrNoWorker when no live
	// worker can take r, ErrBusy when no worker took it within its
	// MaxWait, ErrWorkerLost when the worker running it stopped
	// answering, the handler's error, or ctx's error once ctx ends (the
	// job is then cancelled on its worker).
	Call(ctx context.Context, r Request, onProgress func(Progress)) (json.RawMessage, error)
}

// The plane's own errors. All are Unavailable: the work did not finish,
// and retrying later may succeed. ErrBusy is a request that no live worker
// took within its MaxWait (each was busy, or had no room for pool work).
var (
	ErrNoWorker   = fault.New(fault.Unavailable, "no worker is running that can take this work")
	ErrWorkerLost = fault.New(fault.Unavailable, "the worker running this work stopped answering; it was not finished")
	ErrBusy       = fault.New(fault.Unavailable, "every worker stayed busy; the work was not started")
)

// LostError is ErrWorkerLost (errors.Is matches it) saying how far the
// work had got: a worker had taken it, and Started when the worker had
// reported progress on it, so it was running. Either way it may have had
// effects: the caller must not assume it did not run.
type LostError struct {
	Worker  string
	Started bool
}

func (e *LostError) Error() string {
	if e.Started {
		return "the worker running this work stopped answering after it had started; it may have run in part or to the end"
	}
	return "the worker that had taken this work stopped answering; it may have started"
}

// Unwrap makes the error ErrWorkerLost (its fault code included).
func (e *LostError) Unwrap() error { return ErrWorkerLost }
