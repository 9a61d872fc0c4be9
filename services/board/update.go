package board

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// Change is a tasks_update: nil fields stay as they are.
type Change struct {
	Title              *string
	Description        *string
	AcceptanceCriteria *string
	// Status may move a task between open, in_progress and cancelled, or
	// unblock it (open or in_progress from blocked).
	Status *Status
	// Assignee is the new assignee; a pointer to uuid.Nil unassigns.
	Assignee *uuid.UUID
	Tags     *[]string
}

// UpdateTask changes a task. Errors: NotFound, Invalid, Conflict (a
// finished task, a task that changed under the caller), and relationship
// refusals: acceptance_criteria through MCP, a goal's title or description
// by a non-operator, protected tags, no relationship to the task, and
// taking another employee's task without a relationship with it.
func (s *Service) UpdateTask(ctx context.Context, a Actor, id uuid.UUID, c Change) (Task, error) {
	if err := s.checkChange(a, c); err != nil {
		return Task{}, err
	}
	snap, err := s.task(ctx, a, id)
	if err != nil {
		return Task{}, err
	}
	if err := s.mayUpdate(ctx, a, snap, c); err != nil {
		return Task{}, err
	}
	if c.Assignee != nil && *c.Assignee != uuid.Nil {
		if _, err := s.activeAgent(ctx, a.Tenant.ID, *c.Assignee); err != nil {
			return Task{}, err
		}
	}
	before, after, err := s.mutate(ctx, a, snap, func(t *Task) (Effects, error) { return s.apply(a, t, c) })
	if err != nil {
		return Task{}, err
	}
	s.after(ctx, before, after)
	return after, nil
}

