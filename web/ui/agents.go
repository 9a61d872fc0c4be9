package ui

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/validtext"
)

func (d *Dashboard) agentRoutes(g *echo.Group) {
	g.GET("/agents", d.page(identity.ReadTenant, d.agents))
	g.POST("/agents", d.action("createAgent", identity.ManageAgents, d.createAgent))
	g.GET("/agents/:agent", d.page(identity.ReadTenant, d.agent))
	g.POST("/agents/:agent/trash", d.confirmFirst(identity.ManageAgents, "confirm.trash_agent", "agent.trash", d.action("trashAgent", identity.ManageAgents, d.trashAgent)))
	g.POST("/agents/:agent/restore", d.action("restoreAgent", identity.ManageAgents, d.restoreAgent))
	g.POST("/agents/:agent/settings", d.action("putAgentSettings", identity.ManageAgents, d.saveSettings))
	g.POST("/agents/:agent/profile", d.action("updateAgent", identity.ManageAgents, d.saveProfile))
	g.POST("/agents/:agent/preview", d.form(identity.ManageAgents, d.previewSettings))
}

type agentsData struct {
	Agents []identity.Agent
	Names  map[uuid.UUID]string // the managers' names, for reports_to
	// Total counts the agents matching Search, on every page.
	Total  int
	Search string
	// Paged is set past the first page; Next is the cursor of the page
	// after this one, "" on the last.
	Paged bool
	Next  string
	Query template.URL // the search, for the page links
	Form  newAgentForm
}

// agentsPage is how many agents the agents page shows at once; the page
// walks the agents by name (keyset), so a tenant with thousands of AI
// employees costs no more than one with fifty.
const agentsPage = 50

// maxAgentSearch bounds the agents page's search text.
const maxAgentSearch = 100

type newAgentForm struct {
	Name, Department, Role, ReportsTo, Budget string
}

func (d *Dashboard) agents(c echo.Context, v *View) error {
	return d.renderAgents(c, v, http.StatusOK, newAgentForm{})
}

func (d *Dashboard) renderAgents(c echo.Context, v *View, status int, f newAgentForm) error {
	ctx := c.Request().Context()
	p := identity.AgentPage{Search: strings.TrimSpace(c.QueryParam("q")), After: c.QueryParam("after"), Limit: agentsPage + 1}
	if err := validtext.String(p.Search); err != nil || len(p.Search) > maxAgentSearch {
		return fault.New(fault.Invalid, "the search must be text of at most %d bytes", maxAgentSearch)
	}
	if p.After != "" && !identity.ValidAgentName(p.After) {
		return fault.New(fault.Invalid, "the page cursor is not valid; start from the first page")
	}
	as, total, err := d.d.Identity.ListAgentsPage(ctx, v.Tenant.ID, p)
	if err != nil {
		return err
	}
	data := agentsData{Total: total, Search: p.Search, Paged: p.After != "", Form: f}
	if p.Search != "" {
		data.Query = template.URL(url.Values{"q": {p.Search}}.Encode())
	}
	if len(as) > agentsPage {
		as = as[:agentsPage]
		data.Next = as[len(as)-1].Name
	}
	var managers []uuid.UUID
	for _, a := range as {
		if a.ReportsTo != uuid.Nil {
			managers = append(managers, a.ReportsTo)
		}
	}
	if data.Names, err = d.d.Identity.AgentNames(ctx, v.Tenant.ID, managers); err != nil {
		return err
	}
	data.Agents = as
	v.Title, v.Nav, v.Data = "agents.title", "agents", data
	return d.f.Render(c, status, "agents", v)
}

// createAgent creates an agent with no opt-ins; its settings are edited on
// its own page.
func (d *Dashboard) createAgent(c echo.Context, v *View) error {
	f := newAgentForm{Name: strings.TrimSpace(c.FormValue("name")), Department: strings.TrimSpace(c.FormValue("department")),
		Role: strings.TrimSpace(c.FormValue("role")), ReportsTo: c.FormValue("reports_to"), Budget: strings.TrimSpace(c.FormValue("budget"))}
	na := identity.NewAgent{Name: f.Name, Department: f.Department, Role: f.Role}
	var err error
	if f.ReportsTo != "" {
		if na.ReportsTo, err = d.managerOf(c, v, f.ReportsTo); err != nil {
			return d.agentsFormError(c, v, f, err)
		}
	}
	if f.Budget != "" {
		dollars, err := strconv.ParseFloat(f.Budget, 64)
		if err != nil || dollars < 0 || dollars > 1e9 {
			return d.agentsFormError(c, v, f, fault.New(fault.Invalid, "the budget must be an amount in US dollars between 0 and 1,000,000,000"))
		}
		na.BudgetCents = int64(dollars*100 + 0.5)
	}
	a, err := d.d.Identity.CreateAgent(c.Request().Context(), v.Tenant.ID, na)
	if err != nil {
		return d.agentsFormError(c, v, f, err)
	}
	v.Object = "agent:" + a.ID.String()
	return back(c, v, "agents/"+a.ID.String(), "agent_created")
}

