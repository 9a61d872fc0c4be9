package agents

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// checkName refuses a reserved name: one held by an employee in
// the trash, one recorded as removed whose row is gone, and any name at all
// while the trash or the reservations cannot be listed.
func (s *Service) checkName(ctx context.Context, tenantID uuid.UUID, name string) error {
	all, err := s.dirs.ListAgents(ctx, tenantID)
	if err != nil {
		return fault.Newf(fault.Unavailable, err, "cannot check whether %q is reserved: the trash cannot be listed right now; retry later", name)
	}
	held := slices.IndexFunc(all, func(a identity.Agent) bool { return a.Name == name })
	if held >= 0 && all[held].Status == identity.AgentTrashed {
		return fault.New(fault.Conflict, "the name %q is reserved: an AI employee with that name is in the trash, and an administrator can restore it; choose a different name", name)
	}
	res, err := s.res.List(ctx, tenantID)
	if err != nil {
		return fault.Newf(fault.Unavailable, err, "cannot check whether %q is reserved: the reserved names cannot be listed right now; retry later", name)
	}
	if held < 0 && slices.ContainsFunc(res, func(r Reservation) bool { return r.Name == name }) {
		return fault.New(fault.Conflict, "the name %q is reserved: it belonged to a removed AI employee, and only an administrator can reuse it; choose a different name", name)
	}
	return nil
}

