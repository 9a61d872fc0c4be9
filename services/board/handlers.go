package board

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/keyset"
	"github.com/visorhq/visor/services/tools"
)

// idArg reads a required or optional id argument; a malformed one is
// Invalid.
func idArg(args map[string]any, name string) (uuid.UUID, bool, error) {
	v, ok := tools.String(args, name)
	if !ok {
		return uuid.Nil, false, nil
	}
	id, err := uuid.Parse(strings.TrimSpace(v))
	if err != nil {
		return uuid.Nil, true, fault.New(fault.Invalid, "%s must be a task id (a UUID)", name)
	}
	return id, true, nil
}

func strArg(args map[string]any, name string) *string {
	if v, ok := tools.String(args, name); ok {
		return &v
	}
	return nil
}

func tagsArg(args map[string]any) (*[]string, error) {
	raw, ok := args["tags"].([]any)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(raw))
	for _, x := range raw {
		s, ok := x.(string)
		if !ok {
			return nil, fault.New(fault.Invalid, "tags must be an array of strings")
		}
		out = append(out, s)
	}
	return &out, nil
}

// agentArg resolves an employee named by argument name: nil when absent,
// a pointer to uuid.Nil for the empty string.
func (s *Service) agentArg(ctx context.Context, c tools.Call, name string) (*uuid.UUID, error) {
	v, ok := tools.String(c.Args, name)
	if !ok {
		return nil, nil
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return ptr(uuid.Nil), nil
	}
	if v == "me" && c.Subject.Agent != nil {
		return ptr(c.Subject.Agent.ID), nil
	}
	a, err := s.agentNamed(ctx, c.Subject.Tenant.ID, v)
	if err != nil {
		return nil, err
	}
	return &a.ID, nil
}

// taskView is a task as a tool answers it.
type taskView struct {
	Task
	Assignee string `json:"assignee,omitempty"`
}

func (s *Service) view(ctx context.Context, t Task) taskView {
	v := taskView{Task: t}
	if t.AssigneeID != uuid.Nil {
		if a, err := s.dir.Agent(ctx, t.TenantID, t.AssigneeID); err == nil {
			v.Assignee = a.Name
		}
	}
	return v
}

func (s *Service) taskResult(ctx context.Context, verb string, t Task) *tools.Result {
	v := s.view(ctx, t)
	text := fmt.Sprintf("%s %s %s %q (status %s", verb, t.Kind, t.ID, t.Title, t.Status)
	if v.Assignee != "" {
		text += ", assigned to " + v.Assignee
	}
	return &tools.Result{Text: text + ").", Structured: v}
}

func (s *Service) toolList(ctx context.Context, c tools.Call) (*tools.Result, error) {
	f := TaskFilter{Limit: 50, Status: Status(deref(strArg(c.Args, "status"))), Kind: Kind(deref(strArg(c.Args, "kind"))),
		Tag: deref(strArg(c.Args, "tag"))}
	if n, ok := tools.Int(c.Args, "limit"); ok {
		if n < 1 || n > 100 {
			return nil, fault.New(fault.Invalid, "limit must be 1-100")
		}
		f.Limit = int(n)
	}
	var err error
	if f.After, err = decodeCursor(deref(strArg(c.Args, "cursor"))); err != nil {
		return nil, err
	}
	if who, err := s.agentArg(ctx, c, "assignee"); err != nil {
		return nil, err
	} else if who != nil {
		f.Assignee = *who
	}
	if f.Parent, _, err = idArg(c.Args, "parent_task_id"); err != nil {
		return nil, err
	}
	limit := f.Limit
	f.Limit++ // one more than asked says whether a next page exists
	ts, err := s.List(ctx, ActorOf(c.Subject), f)
	if err != nil {
		return nil, err
	}
	ts, next := keyset.Cut(ts, limit, PositionOf)
	out := map[string]any{"tasks": ts}
	var text strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&text, "%s [%s, %s] %q\n", t.ID, t.Kind, t.Status, t.Title)
	}
	if next != "" {
		out["next_cursor"] = next
		text.WriteString("More tasks: pass next_cursor as cursor.\n")
	}
	if len(ts) == 0 {
		text.WriteString("No tasks match.")
	}
	return &tools.Result{Text: text.String(), Structured: out}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func decodeCursor(s string) (*Position, error) {
	p, ok := keyset.Parse(s)
	if !ok {
		return nil, fault.New(fault.Invalid, "cursor is not one this tool issued")
	}
	return p, nil
}

