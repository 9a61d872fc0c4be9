package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
)

// Responsibilities is the admin API of continuous responsibilities: only
// operators create and change them (no MCP tool does). Every change bumps
// the responsibility's epoch and cancels its pending wake-up. Add it with
// API.Add.
type Responsibilities struct{ svc *responsibilities.Service }

// NewResponsibilities returns the responsibilities resource.
func NewResponsibilities(svc *responsibilities.Service) Responsibilities {
	return Responsibilities{svc: svc}
}

// NewResponsibility is the body of POST /tenants/{tenant}/responsibilities.
// Absent limits take their defaults: a one-day window, 24 runs and 4
// follow-ups per window, five minutes between wake-ups.
type NewResponsibility struct {
	Agent               AgentRef   `json:"agent"`
	Name                string     `json:"name"`
	Charter             string     `json:"charter,omitempty"`
	Schedule            string     `json:"schedule,omitempty"`
	PeriodSecs          int        `json:"period_secs,omitempty"`
	RunLimit            int        `json:"run_limit,omitempty"`
	FollowupLimit       *int       `json:"followup_limit,omitempty"`
	SpendCapCents       int64      `json:"spend_cap_cents"`
	MinWakeIntervalSecs int        `json:"min_wake_interval_secs,omitempty"`
	StopAt              *time.Time `json:"stop_at,omitempty"`
	Subscriptions       []string   `json:"subscriptions,omitempty"`
	Notify              *NotifyIn  `json:"notify,omitempty"`
}

// NotifyIn sets how a responsibility's questions are pushed to operators:
// enabled, the https webhook url (a new url answers a new signing secret
// once, as notify_secret), flagged ("notice": a question the injection
// scan flagged pushes only a notice; "skip": it pushes nothing), quiet
// hours in the tenant's time zone ("22:00" to "07:00"; pushes wait for
// their end) and max_notifications_per_window. Absent fields stay.
type NotifyIn struct {
	Enabled         *bool   `json:"enabled,omitempty"`
	URL             *string `json:"url,omitempty"`
	Flagged         *string `json:"flagged,omitempty"`
	QuietStart      *string `json:"quiet_start,omitempty"`
	QuietEnd        *string `json:"quiet_end,omitempty"`
	ClearQuietHours bool    `json:"clear_quiet_hours,omitempty"`
	MaxPerWindow    *int    `json:"max_notifications_per_window,omitempty"`
}

func (n *NotifyIn) change() *responsibilities.NotifyChange {
	if n == nil {
		return nil
	}
	return &responsibilities.NotifyChange{Enabled: n.Enabled, URL: n.URL, Flagged: n.Flagged, QuietStart: n.QuietStart,
		QuietEnd: n.QuietEnd, ClearQuietHours: n.ClearQuietHours, MaxPerWindow: n.MaxPerWindow}
}

// ResponsibilityPatch is the body of PATCH
// /tenants/{tenant}/responsibilities/{responsibility}; absent fields stay,
// clear_stop_at removes stop_at, and status pauses, resumes or stops it (a
// stopped one stays stopped).
type ResponsibilityPatch struct {
	Name                *string                  `json:"name,omitempty"`
	Charter             *string                  `json:"charter,omitempty"`
	Schedule            *string                  `json:"schedule,omitempty"`
	PeriodSecs          *int                     `json:"period_secs,omitempty"`
	RunLimit            *int                     `json:"run_limit,omitempty"`
	FollowupLimit       *int                     `json:"followup_limit,omitempty"`
	SpendCapCents       *int64                   `json:"spend_cap_cents,omitempty"`
	MinWakeIntervalSecs *int                     `json:"min_wake_interval_secs,omitempty"`
	StopAt              *time.Time               `json:"stop_at,omitempty"`
	ClearStopAt         bool                     `json:"clear_stop_at,omitempty"`
	Subscriptions       *[]string                `json:"subscriptions,omitempty"`
	Status              *responsibilities.Status `json:"status,omitempty"`
	Notify              *NotifyIn                `json:"notify,omitempty"`
}

// ResponsibilityList is a page of responsibilities, newest first.
type ResponsibilityList struct {
	Responsibilities []responsibilities.Responsibility `json:"responsibilities"`
	NextCursor       string                            `json:"next_cursor,omitempty"`
}

// RunList is a page of a responsibility's runs, newest first.
type RunList struct {
	Runs       []responsibilities.Run `json:"runs"`
	NextCursor string                 `json:"next_cursor,omitempty"`
}

// SkipList is a page of the wake-ups that opened no run, newest first.
type SkipList struct {
	Skips      []responsibilities.Skip `json:"skips"`
	NextCursor string                  `json:"next_cursor,omitempty"`
}

// NoticeList is a page of a responsibility's question pushes, newest
// first.
type NoticeList struct {
	Notices    []responsibilities.Notice `json:"notices"`
	NextCursor string                    `json:"next_cursor,omitempty"`
}