func (s *Service) create(ctx context.Context, c tools.Call) (*tools.Result, error) {
	name, _ := tools.String(c.Args, "name")
	tenantID := c.Subject.Tenant.ID
	if err := s.checkName(ctx, tenantID, name); err != nil {
		return nil, err
	}
	in := identity.NewAgent{Name: name}
	in.Department, _ = tools.String(c.Args, "department")
	in.Role, _ = tools.String(c.Args, "role")
	in.BudgetCents, _ = tools.Int(c.Args, "budget_cents")
	org, err := s.orgChart(ctx, c.Subject)
	if err != nil {
		return nil, err
	}
	if m, ok := tools.String(c.Args, "reports_to"); ok && m != "" {
		boss, err := s.byName(ctx, tenantID, m)
		if err != nil {
			return nil, err
		}
		if err := org.mayActOn(boss, "placing a new employee under"); err != nil {
			return nil, err
		}
		in.ReportsTo = boss.ID
	}
	if me := c.Subject.Agent; me != nil {
		in.Creator = me.ID // bounded by its creator's authority
	}
	a, err := s.ids.CreateAgent(ctx, tenantID, in)
	switch {
	case fault.Is(err, fault.Conflict):
		return nil, fault.New(fault.Conflict, "an AI employee named %q already exists; choose a different name", name)
	case fault.Is(err, fault.Forbidden):
		return nil, tools.Refused(tools.EventAgentAuthorityRefused, fault.Message(err))
	case err != nil:
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Created AI employee %s.", a.Name), Structured: view(a, nil)}, nil
}

// byName returns the active employee called name.
func (s *Service) byName(ctx context.Context, tenantID uuid.UUID, name string) (identity.Agent, error) {
	a, err := s.dirs.AgentByName(ctx, tenantID, name)
	if fault.Is(err, fault.NotFound) || (err == nil && a.Status != identity.AgentActive) {
		return identity.Agent{}, fault.New(fault.NotFound, "no active AI employee is named %q", name)
	}
	return a, err
}

// orgChart is the tenant's employees as they are before a call changes
// anything. Every delegation check of the call reads this one snapshot, so
// nothing the call itself changes (and nothing a refused call tried to
// change) can widen what the caller may touch. Operators and members'
// clients are not restricted, and read no snapshot.
type orgChart struct {
	sub *tools.Subject
	all []identity.Agent
}

func (s *Service) orgChart(ctx context.Context, sub *tools.Subject) (orgChart, error) {
	if sub.Agent == nil {
		return orgChart{sub: sub}, nil
	}
	all, err := s.dirs.ListAgents(ctx, sub.Tenant.ID)
	if err != nil {
		return orgChart{}, err
	}
	return orgChart{sub: sub, all: all}, nil
}

// mayActOn refuses an AI employee acting on an employee it has no
// delegation relationship with, as the org chart stood before the call.
func (o orgChart) mayActOn(target identity.Agent, what string) error {
	if o.sub.Agent == nil || Related(o.sub.Tenant.Settings.Delegation, o.all, o.sub.Agent.ID, target.ID) {
		return nil
	}
	return tools.Refused(tools.EventRelationshipRefused, fmt.Sprintf(
		"%s %s needs a delegation relationship (same department, reports_to above or below, or a whitelisted pair), and you have none with it", what, target.Name))
}

// mayGive refuses an AI employee giving another more authority than it
// holds itself, as agent_update can: a budget above its own, or database
// sources it may not query.
func (o orgChart) mayGive(args map[string]any) error {
	if o.sub.Agent == nil {
		return nil
	}
	i := slices.IndexFunc(o.all, func(a identity.Agent) bool { return a.ID == o.sub.Agent.ID })
	if i < 0 {
		return fault.New(fault.Unauthorized, "this credential's AI employee no longer exists")
	}
	me := o.all[i]
	if v, ok := tools.Int(args, "budget_cents"); ok && v > me.BudgetCents {
		return tools.Refused(tools.EventAgentAuthorityRefused, fmt.Sprintf("budget_cents %d is more than your own budget (%d)", v, me.BudgetCents))
	}
	for _, f := range []string{"db_sources", "db_sources_add"} {
		names, _ := stringList(args[f], f)
		for _, n := range names {
			if !slices.Contains(me.Settings.Capabilities.DBSources, n) {
				return tools.Refused(tools.EventAgentAuthorityRefused, fmt.Sprintf("%s names %q, a database source you may not query yourself", f, n))
			}
		}
	}
	return nil
}

// selfRestricted are the fields an AI employee may not send about itself:
// its place in the org chart (department, reports_to), which the
// delegation rules read, and its authority.
var selfRestricted = []string{"department", "reports_to", "db_sources", "db_sources_add", "db_sources_remove", "budget_cents", "role"}

func (s *Service) update(ctx context.Context, c tools.Call) (*tools.Result, error) {
	name, _ := tools.String(c.Args, "name")
	tenantID := c.Subject.Tenant.ID
	target, err := s.byName(ctx, tenantID, name)
	if err != nil {
		return nil, err
	}
	org, err := s.orgChart(ctx, c.Subject)
	if err != nil {
		return nil, err
	}
	if me := c.Subject.Agent; me != nil && me.ID == target.ID {
		var sent []string
		for _, f := range selfRestricted {
			if _, ok := c.Args[f]; ok {
				sent = append(sent, f)
			}
		}
		if len(sent) > 0 {
			return nil, tools.Refused(tools.EventAgentAuthorityRefused, fmt.Sprintf(
				"an AI employee cannot change its own %s; ask an operator or your manager", strings.Join(sent, ", ")))
		}
	} else if err := org.mayActOn(target, "updating"); err != nil {
		return nil, err
	} else if err := org.mayGive(c.Args); err != nil {
		return nil, err
	}
	if len(c.Args) == 1 {
		return nil, fault.New(fault.Invalid, "nothing to change: send at least one field besides name")
	}
	var boss *identity.Agent
	if m, ok := tools.String(c.Args, "reports_to"); ok && m != "" {
		b, err := s.byName(ctx, tenantID, m)
		if err != nil {
			return nil, err
		}
		// Re-parenting puts the employee, and everyone below it, under
		// the new manager: an AI employee needs a relationship with both.
		if err := org.mayActOn(b, "placing "+target.Name+" under"); err != nil {
			return nil, err
		}
		boss = &b
	}
	a, err := s.ids.UpdateAgent(ctx, tenantID, target.ID, func(a *identity.Agent) error { return apply(a, c.Args, boss) })
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Updated AI employee %s.", a.Name), Structured: view(a, nil)}, nil
}

func apply(a *identity.Agent, args map[string]any, boss *identity.Agent) error {
	if v, ok := tools.String(args, "department"); ok {
		a.Department = v
	}
	if v, ok := tools.String(args, "role"); ok {
		a.Role = v
	}
	if v, ok := tools.Int(args, "budget_cents"); ok {
		a.BudgetCents = v
	}
	if _, ok := args["reports_to"]; ok {
		a.ReportsTo = uuid.Nil
		if boss != nil {
			a.ReportsTo = boss.ID
		}
	}
	src := &a.Settings.Capabilities.DBSources
	for _, f := range []string{"db_sources", "db_sources_add", "db_sources_remove"} {
		raw, ok := args[f]
		if !ok {
			continue
		}
		names, err := stringList(raw, f)
		if err != nil {
			return err
		}
		switch f {
		case "db_sources":
			*src = names
		case "db_sources_add":
			for _, n := range names {
				if !slices.Contains(*src, n) {
					*src = append(*src, n)
				}
			}
		case "db_sources_remove":
			*src = slices.DeleteFunc(*src, func(x string) bool { return slices.Contains(names, x) })
		}
	}
	return nil
}

func stringList(raw any, field string) ([]string, error) {
	list, _ := raw.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fault.New(fault.Invalid, "%s must be an array of strings", field)
		}
		out = append(out, s)
	}
	return out, nil
}

