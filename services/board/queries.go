package board

import (
	"context"

	"github.com/google/uuid"
)

// The query methods below are how the edges (the admin API, the
// dashboard) read the board as an operator sees it: the service keeps its
// read-write store to itself, so every write passes through the rules in
// this package. Each returns the store's answer unchanged; a row that is
// missing, or belongs to another tenant, is fault.NotFound.

// Task returns the tenant's task id.
func (s *Service) Task(ctx context.Context, tenantID, id uuid.UUID) (Task, error) {
	return s.store.Task(ctx, tenantID, id)
}

// ListTasks returns the tenant's tasks that f selects.
func (s *Service) ListTasks(ctx context.Context, tenantID uuid.UUID, f TaskFilter) ([]Task, error) {
	return s.store.ListTasks(ctx, tenantID, f)
}

// ListActivity returns a task's entries, newest first, at most limit,
// after a position when after is set.
func (s *Service) ListActivity(ctx context.Context, tenantID, taskID uuid.UUID, after *Position, limit int) ([]Activity, error) {
	return s.store.ListActivity(ctx, tenantID, taskID, after, limit)
}

// ListRoutines returns the tenant's routines newest first, after a
// position.
func (s *Service) ListRoutines(ctx context.Context, tenantID uuid.UUID, after *Position, limit int) ([]Routine, error) {
	return s.store.ListRoutines(ctx, tenantID, after, limit)
}

// Reminder returns the tenant's reminder id.
func (s *Service) Reminder(ctx context.Context, tenantID, id uuid.UUID) (Reminder, error) {
	return s.store.Reminder(ctx, tenantID, id)
}

// ListReminders returns the tenant's reminders newest first; pending keeps
// those neither fired nor cancelled.
func (s *Service) ListReminders(ctx context.Context, tenantID uuid.UUID, pending bool, after *Position, limit int) ([]Reminder, error) {
	return s.store.ListReminders(ctx, tenantID, pending, after, limit)
}
