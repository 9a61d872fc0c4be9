package ui

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/web/api"
)

// Pages of the responsibilities and their open questions.
const (
	responsibilitiesShown = 25 // responsibilities per page
	questionsShown        = 25 // open questions per page
	runsShown             = 10 // recent runs and skips on a responsibility's page
)

func (d *Dashboard) responsibilityRoutes(g *echo.Group) {
	g.GET("/responsibilities", d.page(identity.ReadTenant, d.withResponsibilities(d.listPage)))
	g.GET("/responsibilities/:responsibility", d.page(identity.ReadTenant, d.withResponsibilities(d.onePage)))
	g.POST("/responsibilities/:responsibility/status", d.action("updateResponsibility", identity.ManageAgents, d.withResponsibilities(d.setResponsibilityStatus)))
	g.GET("/questions", d.page(identity.ReadTenant, d.withResponsibilities(d.questions)))
	g.POST("/questions/:question/answer", d.action("answerQuestion", identity.ManageAgents, d.withResponsibilities(d.answerQuestion)))
}

// withResponsibilities answers 503 on a server built without responsibilities.
func (d *Dashboard) withResponsibilities(h Handler) Handler {
	return func(c echo.Context, v *View) error {
		if d.d.Responsibilities == nil {
			return fault.New(fault.Unavailable, "responsibilities are not served here")
		}
		return h(c, v)
	}
}

type responsibilitiesData struct {
	Responsibilities []responsibilities.Responsibility
	Names            map[uuid.UUID]string
	Agent            string // the agent filter, an id or ""
	// Agents are the filter's choices, by name.
	Agents []identity.Agent
	// Next is the cursor of the next page, "" on the last; Paged is set
	// when the page is not the first.
	Next  string
	Paged bool
	// Open counts the tenant's open questions, up to questionsShown;
	// More is set when there are more.
	Open int
	More bool
}

// cursorOf reads the cursor query parameter into v; false on the first
// page.
func cursorOf(c echo.Context, v any) (bool, error) {
	return api.PageRequest{Cursor: c.QueryParam("cursor")}.Decode(v)
}

// listPage is the list of the tenant's responsibilities.
func (d *Dashboard) listPage(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	if len(c.QueryParam("cursor")) > 512 {
		return fault.New(fault.Invalid, "the page cursor is not valid; start from the first page")
	}
	data := responsibilitiesData{Agent: c.QueryParam("agent")}
	f := responsibilities.Filter{Limit: responsibilitiesShown + 1}
	if data.Agent != "" {
		id, err := uuid.Parse(data.Agent)
		if err != nil {
			return fault.New(fault.Invalid, "agent must be one of the listed AI employees")
		}
		f.Agent = id
	}
	var p responsibilities.Position
	ok, err := cursorOf(c, &p)
	if err != nil {
		return err
	}
	if ok {
		f.After, data.Paged = &p, true
	}
	rs, err := d.d.Responsibilities.ListResponsibilities(ctx, v.Tenant.ID, f)
	if err != nil {
		return err
	}
	if len(rs) > responsibilitiesShown {
		rs = rs[:responsibilitiesShown]
		data.Next = api.EncodeCursor(responsibilities.PositionOf(rs[len(rs)-1]))
	}
	data.Responsibilities = rs
	if data.Agents, err = d.d.Identity.ListAgents(ctx, v.Tenant.ID); err != nil {
		return err
	}
	data.Names = make(map[uuid.UUID]string, len(data.Agents))
	for _, a := range data.Agents {
		data.Names[a.ID] = a.Name
	}
	qs, err := d.d.Responsibilities.Questions(ctx, v.Tenant.ID, uuid.Nil, nil, questionsShown+1)
	if err != nil {
		return err
	}
	data.Open, data.More = min(len(qs), questionsShown), len(qs) > questionsShown
	v.Title, v.Nav, v.Data = "responsibilities.title", "responsibilities", data
	return d.f.Render(c, http.StatusOK, "responsibilities", v)
}

