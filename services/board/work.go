package board

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// Claim makes the calling employee the task's claimer (and assignee when
// it had none). Only an AI employee claims; errors: NotFound, Conflict for
// a finished task, relationship refusals.
func (s *Service) Claim(ctx context.Context, a Actor, id uuid.UUID) (Task, error) {
	if a.unrestricted() {
		return Task{}, fault.New(fault.Invalid, "only an AI employee claims a task; operators assign it (tasks_update assignee)")
	}
	snap, err := s.task(ctx, a, id)
	if err != nil {
		return Task{}, err
	}
	if err := s.mayClaim(ctx, a, snap); err != nil {
		return Task{}, err
	}
	before, after, err := s.mutate(ctx, a, snap, func(t *Task) (Effects, error) {
		if t.Status.Terminal() {
			return Effects{}, fault.New(fault.Conflict, "task %s is %s and cannot be claimed", t.ID, t.Status)
		}
		t.ClaimerID = a.me()
		if t.AssigneeID == uuid.Nil {
			t.AssigneeID = a.me()
		}
		if t.Status == Open {
			t.Status = InProgress
		}
		return Effects{Activity: []Activity{s.entry(a, t.ID, Claimed, "")}}, nil
	})
	if err != nil {
		return Task{}, err
	}
	s.after(ctx, before, after)
	return after, nil
}

// Complete marks the task done: its task-scoped grants and rounds end and
// the employees spawned for it retire. Errors: NotFound, Conflict for a
// finished task, Invalid for a long summary, relationship refusals.
func (s *Service) Complete(ctx context.Context, a Actor, id uuid.UUID, summary string) (Task, error) {
	if err := checkText("summary", summary, 0, maxText); err != nil {
		return Task{}, err
	}
	return s.finish(ctx, a, id, "tasks_complete", func(t *Task) Activity {
		t.Status, t.BlockedReason = Done, ""
		return s.entry(a, t.ID, Completed, summary)
	})
}

// Block marks the task blocked with a reason; its round ends until it is
// unblocked, which wakes the assignee again.
func (s *Service) Block(ctx context.Context, a Actor, id uuid.UUID, reason string) (Task, error) {
	if err := checkText("reason", reason, 1, maxReason); err != nil {
		return Task{}, err
	}
	return s.finish(ctx, a, id, "tasks_block", func(t *Task) Activity {
		t.Status, t.BlockedReason = Blocked, reason
		return s.entry(a, t.ID, BlockedEntry, reason)
	})
}

func (s *Service) finish(ctx context.Context, a Actor, id uuid.UUID, what string, fn func(*Task) Activity) (Task, error) {
	snap, err := s.task(ctx, a, id)
	if err != nil {
		return Task{}, err
	}
	if err := s.mayFinish(ctx, a, snap, what); err != nil {
		return Task{}, err
	}
	before, after, err := s.mutate(ctx, a, snap, func(t *Task) (Effects, error) {
		if t.Status.Terminal() {
			return Effects{}, fault.New(fault.Conflict, "task %s is already %s", t.ID, t.Status)
		}
		return Effects{Activity: []Activity{fn(t)}}, nil
	})
	if err != nil {
		return Task{}, err
	}
	s.after(ctx, before, after)
	return after, nil
}

// Post adds a comment to a task's activity.
func (s *Service) Post(ctx context.Context, a Actor, id uuid.UUID, text string) (Activity, error) {
	if err := checkText("text", text, 1, maxText); err != nil {
		return Activity{}, err
	}
	t, err := s.task(ctx, a, id)
	if err != nil {
		return Activity{}, err
	}
	if err := s.mayTouch(ctx, a, t, "activity_post"); err != nil {
		return Activity{}, err
	}
	e := s.entry(a, t.ID, Comment, text)
	if err := s.store.AddActivity(ctx, &e); err != nil {
		return Activity{}, err
	}
	return e, nil
}

// MaxListLimit caps one page of tasks.
const MaxListLimit = 500

// List returns a page of the tenant's tasks, newest first. Any caller of
// the tenant may read its board.
func (s *Service) List(ctx context.Context, a Actor, f TaskFilter) ([]Task, error) {
	if f.Limit <= 0 || f.Limit > MaxListLimit {
		return nil, fault.New(fault.Invalid, "limit must be 1-%d", MaxListLimit)
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, fault.New(fault.Invalid, "status must be open, in_progress, blocked, done or cancelled")
	}
	if f.Kind != "" && f.Kind != KindTask && f.Kind != KindGoal {
		return nil, fault.New(fault.Invalid, `kind must be "task" or "goal"`)
	}
	return s.store.ListTasks(ctx, a.Tenant.ID, f)
}