// Operations lists the responsibility routes.
func (r Responsibilities) Operations() []Operation {
	const one = "/tenants/:tenant/responsibilities/:responsibility"
	return []Operation{
		{Method: http.MethodGet, Path: "/tenants/:tenant/responsibilities", ID: "listResponsibilities", Tag: "responsibilities", Needs: identity.ReadTenant,
			Summary:  "List responsibilities, newest first",
			Query:    Paged(QueryParam{Name: "agent", Type: "string", Description: "Only this AI employee's: its id or name."}),
			Response: ResponsibilityList{}, Handler: r.list},
		{Method: http.MethodPost, Path: "/tenants/:tenant/responsibilities", ID: "createResponsibility", Tag: "responsibilities", Needs: identity.ManageAgents,
			Summary: "Create a continuous responsibility of an AI employee: charter, schedule in the tenant's time zone, window limits and spend cap",
			Request: NewResponsibility{}, Response: responsibilities.Responsibility{}, Status: http.StatusCreated, Handler: r.create},
		{Method: http.MethodGet, Path: one, ID: "getResponsibility", Tag: "responsibilities", Needs: identity.ReadTenant,
			Summary:  "Read a responsibility with its current window's runs and spend, open run and live wake-up",
			Response: responsibilities.Summary{}, Handler: r.get},
		{Method: http.MethodPatch, Path: one, ID: "updateResponsibility", Errors: []int{http.StatusConflict}, Tag: "responsibilities", Needs: identity.ManageAgents,
			Summary: "Change a responsibility, or pause, resume or stop it; bumps its epoch and cancels its pending wake-up",
			Request: ResponsibilityPatch{}, Response: responsibilities.Responsibility{}, Handler: r.update},
		{Method: http.MethodDelete, Path: one, ID: "deleteResponsibility", Tag: "responsibilities", Needs: identity.ManageAgents,
			Summary: "Delete a responsibility with its runs and wake-ups; the runs' tasks stay on the board", Status: http.StatusNoContent, Handler: r.delete},
		{Method: http.MethodPost, Path: one + "/run", ID: "runResponsibility", Errors: []int{http.StatusConflict}, Tag: "responsibilities", Needs: identity.ManageAgents,
			Summary:  "Open a run now (a task and a round of its employee); 409 when a limit or its status refuses, recorded as a skip",
			Response: responsibilities.Run{}, Status: http.StatusCreated, Handler: r.run},
		{Method: http.MethodGet, Path: one + "/runs", ID: "listResponsibilityRuns", Tag: "responsibilities", Needs: identity.ReadTenant,
			Summary: "List a responsibility's runs, newest first, with what each spent or cost_not_counted", Query: Paged(),
			Response: RunList{}, Handler: r.runs},
		{Method: http.MethodGet, Path: one + "/skips", ID: "listResponsibilitySkips", Tag: "responsibilities", Needs: identity.ReadTenant,
			Summary: "List the wake-ups that opened no run and why (run limit, spend cap, paused, stopped, epoch), newest first", Query: Paged(),
			Response: SkipList{}, Handler: r.skips},
		{Method: http.MethodGet, Path: one + "/notices", ID: "listResponsibilityNotices", Tag: "responsibilities", Needs: identity.ReadTenant,
			Summary: "List the pushes of a responsibility's questions, newest first: sent, held for quiet hours, refused by a gate or the cap (with the reason), failed or withdrawn",
			Query:   Paged(), Response: NoticeList{}, Handler: r.notices},
	}
}

func (r Responsibilities) list(c echo.Context) error {
	page, err := ReadPage(c)
	if err != nil {
		return err
	}
	f := responsibilities.Filter{Limit: page.Limit + 1}
	if v := c.QueryParam("agent"); v != "" {
		if f.Agent, err = bodyAgent(c, "agent", AgentRef(v)); err != nil {
			return err
		}
	}
	if f.After, err = page.After(); err != nil {
		return err
	}
	rs, err := r.svc.ListResponsibilities(c.Request().Context(), tenant(c).ID, f)
	if err != nil {
		return err
	}
	out := ResponsibilityList{}
	out.Responsibilities, out.NextCursor = cut(rs, page.Limit, responsibilities.PositionOf)
	return c.JSON(http.StatusOK, out)
}

func (r Responsibilities) create(c echo.Context) error {
	var in NewResponsibility
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Agent == "" {
		return fault.New(fault.Invalid, "agent is required: a responsibility belongs to one AI employee (give its id or name)")
	}
	agent, err := bodyAgent(c, "agent", in.Agent)
	if err != nil {
		return err
	}
	t := tenant(c)
	out, err := r.svc.Create(c.Request().Context(), t.ID, t.Settings.TimeZone, principal(c).ID(), responsibilities.Draft{
		AgentID: agent, Name: in.Name, Charter: in.Charter, Schedule: in.Schedule, PeriodSecs: in.PeriodSecs, RunLimit: in.RunLimit,
		FollowupLimit: in.FollowupLimit, SpendCapCents: in.SpendCapCents, MinWakeIntervalSecs: in.MinWakeIntervalSecs,
		StopAt: in.StopAt, Subscriptions: in.Subscriptions, Notify: in.Notify.change()})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, out)
}