func (s *Service) checkChange(a Actor, c Change) error {
	if a.MCP && c.AcceptanceCriteria != nil {
		return refuse("acceptance_criteria is set by operators through the admin API, never through MCP")
	}
	checks := []error{}
	if c.Title != nil {
		checks = append(checks, checkText("title", *c.Title, 1, maxTitle))
	}
	if c.Description != nil {
		checks = append(checks, checkText("description", *c.Description, 0, maxDescription))
	}
	if c.AcceptanceCriteria != nil {
		checks = append(checks, checkText("acceptance_criteria", *c.AcceptanceCriteria, 0, maxCriteria))
	}
	if c.Tags != nil {
		checks = append(checks, checkTags(*c.Tags))
	}
	if c.Status != nil && !slices.Contains([]Status{Open, InProgress, Cancelled}, *c.Status) {
		checks = append(checks, fault.New(fault.Invalid, "status may be set to open, in_progress or cancelled; use tasks_block and tasks_complete for the others"))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

// mayUpdate applies the record rules of tasks_update to the task as read.
func (s *Service) mayUpdate(ctx context.Context, a Actor, t Task, c Change) error {
	to := t.AssigneeID
	if c.Assignee != nil {
		to = *c.Assignee
	}
	if err := s.mayMove(ctx, a, t, to, "tasks_update"); err != nil {
		return err
	}
	if !a.unrestricted() && t.Kind == KindGoal && (c.Title != nil || c.Description != nil) {
		return refuse("an AI employee cannot change the title or description of a goal; operators do")
	}
	if c.Tags != nil {
		return checkProtectedTags(a, t.Tags, *c.Tags)
	}
	return nil
}

// apply makes the change on t (locked) and says what else to write.
func (s *Service) apply(a Actor, t *Task, c Change) (Effects, error) {
	fx := Effects{}
	if t.Status.Terminal() {
		return fx, fault.New(fault.Conflict, "task %s is %s; a finished task does not change", t.ID, t.Status)
	}
	set(&t.Title, c.Title)
	set(&t.Description, c.Description)
	set(&t.AcceptanceCriteria, c.AcceptanceCriteria)
	set(&t.Tags, c.Tags)
	if c.Assignee != nil && *c.Assignee != t.AssigneeID {
		t.AssigneeID, t.ClaimerID = *c.Assignee, uuid.Nil
		fx.Activity = append(fx.Activity, s.entry(a, t.ID, AssignedTo, t.AssigneeID.String()))
		if t.AssigneeID != uuid.Nil && t.AssigneeID != a.me() {
			fx.Wakeups = append(fx.Wakeups, rounds.New(t.TenantID, t.AssigneeID, t.ID, rounds.Assigned))
		}
	}
	if c.Status != nil && *c.Status != t.Status {
		s.moveStatus(a, t, *c.Status, &fx)
	}
	fx.Activity = append(fx.Activity, s.entry(a, t.ID, Updated, ""))
	return fx, nil
}

func (s *Service) moveStatus(a Actor, t *Task, to Status, fx *Effects) {
	was := t.Status
	t.Status = to
	switch {
	case to == Cancelled:
		fx.Activity = append(fx.Activity, s.entry(a, t.ID, CancelledNote, ""))
	case was == Blocked:
		t.BlockedReason = ""
		fx.Activity = append(fx.Activity, s.entry(a, t.ID, Unblocked, ""))
		if t.AssigneeID != uuid.Nil && t.AssigneeID != a.me() && !wakes(fx, t.AssigneeID) {
			fx.Wakeups = append(fx.Wakeups, rounds.New(t.TenantID, t.AssigneeID, t.ID, rounds.Unblocked))
		}
	}
}

func wakes(fx *Effects, agent uuid.UUID) bool {
	return slices.ContainsFunc(fx.Wakeups, func(w rounds.Wakeup) bool { return w.AgentID == agent })
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// task reads a task of the actor's tenant.
func (s *Service) task(ctx context.Context, a Actor, id uuid.UUID) (Task, error) {
	t, err := s.store.Task(ctx, a.Tenant.ID, id)
	if fault.Is(err, fault.NotFound) {
		return t, fault.New(fault.NotFound, "no task has id %s", id)
	}
	return t, err
}

// mutate writes fn's change to the task read as snap. The relationship
// rules were checked against snap outside the transaction (they read other
// rows); if who holds the task changed since, the call is refused rather
// than applied under rules that no longer hold.
func (s *Service) mutate(ctx context.Context, a Actor, snap Task, fn func(*Task) (Effects, error)) (before, after Task, err error) {
	after, err = s.store.UpdateTask(ctx, a.Tenant.ID, snap.ID, func(t *Task) (Effects, error) {
		before = *t
		if t.AssigneeID != snap.AssigneeID || t.ClaimerID != snap.ClaimerID || t.Kind != snap.Kind ||
			!slices.Equal(protectedOf(t.Tags), protectedOf(snap.Tags)) {
			return Effects{}, fault.New(fault.Conflict, "task %s changed hands while this call ran; read it again and retry", t.ID)
		}
		return fn(t)
	})
	return before, after, err
}

// after runs what a committed change implies outside the task's
// transaction: a finished task ends its task-scoped grants and its rounds
// and retires the employees spawned for it; a task taken from an employee
// ends that employee's round on it; a blocked task ends its round until it
// is unblocked. Failures are logged: the change itself is committed.
func (s *Service) after(ctx context.Context, before, after Task) {
	ctx = context.WithoutCancel(ctx)
	s.runEvent(ctx, before, after)
	switch {
	case after.Status.Terminal() && !before.Status.Terminal():
		s.finished(ctx, after)
	case after.Status == Blocked && before.Status != Blocked:
		s.endRounds(ctx, after, uuid.Nil)
	case before.AssigneeID != after.AssigneeID && before.AssigneeID != uuid.Nil:
		s.endRounds(ctx, after, before.AssigneeID)
	}
	if after.Kind == KindGoal && !after.Status.Terminal() &&
		(before.AssigneeID != after.AssigneeID || !slices.Equal(protectedOf(before.Tags), protectedOf(after.Tags))) {
		s.syncGoal(ctx, after.TenantID, after.ID)
	}
}

// syncGoal brings the grants of a running goal's grant: tags in line with
// the goal as stored now (read again, so that of two changes committed
// close together the later one's state wins whichever sync runs last). A
// failure is logged: the change itself is committed.
func (s *Service) syncGoal(ctx context.Context, tenantID, goalID uuid.UUID) {
	if s.grant == nil {
		return
	}
	g, err := s.store.Task(ctx, tenantID, goalID)
	if err == nil && !g.Status.Terminal() {
		err = s.grant.SyncGoal(ctx, tenantID, g.ID, g.AssigneeID, g.Tags)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "sync the grants of a goal's tags", "tenant", tenantID, "goal", goalID, "err", err)
	}
}

func (s *Service) finished(ctx context.Context, t Task) {
	if s.grant != nil {
		if err := s.grant.EndTask(ctx, t.TenantID, t.ID); err != nil {
			s.log.ErrorContext(ctx, "end the grants of a finished task", "tenant", t.TenantID, "task", t.ID, "err", err)
		}
	}
	s.endRounds(ctx, t, uuid.Nil)
	s.retireSpawned(ctx, t)
}

func (s *Service) endRounds(ctx context.Context, t Task, agent uuid.UUID) {
	if s.ender == nil {
		return
	}
	if err := s.ender.EndRounds(ctx, t.TenantID, t.ID, agent); err != nil {
		s.log.ErrorContext(ctx, "end the rounds of a task", "tenant", t.TenantID, "task", t.ID, "err", err)
	}
}

// runEvent tells the responsibility runs of a task unblocked or done. A
// failure is logged: the change itself is committed.
func (s *Service) runEvent(ctx context.Context, before, after Task) {
	ev, ok := s.runs.(RunEvents)
	if !ok {
		return
	}
	name := ""
	switch {
	case after.Status == Done && before.Status != Done:
		name = "task_done"
	case before.Status == Blocked && after.Status != Blocked && !after.Status.Terminal():
		name = "task_unblocked"
	default:
		return
	}
	if err := ev.TaskEvent(ctx, after.TenantID, after.ID, name); err != nil {
		s.log.ErrorContext(ctx, "tell responsibility runs of a task event", "tenant", after.TenantID, "task", after.ID, "event", name, "err", err)
	}
}