func (s *Service) remove(ctx context.Context, c tools.Call) (*tools.Result, error) {
	name, _ := tools.String(c.Args, "name")
	tenantID := c.Subject.Tenant.ID
	target, err := s.byName(ctx, tenantID, name)
	if err != nil {
		return nil, err
	}
	if me := c.Subject.Agent; me != nil && me.ID == target.ID {
		return nil, tools.Refused(tools.EventAgentAuthorityRefused, "an AI employee cannot remove itself")
	}
	org, err := s.orgChart(ctx, c.Subject)
	if err != nil {
		return nil, err
	}
	if err := org.mayActOn(target, "removing"); err != nil {
		return nil, err
	}
	if err := s.res.Reserve(ctx, Reservation{TenantID: tenantID, Name: target.Name, AgentID: target.ID, ReservedBy: c.Principal().ID()}); err != nil {
		return nil, err
	}
	if _, err := s.ids.TrashAgent(ctx, tenantID, target.ID); err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf(
		"AI employee %s was removed. An administrator can restore it; the name %s stays reserved, so create_agent will refuse it.", target.Name, target.Name)}, nil
}

// agentView is agent_status's structured form of one employee.
type agentView struct {
	Name        string `json:"name"`
	Department  string `json:"department,omitempty"`
	Role        string `json:"role,omitempty"`
	ReportsTo   string `json:"reports_to,omitempty"`
	BudgetCents int64  `json:"budget_cents"`
	Status      string `json:"status"`
}

// statusPage is what agent_status shows: the employee named one and its
// manager's name (two lookups, whatever the size of the team), or with no
// name one page of the team by name, trashed employees included, after the
// name after, with their managers' names; more reports whether employees
// follow the page.
func (s *Service) statusPage(ctx context.Context, tenantID uuid.UUID, one, after string, limit int) (page []identity.Agent, names map[uuid.UUID]string, more bool, err error) {
	if one != "" {
		a, err := s.dirs.AgentByName(ctx, tenantID, one)
		if fault.Is(err, fault.NotFound) {
			return nil, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, err
		}
		page = []identity.Agent{a}
	} else {
		// One more than the page tells whether another follows.
		page, err = s.dirs.AgentsAfter(ctx, tenantID, after, limit+1)
		if err != nil {
			return nil, nil, false, err
		}
		if more = len(page) > limit; more {
			page = page[:limit]
		}
	}
	var managers []uuid.UUID
	for _, a := range page {
		if a.ReportsTo != uuid.Nil && !slices.Contains(managers, a.ReportsTo) {
			managers = append(managers, a.ReportsTo)
		}
	}
	names, err = s.dirs.AgentNames(ctx, tenantID, managers)
	if err != nil {
		return nil, nil, false, err
	}
	return page, names, more, nil
}

func view(a identity.Agent, names map[uuid.UUID]string) agentView {
	return agentView{Name: a.Name, Department: a.Department, Role: a.Role, ReportsTo: names[a.ReportsTo],
		BudgetCents: a.BudgetCents, Status: string(a.Status)}
}

func (s *Service) status(ctx context.Context, c tools.Call) (*tools.Result, error) {
	one, _ := tools.String(c.Args, "name")
	after, _ := tools.String(c.Args, "cursor")
	limit := 50
	if n, ok := tools.Int(c.Args, "limit"); ok {
		if n < 1 || n > 100 {
			return nil, fault.New(fault.Invalid, "limit must be 1-100")
		}
		limit = int(n)
	}
	page, names, more, err := s.statusPage(ctx, c.Subject.Tenant.ID, one, after, limit)
	if err != nil {
		return nil, err
	}
	var out []agentView
	var text strings.Builder
	for _, a := range page {
		v := view(a, names)
		out = append(out, v)
		fmt.Fprintf(&text, "%s: %s", v.Name, v.Status)
		if v.Department != "" || v.Role != "" {
			fmt.Fprintf(&text, ", %s %s", v.Department, v.Role)
		}
		if v.ReportsTo != "" {
			fmt.Fprintf(&text, ", reports to %s", v.ReportsTo)
		}
		fmt.Fprintf(&text, ", budget %d cents\n", v.BudgetCents)
	}
	if one != "" && len(out) == 0 {
		return nil, fault.New(fault.NotFound, "no AI employee is named %q", one)
	}
	structured := map[string]any{"agents": out}
	if more {
		structured["next_cursor"] = out[len(out)-1].Name
		text.WriteString("More AI employees: pass next_cursor as cursor.\n")
	}
	if len(out) == 0 {
		text.WriteString("No AI employees yet.")
	}
	return &tools.Result{Text: text.String(), Structured: structured}, nil
}