type responsibilityData struct {
	Sum       responsibilities.Summary
	Agent     string
	Runs      []responsibilities.Run
	Skips     []responsibilities.Skip
	Questions []responsibilities.OpenQuestion
	// Statuses are the status changes the page offers, from the current
	// status: a stopped responsibility stays stopped.
	Statuses []responsibilities.Status
	// Names maps agent ids to names, for who asked.
	Names map[uuid.UUID]string
	// MaxAnswer bounds the answer forms' text.
	MaxAnswer int
	// From tells the answer forms' route where to come back to.
	From string
}

// responsibilityParam resolves the :responsibility id inside the member's tenant.
func (d *Dashboard) responsibilityParam(c echo.Context, v *View) (responsibilities.Responsibility, error) {
	id, err := pathUUID(c, "responsibility", "responsibility")
	if err != nil {
		return responsibilities.Responsibility{}, err
	}
	v.Object = "responsibility:" + id.String()
	r, err := d.d.Responsibilities.Responsibility(c.Request().Context(), v.Tenant.ID, id)
	if fault.Is(err, fault.NotFound) {
		return r, fault.New(fault.NotFound, "no such responsibility")
	}
	return r, err
}

// onePage is one responsibility: its settings, window, runs and skips.
func (d *Dashboard) onePage(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	r, err := d.responsibilityParam(c, v)
	if err != nil {
		return err
	}
	data := responsibilityData{MaxAnswer: responsibilities.MaxAnswer, From: "responsibility"}
	if data.Sum, err = d.d.Responsibilities.Summarize(ctx, r); err != nil {
		return err
	}
	if data.Names, err = d.agentNames(ctx, v.Tenant.ID); err != nil {
		return err
	}
	data.Agent = data.Names[r.AgentID]
	if data.Runs, err = d.d.Responsibilities.Runs(ctx, v.Tenant.ID, r.ID, nil, runsShown); err != nil {
		return err
	}
	if data.Skips, err = d.d.Responsibilities.Skips(ctx, v.Tenant.ID, r.ID, nil, runsShown); err != nil {
		return err
	}
	if data.Questions, err = d.d.Responsibilities.Questions(ctx, v.Tenant.ID, r.ID, nil, questionsShown); err != nil {
		return err
	}
	switch r.Status {
	case responsibilities.Active:
		data.Statuses = []responsibilities.Status{responsibilities.Paused, responsibilities.Stopped}
	case responsibilities.Paused:
		data.Statuses = []responsibilities.Status{responsibilities.Active, responsibilities.Stopped}
	}
	v.Title, v.Nav, v.Data = "responsibility.title", "responsibilities", data
	return d.f.Render(c, http.StatusOK, "responsibility", v)
}

// Task returns the id of run's task on the board, "" when it has none.
func (responsibilityData) Task(run responsibilities.Run) string {
	if run.TaskID == uuid.Nil {
		return ""
	}
	return run.TaskID.String()
}

// setResponsibilityStatus pauses, resumes or stops a responsibility, as the admin
// API's update with only a status does: the epoch moves and the pending
// wake-up is cancelled.
func (d *Dashboard) setResponsibilityStatus(c echo.Context, v *View) error {
	r, err := d.responsibilityParam(c, v)
	if err != nil {
		return err
	}
	s := responsibilities.Status(c.FormValue("status"))
	if !s.Valid() {
		return fault.New(fault.Invalid, "status must be active, paused or stopped")
	}
	if _, err := d.d.Responsibilities.Update(c.Request().Context(), v.Tenant.ID, r.ID, v.Tenant.Settings.TimeZone, responsibilities.Change{Status: &s}); err != nil {
		return err
	}
	return back(c, v, "responsibilities/"+r.ID.String(), "responsibility_"+string(s))
}

type questionsData struct {
	Questions        []responsibilities.OpenQuestion
	Responsibilities map[uuid.UUID]string // responsibility names by id
	Names            map[uuid.UUID]string // agent names by id, for who asked
	Next             string
	Paged            bool
	MaxAnswer        int
	From             string
}

