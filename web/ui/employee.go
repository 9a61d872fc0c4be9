package ui

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
)

// employeeShown bounds each list on an employee's page.
const employeeShown = 10

// employeeParts is everything about one AI employee besides its record and
// settings, for its page: keys, live grants, open requests, tasks, open
// streams and recent calls.
type employeeParts struct {
	Keys     []identity.Key
	Grants   []grants.Grant
	Requests []grants.Request
	Tasks    []board.Task
	Calls    []audit.Entry
	Streams  int
	// Spend is what the employee's responsibility runs reported this
	// month (from Month, in the member's time zone), in cents; NoSpend
	// when this server keeps no runs.
	Spend   int64
	Month   time.Time
	NoSpend bool
}

// Percent is the part of budget that spend is, rounded down; 0 without a
// budget.
func (p employeeParts) Percent(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	return p.Spend * 100 / budget
}

// employeeParts reads the parts of a's page; a part whose service this
// server lacks stays empty.
func (d *Dashboard) employeeParts(ctx context.Context, tenantID uuid.UUID, a identity.Agent, zone *time.Location) (employeeParts, error) {
	var p employeeParts
	ks, err := d.d.Identity.ListKeys(ctx, tenantID)
	if err != nil {
		return p, err
	}
	for _, k := range ks {
		if k.AgentID == a.ID && k.RevokedAt == nil {
			p.Keys = append(p.Keys, k)
		}
	}
	if d.d.Grants != nil {
		if p.Grants, err = d.d.Grants.ListGrants(ctx, tenantID, a.ID, true); err != nil {
			return p, err
		}
		rs, err := d.d.Grants.ListRequests(ctx, tenantID, grants.Pending, nil, requestsShown)
		if err != nil {
			return p, err
		}
		for _, r := range rs {
			if r.AgentID == a.ID {
				p.Requests = append(p.Requests, r)
			}
		}
	}
	if d.d.Board != nil {
		if p.Tasks, err = d.d.Board.ListTasks(ctx, tenantID, board.TaskFilter{Assignee: a.ID, Limit: employeeShown}); err != nil {
			return p, err
		}
	}
	if d.d.AuditLog != nil {
		// The trail's (tenant, principal, time) index finds them however
		// long ago they were.
		f := audit.Filter{PrincipalID: "agent:" + a.ID.String(), Limit: employeeShown}
		if p.Calls, err = d.d.AuditLog.List(ctx, tenantID, f); err != nil {
			return p, err
		}
	}
	now := time.Now().In(zone)
	p.Month = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, zone)
	if p.NoSpend = d.d.Responsibilities == nil; !p.NoSpend {
		if p.Spend, err = d.d.Responsibilities.Spend(ctx, tenantID, a.ID, p.Month, p.Month.AddDate(0, 1, 0)); err != nil {
			return p, err
		}
	}
	if d.d.Streams != nil {
		if cs, err := d.d.Streams.Connected(ctx, tenantID); err == nil {
			for _, c := range cs {
				if c.AgentID == a.ID {
					p.Streams++
				}
			}
		}
	}
	return p, nil
}

// saveProfile changes an employee's department, role, manager (by name;
// empty: none) and budget (in the currency's units, two decimals), as the
// admin API's updateAgent does.
func (d *Dashboard) saveProfile(c echo.Context, v *View) error {
	a, err := d.agentParam(c, v)
	if err != nil {
		return err
	}
	v.Object = "agent:" + a.ID.String()
	budget, err := parseBudget(c.FormValue("budget"))
	if err != nil {
		return err
	}
	manager := uuid.Nil
	if ref := strings.TrimSpace(c.FormValue("reports_to")); ref != "" {
		m, err := d.d.Identity.AgentByName(c.Request().Context(), v.Tenant.ID, ref)
		if fault.Is(err, fault.NotFound) {
			return fault.New(fault.Invalid, "reports_to must name an AI employee of this tenant; there is none named %q", ref)
		}
		if err != nil {
			return err
		}
		manager = m.ID
	}
	_, err = d.d.Identity.UpdateAgent(c.Request().Context(), v.Tenant.ID, a.ID, func(ag *identity.Agent) error {
		ag.Department, ag.Role = strings.TrimSpace(c.FormValue("department")), strings.TrimSpace(c.FormValue("role"))
		ag.ReportsTo, ag.BudgetCents = manager, budget
		return nil
	})
	if err != nil {
		return err
	}
	return back(c, v, "agents/"+a.ID.String(), "agent_saved")
}

// parseBudget reads a budget such as "125" or "125.50" as cents; empty is
// no budget.
func parseBudget(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1e9 || math.IsNaN(f) {
		return 0, fault.New(fault.Invalid, "budget must be an amount from 0 to 1,000,000,000")
	}
	return int64(math.Round(f * 100)), nil
}

// Dollars writes cents as the budget field's value ("125.50").
func (v *View) Dollars(cents int64) string {
	return strconv.FormatFloat(float64(cents)/100, 'f', 2, 64)
}
