package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// Board is the admin API of the task board: operators create and change
// tasks and goals (acceptance criteria included, which no MCP caller may
// set), assign them, comment on them, and manage routines and reminders.
// Operators are unrestricted by the record relationship rules; everything
// else about a change (wake-ups, ended grants, retired ephemeral
// employees) happens exactly as through the MCP tools. Add it with API.Add.
type Board struct{ svc *board.Service }

// NewBoard returns the board resource.
func NewBoard(svc *board.Service) Board { return Board{svc: svc} }

// Operations lists the board routes: tasks here, routines and reminders in
// board_schedule.go.
func (r Board) Operations() []Operation {
	return append(r.taskOperations(), r.scheduleOperations()...)
}

// NewTask is the body of POST /tenants/{tenant}/tasks.
type NewTask struct {
	// Kind is task (default) or goal.
	Kind               string     `json:"kind,omitempty"`
	Title              string     `json:"title"`
	Description        string     `json:"description,omitempty"`
	AcceptanceCriteria string     `json:"acceptance_criteria,omitempty"`
	ParentTaskID       *uuid.UUID `json:"parent_task_id,omitempty"`
	// Assignee is the AI employee who does it: its id or name.
	Assignee *AgentRef `json:"assignee,omitempty"`
	Tags     []string  `json:"tags,omitempty"`
}

// TaskPatch is the body of PATCH /tenants/{tenant}/tasks/{task}; absent
// fields stay. assignee null unassigns. status moves a task between
// open, in_progress and cancelled (open or in_progress unblocks it); use
// the complete and block routes for done and blocked.
type TaskPatch struct {
	Title              *string          `json:"title,omitempty"`
	Description        *string          `json:"description,omitempty"`
	AcceptanceCriteria *string          `json:"acceptance_criteria,omitempty"`
	Status             *string          `json:"status,omitempty"`
	Assignee           OptionalAgentRef `json:"assignee,omitzero"`
	Tags               *[]string        `json:"tags,omitempty"`
}

// TaskList is a page of tasks, newest first.
type TaskList struct {
	Tasks      []board.Task `json:"tasks"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// CompleteTask is the optional body of POST .../tasks/{task}/complete.
type CompleteTask struct {
	Summary string `json:"summary,omitempty"`
}

// BlockTask is the body of POST .../tasks/{task}/block.
type BlockTask struct {
	Reason string `json:"reason"`
}

// NewComment is the body of POST .../tasks/{task}/activity.
type NewComment struct {
	Text string `json:"text"`
}

// ActivityList is a page of a task's activity, newest first.
type ActivityList struct {
	Activity   []board.Activity `json:"activity"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

var taskFilters = []QueryParam{
	{Name: "status", Type: "string", Description: "Only tasks in this status.", Enum: []string{"open", "in_progress", "blocked", "done", "cancelled"}},
	{Name: "kind", Type: "string", Description: "Only tasks or only goals.", Enum: []string{"task", "goal"}},
	{Name: "assignee", Type: "string", Description: "Only tasks assigned to this AI employee: its id or name."},
	{Name: "parent_task_id", Type: "string", Description: "Only the sub-tasks of this task."},
	{Name: "tag", Type: "string", Description: "Only tasks carrying this tag."},
}

func (r Board) taskOperations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/tasks", ID: "listTasks", Tag: "board", Needs: identity.ReadTenant,
			Summary: "List tasks and goals, newest first, with filters", Query: append(taskFilters, PageParams...),
			Response: TaskList{}, Handler: r.listTasks},
		{Method: http.MethodPost, Path: "/tenants/:tenant/tasks", ID: "createTask", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Create a task or goal, with acceptance criteria, a parent and an assignee (who is woken)", Request: NewTask{},
			Response: board.Task{}, Status: http.StatusCreated, Handler: r.createTask},
		{Method: http.MethodGet, Path: "/tenants/:tenant/tasks/:task", ID: "getTask", Tag: "board", Needs: identity.ReadTenant,
			Summary: "Read a task or goal", Response: board.Task{}, Handler: r.getTask},
		{Method: http.MethodPatch, Path: "/tenants/:tenant/tasks/:task", ID: "updateTask", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Change a task's title, description, acceptance criteria, status, assignee or tags", Request: TaskPatch{},
			Response: board.Task{}, Handler: r.updateTask},
		{Method: http.MethodPost, Path: "/tenants/:tenant/tasks/:task/complete", ID: "completeTask", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Mark a task done: its task-scoped grants and rounds end, its ephemeral employees retire", Request: CompleteTask{},
			Response: board.Task{}, Handler: r.completeTask},
		{Method: http.MethodPost, Path: "/tenants/:tenant/tasks/:task/block", ID: "blockTask", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Mark a task blocked, with the reason; unblocking it (PATCH status) wakes its assignee", Request: BlockTask{},
			Response: board.Task{}, Handler: r.blockTask},
		{Method: http.MethodGet, Path: "/tenants/:tenant/tasks/:task/activity", ID: "listTaskActivity", Tag: "board", Needs: identity.ReadTenant,
			Summary: "List a task's comments and changes, newest first", Query: PageParams, Response: ActivityList{}, Handler: r.listActivity},
		{Method: http.MethodPost, Path: "/tenants/:tenant/tasks/:task/activity", ID: "commentOnTask", Tag: "board", Needs: identity.ManageAgents,
			Summary: "Post a comment to a task's activity", Request: NewComment{}, Response: board.Activity{},
			Status: http.StatusCreated, Handler: r.comment},
	}
}

