// Package board is the task board: tasks and goals, their activity,
// routines (tasks on a cron schedule), reminders, hand-offs with a
// TaskPacket, messages between AI employees and ephemeral employees spawned
// for one task — and the record relationship rules that say which caller
// may touch which record. Work reaches an employee as a round
// (services/rounds): assigning, handing off, unblocking, messaging, a
// reminder falling due and a routine's schedule each wake the employee.
package board

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/keyset"
	"github.com/visorhq/visor/services/rounds"
)

// Kind is a task's mode.
type Kind string

// Kinds of task. A goal is a task whose title and description only
// operators change.
const (
	KindTask Kind = "task"
	KindGoal Kind = "goal"
)

// Status is where a task stands.
type Status string

// Task statuses. Done and Cancelled are terminal.
const (
	Open       Status = "open"
	InProgress Status = "in_progress"
	Blocked    Status = "blocked"
	Done       Status = "done"
	Cancelled  Status = "cancelled"
)

// Terminal reports whether s ends the task.
func (s Status) Terminal() bool { return s == Done || s == Cancelled }

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	switch s {
	case Open, InProgress, Blocked, Done, Cancelled:
		return true
	}
	return false
}

// CreatorKind is the kind of principal that created a record.
type CreatorKind string

// Creator kinds; System is Visor itself (a routine run, a reminder).
const (
	ByOperator CreatorKind = "operator"
	ByEmployee CreatorKind = "employee"
	ByExternal CreatorKind = "external"
	BySystem   CreatorKind = "system"
)

// Origin says what made a task. Only Direct tasks created by employees
// count as sub-tasks toward a parent's cap.
type Origin string

// Origins.
const (
	Direct       Origin = "direct"
	FromRoutine  Origin = "routine"
	FromReminder Origin = "reminder"
	FromMessage  Origin = "message"
	FromSpawn    Origin = "spawn"
	// FromResponsibility is the task of a continuous responsibility's run.
	FromResponsibility Origin = "responsibility"
)

// Task is one card on the board.
type Task struct {
	ID                 uuid.UUID   `json:"id"`
	TenantID           uuid.UUID   `json:"-"`
	Kind               Kind        `json:"kind"`
	Title              string      `json:"title"`
	Description        string      `json:"description"`
	AcceptanceCriteria string      `json:"acceptance_criteria,omitempty"`
	Status             Status      `json:"status"`
	BlockedReason      string      `json:"blocked_reason,omitempty"`
	ParentID           uuid.UUID   `json:"parent_task_id,omitzero"`
	AssigneeID         uuid.UUID   `json:"assignee_id,omitzero"`
	ClaimerID          uuid.UUID   `json:"claimer_id,omitzero"`
	CreatorKind        CreatorKind `json:"creator_kind"`
	CreatorAgentID     uuid.UUID   `json:"creator_agent_id,omitzero"`
	CreatedBy          string      `json:"created_by"`
	Origin             Origin      `json:"origin"`
	OriginID           uuid.UUID   `json:"origin_id,omitzero"`
	Tags               []string    `json:"tags"`
	CreatedAt          time.Time   `json:"created_at"`
	UpdatedAt          time.Time   `json:"updated_at"`
	FinishedAt         *time.Time  `json:"finished_at,omitempty"`
}

// ActivityKind classifies an activity entry.
type ActivityKind string

// Activity kinds.
const (
	Comment       ActivityKind = "comment"
	Created       ActivityKind = "created"
	Claimed       ActivityKind = "claimed"
	AssignedTo    ActivityKind = "assigned"
	Updated       ActivityKind = "updated"
	BlockedEntry  ActivityKind = "blocked"
	Unblocked     ActivityKind = "unblocked"
	Completed     ActivityKind = "completed"
	CancelledNote ActivityKind = "cancelled"
	HandedOff     ActivityKind = "handoff"
)

// Activity is one entry in a task's history: a comment or a change.
type Activity struct {
	ID            uuid.UUID    `json:"id"`
	TenantID      uuid.UUID    `json:"-"`
	TaskID        uuid.UUID    `json:"task_id"`
	Kind          ActivityKind `json:"kind"`
	Author        string       `json:"author"`
	AuthorAgentID uuid.UUID    `json:"author_agent_id,omitzero"`
	Text          string       `json:"text,omitempty"`
	Packet        *TaskPacket  `json:"packet,omitempty"`
	CreatedAt     time.Time    `json:"created_at"`
}

// Effects are what a change writes besides the task itself, in the same
// transaction: activity entries and the wake-ups it causes (written
// queued, for the workers' claimers to deliver).
type Effects struct {
	Activity []Activity
	Wakeups  []rounds.Wakeup
}

// TaskFilter selects tasks for a list, newest first. Zero fields do not
// filter. After, when set, continues after that position (keyset paging).
type TaskFilter struct {
	Status   Status
	Kind     Kind
	Assignee uuid.UUID
	Parent   uuid.UUID
	Tag      string
	After    *Position
	Limit    int
}

// Position is a task's place in the newest-first order, for paging.
type Position = keyset.Position

// PositionOf returns t's position.
func PositionOf(t Task) Position { return Position{At: t.CreatedAt, ID: t.ID} }

// Store persists the board. Every method takes the tenant explicitly;
// another tenant's row is fault.NotFound, like a missing one.
type Store interface {
	// CreateTask inserts t with fx. When subtaskCap is positive and t has a
	// parent, the parent is locked and the insert refused with
	// fault.Conflict when the parent already holds subtaskCap unfinished
	// sub-tasks created by AI employees; concurrent creations under one
	// parent are serialized, so the cap is never exceeded. A parent of
	// another tenant, or none, is fault.NotFound.
	CreateTask(ctx context.Context, t *Task, fx Effects, subtaskCap int) error
	Task(ctx context.Context, tenantID, id uuid.UUID) (Task, error)
	ListTasks(ctx context.Context, tenantID uuid.UUID, f TaskFilter) ([]Task, error)
	// UpdateTask locks the task, lets fn change it and say what else to
	// write, and commits both; an error from fn rolls everything back.
	UpdateTask(ctx context.Context, tenantID, id uuid.UUID, fn func(*Task) (Effects, error)) (Task, error)
	// Within reports whether id is root or a task under it at any depth.
	Within(ctx context.Context, tenantID, id, root uuid.UUID) (bool, error)
	// AddActivity writes an entry to an existing task.
	AddActivity(ctx context.Context, a *Activity) error
	// ListActivity returns a task's entries, newest first, at most limit,
	// after a position when after is set.
	ListActivity(ctx context.Context, tenantID, taskID uuid.UUID, after *Position, limit int) ([]Activity, error)

	RoutineStore
	ReminderStore
	SpawnStore
}
