package board

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/rounds"
)

// Routine is a task on a cron schedule: each run is a task assigned to the
// employee the routine runs as, and one round of that employee. A routine
// is not a sub-task.
type Routine struct {
	ID             uuid.UUID   `json:"id"`
	TenantID       uuid.UUID   `json:"-"`
	Name           string      `json:"name"`
	Schedule       string      `json:"schedule"`
	AgentID        uuid.UUID   `json:"agent_id"`
	Description    string      `json:"description"`
	Tags           []string    `json:"tags"`
	Paused         bool        `json:"paused"`
	NextRunAt      *time.Time  `json:"next_run_at,omitempty"`
	LastRunAt      *time.Time  `json:"last_run_at,omitempty"`
	CreatorKind    CreatorKind `json:"creator_kind"`
	CreatorAgentID uuid.UUID   `json:"creator_agent_id,omitzero"`
	CreatedBy      string      `json:"created_by"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
}

// Run is what one run of a routine (or a fired reminder) writes: the task
// the round works on (nil when it works on an existing task) and the
// wake-up.
type Run struct {
	Task   *Task
	Wakeup rounds.Wakeup
}

// RoutineStore persists routines.
type RoutineStore interface {
	CreateRoutine(ctx context.Context, r *Routine) error
	Routine(ctx context.Context, tenantID, id uuid.UUID) (Routine, error)
	// RoutinesNamed returns the tenant's routines called name.
	RoutinesNamed(ctx context.Context, tenantID uuid.UUID, name string) ([]Routine, error)
	// ListRoutines returns routines newest first, after a position.
	ListRoutines(ctx context.Context, tenantID uuid.UUID, after *Position, limit int) ([]Routine, error)
	// UpdateRoutine locks the routine and commits what fn changed; fn sees
	// the tenant's time zone setting ("" when unset).
	UpdateRoutine(ctx context.Context, tenantID, id uuid.UUID, fn func(r *Routine, timeZone string) error) (Routine, error)
	DeleteRoutine(ctx context.Context, tenantID, id uuid.UUID) error
	// RunRoutine locks the routine and writes the run plan returns, now.
	RunRoutine(ctx context.Context, tenantID, id uuid.UUID, plan func(r Routine, timeZone string) (Run, error)) (Run, error)
	// FireDueRoutines runs, in every tenant, up to limit unpaused routines
	// whose next run is at or before now: each is locked (SKIP LOCKED, so
	// any number of workers fire each run once), its run written and its
	// next run set to what plan says. It returns the runs written.
	FireDueRoutines(ctx context.Context, now time.Time, limit int, plan func(r Routine, timeZone string) (Run, *time.Time, error)) ([]Run, error)
}

// Reminder wakes an employee at a time, on a task or on a task made for it.
type Reminder struct {
	ID             uuid.UUID   `json:"id"`
	TenantID       uuid.UUID   `json:"-"`
	AgentID        uuid.UUID   `json:"agent_id"`
	TaskID         uuid.UUID   `json:"task_id,omitzero"`
	Text           string      `json:"text"`
	DueAt          time.Time   `json:"due_at"`
	CreatorKind    CreatorKind `json:"creator_kind"`
	CreatorAgentID uuid.UUID   `json:"creator_agent_id,omitzero"`
	CreatedBy      string      `json:"created_by"`
	CreatedAt      time.Time   `json:"created_at"`
	FiredAt        *time.Time  `json:"fired_at,omitempty"`
	CancelledAt    *time.Time  `json:"cancelled_at,omitempty"`
}

// ReminderStore persists reminders.
type ReminderStore interface {
	CreateReminder(ctx context.Context, r *Reminder) error
	Reminder(ctx context.Context, tenantID, id uuid.UUID) (Reminder, error)
	// ListReminders returns reminders newest first; pending keeps those
	// neither fired nor cancelled.
	ListReminders(ctx context.Context, tenantID uuid.UUID, pending bool, after *Position, limit int) ([]Reminder, error)
	// CancelReminder cancels a pending reminder; one already fired or
	// cancelled is fault.Conflict.
	CancelReminder(ctx context.Context, tenantID, id uuid.UUID) (Reminder, error)
	// FireDueReminders fires, in every tenant, up to limit pending
	// reminders due at or before now (SKIP LOCKED: each fires once),
	// writing the run plan returns for each.
	FireDueReminders(ctx context.Context, now time.Time, limit int, plan func(r Reminder) (Run, error)) ([]Run, error)
}

// SpawnStore records ephemeral employees and the task each lives for.
type SpawnStore interface {
	RecordSpawn(ctx context.Context, tenantID, agentID, taskID uuid.UUID, by string) error
	// SpawnedFor returns the unretired employees spawned for a task.
	SpawnedFor(ctx context.Context, tenantID, taskID uuid.UUID) ([]uuid.UUID, error)
	// Retire marks a spawned employee retired.
	Retire(ctx context.Context, tenantID, agentID uuid.UUID) error
}