// actor is the operator calling the admin API, as the board sees it.
func actor(c echo.Context) board.Actor { return board.Operator(principal(c), tenant(c)) }

// boardErr turns a record relationship refusal, which an operator meets
// only in the rules that bind everyone, into a 403.
func boardErr(err error) error {
	var refusal *tools.RefusalError
	if errors.As(err, &refusal) {
		return fault.New(fault.Forbidden, "%s", refusal.Decision.Reason)
	}
	return err
}

func (r Board) listTasks(c echo.Context) error {
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	f := board.TaskFilter{Status: board.Status(q.Get("status")), Kind: board.Kind(q.Get("kind")), Tag: q.Get("tag"), Limit: page.Limit + 1}
	if f.Status != "" && !f.Status.Valid() {
		return fault.New(fault.Invalid, "status must be open, in_progress, blocked, done or cancelled")
	}
	if f.Kind != "" && f.Kind != board.KindTask && f.Kind != board.KindGoal {
		return fault.New(fault.Invalid, "kind must be task or goal")
	}
	if v := c.QueryParam("assignee"); v != "" {
		if f.Assignee, err = bodyAgent(c, "assignee", AgentRef(v)); err != nil {
			return err
		}
	}
	if f.Parent, err = queryID(c, "parent_task_id"); err != nil {
		return err
	}
	if f.After, err = page.After(); err != nil {
		return err
	}
	ts, err := r.svc.ListTasks(c.Request().Context(), tenant(c).ID, f)
	if err != nil {
		return err
	}
	out := TaskList{}
	out.Tasks, out.NextCursor = cut(ts, page.Limit, board.PositionOf)
	return c.JSON(http.StatusOK, out)
}

// queryID reads an optional UUID query parameter.
func queryID(c echo.Context, name string) (uuid.UUID, error) {
	v := strings.TrimSpace(c.QueryParam(name))
	if v == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, fault.New(fault.Invalid, "%s must be a UUID", name)
	}
	return id, nil
}

func (r Board) createTask(c echo.Context) error {
	var in NewTask
	if err := decode(c, &in); err != nil {
		return err
	}
	nt := board.NewTask{Kind: board.Kind(in.Kind), Title: in.Title, Description: in.Description,
		AcceptanceCriteria: in.AcceptanceCriteria, Tags: in.Tags}
	if in.ParentTaskID != nil {
		nt.Parent, nt.ParentGiven = *in.ParentTaskID, true
	}
	if in.Assignee != nil {
		id, err := taskAgent(c, *in.Assignee)
		if err != nil {
			return err
		}
		nt.Assignee = id
	}
	t, err := r.svc.CreateTask(c.Request().Context(), actor(c), nt)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusCreated, t)
}

