package ui

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/web/api"
)

// Pages of the task board.
const (
	tasksShown    = 25 // tasks per page
	subtasksShown = 50 // sub-tasks on a task's page
	activityShown = 20 // newest activity entries on a task's page
)

func (d *Dashboard) boardRoutes(g *echo.Group) {
	g.GET("/board", d.page(identity.ReadTenant, d.withBoard(d.tasks)))
	g.GET("/board/:task", d.page(identity.ReadTenant, d.withBoard(d.task)))
	g.POST("/board/:task/assignee", d.action("updateTask", identity.ManageAgents, d.withBoard(d.reassignTask)))
	g.POST("/board/:task/cancel", d.confirmFirst(identity.ManageAgents, "confirm.cancel_task", "confirm.cancel_button", d.action("updateTask", identity.ManageAgents, d.withBoard(d.cancelTask))))
}

// withBoard answers 503 on a server built without the board.
func (d *Dashboard) withBoard(h Handler) Handler {
	return func(c echo.Context, v *View) error {
		if d.d.Board == nil {
			return fault.New(fault.Unavailable, "the task board is not served here")
		}
		return h(c, v)
	}
}

type tasksData struct {
	Tasks []board.Task
	Names map[uuid.UUID]string
	// The filters as chosen, and their choices.
	Status, Kind, Assignee, Department, Goal string
	Statuses                                 []board.Status
	Agents                                   []identity.Agent
	Departments                              []string
	Goals                                    []board.Task
	// Columns is the board by status, when no status is chosen.
	Columns []Column
	// Query is the filters as an encoded query string, for the paging
	// links.
	Query template.URL
	Next  string
	Paged bool
}

func (d *Dashboard) tasks(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	data := tasksData{Status: c.QueryParam("status"), Kind: c.QueryParam("kind"), Assignee: c.QueryParam("assignee"),
		Department: c.QueryParam("department"), Goal: c.QueryParam("goal"),
		Statuses: []board.Status{board.Open, board.InProgress, board.Blocked, board.Done, board.Cancelled}}
	f := board.TaskFilter{Status: board.Status(data.Status), Kind: board.Kind(data.Kind), Limit: tasksShown + 1}
	if f.Status != "" && !f.Status.Valid() {
		return fault.New(fault.Invalid, "status must be open, in_progress, blocked, done or cancelled")
	}
	if f.Kind != "" && f.Kind != board.KindTask && f.Kind != board.KindGoal {
		return fault.New(fault.Invalid, "kind must be task or goal")
	}
	if data.Assignee != "" {
		id, err := uuid.Parse(data.Assignee)
		if err != nil {
			return fault.New(fault.Invalid, "assignee must be one of the listed AI employees")
		}
		f.Assignee = id
	}
	if data.Goal != "" {
		id, err := uuid.Parse(data.Goal)
		if err != nil {
			return fault.New(fault.Invalid, "goal must be one of the listed goals")
		}
		f.Parent = id
	}
	if len(data.Department) > 100 {
		return fault.New(fault.Invalid, "department must be one of the listed departments")
	}
	if len(c.QueryParam("cursor")) > 512 {
		return fault.New(fault.Invalid, "the page cursor is not valid; start from the first page")
	}
	var p board.Position
	ok, err := cursorOf(c, &p)
	if err != nil {
		return err
	}
	if ok {
		f.After, data.Paged = &p, true
	}
	if data.Agents, err = d.d.Identity.ListAgents(ctx, v.Tenant.ID); err != nil {
		return err
	}
	data.Departments = departments(data.Agents)
	if data.Goals, err = d.d.Board.ListTasks(ctx, v.Tenant.ID, board.TaskFilter{Kind: board.KindGoal, Limit: 100}); err != nil {
		return err
	}
	if data.Status == "" && !ok {
		if data.Columns, err = d.columns(ctx, v.Tenant.ID, f, data.Department, data.Agents); err != nil {
			return err
		}
	} else {
		ts, err := d.d.Board.ListTasks(ctx, v.Tenant.ID, f)
		if err != nil {
			return err
		}
		if len(ts) > tasksShown {
			ts = ts[:tasksShown]
			data.Next = api.EncodeCursor(board.PositionOf(ts[len(ts)-1]))
		}
		data.Tasks = ts
	}
	q := url.Values{}
	for k, val := range map[string]string{"status": data.Status, "kind": data.Kind, "assignee": data.Assignee, "department": data.Department, "goal": data.Goal} {
		if val != "" {
			q.Set(k, val)
		}
	}
	data.Query = template.URL(q.Encode())
	data.Names = namesOf(data.Agents)
	v.Title, v.Nav, v.Data = "board.title", "board", data
	return d.f.Render(c, http.StatusOK, "board", v)
}