// managerOf resolves the new agent's manager, named by the form (or given
// by id): an agent of the member's tenant.
func (d *Dashboard) managerOf(c echo.Context, v *View, ref string) (uuid.UUID, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return id, nil // the service refuses an id that names no agent of the tenant
	}
	if !identity.ValidAgentName(ref) {
		return uuid.Nil, fault.New(fault.Invalid, "reports_to must name an AI employee of this tenant")
	}
	m, err := d.d.Identity.AgentByName(c.Request().Context(), v.Tenant.ID, ref)
	if fault.Is(err, fault.NotFound) {
		return uuid.Nil, fault.New(fault.Invalid, "reports_to must name an AI employee of this tenant; there is none named %q", ref)
	}
	return m.ID, err
}

// agentsFormError shows the list again with the form as it was sent and
// what was wrong with it; other failures go to fail.
func (d *Dashboard) agentsFormError(c echo.Context, v *View, f newAgentForm, err error) error {
	code := fault.CodeOf(err)
	if code != fault.Invalid && code != fault.Conflict && code != fault.NotFound {
		return err
	}
	v.Error, v.ErrorDetail = v.formFailure(err)
	return d.renderAgents(c, v, fault.HTTPStatus(code), f)
}

// agentParam resolves the :agent id inside the member's tenant.
func (d *Dashboard) agentParam(c echo.Context, v *View) (identity.Agent, error) {
	id, err := uuid.Parse(c.Param("agent"))
	if err != nil {
		return identity.Agent{}, fault.New(fault.NotFound, "no such agent")
	}
	v.Object = "agent:" + id.String()
	return d.d.Identity.Agent(c.Request().Context(), v.Tenant.ID, id)
}

type agentData struct {
	Agent      identity.Agent
	Manager    string
	Settings   string // the editor's JSON
	Version    int64
	Visible    []string
	Preview    *tools.SettingsPreview
	Changed    bool // the settings changed since the editor's version
	EditError  string
	EditDetail string // the service's English message behind EditError
	// Edited is Settings read back, for the controls; FromControls is
	// set when the controls sent them (the JSON view stays folded).
	Edited       identity.AgentSettings
	FromControls bool
	// Parts are the employee's keys, grants, requests, tasks and calls.
	Parts employeeParts
}

func (d *Dashboard) agent(c echo.Context, v *View) error {
	a, err := d.agentParam(c, v)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(a.Settings, "", "  ")
	return d.renderAgent(c, v, http.StatusOK, a, agentData{Settings: string(b), Version: a.SettingsVersion})
}

func (d *Dashboard) renderAgent(c echo.Context, v *View, status int, a identity.Agent, data agentData) error {
	ctx := c.Request().Context()
	data.Agent = a
	if json.Unmarshal([]byte(data.Settings), &data.Edited) != nil {
		data.Edited = a.Settings
	}
	if a.ReportsTo != uuid.Nil {
		if m, err := d.d.Identity.Agent(ctx, v.Tenant.ID, a.ReportsTo); err == nil {
			data.Manager = m.Name
		}
	}
	if data.Preview == nil && d.d.Tools != nil && d.d.Subjects != nil {
		p, err := d.d.Tools.PreviewSettings(ctx, d.d.Subjects, employee(v.Tenant, a), a.Settings)
		if err != nil {
			return err
		}
		data.Visible = p.Now
	}
	parts, err := d.employeeParts(ctx, v.Tenant.ID, a, v.Zone())
	if err != nil {
		return err
	}
	data.Parts = parts
	v.Title, v.Nav, v.Data = "agent.title", "agents", data
	return d.f.Render(c, status, "agent", v)
}

// employee is the principal of an agent's key with the default scopes:
// the caller whose tool list the editor previews.
func employee(t identity.Tenant, a identity.Agent) identity.Principal {
	return identity.Principal{TenantID: t.ID, TenantSlug: t.Slug, Kind: identity.KindEmployee, AgentID: a.ID,
		Scopes: identity.DefaultEmployeeScopes}
}

func (d *Dashboard) trashAgent(c echo.Context, v *View) error {
	a, err := d.agentParam(c, v)
	if err != nil {
		return err
	}
	if _, err := d.d.Identity.TrashAgent(c.Request().Context(), v.Tenant.ID, a.ID); err != nil {
		return err
	}
	return back(c, v, "agents/"+a.ID.String(), "agent_trashed")
}