func (r Responsibilities) get(c echo.Context) error {
	id, err := pathID(c, "responsibility")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	one, err := r.svc.Responsibility(ctx, tenant(c).ID, id)
	if err != nil {
		return missing(err, "responsibility", id)
	}
	sum, err := r.svc.Summarize(ctx, one)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, sum)
}

func (r Responsibilities) update(c echo.Context) error {
	id, err := pathID(c, "responsibility")
	if err != nil {
		return err
	}
	var in ResponsibilityPatch
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Status != nil && !in.Status.Valid() {
		return fault.New(fault.Invalid, "status must be active, paused or stopped")
	}
	t := tenant(c)
	out, err := r.svc.Update(c.Request().Context(), t.ID, id, t.Settings.TimeZone, responsibilities.Change{Name: in.Name,
		Charter: in.Charter, Schedule: in.Schedule, PeriodSecs: in.PeriodSecs, RunLimit: in.RunLimit, FollowupLimit: in.FollowupLimit,
		SpendCapCents: in.SpendCapCents, MinWakeIntervalSecs: in.MinWakeIntervalSecs, StopAt: in.StopAt, ClearStopAt: in.ClearStopAt,
		Subscriptions: in.Subscriptions, Status: in.Status, Notify: in.Notify.change()})
	if err != nil {
		return missing(err, "responsibility", id)
	}
	return c.JSON(http.StatusOK, out)
}

func (r Responsibilities) delete(c echo.Context) error {
	id, err := pathID(c, "responsibility")
	if err != nil {
		return err
	}
	if err := r.svc.Delete(c.Request().Context(), tenant(c).ID, id); err != nil {
		return missing(err, "responsibility", id)
	}
	return c.NoContent(http.StatusNoContent)
}

func (r Responsibilities) run(c echo.Context) error {
	id, err := pathID(c, "responsibility")
	if err != nil {
		return err
	}
	run, err := r.svc.Open(c.Request().Context(), tenant(c).ID, id, responsibilities.Wake{Reason: responsibilities.ByOperator})
	var skip *responsibilities.SkipError
	if errors.As(err, &skip) {
		return fault.New(fault.Conflict, "no run opened (%s): %s", skip.Skip.Cause, skip.Skip.Detail)
	}
	if err != nil {
		return missing(err, "responsibility", id)
	}
	return c.JSON(http.StatusCreated, run)
}

// owned checks that the path's responsibility is the tenant's.
func (r Responsibilities) owned(c echo.Context) (responsibilities.Responsibility, error) {
	id, err := pathID(c, "responsibility")
	if err != nil {
		return responsibilities.Responsibility{}, err
	}
	one, err := r.svc.Responsibility(c.Request().Context(), tenant(c).ID, id)
	return one, missing(err, "responsibility", id)
}

func (r Responsibilities) runs(c echo.Context) error {
	var out RunList
	var err error
	out.Runs, out.NextCursor, err = historyPage(c, r, r.svc.Runs, func(x responsibilities.Run) responsibilities.RunPosition {
		return responsibilities.RunPosition{At: x.OpenedAt, ID: x.ID}
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (r Responsibilities) skips(c echo.Context) error {
	var out SkipList
	var err error
	out.Skips, out.NextCursor, err = historyPage(c, r, r.svc.Skips, func(k responsibilities.Skip) responsibilities.RunPosition {
		return responsibilities.RunPosition{At: k.At, ID: k.ID}
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (r Responsibilities) notices(c echo.Context) error {
	var out NoticeList
	var err error
	out.Notices, out.NextCursor, err = historyPage(c, r, r.svc.Notices, func(n responsibilities.Notice) responsibilities.RunPosition {
		return responsibilities.RunPosition{At: n.CreatedAt, ID: n.ID}
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// historyPage reads one page of a responsibility's history (runs, skips or
// pushes, newest first) after checking that the path's responsibility is
// the tenant's: the rows and the cursor of the next page, if any.
func historyPage[T any](c echo.Context, r Responsibilities,
	read func(ctx context.Context, tenantID, responsibilityID uuid.UUID, after *responsibilities.RunPosition, limit int) ([]T, error),
	pos func(T) responsibilities.RunPosition,
) ([]T, string, error) {
	one, err := r.owned(c)
	if err != nil {
		return nil, "", err
	}
	page, err := ReadPage(c)
	if err != nil {
		return nil, "", err
	}
	after, err := page.After()
	if err != nil {
		return nil, "", err
	}
	rows, err := read(c.Request().Context(), one.TenantID, one.ID, after, page.Limit+1)
	if err != nil {
		return nil, "", err
	}
	kept, next := cut(rows, page.Limit, pos)
	return kept, next, nil
}