// namesOf maps agents' ids to their names.
func namesOf(as []identity.Agent) map[uuid.UUID]string {
	names := make(map[uuid.UUID]string, len(as))
	for _, a := range as {
		names[a.ID] = a.Name
	}
	return names
}

type taskData struct {
	Task     board.Task
	Parent   *board.Task
	Subtasks []board.Task
	// More is set when the task has more sub-tasks than shown.
	More     bool
	Activity []board.Activity
	Names    map[uuid.UUID]string
	Agents   []identity.Agent
	// Open is set while the task is unfinished: operators may reassign
	// or cancel it.
	Open bool
}

// taskParam resolves the :task id inside the member's tenant.
func (d *Dashboard) taskParam(c echo.Context, v *View) (board.Task, error) {
	id, err := pathUUID(c, "task", "task")
	if err != nil {
		return board.Task{}, err
	}
	v.Object = "task:" + id.String()
	t, err := d.d.Board.Task(c.Request().Context(), v.Tenant.ID, id)
	if fault.Is(err, fault.NotFound) {
		return t, fault.New(fault.NotFound, "no such task")
	}
	return t, err
}

func (d *Dashboard) task(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	t, err := d.taskParam(c, v)
	if err != nil {
		return err
	}
	data := taskData{Task: t, Open: t.Status != board.Done && t.Status != board.Cancelled}
	if t.ParentID != uuid.Nil {
		if p, err := d.d.Board.Task(ctx, v.Tenant.ID, t.ParentID); err == nil {
			data.Parent = &p
		}
	}
	subs, err := d.d.Board.ListTasks(ctx, v.Tenant.ID, board.TaskFilter{Parent: t.ID, Limit: subtasksShown + 1})
	if err != nil {
		return err
	}
	data.Subtasks, data.More = subs[:min(len(subs), subtasksShown)], len(subs) > subtasksShown
	if data.Activity, err = d.d.Board.ListActivity(ctx, v.Tenant.ID, t.ID, nil, activityShown); err != nil {
		return err
	}
	if data.Agents, err = d.d.Identity.ListAgents(ctx, v.Tenant.ID); err != nil {
		return err
	}
	data.Names = namesOf(data.Agents)
	v.Title, v.Nav, v.Data = "task.title", "board", data
	return d.f.Render(c, http.StatusOK, "task", v)
}

// reassignTask gives the task to another AI employee (who is woken), or to
// nobody, as the admin API's updateTask with only an assignee does.
func (d *Dashboard) reassignTask(c echo.Context, v *View) error {
	t, err := d.taskParam(c, v)
	if err != nil {
		return err
	}
	var to uuid.UUID
	if a := c.FormValue("assignee"); a != "" {
		if to, err = uuid.Parse(a); err != nil {
			return fault.New(fault.Invalid, "assignee must be one of the listed AI employees")
		}
	}
	if err := d.changeTask(c, v, t, board.Change{Assignee: &to}); err != nil {
		return err
	}
	return back(c, v, "board/"+t.ID.String(), "task_reassigned")
}

// cancelTask cancels the task, as the admin API's updateTask with the
// status cancelled does.
func (d *Dashboard) cancelTask(c echo.Context, v *View) error {
	t, err := d.taskParam(c, v)
	if err != nil {
		return err
	}
	st := board.Cancelled
	if err := d.changeTask(c, v, t, board.Change{Status: &st}); err != nil {
		return err
	}
	return back(c, v, "board/"+t.ID.String(), "task_cancelled")
}

// changeTask applies ch as the signed-in operator. A rule that binds
// operators too (a protected tag, a finished task) is the member's
// refusal, 403.
func (d *Dashboard) changeTask(c echo.Context, v *View, t board.Task, ch board.Change) error {
	_, err := d.d.Board.UpdateTask(c.Request().Context(), board.Operator(v.Principal, v.Tenant), t.ID, ch)
	var refusal *tools.RefusalError
	if errors.As(err, &refusal) {
		return fault.New(fault.Forbidden, "%s", refusal.Decision.Reason)
	}
	return err
}