func (d *Dashboard) restoreAgent(c echo.Context, v *View) error {
	a, err := d.agentParam(c, v)
	if err != nil {
		return err
	}
	if _, err := d.d.Identity.RestoreAgent(c.Request().Context(), v.Tenant.ID, a.ID); err != nil {
		return err
	}
	return back(c, v, "agents/"+a.ID.String(), "agent_restored")
}

// maxSettingsBytes bounds the settings editor's text.
const maxSettingsBytes = 64 << 10

// editedSettings reads the editor: the settings as JSON (unknown fields
// refused) and the version they were read at.
func editedSettings(c echo.Context) (identity.AgentSettings, int64, string, error) {
	raw := c.FormValue("settings")
	var s identity.AgentSettings
	if len(raw) > maxSettingsBytes {
		return s, 0, raw, fault.New(fault.TooLarge, "the settings are longer than %d bytes", maxSettingsBytes)
	}
	version, err := strconv.ParseInt(c.FormValue("settings_version"), 10, 64)
	if err != nil || version < 0 {
		return s, 0, raw, fault.New(fault.Invalid, "settings_version must be the version the settings were read at")
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, version, raw, fault.New(fault.Invalid, "the settings are not valid JSON for an agent's settings: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return s, version, raw, fault.New(fault.Invalid, "the settings hold more than one JSON object")
	}
	if c.FormValue("editor") == "controls" {
		if err := applyControls(c, &s); err != nil {
			return s, version, raw, err
		}
		b, _ := json.MarshalIndent(s, "", "  ")
		raw = string(b)
	}
	if err := identity.ValidateAgentSettings(s); err != nil {
		return s, version, raw, err
	}
	return s, version, raw, nil
}

// jsonProblem says what is wrong with a JSON text without echoing it.
func jsonProblem(err error) string {
	var b bytes.Buffer
	b.WriteString(err.Error())
	if b.Len() > 200 {
		b.Truncate(200)
	}
	return b.String()
}

// previewSettings shows, without saving, the tool list the employee would
// see with the edited settings, as a diff against what it sees now.
func (d *Dashboard) previewSettings(c echo.Context, v *View) error {
	a, err := d.agentParam(c, v)
	if err != nil {
		return err
	}
	s, version, raw, err := editedSettings(c)
	data := agentData{Settings: raw, Version: version, Changed: version != a.SettingsVersion, FromControls: c.FormValue("editor") == "controls"}
	if err != nil {
		return d.editError(c, v, a, data, err)
	}
	p, err := d.d.Tools.PreviewSettings(c.Request().Context(), d.d.Subjects, employee(v.Tenant, a), s)
	if err != nil {
		return err
	}
	data.Preview, data.Visible = &p, p.Now
	return d.renderAgent(c, v, http.StatusOK, a, data)
}

// saveSettings replaces the agent's settings, refusing when they changed
// since the editor read them. The change takes effect live: the employee's
// open streams are told list_changed when its tool list changed.
func (d *Dashboard) saveSettings(c echo.Context, v *View) error {
	a, err := d.agentParam(c, v)
	if err != nil {
		return err
	}
	s, version, raw, err := editedSettings(c)
	data := agentData{Settings: raw, Version: version, FromControls: c.FormValue("editor") == "controls"}
	if err != nil {
		return d.editError(c, v, a, data, err)
	}
	_, err = d.d.Identity.UpdateAgent(c.Request().Context(), v.Tenant.ID, a.ID, func(cur *identity.Agent) error {
		if version != cur.SettingsVersion {
			return fault.New(fault.Conflict, "the settings changed since version %d (now %d); review them again", version, cur.SettingsVersion)
		}
		cur.Settings = s
		return nil
	})
	if err != nil {
		if fault.Is(err, fault.Conflict) {
			data.Changed = true
		}
		return d.editError(c, v, a, data, err)
	}
	return back(c, v, "agents/"+a.ID.String(), "settings_saved")
}

// editError shows the editor again, with the text as sent and what is
// wrong with it.
func (d *Dashboard) editError(c echo.Context, v *View, a identity.Agent, data agentData, err error) error {
	code := fault.CodeOf(err)
	if code != fault.Invalid && code != fault.Conflict && code != fault.TooLarge {
		return err
	}
	data.EditError, data.EditDetail = v.formFailure(err)
	// At the top of the page too, where the eye lands after the post; the
	// editor repeats it beside the text.
	v.Error, v.ErrorDetail = data.EditError, data.EditDetail
	return d.renderAgent(c, v, fault.HTTPStatus(code), a, data)
}