// missing names the record a store lookup did not find, by kind and id;
// any other error passes through.
func missing(err error, kind string, id uuid.UUID) error {
	if fault.Is(err, fault.NotFound) {
		return fault.New(fault.NotFound, "no %s has id %s", kind, id)
	}
	return err
}

// getOne answers the tenant's record of kind whose id is the path
// parameter named kind, read with get; a record get does not find is a 404
// that names kind and id.
func getOne[T any](c echo.Context, kind string, get func(ctx context.Context, tenantID, id uuid.UUID) (T, error)) error {
	id, err := pathID(c, kind)
	if err != nil {
		return err
	}
	v, err := get(c.Request().Context(), tenant(c).ID, id)
	if err != nil {
		return missing(err, kind, id)
	}
	return c.JSON(http.StatusOK, v)
}

func (r Board) getTask(c echo.Context) error { return getOne(c, "task", r.svc.Task) }

func (r Board) updateTask(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	var in TaskPatch
	if err := decode(c, &in); err != nil {
		return err
	}
	ch := board.Change{Title: in.Title, Description: in.Description, AcceptanceCriteria: in.AcceptanceCriteria, Tags: in.Tags}
	if in.Status != nil {
		st := board.Status(*in.Status)
		switch st {
		case board.Done, board.Blocked:
			return fault.New(fault.Invalid, "status %s is set with POST .../complete or .../block", st)
		}
		ch.Status = &st
	}
	if in.Assignee.Set {
		var id uuid.UUID
		if in.Assignee.Ref != "" {
			if id, err = taskAgent(c, in.Assignee.Ref); err != nil {
				return err
			}
		}
		ch.Assignee = &id
	}
	if ch == (board.Change{}) {
		return fault.New(fault.Invalid, "nothing to change: send at least one field")
	}
	t, err := r.svc.UpdateTask(c.Request().Context(), actor(c), id, ch)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusOK, t)
}

func (r Board) completeTask(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	var in CompleteTask
	if err := decodeOptional(c, &in); err != nil {
		return err
	}
	t, err := r.svc.Complete(c.Request().Context(), actor(c), id, in.Summary)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusOK, t)
}

func (r Board) blockTask(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	var in BlockTask
	if err := decode(c, &in); err != nil {
		return err
	}
	t, err := r.svc.Block(c.Request().Context(), actor(c), id, in.Reason)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusOK, t)
}

func (r Board) listActivity(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	after, err := page.After()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := r.svc.Task(ctx, tenant(c).ID, id); err != nil {
		return missing(err, "task", id)
	}
	as, err := r.svc.ListActivity(ctx, tenant(c).ID, id, after, page.Limit+1)
	if err != nil {
		return err
	}
	out := ActivityList{}
	out.Activity, out.NextCursor = cut(as, page.Limit, func(a board.Activity) board.Position {
		return board.Position{At: a.CreatedAt, ID: a.ID}
	})
	return c.JSON(http.StatusOK, out)
}

func (r Board) comment(c echo.Context) error {
	id, err := pathID(c, "task")
	if err != nil {
		return err
	}
	var in NewComment
	if err := decode(c, &in); err != nil {
		return err
	}
	e, err := r.svc.Post(c.Request().Context(), actor(c), id, in.Text)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusCreated, e)
}

// taskAgent resolves an agent named in a board request body. A name that
// matches no agent is the caller's mistake (400); an id is passed on as it
// is, and the board answers 404 when no agent has it.
func taskAgent(c echo.Context, ref AgentRef) (uuid.UUID, error) {
	return bodyAgent(c, "the agent", ref)
}
