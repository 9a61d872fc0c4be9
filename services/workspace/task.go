package workspace

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Task states.
const (
	TaskActive    = "active"
	TaskBlocked   = "blocked"
	TaskReview    = "review"
	TaskCompleted = "completed"
)

// Task limits.
const (
	MaxTaskSteps     = 100
	MaxTaskText      = 2000
	MaxTaskEvidence  = 200
	MaxOpenTasks     = 200
	MaxTaskEntries   = 500 // checkpoints and blockers kept per task
	DefaultTaskLimit = 50
)

// Task is a tracked multi-step task: state only. Steps, checkpoints,
// blockers and evidence are what the employee recorded; nothing here runs.
type Task struct {
	TenantID    uuid.UUID    `json:"-"`
	AgentID     uuid.UUID    `json:"-"`
	ID          uuid.UUID    `json:"task_id"`
	Title       string       `json:"title"`
	State       string       `json:"state"`
	BoardTaskID *uuid.UUID   `json:"board_task_id,omitempty"`
	Steps       []Step       `json:"steps"`
	Progress    string       `json:"progress,omitempty"`
	Checkpoints []Checkpoint `json:"checkpoints,omitempty"`
	Blockers    []Blocker    `json:"blockers,omitempty"`
	Evidence    []Evidence   `json:"evidence,omitempty"`
	Review      *Review      `json:"final_review,omitempty"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
	CompletedAt *time.Time   `json:"completed_at,omitempty"`
}

// Step is one planned step.
type Step struct {
	Title string `json:"title"`
	Done  bool   `json:"done"`
}

// Checkpoint is a progress note with the steps it finished.
type Checkpoint struct {
	At        time.Time `json:"at"`
	Note      string    `json:"note"`
	StepsDone []int     `json:"steps_done,omitempty"`
}

// Blocker is why the task stopped, until it resumed.
type Blocker struct {
	At         time.Time  `json:"at"`
	Reason     string     `json:"reason"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	Resolution string     `json:"resolution,omitempty"`
}

// Evidence is verification evidence: what was checked and what it showed.
type Evidence struct {
	Kind   string    `json:"kind"` // command, test, file, artifact, url, observation
	Detail string    `json:"detail"`
	At     time.Time `json:"at"`
}

// Review is the final review before completion.
type Review struct {
	At      time.Time `json:"at"`
	Summary string    `json:"summary"`
}

// TaskStore keeps tasks per employee. Every method names its tenant and
// employee; another's task is NotFound.
type TaskStore interface {
	// CreateTask inserts t; Conflict when the employee has MaxOpenTasks
	// unfinished tasks.
	CreateTask(ctx context.Context, t *Task) error
	Task(ctx context.Context, tenantID, agentID, id uuid.UUID) (Task, error)
	// Tasks lists the employee's tasks in state ("" for every state),
	// most recently updated first.
	Tasks(ctx context.Context, tenantID, agentID uuid.UUID, state string, limit int) ([]Task, error)
	// UpdateTask applies fn under a row lock and saves the task.
	UpdateTask(ctx context.Context, tenantID, agentID, id uuid.UUID, fn func(*Task) error) (Task, error)
}
