// Package rounds wakes AI employees. Visor runs no models: each employee is
// run by its tenant's runtime, an agent loop elsewhere that connects to the
// MCP endpoint. A round is one wake-up of one employee on one task: Visor
// mints a round token bound to (employee, task) and delivers the wake-up to
// the runtime, pushed as a signed webhook or handed to a long-poll. The
// round token lives only as long as the round.
//
// Every wake-up says why it happened, and carries any text another party
// wrote (a message, a hand-off packet, a reminder) as fenced, labelled
// data, never as instructions.
package rounds

import (
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/keyset"
)

// Reason says why an employee is woken.
type Reason string

// Reasons for a wake-up.
const (
	Routine   Reason = "routine"   // a routine's schedule came round (or an operator ran it)
	Reminder  Reason = "reminder"  // a reminder fell due
	Message   Reason = "message"   // another employee sent a message
	Assigned  Reason = "assigned"  // a task was assigned to the employee
	Unblocked Reason = "unblocked" // a blocked task of the employee was unblocked
	Handoff   Reason = "handoff"   // a task was handed off to the employee with a TaskPacket
	// Responsibility is a run of one of the employee's continuous responsibilities.
	Responsibility Reason = "responsibility"
)

// Valid reports whether r is a known reason.
func (r Reason) Valid() bool {
	switch r {
	case Routine, Reminder, Message, Assigned, Unblocked, Handoff, Responsibility:
		return true
	}
	return false
}

// State is where a wake-up's delivery stands.
type State string

// Delivery states.
const (
	Queued    State = "queued"     // waiting for a delivery attempt, which a worker claims
	Ready     State = "ready"      // no push endpoint: waiting for the runtime's long-poll
	HandedOut State = "handed_out" // a long-poll took it
	Delivered State = "delivered"  // a webhook receiver accepted it
	Dead      State = "dead"       // every push attempt failed: a dead letter
	Cancelled State = "cancelled"  // nothing to deliver any more (task finished, employee gone)
)

// Data is text another party wrote, carried to the runtime as data.
type Data struct {
	// Label says what the text is ("message from ada"); Visor writes it.
	Label string `json:"label"`
	// Author names who wrote the text (a principal id).
	Author string `json:"author"`
	Text   string `json:"text"`
}

// Wakeup is one round to deliver: one employee on one task.
type Wakeup struct {
	ID          uuid.UUID  `json:"id"`
	TenantID    uuid.UUID  `json:"-"`
	AgentID     uuid.UUID  `json:"agent_id"`
	TaskID      uuid.UUID  `json:"task_id"`
	Reason      Reason     `json:"reason"`
	Data        []Data     `json:"data"`
	State       State      `json:"state"`
	DueAt       time.Time  `json:"due_at"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// New returns a queued wake-up of agent on task for reason, due now.
func New(tenantID, agentID, taskID uuid.UUID, reason Reason, data ...Data) Wakeup {
	return Wakeup{ID: uuid.New(), TenantID: tenantID, AgentID: agentID, TaskID: taskID, Reason: reason, Data: data, State: Queued}
}

// Pending reports whether s still waits for delivery.
func (s State) Pending() bool { return s == Queued || s == Ready }

// Valid reports whether s is a known state.
func (s State) Valid() bool {
	switch s {
	case Queued, Ready, HandedOut, Delivered, Dead, Cancelled:
		return true
	}
	return false
}

// Endpoint is where an employee's wake-ups are pushed: its own, or the
// tenant's default (AgentID uuid.Nil) for employees without one. The
// signing secret is never read back; it is shown once when set.
type Endpoint struct {
	ID        uuid.UUID `json:"id"`
	TenantID  uuid.UUID `json:"-"`
	AgentID   uuid.UUID `json:"agent_id,omitzero"`
	URL       string    `json:"url"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Position is a wake-up's place in the newest-first order, for paging.
type Position = keyset.Position

// PositionOf returns w's position.
func PositionOf(w Wakeup) Position { return Position{At: w.CreatedAt, ID: w.ID} }

// Filter selects wake-ups for a list, newest first. Zero fields do not
// filter; After continues after a position.
type Filter struct {
	State State
	Agent uuid.UUID
	After *Position
	Limit int
}