func (d *Dashboard) questions(c echo.Context, v *View) error {
	ctx := c.Request().Context()
	if len(c.QueryParam("cursor")) > 512 {
		return fault.New(fault.Invalid, "the page cursor is not valid; start from the first page")
	}
	data := questionsData{MaxAnswer: responsibilities.MaxAnswer, From: "questions", Responsibilities: map[uuid.UUID]string{}}
	var p responsibilities.QuestionPosition
	ok, err := cursorOf(c, &p)
	if err != nil {
		return err
	}
	var after *responsibilities.QuestionPosition
	if ok {
		after, data.Paged = &p, true
	}
	qs, err := d.d.Responsibilities.Questions(ctx, v.Tenant.ID, uuid.Nil, after, questionsShown+1)
	if err != nil {
		return err
	}
	if len(qs) > questionsShown {
		qs = qs[:questionsShown]
		last := qs[len(qs)-1]
		data.Next = api.EncodeCursor(responsibilities.QuestionPosition{At: last.AskedAt, ID: last.ID})
	}
	data.Questions = qs
	if data.Names, err = d.agentNames(ctx, v.Tenant.ID); err != nil {
		return err
	}
	for _, q := range qs {
		if _, seen := data.Responsibilities[q.ResponsibilityID]; seen {
			continue
		}
		if r, err := d.d.Responsibilities.Responsibility(ctx, v.Tenant.ID, q.ResponsibilityID); err == nil {
			data.Responsibilities[q.ResponsibilityID] = r.Name
		}
	}
	v.Title, v.Nav, v.Data = "questions.title", "questions", data
	return d.f.Render(c, http.StatusOK, "questions", v)
}

// answerQuestion answers an open question as the admin API does: the
// answer (an option, a text or both) wakes the responsibility's next run
// as data and grants nothing.
func (d *Dashboard) answerQuestion(c echo.Context, v *View) error {
	id, err := pathUUID(c, "question", "question")
	if err != nil {
		return err
	}
	v.Object = "question:" + id.String()
	var a responsibilities.Answer
	if o := strings.TrimSpace(c.FormValue("option")); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 || n > responsibilities.MaxOptions {
			return fault.New(fault.Invalid, "option must be one of the question's options")
		}
		a.Option = n
	}
	a.Text = c.FormValue("text")
	if len(a.Text) > 4*responsibilities.MaxAnswer {
		return fault.New(fault.Invalid, "text must be at most %d characters", responsibilities.MaxAnswer)
	}
	w, _, err := d.d.Responsibilities.AnswerQuestion(c.Request().Context(), v.Tenant.ID, id, v.Principal.ID(), a)
	if err != nil {
		return err
	}
	to := "questions"
	if c.FormValue("from") == "responsibility" {
		to = "responsibilities/" + w.ResponsibilityID.String()
	}
	return back(c, v, to, "question_answered")
}

// Asker names who asked q: the AI employee's name, else the principal.
func (d responsibilityData) Asker(q responsibilities.OpenQuestion) string { return asker(d.Names, q) }

// Asker names who asked q: the AI employee's name, else the principal.
func (d questionsData) Asker(q responsibilities.OpenQuestion) string { return asker(d.Names, q) }

func asker(names map[uuid.UUID]string, q responsibilities.OpenQuestion) string {
	if id, ok := strings.CutPrefix(q.AskedBy, "agent:"); ok {
		if u, err := uuid.Parse(id); err == nil && names[u] != "" {
			return names[u]
		}
	}
	return q.AskedBy
}

// Item pairs the page's view with one item of a list, for a block
// several pages share ({{template "question" ($.Item .)}}): inside it, .X
// is the item and the view's methods work as on the page.
func (v *View) Item(x any) Item { return Item{View: v, X: x} }

// Item is a view with one item; see View.Item.
type Item struct {
	*View
	X any
}

// Nth is i+1: a list's 1-based position.
func (v *View) Nth(i int) int { return i + 1 }

// Span formats a number of seconds in the largest whole unit: days,
// hours, minutes or seconds.
func (v *View) Span(secs int) string {
	switch {
	case secs != 0 && secs%86400 == 0:
		return v.T("span.days", v.Int(secs/86400))
	case secs != 0 && secs%3600 == 0:
		return v.T("span.hours", v.Int(secs/3600))
	case secs != 0 && secs%60 == 0:
		return v.T("span.minutes", v.Int(secs/60))
	}
	return v.T("span.seconds", v.Int(secs))
}