func (s *Service) toolCreate(ctx context.Context, c tools.Call) (*tools.Result, error) {
	a := ActorOf(c.Subject)
	tags, err := tagsArg(c.Args)
	if err != nil {
		return nil, err
	}
	who, err := s.agentArg(ctx, c, "assignee")
	if err != nil {
		return nil, err
	}
	in := NewTask{Kind: Kind(deref(strArg(c.Args, "kind"))), Title: deref(strArg(c.Args, "title")),
		Description: deref(strArg(c.Args, "description")), AcceptanceCriteria: deref(strArg(c.Args, "acceptance_criteria"))}
	if tags != nil {
		in.Tags = *tags
	}
	if who != nil {
		in.Assignee = *who
	}
	if _, ok := c.Args["acceptance_criteria"]; ok && a.MCP {
		return nil, refuse("acceptance_criteria is set by operators through the admin API, never through MCP")
	}
	if sched, ok := tools.String(c.Args, "schedule"); ok {
		return s.createRoutine(ctx, a, in, sched)
	}
	if in.Parent, in.ParentGiven, err = idArg(c.Args, "parent_task_id"); err != nil {
		return nil, err
	}
	t, err := s.CreateTask(ctx, a, in)
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, "Created", t), nil
}

func (s *Service) createRoutine(ctx context.Context, a Actor, in NewTask, sched string) (*tools.Result, error) {
	if in.Kind == KindGoal {
		return nil, fault.New(fault.Invalid, "a goal cannot have a schedule; routines are tasks")
	}
	r, err := s.CreateRoutine(ctx, a, NewRoutine{Name: in.Title, Schedule: sched, Agent: in.Assignee,
		Description: in.Description, Tags: in.Tags})
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Created routine %s %q on %q; next run %s.", r.ID, r.Name, r.Schedule, r.NextRunAt.Format(time.RFC3339)),
		Structured: r}, nil
}

func (s *Service) toolUpdate(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	ch := Change{Title: strArg(c.Args, "title"), Description: strArg(c.Args, "description"),
		AcceptanceCriteria: strArg(c.Args, "acceptance_criteria")}
	if st := strArg(c.Args, "status"); st != nil {
		ch.Status = ptr(Status(*st))
	}
	if ch.Tags, err = tagsArg(c.Args); err != nil {
		return nil, err
	}
	if ch.Assignee, err = s.agentArg(ctx, c, "assignee"); err != nil {
		return nil, err
	}
	if len(c.Args) == 1 {
		return nil, fault.New(fault.Invalid, "nothing to change: send at least one field besides task_id")
	}
	t, err := s.UpdateTask(ctx, ActorOf(c.Subject), id, ch)
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, "Updated", t), nil
}

func (s *Service) toolClaim(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	t, err := s.Claim(ctx, ActorOf(c.Subject), id)
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, "Claimed", t), nil
}

func (s *Service) toolComplete(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	t, err := s.Complete(ctx, ActorOf(c.Subject), id, deref(strArg(c.Args, "summary")))
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, "Completed", t), nil
}

func (s *Service) toolBlock(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	t, err := s.Block(ctx, ActorOf(c.Subject), id, deref(strArg(c.Args, "reason")))
	if err != nil {
		return nil, err
	}
	return s.taskResult(ctx, "Blocked", t), nil
}

func (s *Service) toolPost(ctx context.Context, c tools.Call) (*tools.Result, error) {
	id, _, err := idArg(c.Args, "task_id")
	if err != nil {
		return nil, err
	}
	e, err := s.Post(ctx, ActorOf(c.Subject), id, deref(strArg(c.Args, "text")))
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Posted to task %s.", id), Structured: e}, nil
}
