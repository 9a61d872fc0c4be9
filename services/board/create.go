package board

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// NewTask is what a caller asks for when creating a task or goal.
type NewTask struct {
	Kind               Kind
	Title              string
	Description        string
	AcceptanceCriteria string
	// Parent, when ParentGiven, is the task to create it under.
	Parent      uuid.UUID
	ParentGiven bool
	Assignee    uuid.UUID
	Tags        []string
}

// CreateTask creates a task or goal. Errors: Invalid for a bad field;
// NotFound for a parent or assignee that does not exist; Conflict when the
// parent is finished or holds SubtaskCap unfinished sub-tasks created by
// employees; relationship refusals for acceptance_criteria through MCP,
// protected tags, a parent the caller has no relationship to, and a round
// whose task is empty or malformed.
func (s *Service) CreateTask(ctx context.Context, a Actor, in NewTask) (Task, error) {
	if err := s.checkNew(a, &in); err != nil {
		return Task{}, err
	}
	if err := s.placeInRound(ctx, a, &in); err != nil {
		return Task{}, err
	}
	if in.ParentGiven {
		if err := s.checkParent(ctx, a, in.Parent); err != nil {
			return Task{}, err
		}
	}
	if in.Assignee != uuid.Nil {
		if _, err := s.activeAgent(ctx, a.Tenant.ID, in.Assignee); err != nil {
			return Task{}, err
		}
	}
	t := s.newTask(a, in, Direct, uuid.Nil)
	fx := Effects{Activity: []Activity{s.entry(a, t.ID, Created, "")}}
	if in.Assignee != uuid.Nil && in.Assignee != a.me() {
		fx.Wakeups = append(fx.Wakeups, rounds.New(t.TenantID, in.Assignee, t.ID, rounds.Assigned))
	}
	limit := 0
	if t.CreatorKind == ByEmployee {
		limit = SubtaskCap
	}
	if err := s.store.CreateTask(ctx, &t, fx, limit); err != nil {
		return Task{}, err
	}
	if t.Kind == KindGoal && t.AssigneeID != uuid.Nil && len(protectedOf(t.Tags)) > 0 {
		s.syncGoal(context.WithoutCancel(ctx), t.TenantID, t.ID)
	}
	return t, nil
}

func (s *Service) checkNew(a Actor, in *NewTask) error {
	if in.Kind == "" {
		in.Kind = KindTask
	}
	if in.Kind != KindTask && in.Kind != KindGoal {
		return fault.New(fault.Invalid, `kind must be "task" or "goal"`)
	}
	if a.MCP && in.AcceptanceCriteria != "" {
		return refuse("acceptance_criteria is set by operators through the admin API, never through MCP")
	}
	for _, err := range []error{checkText("title", in.Title, 1, maxTitle), checkText("description", in.Description, 0, maxDescription),
		checkText("acceptance_criteria", in.AcceptanceCriteria, 0, maxCriteria), checkTags(in.Tags)} {
		if err != nil {
			return err
		}
	}
	return checkProtectedTags(a, nil, in.Tags)
}

// placeInRound applies the round's rule for the parent of a new task. A
// round token's task that is empty or names no task is refused, never read
// as "no round". Inside a continuous responsibility run the new task goes
// under the round's task when no parent is given, and a given parent must
// be the run's task or under it; elsewhere the round sets no parent.
func (s *Service) placeInRound(ctx context.Context, a Actor, in *NewTask) error {
	p := a.Principal
	if !p.OnRound() {
		return nil
	}
	if p.TaskID == uuid.Nil {
		return refuse("tasks_create is refused: this round's task is empty; a round must name its task")
	}
	if _, err := s.store.Task(ctx, p.TenantID, p.TaskID); fault.Is(err, fault.NotFound) {
		return refuse("tasks_create is refused: this round's task %s is not a task of this tenant", p.TaskID)
	} else if err != nil {
		return err
	}
	runTask, inRun, err := s.runs.RunOf(ctx, p.TenantID, p.AgentID, p.TaskID)
	if err != nil || !inRun {
		return err
	}
	if !in.ParentGiven {
		in.Parent, in.ParentGiven = p.TaskID, true
		return nil
	}
	ok, err := s.store.Within(ctx, p.TenantID, in.Parent, runTask)
	if err != nil || ok {
		return err
	}
	return refuse("tasks_create is refused: inside a responsibility run a parent_task_id must be the run's task %s or a task under it", runTask)
}

// checkParent needs a relationship to the parent, which must be unfinished.
func (s *Service) checkParent(ctx context.Context, a Actor, id uuid.UUID) error {
	parent, err := s.store.Task(ctx, a.Tenant.ID, id)
	if fault.Is(err, fault.NotFound) {
		return fault.New(fault.NotFound, "no task has id %s (parent_task_id)", id)
	}
	if err != nil {
		return err
	}
	if err := s.mayTouch(ctx, a, parent, "creating a task under parent "+id.String()); err != nil {
		return err
	}
	if parent.Status.Terminal() {
		return fault.New(fault.Conflict, "parent task %s is %s; new tasks cannot go under a finished task", id, parent.Status)
	}
	return nil
}

func (s *Service) newTask(a Actor, in NewTask, origin Origin, originID uuid.UUID) Task {
	t := Task{ID: uuid.New(), TenantID: a.Tenant.ID, Kind: in.Kind, Title: in.Title, Description: in.Description,
		AcceptanceCriteria: in.AcceptanceCriteria, Status: Open, AssigneeID: in.Assignee, CreatorKind: a.creatorKind(),
		CreatorAgentID: a.me(), CreatedBy: a.Principal.ID(), Origin: origin, OriginID: originID, Tags: in.Tags}
	if in.ParentGiven {
		t.ParentID = in.Parent
	}
	if t.Tags == nil {
		t.Tags = []string{}
	}
	return t
}

// entry is an activity entry on taskID by the actor.
func (s *Service) entry(a Actor, taskID uuid.UUID, kind ActivityKind, text string) Activity {
	return Activity{ID: uuid.New(), TenantID: a.Tenant.ID, TaskID: taskID, Kind: kind, Author: a.Principal.ID(),
		AuthorAgentID: a.me(), Text: text}
}
