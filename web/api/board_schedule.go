package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// NewRoutine is the body of POST /tenants/{tenant}/routines: a task on a
// cron schedule (in the tenant's time zone), each run a round of agent
// (an AI employee's id or name).
type NewRoutine struct {
	Name        string   `json:"name"`
	Schedule    string   `json:"schedule"`
	Agent       AgentRef `json:"agent"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// RoutinePatch is the body of PATCH /tenants/{tenant}/routines/{routine};
// absent fields stay, and paused pauses or resumes it.
type RoutinePatch struct {
	Name        *string   `json:"name,omitempty"`
	Schedule    *string   `json:"schedule,omitempty"`
	Agent       *AgentRef `json:"agent,omitempty"`
	Description *string   `json:"description,omitempty"`
	Tags        *[]string `json:"tags,omitempty"`
	Paused      *bool     `json:"paused,omitempty"`
}

// RoutineList is a page of routines, newest first.
type RoutineList struct {
	Routines   []board.Routine `json:"routines"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// RoutineRun is what running a routine now started: its task and wake-up.
type RoutineRun struct {
	Task     board.Task `json:"task"`
	WakeupID uuid.UUID  `json:"wakeup_id"`
}

// NewReminder is the body of POST /tenants/{tenant}/reminders: wake
// agent (an AI employee's id or name) at due_at, on task_id or on a task
// made for it.
type NewReminder struct {
	Agent  AgentRef   `json:"agent"`
	Text   string     `json:"text"`
	DueAt  time.Time  `json:"due_at"`
	TaskID *uuid.UUID `json:"task_id,omitempty"`
}

// ReminderList is a page of reminders, newest first.
type ReminderList struct {
	Reminders  []board.Reminder `json:"reminders"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

func (r Board) scheduleOperations() []Operation {
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/routines", ID: "listRoutines", Tag: "board", Needs: identity.ReadTenant,
			Summary: "List routines, newest first", Query: PageParams, Response: RoutineList{}, Handler: r.listRoutines},
		{Method: http.MethodPost, Path: "/tenants/:tenant/routines", ID: "createRoutine", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Create a routine: a task on a cron schedule in the tenant's time zone, run as an AI employee", Request: NewRoutine{},
			Response: board.Routine{}, Status: http.StatusCreated, Handler: r.createRoutine},
		{Method: http.MethodGet, Path: "/tenants/:tenant/routines/:routine", ID: "getRoutine", Tag: "board", Needs: identity.ReadTenant,
			Summary: "Read a routine", Response: board.Routine{}, Handler: r.getRoutine},
		{Method: http.MethodPatch, Path: "/tenants/:tenant/routines/:routine", ID: "updateRoutine", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Change a routine's name, schedule, employee, description or tags, or pause or resume it", Request: RoutinePatch{},
			Response: board.Routine{}, Handler: r.updateRoutine},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/routines/:routine", ID: "deleteRoutine", Tag: "board", Needs: identity.ManageAgents,
			Summary: "Delete a routine; the tasks of its past runs stay", Status: http.StatusNoContent, Handler: r.deleteRoutine},
		{Method: http.MethodPost, Path: "/tenants/:tenant/routines/:routine/run", ID: "runRoutine", Tag: "board", Needs: identity.ManageAgents,
			Summary: "Run a routine once now: a task and one round of its employee", Response: RoutineRun{},
			Status: http.StatusCreated, Handler: r.runRoutine},
		{Method: http.MethodGet, Path: "/tenants/:tenant/reminders", ID: "listReminders", Tag: "board", Needs: identity.ReadTenant,
			Summary:  "List reminders, newest first (?pending=true: neither fired nor cancelled)",
			Query:    append([]QueryParam{{Name: "pending", Type: "boolean", Description: "Only reminders neither fired nor cancelled."}}, PageParams...),
			Response: ReminderList{}, Handler: r.listReminders},
		{Method: http.MethodPost, Path: "/tenants/:tenant/reminders", ID: "createReminder", Tag: "board", Needs: identity.ManageAgents,
			Summary: "Set a reminder that wakes an AI employee at a time", Request: NewReminder{}, Response: board.Reminder{},
			Status: http.StatusCreated, Handler: r.createReminder},
		{Method: http.MethodGet, Path: "/tenants/:tenant/reminders/:reminder", ID: "getReminder", Tag: "board", Needs: identity.ReadTenant,
			Summary: "Read a reminder", Response: board.Reminder{}, Handler: r.getReminder},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/reminders/:reminder", ID: "cancelReminder", Errors: []int{http.StatusConflict}, Tag: "board", Needs: identity.ManageAgents,
			Summary: "Cancel a pending reminder", Response: board.Reminder{}, Handler: r.cancelReminder},
	}
}

func (r Board) listRoutines(c echo.Context) error {
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	after, err := page.After()
	if err != nil {
		return err
	}
	rs, err := r.svc.ListRoutines(c.Request().Context(), tenant(c).ID, after, page.Limit+1)
	if err != nil {
		return err
	}
	out := RoutineList{}
	out.Routines, out.NextCursor = cut(rs, page.Limit, func(r board.Routine) board.Position {
		return board.Position{At: r.CreatedAt, ID: r.ID}
	})
	return c.JSON(http.StatusOK, out)
}

func (r Board) createRoutine(c echo.Context) error {
	var in NewRoutine
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Agent == "" {
		return fault.New(fault.Invalid, "agent is required: a routine runs as an AI employee (give its id or name)")
	}
	agent, err := taskAgent(c, in.Agent)
	if err != nil {
		return err
	}
	rt, err := r.svc.CreateRoutine(c.Request().Context(), actor(c), board.NewRoutine{Name: in.Name, Schedule: in.Schedule,
		Agent: agent, Description: in.Description, Tags: in.Tags})
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusCreated, rt)
}

// routineRef is the routine path parameter: an id (a name in the path is
// not accepted, so a route acts on exactly the routine it names).
func routineRef(c echo.Context) (string, error) {
	id, err := pathID(c, "routine")
	return id.String(), err
}

func (r Board) getRoutine(c echo.Context) error {
	ref, err := routineRef(c)
	if err != nil {
		return err
	}
	rt, err := r.svc.Routine(c.Request().Context(), actor(c), ref)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, rt)
}

func (r Board) updateRoutine(c echo.Context) error {
	ref, err := routineRef(c)
	if err != nil {
		return err
	}
	var in RoutinePatch
	if err := decode(c, &in); err != nil {
		return err
	}
	ch := board.RoutineChange{Name: in.Name, Schedule: in.Schedule, Description: in.Description, Tags: in.Tags}
	if in.Agent != nil {
		agent, err := taskAgent(c, *in.Agent)
		if err != nil {
			return err
		}
		ch.Agent = &agent
	}
	ch.Paused = in.Paused
	if ch == (board.RoutineChange{}) {
		return fault.New(fault.Invalid, "nothing to change: send at least one field")
	}
	rt, err := r.svc.UpdateRoutine(c.Request().Context(), actor(c), ref, ch)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusOK, rt)
}

func (r Board) deleteRoutine(c echo.Context) error {
	ref, err := routineRef(c)
	if err != nil {
		return err
	}
	if _, err := r.svc.DeleteRoutine(c.Request().Context(), actor(c), ref); err != nil {
		return boardErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (r Board) runRoutine(c echo.Context) error {
	ref, err := routineRef(c)
	if err != nil {
		return err
	}
	run, err := r.svc.RunRoutine(c.Request().Context(), actor(c), ref)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusCreated, RoutineRun{Task: *run.Task, WakeupID: run.Wakeup.ID})
}

func (r Board) listReminders(c echo.Context) error {
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	after, err := page.After()
	if err != nil {
		return err
	}
	pending := false
	if v := c.QueryParam("pending"); v != "" {
		if pending, err = strconv.ParseBool(v); err != nil {
			return fault.New(fault.Invalid, "pending must be true or false")
		}
	}
	rs, err := r.svc.ListReminders(c.Request().Context(), tenant(c).ID, pending, after, page.Limit+1)
	if err != nil {
		return err
	}
	out := ReminderList{}
	out.Reminders, out.NextCursor = cut(rs, page.Limit, func(r board.Reminder) board.Position {
		return board.Position{At: r.CreatedAt, ID: r.ID}
	})
	return c.JSON(http.StatusOK, out)
}

func (r Board) createReminder(c echo.Context) error {
	var in NewReminder
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Agent == "" {
		return fault.New(fault.Invalid, "agent is required: a reminder wakes an AI employee (give its id or name)")
	}
	agent, err := taskAgent(c, in.Agent)
	if err != nil {
		return err
	}
	nr := board.NewReminder{Agent: agent, Text: in.Text, DueAt: in.DueAt}
	if in.TaskID != nil {
		nr.Task = *in.TaskID
	}
	rem, err := r.svc.CreateReminder(c.Request().Context(), actor(c), nr)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusCreated, rem)
}

func (r Board) getReminder(c echo.Context) error { return getOne(c, "reminder", r.svc.Reminder) }

func (r Board) cancelReminder(c echo.Context) error {
	id, err := pathID(c, "reminder")
	if err != nil {
		return err
	}
	rem, err := r.svc.CancelReminder(c.Request().Context(), actor(c), id)
	if err != nil {
		return boardErr(err)
	}
	return c.JSON(http.StatusOK, rem)
}
